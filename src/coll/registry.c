/* The decision table: for each collective, its algorithms in order of preference, each row
 * with the node sizes and message sizes (settings, agreed by every rank) it is preferred
 * for.  A row's algorithm still has the last word through its `applies` (hard requirements:
 * one node, single copy, a power of two...).  Rows are of two levels: a call's algorithm,
 * and the node algorithm of a step that a call's algorithm runs (the node Bcast inside a
 * Bcast or an Allreduce), chosen when the step starts.  A row marked NC_GROUPED applies only
 * on a node whose ranks are grouped by topology levels (NODECOLL_TOPO_LEVELS; the trees then
 * follow the groups, core/hier.h).  Adding an algorithm: its file, its object in
 * algorithms.h, its row here. */
#include "registry.h"

#include <stddef.h>
#include <stdint.h>

#include "algorithms.h"
#include "../core/kselect.h"

#define NC_NO_SETTING ((size_t)-1)
#define NC_SETTING(field) offsetof(nc_config, field)
#define NC_ANY NC_NO_SETTING

typedef enum { NC_CALL = 0, NC_NODE_STEP = 1 } nc_level;
/* A row's level may carry these marks: only when the node has topology groups; only for a
 * node step whose buffers the node's ranks agreed lie in their shared heaps (nc_args). */
#define NC_GROUPED 2
#define NC_HEAP_AGREED 4

typedef struct nc_row {
    nc_coll_id coll;
    const nc_algorithm *alg;
    size_t max_ranks_setting; /* at most this many ranks per node */
    size_t min_bytes_setting, max_bytes_setting;
    int level; /* nc_level, | NC_GROUPED, | NC_HEAP_AGREED */
} nc_row;

static nc_level level_of(const nc_row *r) { return (nc_level)(r->level & NC_NODE_STEP); }

