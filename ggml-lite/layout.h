/* layout.h - weights rearranged at load for the kernels that read them.
 *
 * Q4_0 and IQ4_NL matrices that take llama.cpp's repacked order are read
 * 16 rows at a time by the wide kernels (quant/repack.h).  From the file's
 * row-major blocks that means 16 streams and a transpose per block; in the
 * x16 layout each group of 16 rows is one stream already in the kernels'
 * form.  The layout moves bytes only: every output keeps its bits. */
#ifndef QLM_GL_LAYOUT_H
#define QLM_GL_LAYOUT_H

#include <stdbool.h>

#include "ggml-lite/tensor.h"

/* Whether t (still in the file's layout) has an x16 form that this CPU's
 * kernels read. */
bool gl_x16_wanted(const gl_tensor *t);

/* Writes t's bytes (ne[1] * row_bytes) to dst in the x16 layout, dst ==
 * t->data included (the tensor is then rewritten in place, so that memory
 * must be writable), and points t at dst.  Threads share the groups.
 * Returns 0, or -1 when out of memory (t unchanged unless dst == t->data,
 * which needs none). */
int gl_x16_relayout(gl_tensor *t, void *dst);

#endif
