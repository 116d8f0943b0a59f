/* tools.h - subcommands that are not the runtime (tools -> src). */
#ifndef QLM_TOOLS_H
#define QLM_TOOLS_H

int qlm_cmd_inspect(int argc, char **argv);
int qlm_cmd_tokenize(int argc, char **argv);
int qlm_cmd_bench(int argc, char **argv);
int qlm_bench_kernels(int argc, char **argv);
int qlm_cmd_perplexity(int argc, char **argv);
int qlm_cmd_quantize(int argc, char **argv);
int qlm_cmd_synth(int argc, char **argv);

#endif
