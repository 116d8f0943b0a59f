/* fuzz_jsonl.c - libFuzzer target: any bytes as one JSON value (a batch
 * input line, a chat transcript).  Errors are fine; crashes are not, and
 * what parses must write back as JSON that parses again, stably. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/jsonl.h"

static char *dump(const qlm_jval *v, size_t *n)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    if (!f) abort();
    qlm_json_write(f, v);
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qlm_jval *v = NULL;
    qlm_err err = {0};
    if (qlm_json_parse((const char *)data, size, &v, &err) != QLM_OK) {
        if (!err.msg[0] || strchr(err.msg, '\n')) abort();
        return 0;
    }
    /* Writing replaces invalid UTF-8 by U+FFFD (escaped the first time,
     * as itself after that), so the text is stable from the second
     * write on. */
    size_t n1, n2, n3;
    char *a = dump(v, &n1);
    qlm_jval *w = NULL, *x = NULL;
    if (qlm_json_parse(a, n1, &w, &err) != QLM_OK) abort();
    char *b = dump(w, &n2);
    if (qlm_json_parse(b, n2, &x, &err) != QLM_OK) abort();
    char *c = dump(x, &n3);
    if (n2 != n3 || memcmp(b, c, n2)) abort();
    free(a);
    free(b);
    free(c);
    qlm_jval_free(v);
    qlm_jval_free(w);
    qlm_jval_free(x);
    return 0;
}
