/* numa.h - where threads run and where each KV head's memory lives.
 *
 * The plan is a pure function of the hwloc topology and a few counts, so
 * it is unit-tested on synthetic topologies (hwloc_topology_set_synthetic,
 * e.g. "numa:2 core:4 pu:1") and applied unchanged on real machines.
 *
 * distribute: threads are spread over all NUMA nodes in contiguous blocks
 *   (one per core), and KV head kh lives on the node of the thread that
 *   OpenMP's static schedule gives its first query head in a decode step,
 *   so attention reads its K/V from local memory.
 * isolate: every thread and all KV memory on one node (the home node).
 * off, or one node: memory is not bound; allocations are plain.  On one
 *   node, isolate pins threads one per core when there are exactly as many
 *   threads as cores. */
#ifndef QLM_GL_NUMA_H
#define QLM_GL_NUMA_H

#include <hwloc.h>
#include <stddef.h>

typedef enum gl_numa_mode { GL_NUMA_DISTRIBUTE = 0, GL_NUMA_ISOLATE, GL_NUMA_OFF } gl_numa_mode;

#define GL_NUMA_MAX_NODES 64
#define GL_NUMA_MAX_THREADS 1024
#define GL_NUMA_MAX_HEADS 1024

/* "distribute", "isolate", "off"; -1 if unknown. */
int gl_numa_mode_parse(const char *s);
const char *gl_numa_mode_name(gl_numa_mode m);

typedef struct gl_numa_plan {
    int n_nodes;                         /* nodes used; 1 and !bound: plain */
    int bound;                           /* threads and memory are bound */
    int pinned;                          /* threads are pinned (thread_pu) */
    int node_os[GL_NUMA_MAX_NODES];      /* OS index of each used node */
    int n_threads;
    int thread_pu[GL_NUMA_MAX_THREADS];  /* OS index of each thread's PU */
    int thread_node[GL_NUMA_MAX_THREADS];/* index into node_os */
    int n_heads;                         /* KV heads */
    int head_node[GL_NUMA_MAX_HEADS];    /* index into node_os */
} gl_numa_plan;

/* Makes the plan for n_threads threads and a model with n_q query heads
 * over n_kv KV heads.  home is the logical index of the node isolate
 * uses (clamped).  Returns 0, or -1 if a count is out of range. */
int gl_numa_plan_make(hwloc_topology_t topo, gl_numa_mode mode, int n_threads, int n_q, int n_kv,
                      int home, gl_numa_plan *plan);

/* Thread of OpenMP's static schedule (libgomp's split) running iteration
 * i of n over nt threads. */
int gl_static_owner(int i, int n, int nt);

/* Pins the calling OpenMP team's threads to the plan's PUs (nothing when
 * the plan is not pinned).  0 or -1 if the OS refused. */
int gl_numa_bind_threads(hwloc_topology_t topo, const gl_numa_plan *plan);

/* Binds the pages of [p, p + n) to plan node `node` (no-op when the plan
 * is not bound).  0 or -1. */
int gl_numa_bind_area(hwloc_topology_t topo, const gl_numa_plan *plan, int node, void *p, size_t n);

#endif
