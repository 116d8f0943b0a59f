/* test_numa.c - the NUMA placement planner on synthetic hwloc topologies:
 * threads spread per node, every KV head on the node of the threads that
 * read it, isolate on one node, plain on one-node machines and with off. */
#include <string.h>

#include "ggml-lite/numa.h"
#include "test.h"

static hwloc_topology_t synthetic(const char *desc)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t)) return NULL;
    if (hwloc_topology_set_synthetic(t, desc) || hwloc_topology_load(t)) {
        hwloc_topology_destroy(t);
        return NULL;
    }
    return t;
}

/* Node (OS index) that a PU belongs to. */
static int pu_node(hwloc_topology_t t, int pu_os)
{
    const hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, (unsigned)pu_os);
    const int nn = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    for (int i = 0; pu && i < nn; i++) {
        const hwloc_obj_t nd = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
        if (hwloc_bitmap_isset(nd->cpuset, pu->os_index)) return (int)nd->os_index;
    }
    return -1;
}

static void check_distribute(const char *desc, int n_nodes, int n_threads, int n_q, int n_kv)
{
    char name[128];
    snprintf(name, sizeof name, "numa_distribute[%s]_t%d_h%d/%d", desc, n_threads, n_q, n_kv);
    TEST_BEGIN(name);
    hwloc_topology_t t = synthetic(desc);
    CHECK(t != NULL, "synthetic topology '%s' did not load", desc);
    if (t) {
        gl_numa_plan p, p2;
        CHECK(gl_numa_plan_make(t, GL_NUMA_DISTRIBUTE, n_threads, n_q, n_kv, 0, &p) == 0, "plan");
        CHECK(gl_numa_plan_make(t, GL_NUMA_DISTRIBUTE, n_threads, n_q, n_kv, 0, &p2) == 0 && !memcmp(&p, &p2, sizeof p),
              "the plan is not a pure function of its inputs");
        const int want_nodes = n_threads < n_nodes ? n_threads : n_nodes;
        CHECK(p.bound && p.n_nodes == want_nodes, "bound %d, %d nodes, want %d", p.bound, p.n_nodes, want_nodes);
        int per_node[GL_NUMA_MAX_NODES] = {0};
        for (int i = 0; i < n_threads; i++) {
            CHECK(p.thread_pu[i] >= 0, "thread %d unbound", i);
            CHECK(pu_node(t, p.thread_pu[i]) == p.node_os[p.thread_node[i]], "thread %d: PU %d not on its node %d", i,
                  p.thread_pu[i], p.node_os[p.thread_node[i]]);
            CHECK(i == 0 || p.thread_node[i] >= p.thread_node[i - 1], "threads are not in node blocks");
            per_node[p.thread_node[i]]++;
            /* one thread per core while cores last: no PU twice */
            for (int j = 0; j < i && n_threads <= hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU); j++)
                CHECK(p.thread_pu[j] != p.thread_pu[i], "threads %d and %d share PU %d", j, i, p.thread_pu[i]);
        }
        for (int nd = 0; nd < p.n_nodes; nd++)
            CHECK(per_node[nd] >= n_threads / p.n_nodes && per_node[nd] <= n_threads / p.n_nodes + 1,
                  "node %d has %d of %d threads", nd, per_node[nd], n_threads);
        /* every query head of a decode step runs on a thread whose node
         * holds its KV head's memory, for the group's first query head */
        for (int kh = 0; kh < n_kv; kh++) {
            const int owner = gl_static_owner(kh * (n_q / n_kv), n_q, n_threads);
            CHECK(p.head_node[kh] == p.thread_node[owner], "KV head %d on node %d, its reader on %d", kh,
                  p.head_node[kh], p.thread_node[owner]);
        }
        /* KV heads are spread: with as many heads as nodes, each node gets one */
        if (n_kv == p.n_nodes && n_threads >= n_q) {
            int seen[GL_NUMA_MAX_NODES] = {0};
            for (int kh = 0; kh < n_kv; kh++) seen[p.head_node[kh]]++;
            for (int nd = 0; nd < p.n_nodes; nd++) CHECK(seen[nd] == 1, "node %d holds %d heads", nd, seen[nd]);
        }
        hwloc_topology_destroy(t);
    }
    TEST_END();
}

