/* kv_place.c - where the KV cache's heads and the threads that read them
 * live on a NUMA machine (the plan itself is ggml-lite/numa.c). */
#include "kv.h"

#include <stdio.h>
#include <stdlib.h>

void qlm_kv_numa_place(qlm_kv *kv, gl_numa_mode mode, int n_threads, int n_q, char *desc, size_t desc_len)
{
    snprintf(desc, desc_len, "NUMA %s: topology unknown, plain allocations", gl_numa_mode_name(mode));
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo)) return;
    gl_numa_plan *plan = malloc(sizeof *plan);
    if (plan && !hwloc_topology_load(topo)) {
        /* isolate stays on the node this process is running on */
        int home = 0;
        hwloc_bitmap_t here = hwloc_bitmap_alloc();
        if (here && !hwloc_get_last_cpu_location(topo, here, HWLOC_CPUBIND_THREAD)) {
            const int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
            for (int i = 0; i < nn; i++)
                if (hwloc_bitmap_intersects(hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i)->cpuset, here)) home = i;
        }
        hwloc_bitmap_free(here);
        if (!gl_numa_plan_make(topo, mode, n_threads, n_q, kv->n_head_kv, home, plan)) {
            /* a process already confined (taskset, cgroup cpuset) keeps the
             * placement it was given */
            hwloc_bitmap_t mine = hwloc_bitmap_alloc();
            if (plan->pinned && !plan->bound &&
                (!mine || hwloc_get_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) ||
                 !hwloc_bitmap_isequal(mine, hwloc_topology_get_topology_cpuset(topo))))
                plan->pinned = 0;
            hwloc_bitmap_free(mine);
            const int ok = !gl_numa_bind_threads(topo, plan) && !qlm_kv_place(kv, topo, plan);
            if (!plan->bound)
                snprintf(desc, desc_len, "NUMA %s: %splain allocations%s", gl_numa_mode_name(mode),
                         mode == GL_NUMA_OFF ? "" : "one node, ",
                         plan->pinned ? (ok ? ", one thread pinned per core" : ", pinning refused") : "");
            else
                snprintf(desc, desc_len, "NUMA %s over %d node%s%s", gl_numa_mode_name(mode), plan->n_nodes,
                         plan->n_nodes > 1 ? "s" : "", ok ? "" : " (binding refused)");
        }
    }
    free(plan);
    hwloc_topology_destroy(topo);
}