static const nc_row rows[] = {
    /* With topology groups the tree follows them; dissemination's partners ignore them. */
    {NC_COLL_BARRIER, &nc_barrier_tree, NC_ANY, NC_ANY, NC_ANY, NC_CALL | NC_GROUPED},
    {NC_COLL_BARRIER, &nc_barrier_dissemination, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_BARRIER, &nc_barrier_tree, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_BARRIER, &nc_barrier_flat, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, /* (forced only: the tree comes first) */
    {NC_COLL_BCAST, &nc_bcast_node, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_BCAST, &nc_bcast_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_BCAST, &nc_bcast_cma, NC_ANY, NC_SETTING(bcast_cma_min), NC_ANY, NC_NODE_STEP},
    {NC_COLL_BCAST, &nc_bcast_shm, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
    /* A reduction's call: in rank order through the host when the bridge's order is not rank
     * order and the op cares (or in reproducible mode), else the node step meeting the bridge
     * (on one node, the node step alone). */
#define NC_REDUCE_CALL_ROWS(coll)                                  \
    {coll, &nc_reduce_ordered, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {coll, &nc_reduce_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
    /* The node step of an Allreduce or Reduce_scatter.  Slices from NODECOLL_REDUCE_CMA_MIN
     * with single copy, else through the rings from NODECOLL_REDUCE_SHM_MIN: when the rings
     * are too short for them, the tree (the flat fold's ranks would each read the whole
     * vector).  Flat for small vectors on small nodes, unless the node has topology groups
     * (each rank would read every other's input across every boundary; the tree crosses each
     * once).  Recursive doubling only when forced. */
#define NC_ALLREDUCE_STEP_ROWS(coll)                                                                          \
    {coll, &nc_reduce_cma, NC_ANY, NC_SETTING(reduce_cma_min), NC_ANY, NC_NODE_STEP},                         \
    {coll, &nc_reduce_shm, NC_ANY, NC_SETTING(reduce_shm_min), NC_ANY, NC_NODE_STEP},                         \
    {coll, &nc_reduce_tree, NC_ANY, NC_SETTING(reduce_shm_min), NC_ANY, NC_NODE_STEP},                        \
    {coll, &nc_reduce_tree, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP | NC_GROUPED},                               \
    {coll, &nc_reduce_flat, NC_SETTING(reduce_flat_ranks), NC_ANY, NC_SETTING(reduce_flat_max), NC_NODE_STEP}, \
    {coll, &nc_reduce_tree, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},                                            \
    {coll, &nc_reduce_recursive_doubling, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP}
    NC_REDUCE_CALL_ROWS(NC_COLL_ALLREDUCE), NC_ALLREDUCE_STEP_ROWS(NC_COLL_ALLREDUCE),
    NC_REDUCE_CALL_ROWS(NC_COLL_REDUCE_SCATTER), NC_ALLREDUCE_STEP_ROWS(NC_COLL_REDUCE_SCATTER),
    NC_REDUCE_CALL_ROWS(NC_COLL_REDUCE_SCATTER_BLOCK), NC_ALLREDUCE_STEP_ROWS(NC_COLL_REDUCE_SCATTER_BLOCK),
    NC_REDUCE_CALL_ROWS(NC_COLL_REDUCE),
    /* Reduce's node step: the single-copy slices on buffers in the shared heaps from
     * NODECOLL_REDUCE_ROOT_HEAP_MIN (twice as fast as the tree there), through CMA only from
     * NODECOLL_REDUCE_ROOT_CMA_MIN (at 2 ranks the fan-in tree was faster at every size);
     * flat and shm when forced. */
    {NC_COLL_REDUCE, &nc_reduce_cma, NC_ANY, NC_SETTING(reduce_root_heap_min), NC_ANY, NC_NODE_STEP | NC_HEAP_AGREED},
    {NC_COLL_REDUCE, &nc_reduce_cma, NC_ANY, NC_SETTING(reduce_root_cma_min), NC_ANY, NC_NODE_STEP},
    {NC_COLL_REDUCE, &nc_reduce_tree, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
    {NC_COLL_REDUCE, &nc_reduce_flat, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
    {NC_COLL_REDUCE, &nc_reduce_shm, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
#undef NC_REDUCE_CALL_ROWS
#undef NC_ALLREDUCE_STEP_ROWS
#define NC_SCAN_ROWS(coll)                                         \
    {coll, &nc_reduce_ordered, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {coll, &nc_scan_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {coll, &nc_scan_chain, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
    NC_SCAN_ROWS(NC_COLL_SCAN), NC_SCAN_ROWS(NC_COLL_EXSCAN),
#undef NC_SCAN_ROWS
    /* Data movement: direct reads of large blocks need single copy on every node, else the
     * host MPI runs the call (the adapter hands it over: nc_registry_host_reason). */
#define NC_MOVE_ROWS(coll, on_node, across_nodes)                                                      \
    {coll, &on_node, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, {coll, &across_nodes, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {coll, &nc_move_host, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
    NC_MOVE_ROWS(NC_COLL_GATHER, nc_gather_on_node, nc_gather_across_nodes),
    NC_MOVE_ROWS(NC_COLL_GATHERV, nc_gather_on_node, nc_gather_across_nodes),
    NC_MOVE_ROWS(NC_COLL_SCATTER, nc_scatter_on_node, nc_scatter_across_nodes),
    NC_MOVE_ROWS(NC_COLL_SCATTERV, nc_scatter_on_node, nc_scatter_across_nodes),
    NC_MOVE_ROWS(NC_COLL_ALLGATHER, nc_allgather_on_node, nc_allgather_across_nodes),
    NC_MOVE_ROWS(NC_COLL_ALLGATHERV, nc_allgather_on_node, nc_allgather_across_nodes),
#undef NC_MOVE_ROWS
    {NC_COLL_ALLTOALL, &nc_alltoall_pairwise, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_ALLTOALL, &nc_move_host, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_ALLTOALLV, &nc_alltoall_pairwise, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_ALLTOALLV, &nc_move_host, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_ALLTOALLW, &nc_alltoall_pairwise, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {NC_COLL_ALLTOALLW, &nc_move_host, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    /* Neighbourhood collectives: their algorithm wherever single copy works, else the host. */
#define NC_NEIGHBOR_ROWS(coll, alg) \
    {coll, &alg, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, {coll, &nc_move_host, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
    NC_NEIGHBOR_ROWS(NC_COLL_NEIGHBOR_ALLGATHER, nc_neighbor_allgather),
    NC_NEIGHBOR_ROWS(NC_COLL_NEIGHBOR_ALLGATHERV, nc_neighbor_allgather),
    NC_NEIGHBOR_ROWS(NC_COLL_NEIGHBOR_ALLTOALL, nc_neighbor_alltoall),
    NC_NEIGHBOR_ROWS(NC_COLL_NEIGHBOR_ALLTOALLV, nc_neighbor_alltoall),
    NC_NEIGHBOR_ROWS(NC_COLL_NEIGHBOR_ALLTOALLW, nc_neighbor_alltoall),
#undef NC_NEIGHBOR_ROWS
};

static int64_t setting(const nc_comm *c, size_t offset) { return *(const int64_t *)((const char *)&c->cfg + offset); }

static int row_matches(const nc_row *r, const nc_comm *c, const nc_args *a, size_t bytes)
{
    if ((r->level & NC_GROUPED) && !c->node.hier) return 0;
    if ((r->level & NC_HEAP_AGREED) && !a->heap_agreed) return 0;
    if (r->max_ranks_setting != NC_NO_SETTING && c->node.size > setting(c, r->max_ranks_setting)) return 0;
    if (r->min_bytes_setting != NC_NO_SETTING && (int64_t)bytes < setting(c, r->min_bytes_setting)) return 0;
    return r->max_bytes_setting == NC_NO_SETTING || (int64_t)bytes <= setting(c, r->max_bytes_setting);
}

/* What a NODECOLL_<COLL>_ALG setting asks for: `alg` (NC_ALG_COUNT: auto), and what runs
 * when it does not apply (NC_ALG_COUNT: auto).  A forced reduction algorithm that cannot run
 * (no single copy, rings too short, not a power of two, a Reduce for recursive doubling)
 * gives way to the tree. */
typedef struct nc_forced {
    nc_alg_id alg, otherwise;
} nc_forced;

static nc_forced forced(const nc_comm *c, nc_coll_id coll)
{
    static const nc_alg_id barrier_algs[] = {[NC_BARRIER_AUTO] = NC_ALG_COUNT, [NC_BARRIER_FLAT] = NC_ALG_FLAT,
                                             [NC_BARRIER_TREE] = NC_ALG_TREE,
                                             [NC_BARRIER_DISSEMINATION] = NC_ALG_DISSEMINATION};
    static const nc_alg_id bcast_algs[] = {[NC_BCAST_AUTO] = NC_ALG_COUNT, [NC_BCAST_SHM] = NC_ALG_SHM,
                                           [NC_BCAST_CMA] = NC_ALG_CMA};
    static const nc_alg_id reduce_algs[] = {[NC_REDUCE_AUTO] = NC_ALG_COUNT, [NC_REDUCE_FLAT] = NC_ALG_FLAT,
                                            [NC_REDUCE_TREE] = NC_ALG_TREE, [NC_REDUCE_CMA] = NC_ALG_CMA,
                                            [NC_REDUCE_SHM] = NC_ALG_SHM,
                                            [NC_REDUCE_RECURSIVE_DOUBLING] = NC_ALG_RECURSIVE_DOUBLING};
    switch (coll) {
    case NC_COLL_BARRIER: return (nc_forced){barrier_algs[c->cfg.barrier_alg], NC_ALG_COUNT};
    case NC_COLL_BCAST: return (nc_forced){bcast_algs[c->cfg.bcast_alg], NC_ALG_COUNT};
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
    case NC_COLL_REDUCE_SCATTER:
    case NC_COLL_REDUCE_SCATTER_BLOCK: return (nc_forced){reduce_algs[c->cfg.reduce_alg], NC_ALG_TREE};
    default: return (nc_forced){NC_ALG_COUNT, NC_ALG_COUNT};
    }
}

/* The first row of `level` for the call whose algorithm is `id` and applies (NULL: none). */
static const nc_algorithm *row_for(nc_alg_id id, nc_level level, const nc_comm *c, const nc_args *a)
{
    for (size_t i = 0; id != NC_ALG_COUNT && i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].coll == a->coll && level_of(&rows[i]) == level && rows[i].alg->id == id &&
            rows[i].alg->applies(c, a))
            return rows[i].alg;
    return NULL;
}

/* The algorithm a tuning rule names for the call, if it applies (rules name a Barrier's
 * call algorithm, and the node step of Bcast and the reductions). */
static const nc_algorithm *tuned(nc_level level, const nc_comm *c, const nc_args *a, size_t bytes)
{
    if (!c->tune || (a->coll == NC_COLL_BARRIER) != (level == NC_CALL)) return NULL;
    const nc_tune_rule *r = nc_tune_find(c->tune, a->coll, c->node.size, bytes);
    return r ? row_for((nc_alg_id)r->alg, level, c, a) : NULL;
}

/* A NODECOLL_<COLL>_ALG setting first, then the tuning rules, then the rows. */
static const nc_algorithm *choose(nc_level level, const nc_comm *c, const nc_args *a, size_t bytes)
{
    nc_forced want = forced(c, a->coll);
    const nc_algorithm *alg = NULL;
    if (want.alg != NC_ALG_COUNT && !(alg = row_for(want.alg, level, c, a))) alg = row_for(want.otherwise, level, c, a);
    if (alg || (alg = tuned(level, c, a, bytes))) return alg;
    const size_t nrows = sizeof rows / sizeof rows[0];
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].coll == a->coll && level_of(&rows[i]) == level && row_matches(&rows[i], c, a, bytes) &&
            rows[i].alg->applies(c, a))
            return rows[i].alg;
    return NULL; /* unreachable: every collective ends in a row that always applies */
}

/* The table's choice, kept for the next call that is alike (nc_registry_key): the rows and
 * `applies` read nothing else of a call, and the settings and the node are the
 * communicator's for good.  Small calls repeat, and going through the rows cost about 0.02
 * us of an 8-byte Bcast of 0.05 us.  (The kept choice is a cache: the communicator is
 * logically unchanged.) */
const nc_algorithm *nc_registry_choose(const nc_comm *c, const nc_args *a, size_t bytes, int level)
{
    const nc_algorithm *alg = choose((nc_level)level, c, a, bytes);
    ((nc_comm *)(uintptr_t)c)->chosen[level][a->coll] = (nc_choice){alg, bytes, nc_registry_key(a)};
    return alg;
}

/* (The data-movement rows read only the communicator: the choice kept from the last call of
 * `coll`, whatever its size, answers; asking for 0 bytes would replace the real call's.) */
nc_alg_id nc_registry_host_reason(const nc_comm *c, nc_coll_id coll)
{
    const nc_algorithm *kept = c->chosen[0][coll].alg;
    nc_args a = {.coll = coll, .root = -1};
    nc_alg_id alg = (kept ? kept : nc_registry_select(c, &a, 0))->id;
    return nc_alg_is_fallback(alg) ? alg : NC_ALG_COUNT;
}

int64_t nc_registry_param_ruled(const nc_comm *c, nc_coll_id coll, size_t bytes, nc_tune_param p, int64_t setting)
{
    const nc_tune_rule *r = nc_tune_find(c->tune, coll, c->node.size, bytes);
    int64_t ruled = r ? nc_tune_param_of(r, p) : 0;
    return ruled ? ruled : setting;
}

/* ---- the reduction fan-in's shape ------------------------------------------------------- */

/* Over the topology groups, rooted at the root, when the op commutes; a non-commutative op
 * needs rank order, which ranges of the groups keep only when the locality order is rank
 * order (block placement), and then from rank 0.  Reproducible mode folds flat (tree.c). */
const nc_hier *nc_registry_fanin_shape_grouped(const nc_comm *c, const nc_reduction *red, int root, int *top)
{
    const nc_hier *h = c->cfg.reproducible ? NULL : c->node.hier;
    *top = 0;
    if (h && red->commutative) *top = root;
    else if (h && !nc_hier_in_rank_order(h)) h = NULL;
    return h;
}

/* ---- Allgather(v) across nodes: the leaders' spread -------------------------------------- */

/* Balaji et al., equation 1: max volume over the volume at the `fraction` quantile.  A few
 * nodes far above the bulk make the set skewed. */
static int volumes_skewed(const nc_comm *c, uint64_t *volumes, int nodes)
{
    size_t k = ((size_t)nodes * (size_t)c->cfg.allgatherv_outlier_fraction + 99) / 100;
    k = k < 1 ? 1 : k > (size_t)nodes ? (size_t)nodes : k;
    uint64_t bulk = nc_kselect(volumes, (size_t)nodes, k - 1);
    uint64_t top = nc_kselect(volumes, (size_t)nodes, (size_t)nodes - 1);
    return top > 0 && top / (uint64_t)c->cfg.allgatherv_outlier_ratio >= bulk;
}

nc_alg_id nc_registry_spread(const nc_comm *c, uint64_t *volumes, int nodes)
{
    int pow2 = (nodes & (nodes - 1)) == 0;
    nc_alg_id binomial = pow2 ? NC_ALG_RECURSIVE_DOUBLING : NC_ALG_DISSEMINATION;
    switch (c->cfg.allgatherv_alg) { /* NODECOLL_ALLGATHERV_ALG */
    case NC_SPREAD_RING: return NC_ALG_RING;
    case NC_SPREAD_DOUBLING: return binomial;
    case NC_SPREAD_DISSEMINATION: return NC_ALG_DISSEMINATION;
    default: break;
    }
    uint64_t total = 0;
    for (int k = 0; k < nodes; k++) total += volumes[k];
    /* Balaji et al.: the ring is right for large uniform volumes only; a skewed set (or a small
     * total, where latency counts) spreads along binomial patterns. */
    if ((int64_t)total >= c->cfg.allgatherv_ring_min && !volumes_skewed(c, volumes, nodes)) return NC_ALG_RING;
    return binomial;
}
