/* tensor.h - a weight matrix as ggml-lite sees it: element type, shape and
 * a pointer into the mapped file.  Row r of a 2-D tensor starts at
 * data + r * row_bytes; ne[0] is the row length (the input dimension). */
#ifndef QLM_GL_TENSOR_H
#define QLM_GL_TENSOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/types.h"

/* How the bytes of a weight are laid out.  ROWS: as in the file.  X16:
 * rows [0, ne[1] - ne[1] % 16) in groups of 16 interleaved at load
 * (quant/repack.h), group g where its row 16 g was, the rest as rows. */
typedef enum gl_layout { GL_LAYOUT_ROWS = 0, GL_LAYOUT_X16 } gl_layout;

typedef struct gl_tensor {
    qt_type type;
    int64_t ne[4];     /* elements per dim, ne[0] fastest; unused dims = 1 */
    size_t row_bytes;  /* bytes of one ne[0]-long row */
    const void *data;
    gl_layout layout;
    /* For qt_traits' one_row_min_bytes: NULL where data is a file mapping
     * (its pages are 4 KB where the page cache holds small folios); else
     * a flag that reads true once data sits in 2 MB pages (set by the
     * thread that moves a model's copy into them, ggml-lite/promote.h).
     * Either path gives the same bits, so a matmul may see it change. */
    const atomic_bool *huge;
} gl_tensor;

static inline bool gl_tensor_huge(const gl_tensor *t)
{
    return t->huge && atomic_load_explicit(t->huge, memory_order_relaxed);
}

/* Row r (in the X16 layout: the group starting at row r, r % 16 == 0). */
static inline const void *gl_row(const gl_tensor *t, int64_t r)
{
    return (const uint8_t *)t->data + (size_t)r * t->row_bytes;
}

#endif
