/* cli.h - what the command-line layer shares: the error line format and
 * the runtime subcommands that live in src/ (run, chat, batch).
 * Only code at this layer prints to stdout/stderr or picks exit codes. */
#ifndef QLM_CLI_H
#define QLM_CLI_H

#include "err.h"
#include "kv.h"
#include "sample.h"

/* Prints "qlm: error: <message>" as one line on stderr; returns code. */
int qlm_cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints e's message in that format and returns its code. */
int qlm_cli_report(const qlm_err *e);

/* Writes all n bytes to fd, going on after a signal handler ran (a Ctrl-C
 * handled without SA_RESTART interrupts a write to a slow terminal or
 * pipe).  Returns 0, or the errno of the write that failed. */
int qlm_cli_write_all(int fd, const void *s, size_t n);

/* Parses a whole decimal/float argument for flag `flag`; false with the
 * error already printed on bad input. */
int qlm_cli_int(const char *flag, const char *s, long lo, long hi, long *out);
int qlm_cli_float(const char *flag, const char *s, double lo, double hi, double *out);

/* The load-mode flags every subcommand that loads a model takes:
 * --mmap (default), --no-mmap, --mlock.  *mode starts at -1 (none given).
 * Returns 1 if a was one of them, 0 if not, -1 with the usage error
 * printed when it contradicts one given before. */
int qlm_cli_load_flag(const char *a, int *mode);
#define QLM_CLI_LOAD_HELP \
    "      --mmap | --no-mmap | --mlock\n" \
    "                          map the model (default) | read it into memory (fast cold\n" \
    "                          load) | map and lock it in RAM (never swapped out)\n" \
    "  -ngl, --gpu-layers N    taken as llama.cpp takes it, but this qlm has no GPU offload:\n" \
    "                          every layer runs on the CPU (a warning says so unless N is 0)\n"

/* -ctk/--cache-type-k T, -ctv/--cache-type-v T, --kv-type T (both):
 * returns 1 when `flag` is one of them and `value` was stored, 0 when it
 * is none of them, -1 on a bad type (error printed). */
int qlm_cli_kv_flag(const char *flag, const char *value, qlm_kv_type *k, qlm_kv_type *v);

/* One -ngl value: N >= -1, or auto / all (stored as -1); 0 with the usage
 * error printed when it is neither.  qlm has no GPU offload: callers give
 * qlm_cli_no_gpu_warning's one line when any value is not 0. */
int qlm_cli_gpu_layers(const char *flag, const char *v, long *layers);
void qlm_cli_no_gpu_warning(const char *flag, const char *v);

/* -b (llama.cpp's logical batch) and -ub (its physical one) both bound
 * the prompt tokens of one forward pass; given both, the smaller holds. */
#define QLM_CLI_BATCH_HELP \
    "  -b, -ub N               prompt tokens per forward pass (default 512; with both\n" \
    "                          --batch-size and --ubatch-size, the smaller)\n"

/* The flags every generating command (run, chat, batch) takes: sampling
 * (-s --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n,
 * into sp), sizes (-n/--n-predict, -c/--ctx-size, -t/--threads,
 * -b/--batch-size, -ub/--ubatch-size) and -ngl/--gpu-layers (no GPU offload: a warning unless
 * 0; its help is in QLM_CLI_LOAD_HELP).  1 if flag is one of them and its
 * value v was stored, 0 if it is not, -1 on a bad value (usage error
 * already printed). */
int qlm_cli_gen_flag(const char *flag, const char *v, qlm_sampler_params *sp, int *n_predict, int *n_ctx,
                     int *n_threads, int *n_batch);

/* The valueless flag of the same commands: --ignore-eos (into sp).
 * 1 if flag is it, 0 if not. */
int qlm_cli_gen_switch(const char *flag, qlm_sampler_params *sp);

/* --chat-template NAME|FILE, checked when parsed: 0 when v names a
 * built-in template or a readable file, QLM_EUSAGE (error printed, the
 * names listed) otherwise; "list" prints the built-ins on stdout and
 * returns -1 (the command then exits 0). */
int qlm_cli_template_flag(const char *v);
#define QLM_CLI_TEMPLATE_HELP \
    "      --chat-template T   a built-in template by name (--chat-template list shows\n" \
    "                          them) or a Jinja file, instead of the model's own\n"

int qlm_cmd_run(int argc, char **argv);
int qlm_cmd_chat(int argc, char **argv);
int qlm_cmd_batch(int argc, char **argv);

#endif