static void check_other_modes(void)
{
    TEST_BEGIN("numa_isolate_one_node");
    hwloc_topology_t t = synthetic("numa:4 core:2 pu:2");
    CHECK(t != NULL, "topology");
    if (t) {
        gl_numa_plan p;
        CHECK(gl_numa_plan_make(t, GL_NUMA_ISOLATE, 6, 8, 4, 2, &p) == 0, "plan");
        CHECK(p.bound && p.n_nodes == 1, "bound %d nodes %d", p.bound, p.n_nodes);
        const hwloc_obj_t home = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, 2);
        CHECK(p.node_os[0] == (int)home->os_index, "isolate on node %d, want %u", p.node_os[0], home->os_index);
        for (int i = 0; i < 6; i++) CHECK(pu_node(t, p.thread_pu[i]) == p.node_os[0], "thread %d off the home node", i);
        for (int kh = 0; kh < 4; kh++) CHECK(p.head_node[kh] == 0, "head %d not at home", kh);
        /* 6 threads on 2 cores x 2 PUs: all four PUs used, cores first */
        CHECK(p.thread_pu[0] != p.thread_pu[1] && p.thread_pu[0] != p.thread_pu[2], "PUs reused too early");
        hwloc_topology_destroy(t);
    }
    TEST_END();

    TEST_BEGIN("numa_off_and_one_node_are_plain");
    const char *descs[] = {"numa:2 core:4 pu:1", "core:4 pu:2", "numa:1 core:8 pu:1"};
    for (int d = 0; d < 3; d++) {
        t = synthetic(descs[d]);
        CHECK(t != NULL, "topology %s", descs[d]);
        if (!t) continue;
        gl_numa_plan p;
        const gl_numa_mode modes[] = {GL_NUMA_OFF, GL_NUMA_DISTRIBUTE, GL_NUMA_ISOLATE};
        for (int mi = 0; mi < (d == 0 ? 1 : 3); mi++) {
            CHECK(gl_numa_plan_make(t, modes[mi], 3, 9, 3, 0, &p) == 0, "plan"); /* fewer threads than cores */
            CHECK(!p.bound && !p.pinned && p.n_nodes == 1, "%s, mode %s: bound %d pinned %d nodes %d", descs[d],
                  gl_numa_mode_name(modes[mi]), p.bound, p.pinned, p.n_nodes);
            for (int i = 0; i < 3; i++) CHECK(p.thread_pu[i] == -1, "thread %d bound", i);
        }
        hwloc_topology_destroy(t);
    }
    TEST_END();

    TEST_BEGIN("numa_one_node_isolate_pins_one_thread_per_core_when_all_cores_run");
    /* 4 cores with 2 hyperthreads each, PUs numbered core-major: threads
     * take the first PU of each core, never two on one core */
    t = synthetic("core:4 pu:2");
    CHECK(t != NULL, "topology");
    if (t) {
        gl_numa_plan p;
        CHECK(gl_numa_plan_make(t, GL_NUMA_ISOLATE, 4, 8, 4, 0, &p) == 0, "plan");
        CHECK(p.pinned && !p.bound, "4 threads on 4 cores: pinned %d bound %d", p.pinned, p.bound);
        for (int i = 0; i < 4; i++) CHECK(p.thread_pu[i] == 2 * i, "thread %d on PU %d, want %d", i, p.thread_pu[i], 2 * i);
        CHECK(gl_numa_plan_make(t, GL_NUMA_DISTRIBUTE, 4, 8, 4, 0, &p) == 0 && !p.pinned, "the default pins");
        CHECK(gl_numa_plan_make(t, GL_NUMA_OFF, 4, 8, 4, 0, &p) == 0 && !p.pinned, "off pins");
        CHECK(gl_numa_plan_make(t, GL_NUMA_ISOLATE, 8, 8, 4, 0, &p) == 0 && !p.pinned, "8 threads on 4 cores pinned");
        CHECK(gl_numa_plan_make(t, GL_NUMA_ISOLATE, 1, 8, 4, 0, &p) == 0 && !p.pinned, "1 thread pinned");
        hwloc_topology_destroy(t);
    }
    gl_numa_plan p;
    t = synthetic("numa:2 core:4 pu:1");
    CHECK(t && gl_numa_plan_make(t, GL_NUMA_DISTRIBUTE, 0, 9, 3, 0, &p) < 0, "0 threads accepted");
    CHECK(t && gl_numa_plan_make(t, GL_NUMA_DISTRIBUTE, 2, 9, 2, 0, &p) < 0, "9 heads over 2 KV heads accepted");
    if (t) hwloc_topology_destroy(t);
    CHECK(gl_numa_mode_parse("isolate") == GL_NUMA_ISOLATE && gl_numa_mode_parse("bogus") < 0, "mode names");
    TEST_END();

    TEST_BEGIN("numa_static_owner_is_libgomp_split");
    /* 9 iterations over 4 threads: 3,2,2,2 */
    const int want[9] = {0, 0, 0, 1, 1, 2, 2, 3, 3};
    for (int i = 0; i < 9; i++) CHECK(gl_static_owner(i, 9, 4) == want[i], "iteration %d", i);
    CHECK(gl_static_owner(1, 2, 4) == 1, "fewer iterations than threads");
    TEST_END();
}

int main(void)
{
    check_distribute("numa:2 core:4 pu:1", 2, 8, 9, 3);
    check_distribute("numa:2 core:4 pu:1", 2, 2, 2, 2);
    check_distribute("numa:4 core:2 pu:2", 4, 8, 8, 4);
    check_distribute("numa:4 core:2 pu:2", 4, 16, 32, 8);
    check_distribute("numa:4 core:2 pu:2", 4, 3, 9, 3);
    check_other_modes();
    TEST_EXIT();
}
