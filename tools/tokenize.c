/* tokenize.c - `qlm tokenize`: the token ids of a text.
 *
 *   qlm tokenize -m FILE [-p TEXT | -f FILE] [--ids] [--add-special] [--parse-special]
 *
 * Defaults are chosen for comparing tokenizers: no BOS/EOS and special
 * token text taken literally, so the ids are those of the text alone.
 * The text is used byte for byte (no escape processing, no newline
 * stripping).  Only the vocabulary is read, so vocab-only GGUF files
 * work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli.h"
#include "src/gguf.h"
#include "src/tokenizer.h"
#include "tools/tools.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qlm tokenize -m FILE [-p TEXT | -f FILE] [options]\n"
            "\n"
            "Prints the token ids of TEXT (or of FILE's bytes, or of standard input).\n"
            "\n"
            "  -m, --model FILE    GGUF file (a vocab-only file is enough)\n"
            "  -p, --prompt TEXT   text to tokenize, taken as is\n"
            "  -f, --file FILE     read the text from FILE\n"
            "      --ids           print only the ids, space-separated, on one line\n"
            "      --add-special   add BOS/EOS as the model asks\n"
            "      --parse-special turn special token text (<|im_start|>) into its token\n"
            "  -h, --help          show this help\n"
            "\n"
            "Without --ids each token is printed as: id<TAB>'piece'\n");
}

/* Reads all of f; NULL on error (errno set). */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                return NULL;
            }
            break;
        }
        char *nb = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            return NULL;
        }
        buf = nb;
        cap *= 2;
    }
    *len = n;
    return buf;
}

static int print_pieces(const qlm_vocab *v, const int32_t *ids, size_t n)
{
    size_t cap = 256;
    char *buf = malloc(cap);
    if (!buf)
        return qlm_cli_error(QLM_ERUNTIME, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int m = qlm_token_to_piece(v, ids[i], buf, cap, true);
        if (m > 0 && (size_t)m > cap) {
            char *nb = realloc(buf, (size_t)m);
            if (!nb) {
                free(buf);
                return qlm_cli_error(QLM_ERUNTIME, "out of memory");
            }
            buf = nb;
            cap = (size_t)m;
            m = qlm_token_to_piece(v, ids[i], buf, cap, true);
        }
        printf("%d\t'", ids[i]);
        if (m > 0)
            fwrite(buf, 1, (size_t)m, stdout);
        printf("'\n");
    }
    free(buf);
    return 0;
}

int qlm_cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool ids_only = false, add_special = false, parse_special = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool takes_value = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") ||
                           !strcmp(a, "--prompt") || !strcmp(a, "-f") || !strcmp(a, "--file");
        if (takes_value && i + 1 >= argc)
            return qlm_cli_error(QLM_EUSAGE, "%s needs a value", a);
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            model = argv[++i];
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
            prompt = argv[++i];
        else if (!strcmp(a, "-f") || !strcmp(a, "--file"))
            file = argv[++i];
        else if (!strcmp(a, "--ids"))
            ids_only = true;
        else if (!strcmp(a, "--add-special"))
            add_special = true;
        else if (!strcmp(a, "--parse-special"))
            parse_special = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else
            return qlm_cli_error(QLM_EUSAGE, "tokenize: unknown option '%s' (see qlm tokenize --help)", a);
    }
    if (!model)
        return qlm_cli_error(QLM_EUSAGE, "tokenize: -m FILE is required (see qlm tokenize --help)");
    if (prompt && file)
        return qlm_cli_error(QLM_EUSAGE, "tokenize: give -p or -f, not both");

    char *text = NULL;
    size_t len = 0;
    if (prompt) {
        len = strlen(prompt);
    } else {
        FILE *f = file ? fopen(file, "rb") : stdin;
        if (!f)
            return qlm_cli_error(QLM_ELOAD, "%s: cannot open", file);
        text = slurp(f, &len);
        if (f != stdin)
            fclose(f);
        if (!text)
            return qlm_cli_error(QLM_ELOAD, "%s: cannot read", file ? file : "standard input");
    }

    qlm_err err = {0};
    gguf_ctx *ctx = NULL;
    qlm_vocab *v = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = gguf_open(&ctx, model, &err);
    if (!rc) {
        rc = qlm_vocab_load(&v, ctx, &err);
        gguf_close(ctx);
        if (rc) {
            char why[sizeof err.msg];
            memcpy(why, err.msg, sizeof why);
            qlm_fail(&err, rc, "%s: %.400s", model, why);
        }
    }
    if (!rc)
        rc = qlm_tokenize(v, prompt ? prompt : text, len, add_special, parse_special, &ids, &n, &err);
    free(text);
    if (rc) {
        qlm_vocab_free(v);
        return qlm_cli_report(&err);
    }

    if (ids_only) {
        for (size_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        printf("\n");
    } else {
        rc = print_pieces(v, ids, n);
    }
    free(ids);
    qlm_vocab_free(v);
    if (!rc && (fflush(stdout) || ferror(stdout)))
        rc = qlm_cli_error(QLM_ERUNTIME, "writing standard output failed");
    return rc;
}
