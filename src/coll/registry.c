/* The decision table: for each collective, its algorithms in order of preference, each row
 * with the node sizes and message sizes (settings, agreed by every rank) it is preferred
 * for.  A row's algorithm still has the last word through its `applies` (hard requirements:
 * one node, single copy, a power of two...).  Rows are of two levels: a call's algorithm,
 * and the node algorithm of a step that a call's algorithm runs (the node Bcast inside a
 * Bcast or an Allreduce), chosen when the step starts.  Adding an algorithm: its file, its
 * object in algorithms.h, its row here. */
#include "registry.h"

#include <stddef.h>
#include <stdint.h>

#include "algorithms.h"

#define NC_NO_SETTING ((size_t)-1)
#define NC_SETTING(field) offsetof(nc_config, field)
#define NC_ANY NC_NO_SETTING

typedef enum { NC_CALL = 0, NC_NODE_STEP = 1 } nc_level;

typedef struct nc_row {
    const nc_algorithm *alg;
    size_t max_ranks_setting; /* at most this many ranks per node */
    size_t min_bytes_setting, max_bytes_setting;
    nc_level level;
} nc_row;

/* A reduction's call: in rank order through the host when the bridge's order is not rank
 * order and the op cares (or in reproducible mode), else the node step meeting the bridge. */
