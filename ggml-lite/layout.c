#include "ggml-lite/layout.h"

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/repack.h"

bool gl_x16_wanted(const gl_tensor *t)
{
    return t->layout == GL_LAYOUT_ROWS && t->data && t->ne[1] >= QT_X16_ROWS && qt_x16_available(t->type) &&
           (qt_repack_applies(t->type, t->ne[1]) || qt_x16_dot(t->type));
}

int gl_x16_relayout(gl_tensor *t, void *dst)
{
    const int64_t groups = t->ne[1] / QT_X16_ROWS;
    const size_t group_bytes = QT_X16_ROWS * t->row_bytes;
    const bool in_place = dst == t->data;
    /* In place, each group is copied out first, to a buffer per thread
     * taken before any group is touched, so a failure leaves t whole. */
    const int nth = omp_get_max_threads();
    uint8_t *tmp = in_place ? malloc(group_bytes * (size_t)nth) : NULL;
    if (in_place && !tmp) return -1;
    #pragma omp parallel num_threads(nth)
    {
        uint8_t *mine = tmp ? tmp + group_bytes * (size_t)omp_get_thread_num() : NULL;
        #pragma omp for schedule(static)
        for (int64_t g = 0; g < groups; g++) {
            const uint8_t *src = (const uint8_t *)t->data + (size_t)g * group_bytes;
            if (mine) src = memcpy(mine, src, group_bytes);
            qt_x16_interleave(t->type, (int)t->ne[0], src, t->row_bytes, (uint8_t *)dst + (size_t)g * group_bytes);
        }
    }
    free(tmp);
    /* the rows past the last whole group stay rows */
    const size_t done = (size_t)groups * group_bytes, all = (size_t)t->ne[1] * t->row_bytes;
    if (!in_place) memcpy((uint8_t *)dst + done, (const uint8_t *)t->data + done, all - done);
    t->data = dst;
    t->layout = GL_LAYOUT_X16;
    return 0;
}
