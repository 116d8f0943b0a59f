#include "ggml-lite/threads.h"

#include <hwloc.h>
#include <omp.h>
#include <unistd.h>

int gl_physical_cores(void)
{
    int n = 0;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
        if (hwloc_topology_load(topo) == 0) n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        hwloc_topology_destroy(topo);
    }
    if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

void gl_set_threads(int n)
{
    omp_set_num_threads(n < 1 ? 1 : n);
}