#define NC_REDUCE_CALL_ROWS                                \
    {&nc_reduce_ordered, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {&nc_reduce_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
/* The node step of an Allreduce or Reduce_scatter.  Slices from NODECOLL_REDUCE_CMA_MIN with
 * single copy, else through the rings from NODECOLL_REDUCE_SHM_MIN: when the rings are too
 * short for them, the tree (the flat fold's ranks would each read the whole vector).  Flat
 * for small vectors on small nodes.  Recursive doubling only when forced. */
#define NC_ALLREDUCE_STEP_ROWS                                                                      \
    {&nc_reduce_cma, NC_ANY, NC_SETTING(reduce_cma_min), NC_ANY, NC_NODE_STEP},                         \
    {&nc_reduce_shm, NC_ANY, NC_SETTING(reduce_shm_min), NC_ANY, NC_NODE_STEP},                         \
    {&nc_reduce_tree, NC_ANY, NC_SETTING(reduce_shm_min), NC_ANY, NC_NODE_STEP},                        \
    {&nc_reduce_flat, NC_SETTING(reduce_flat_ranks), NC_ANY, NC_SETTING(reduce_flat_max), NC_NODE_STEP}, \
    {&nc_reduce_tree, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},                                            \
    {&nc_reduce_recursive_doubling, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP}

static const nc_row barrier_rows[] = {
    {&nc_barrier_dissemination, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {&nc_barrier_tree, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {&nc_barrier_flat, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, /* (forced only: the tree comes first) */
};
static const nc_row bcast_rows[] = {
    {&nc_bcast_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL},
    {&nc_bcast_cma, NC_ANY, NC_SETTING(bcast_cma_min), NC_ANY, NC_NODE_STEP},
    {&nc_bcast_shm, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
};
static const nc_row allreduce_rows[] = {NC_REDUCE_CALL_ROWS, NC_ALLREDUCE_STEP_ROWS};
static const nc_row reduce_scatter_rows[] = {NC_REDUCE_CALL_ROWS, NC_ALLREDUCE_STEP_ROWS};
static const nc_row reduce_scatter_block_rows[] = {NC_REDUCE_CALL_ROWS, NC_ALLREDUCE_STEP_ROWS};
static const nc_row reduce_rows[] = {
    NC_REDUCE_CALL_ROWS,
    /* The node step: the single-copy slices only from NODECOLL_REDUCE_ROOT_CMA_MIN (at 2 ranks
     * the fan-in tree was faster at every size); flat and shm when forced. */
    {&nc_reduce_cma, NC_ANY, NC_SETTING(reduce_root_cma_min), NC_ANY, NC_NODE_STEP},
    {&nc_reduce_tree, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
    {&nc_reduce_flat, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
    {&nc_reduce_shm, NC_ANY, NC_ANY, NC_ANY, NC_NODE_STEP},
};
#define NC_SCAN_ROWS                                       \
    {&nc_reduce_ordered, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {&nc_scan_hierarchy, NC_ANY, NC_ANY, NC_ANY, NC_CALL}, \
    {&nc_scan_chain, NC_ANY, NC_ANY, NC_ANY, NC_CALL}
static const nc_row scan_rows[] = {NC_SCAN_ROWS};
static const nc_row exscan_rows[] = {NC_SCAN_ROWS};

/* Each collective's rows (the selection reads no other collective's). */
typedef struct nc_table {
    const nc_row *rows;
    size_t count;
} nc_table;
#define NC_TABLE(r) {r, sizeof r / sizeof r[0]}
static const nc_table tables[NC_COLL_COUNT] = {
    [NC_COLL_BARRIER] = NC_TABLE(barrier_rows),
    [NC_COLL_BCAST] = NC_TABLE(bcast_rows),
    [NC_COLL_ALLREDUCE] = NC_TABLE(allreduce_rows),
    [NC_COLL_REDUCE] = NC_TABLE(reduce_rows),
    [NC_COLL_REDUCE_SCATTER] = NC_TABLE(reduce_scatter_rows),
    [NC_COLL_REDUCE_SCATTER_BLOCK] = NC_TABLE(reduce_scatter_block_rows),
    [NC_COLL_SCAN] = NC_TABLE(scan_rows),
    [NC_COLL_EXSCAN] = NC_TABLE(exscan_rows),
};

static int64_t setting(const nc_comm *c, size_t offset) { return *(const int64_t *)((const char *)&c->cfg + offset); }

static int row_matches(const nc_row *r, const nc_comm *c, size_t bytes)
{
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
    static const nc_alg_id reduce_algs[] = {[NC_REDUCE_AUTO] = NC_ALG_COUNT, [NC_REDUCE_FLAT] = NC_ALG_FLAT,
                                            [NC_REDUCE_TREE] = NC_ALG_TREE, [NC_REDUCE_CMA] = NC_ALG_CMA,
                                            [NC_REDUCE_SHM] = NC_ALG_SHM,
                                            [NC_REDUCE_RECURSIVE_DOUBLING] = NC_ALG_RECURSIVE_DOUBLING};
    static const nc_alg_id bcast_algs[] = {[NC_BCAST_AUTO] = NC_ALG_COUNT, [NC_BCAST_SHM] = NC_ALG_SHM,
                                           [NC_BCAST_CMA] = NC_ALG_CMA};
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
    const nc_table *t = &tables[a->coll];
    for (size_t i = 0; id != NC_ALG_COUNT && i < t->count; i++)
        if (t->rows[i].level == level && t->rows[i].alg->id == id && t->rows[i].alg->applies(c, a)) return t->rows[i].alg;
    return NULL;
}

static const nc_algorithm *choose(nc_level level, const nc_comm *c, const nc_args *a, size_t bytes)
{
    nc_forced want = forced(c, a->coll);
    const nc_algorithm *alg = NULL;
    if (want.alg != NC_ALG_COUNT && !(alg = row_for(want.alg, level, c, a))) alg = row_for(want.otherwise, level, c, a);
    if (alg) return alg;
    const nc_table *t = &tables[a->coll];
    for (size_t i = 0; i < t->count; i++)
        if (t->rows[i].level == level && row_matches(&t->rows[i], c, bytes) && t->rows[i].alg->applies(c, a))
            return t->rows[i].alg;
    return NULL; /* unreachable: every collective ends in a row that always applies */
}

/* What a reduction algorithm's `applies` reads of a call besides its collective: whether it
 * has a root, and whether its op commutes (-1: a collective whose choice is not kept). */
static int choice_key(const nc_args *a)
{
    switch (a->coll) {
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
    case NC_COLL_REDUCE_SCATTER:
    case NC_COLL_REDUCE_SCATTER_BLOCK:
    case NC_COLL_SCAN:
    case NC_COLL_EXSCAN: return (a->root < 0) | !!a->reduce.red->commutative << 1;
    default: return -1;
    }
}

/* The table's choice, or the last one when the call is alike (the choice depends on nothing
 * else: the settings and the node layout are the communicator's for good).  Small calls
 * repeat, and going through the rows costs about as much as a small Allreduce's own work.
 * (The kept choice is a cache: the communicator is logically unchanged.) */
static const nc_algorithm *select_at(nc_level level, const nc_comm *c, const nc_args *a, size_t bytes)
{
    struct nc_choice *last = &((nc_comm *)(uintptr_t)c)->chosen[level];
    int key = choice_key(a);
    if (key >= 0 && last->alg && last->bytes == bytes && last->coll == (int)a->coll && last->key == key) return last->alg;
    const nc_algorithm *alg = choose(level, c, a, bytes);
    if (key >= 0) *last = (struct nc_choice){alg, bytes, (int)a->coll, key};
    return alg;
}

const nc_algorithm *nc_registry_select(const nc_comm *c, const nc_args *a, size_t bytes)
{
    return select_at(NC_CALL, c, a, bytes);
}

const nc_algorithm *nc_registry_select_step(const nc_comm *c, const nc_args *a, size_t bytes)
{
    return select_at(NC_NODE_STEP, c, a, bytes);
}
