#include "ggml-lite/numa.h"

#include <omp.h>
#include <string.h>

int gl_numa_mode_parse(const char *s)
{
    if (!strcmp(s, "distribute")) return GL_NUMA_DISTRIBUTE;
    if (!strcmp(s, "isolate")) return GL_NUMA_ISOLATE;
    if (!strcmp(s, "off")) return GL_NUMA_OFF;
    return -1;
}

const char *gl_numa_mode_name(gl_numa_mode m)
{
    return m == GL_NUMA_DISTRIBUTE ? "distribute" : m == GL_NUMA_ISOLATE ? "isolate" : "off";
}

int gl_static_owner(int i, int n, int nt)
{
    const int q = n / nt, r = n % nt;
    return i < r * (q + 1) ? i / (q + 1) : r + (i - r * (q + 1)) / (q > 0 ? q : 1);
}

/* The k-th PU to use on a node: the first PU of each core in turn, then
 * the second PUs, and so on (hyperthreads only once the cores are used). */
static int node_pu(hwloc_topology_t topo, hwloc_obj_t node, int k)
{
    const int n_core = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE);
    if (n_core > 0) {
        const hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE, k % n_core);
        const int n_pu = hwloc_get_nbobjs_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU);
        const hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, core->cpuset, HWLOC_OBJ_PU, (k / n_core) % n_pu);
        return pu ? (int)pu->os_index : -1;
    }
    const int n_pu = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_PU);
    const hwloc_obj_t pu = n_pu > 0 ? hwloc_get_obj_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_PU, k % n_pu) : NULL;
    return pu ? (int)pu->os_index : -1;
}

int gl_numa_plan_make(hwloc_topology_t topo, gl_numa_mode mode, int n_threads, int n_q, int n_kv,
                      int home, gl_numa_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (n_threads < 1 || n_threads > GL_NUMA_MAX_THREADS || n_kv < 1 || n_kv > GL_NUMA_MAX_HEADS ||
        n_q < n_kv || n_q % n_kv)
        return -1;
    plan->n_threads = n_threads;
    plan->n_heads = n_kv;
    plan->n_nodes = 1;
    for (int t = 0; t < n_threads; t++) plan->thread_pu[t] = -1;
    /* nodes that have PUs to run on */
    hwloc_obj_t nodes[GL_NUMA_MAX_NODES];
    int n_nodes = 0;
    const int total = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < total && n_nodes < GL_NUMA_MAX_NODES; i++) {
        hwloc_obj_t nd = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, i);
        if (nd && nd->cpuset && !hwloc_bitmap_iszero(nd->cpuset)) nodes[n_nodes++] = nd;
    }
    if (mode == GL_NUMA_OFF || n_nodes < 2) {
        plan->node_os[0] = n_nodes ? (int)nodes[0]->os_index : 0;
        /* One node: only isolate (asked for) pins, one thread per core, and
         * only when every core runs one.  Not by default: a pinned thread
         * cannot leave a core another process is using, and on a shared
         * 2-core machine default pinning made decoding 2.5-3x slower.
         * Fewer threads than cores are never pinned: concurrent qlm
         * processes would pile onto the first cores. */
        const int n_core = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        if (mode == GL_NUMA_ISOLATE && n_nodes == 1 && n_threads > 1 && n_threads == n_core) {
            plan->pinned = 1;
            for (int t = 0; t < n_threads; t++) plan->thread_pu[t] = node_pu(topo, nodes[0], t);
        }
        return 0;
    }
    plan->pinned = 1;
    plan->bound = 1;
    if (mode == GL_NUMA_ISOLATE) {
        const hwloc_obj_t nd = nodes[home < 0 ? 0 : home >= n_nodes ? n_nodes - 1 : home];
        plan->node_os[0] = (int)nd->os_index;
        for (int t = 0; t < n_threads; t++) plan->thread_pu[t] = node_pu(topo, nd, t);
        return 0;
    }
    /* distribute: contiguous blocks of threads per node (thread t on node
     * t * N / n_threads), fewer nodes when there are fewer threads */
    const int used = n_threads < n_nodes ? n_threads : n_nodes;
    plan->n_nodes = used;
    for (int i = 0; i < used; i++) plan->node_os[i] = (int)nodes[i]->os_index;
    int k_on_node[GL_NUMA_MAX_NODES] = {0};
    for (int t = 0; t < n_threads; t++) {
        const int nd = (int)((long)t * used / n_threads);
        plan->thread_node[t] = nd;
        plan->thread_pu[t] = node_pu(topo, nodes[nd], k_on_node[nd]++);
    }
    /* a decode step runs the n_q query heads statically over the threads;
     * KV head kh is read by the threads of its group's first query head */
    const int group = n_q / n_kv;
    for (int kh = 0; kh < n_kv; kh++) plan->head_node[kh] = plan->thread_node[gl_static_owner(kh * group, n_q, n_threads)];
    return 0;
}

int gl_numa_bind_threads(hwloc_topology_t topo, const gl_numa_plan *plan)
{
    if (!plan->pinned) return 0;
    int bad = 0;
    #pragma omp parallel num_threads(plan->n_threads) reduction(| : bad)
    {
        const int t = omp_get_thread_num(), pu = plan->thread_pu[t];
        if (pu >= 0) {
            hwloc_bitmap_t set = hwloc_bitmap_alloc();
            hwloc_bitmap_only(set, (unsigned)pu);
            bad |= hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0;
            hwloc_bitmap_free(set);
        }
    }
    return bad ? -1 : 0;
}

int gl_numa_bind_area(hwloc_topology_t topo, const gl_numa_plan *plan, int node, void *p, size_t n)
{
    if (!plan->bound || !n) return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, (unsigned)plan->node_os[node]);
    const int rc = hwloc_set_area_membind(topo, p, n, set, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
    hwloc_bitmap_free(set);
    return rc ? -1 : 0;
}
