/* tools.h - subcommands that are not the runtime (tools -> src). */
#ifndef QLM_TOOLS_H
#define QLM_TOOLS_H

#include "quant/types.h"
#include "src/gguf.h"

int qlm_cmd_inspect(int argc, char **argv);
int qlm_cmd_tokenize(int argc, char **argv);
int qlm_cmd_bench(int argc, char **argv);
int qlm_bench_kernels(int argc, char **argv);
int qlm_cmd_perplexity(int argc, char **argv);
int qlm_cmd_quantize(int argc, char **argv);
int qlm_cmd_synth(int argc, char **argv);
int qlm_cmd_draft(int argc, char **argv);

/* quantize.c, shared with draft.c: rewrites tensor t's rows as type `to`
 * into dst (sized for it); nonzero when out of memory. */
int qr_convert(const gguf_tensor *t, qt_type to, void *dst, int threads);

#endif
