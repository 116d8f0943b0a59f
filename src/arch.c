/* arch.c - the model families qlm runs, one row each.  A family whose math
 * is shared with llama differs only in this row's flags. */
#include <string.h>

#include "model.h"

static const qlm_arch archs[] = {
    {.name = "llama", .rope_neox = false},
};

const qlm_arch *qlm_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

const char *qlm_arch_list(void)
{
    return "llama";
}
