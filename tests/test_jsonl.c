/* test_jsonl.c - the JSON reader: values, escapes, errors, round trips. */
#include <stdlib.h>
#include <string.h>

#include "src/jsonl.h"
#include "test.h"

static qlm_jval *parse(const char *s, qlm_err *err)
{
    qlm_jval *v = NULL;
    qlm_json_parse(s, strlen(s), &v, err);
    return v;
}

/* Compact re-serialisation of s, in a static buffer. */
static const char *roundtrip(const char *s)
{
    static char buf[512];
    qlm_err err = {0};
    qlm_jval *v = parse(s, &err);
    if (!v) return "ERR";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    qlm_json_write(f, v);
    fclose(f);
    qlm_jval_free(v);
    return buf;
}

int main(void)
{
    qlm_err err = {0};

    TEST_BEGIN("jsonl_object_members");
    qlm_jval *v = parse(" {\"id\": 7, \"prompt\": \"hi\\nthere\", \"t\": 0.5, \"ok\": true,"
                        " \"stop\": [\"a\", \"b\"], \"x\": null} ", &err);
    CHECK(v && v->type == QLM_JOBJ && v->n == 6, "parse: %s", err.msg);
    const qlm_jval *p = qlm_json_get(v, "prompt"), *id = qlm_json_get(v, "id"), *st = qlm_json_get(v, "stop");
    CHECK(p && p->type == QLM_JSTR && !strcmp(p->str, "hi\nthere") && p->len == 8, "prompt");
    CHECK(id && id->type == QLM_JNUM && id->num == 7 && !strcmp(id->str, "7"), "id");
    CHECK(st && st->type == QLM_JARR && st->n == 2 && !strcmp(st->items[1].str, "b"), "stop");
    CHECK(qlm_json_get(v, "t")->num == 0.5 && qlm_json_get(v, "ok")->b, "t/ok");
    CHECK(qlm_json_get(v, "x")->type == QLM_JNULL && !qlm_json_get(v, "nope"), "null/missing");
    qlm_jval_free(v);
    TEST_END();

    TEST_BEGIN("jsonl_escapes_and_unicode");
    v = parse("\"\\u00e9\\ud83d\\ude00\\u0000x\\/\\ud800\"", &err);
    CHECK(v && v->type == QLM_JSTR, "parse: %s", err.msg);
    CHECK(v && v->len == 2 + 4 + 1 + 1 + 1 + 3 && !memcmp(v->str, "\xc3\xa9\xf0\x9f\x98\x80\0x/\xef\xbf\xbd", v->len),
          "decoded bytes wrong (len %zu)", v ? v->len : 0);
    qlm_jval_free(v);
    TEST_END();

    TEST_BEGIN("jsonl_roundtrip");
    CHECK(!strcmp(roundtrip("{ \"a\" : [1, 2.50, -3e2, {}, []], \"b\":\"q\\\"\" }"),
                  "{\"a\":[1,2.50,-3e2,{},[]],\"b\":\"q\\\"\"}"), "got %s", roundtrip("{ \"a\" : [1, 2.50, -3e2, {}, []], \"b\":\"q\\\"\" }"));
    TEST_END();

    TEST_BEGIN("jsonl_malformed_rejected");
    const char *bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc",
                         "\"a\nb\"", "\"\\x\"", "\"\\u12\"", "{} x", "{'a':1}", "NaN", "[1 2]",
                         "{\"a\" 1}", "{1:2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = (qlm_err){0};
        v = parse(bad[i], &err);
        CHECK(!v && err.code == QLM_EUSAGE && !strncmp(err.msg, "col ", 4), "accepted '%s' (%s)", bad[i], err.msg);
        qlm_jval_free(v);
    }
    TEST_END();

    TEST_BEGIN("jsonl_depth_bounded");
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 200);
    v = NULL;
    err = (qlm_err){0};
    CHECK(qlm_json_parse(deep, sizeof deep, &v, &err) == QLM_EUSAGE && strstr(err.msg, "deep"), "%s", err.msg);
    qlm_jval_free(v);
    TEST_END();
    TEST_EXIT();
}
