/* qlm.c - the entry point: picks a subcommand. Each subcommand gets argv
 * from its own name on and returns the process exit status. */
#include <stdio.h>
#include <string.h>

#include "quant/cpu.h"
#include "src/cli.h"
#include "tools/tools.h"

#define QLM_VERSION "0.1.0"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} commands[] = {
    {"run", qlm_cmd_run, "generate text from a prompt (-p, -f or stdin)"},
    {"chat", qlm_cmd_chat, "talk with a model in the terminal"},
    {"batch", qlm_cmd_batch, "generate for every line of a JSONL file"},
    {"inspect", qlm_cmd_inspect, "print a GGUF file's metadata and tensor table"},
    {"tokenize", qlm_cmd_tokenize, "print the token ids of a text"},
    {"bench", qlm_cmd_bench, "measure prompt processing and generation speed"},
    {"perplexity", qlm_cmd_perplexity, "score a text like llama-perplexity"},
    {"quantize", qlm_cmd_quantize, "rewrite a model's weights in another type (Q4_K_M, ...)"},
    {"synth", qlm_cmd_synth, "write a random-weight model of a family's shape (conformance tests)"},
    {"draft", qlm_cmd_draft, "derive a small speculative draft from a model (fewer layers, fewer bits)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: qlm COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "\nqlm COMMAND --help shows a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return QLM_EUSAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("qlm %s (kernels: %s%s)\n", QLM_VERSION, qt_isa_name(), qt_amx_active() ? ", amx" : "");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    return qlm_cli_error(QLM_EUSAGE, "unknown command '%s' (qlm --help lists them)", argv[1]);
}
