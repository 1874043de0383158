#include "select.h"

#include <stddef.h>

#define NC_NO_SETTING ((size_t)-1)
#define NC_SETTING(field) offsetof(nc_config, field)

/* First matching row wins.  A row applies when the node has at most `max_ranks_setting`
 * ranks and the message has at least `min_bytes_setting` and at most `max_bytes_setting`
 * bytes (all read from the agreed settings, so every rank decides alike), and what the row
 * `needs` holds: single-copy on this node, single-copy on every node (a data-movement
 * collective reads across the whole node from any rank).  Reductions count the bytes of the whole vector. */
enum { NEEDS_CMA = 1, NEEDS_CMA_EVERYWHERE = 2 };

typedef struct nc_rule {
    nc_coll_id coll;
    nc_alg_id alg;
    size_t max_ranks_setting;
    size_t min_bytes_setting;
    size_t max_bytes_setting;
    int needs;
} nc_rule;

#define NC_ANY NC_NO_SETTING
#define NC_MOVE_RULES(coll)                                                            \
    {coll, NC_ALG_CMA, NC_ANY, NC_ANY, NC_ANY, NEEDS_CMA_EVERYWHERE},                   \
    {coll, NC_ALG_PMPI_NO_CMA, NC_ANY, NC_ANY, NC_ANY, 0}
static const nc_rule rules[] = {
    {NC_COLL_BARRIER, NC_ALG_DISSEMINATION, NC_ANY, NC_ANY, NC_ANY, 0},
    {NC_COLL_BCAST, NC_ALG_CMA, NC_ANY, NC_SETTING(bcast_cma_min), NC_ANY, NEEDS_CMA},
    {NC_COLL_BCAST, NC_ALG_SHM, NC_ANY, NC_ANY, NC_ANY, 0},
    /* Data movement: direct reads of large blocks need single-copy on every node. */
    NC_MOVE_RULES(NC_COLL_GATHER), NC_MOVE_RULES(NC_COLL_GATHERV),
    NC_MOVE_RULES(NC_COLL_SCATTER), NC_MOVE_RULES(NC_COLL_SCATTERV),
    NC_MOVE_RULES(NC_COLL_ALLGATHER), NC_MOVE_RULES(NC_COLL_ALLGATHERV),
    NC_MOVE_RULES(NC_COLL_ALLTOALL), NC_MOVE_RULES(NC_COLL_ALLTOALLV), NC_MOVE_RULES(NC_COLL_ALLTOALLW),
};
#undef NC_ANY
#undef NC_MOVE_RULES

/* An explicit NODECOLL_<COLL>_ALG setting bypasses the table. */
static nc_alg_id forced(const nc_comm *c, nc_coll_id coll)
{
    static const nc_alg_id barrier_algs[] = {[NC_BARRIER_FLAT] = NC_ALG_FLAT,
                                             [NC_BARRIER_TREE] = NC_ALG_TREE,
                                             [NC_BARRIER_DISSEMINATION] = NC_ALG_DISSEMINATION};
    static const nc_alg_id bcast_algs[] = {[NC_BCAST_SHM] = NC_ALG_SHM, [NC_BCAST_CMA] = NC_ALG_CMA};
    switch (coll) {
    case NC_COLL_BARRIER:
        return c->cfg.barrier_alg == NC_BARRIER_AUTO ? NC_ALG_COUNT : barrier_algs[c->cfg.barrier_alg];
    case NC_COLL_BCAST:
        if (c->cfg.bcast_alg == NC_BCAST_CMA && !c->node.cma) return NC_ALG_SHM;
        return c->cfg.bcast_alg == NC_BCAST_AUTO ? NC_ALG_COUNT : bcast_algs[c->cfg.bcast_alg];
    default:
        return NC_ALG_COUNT;
    }
}

static int64_t setting(const nc_comm *c, size_t offset)
{
    return *(const int64_t *)((const char *)&c->cfg + offset);
}

static int rule_applies(const nc_rule *r, const nc_comm *c, size_t bytes)
{
    if (r->max_ranks_setting != NC_NO_SETTING && c->node.size > setting(c, r->max_ranks_setting))
        return 0;
    if (r->min_bytes_setting != NC_NO_SETTING && (int64_t)bytes < setting(c, r->min_bytes_setting))
        return 0;
    if (r->max_bytes_setting != NC_NO_SETTING && (int64_t)bytes > setting(c, r->max_bytes_setting))
        return 0;
    if ((r->needs & NEEDS_CMA) && !c->node.cma) return 0;
    return !(r->needs & NEEDS_CMA_EVERYWHERE) || c->cma_everywhere;
}

nc_alg_id nc_select(const nc_comm *c, nc_coll_id coll, size_t bytes)
{
    nc_alg_id alg = forced(c, coll);
    if (alg != NC_ALG_COUNT) return alg;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].coll == coll && rule_applies(&rules[i], c, bytes)) return rules[i].alg;
    return NC_ALG_COUNT; /* unreachable: every collective has a catch-all row */
}

nc_alg_id nc_select_spread(const nc_comm *c, size_t total, int skewed)
{
    int pow2 = (c->bridge.size & (c->bridge.size - 1)) == 0;
    switch (c->cfg.allgatherv_alg) {
    case NC_SPREAD_RING: return NC_ALG_RING;
    case NC_SPREAD_DOUBLING: return pow2 ? NC_ALG_RECURSIVE_DOUBLING : NC_ALG_DISSEMINATION;
    case NC_SPREAD_DISSEMINATION: return NC_ALG_DISSEMINATION;
    default: break;
    }
    /* Seed 001: the ring is right for large uniform volumes only; a skewed set (or a small
     * total, where latency counts) spreads along binomial patterns. */
    if (!skewed && (int64_t)total >= c->cfg.allgatherv_ring_min) return NC_ALG_RING;
    return pow2 ? NC_ALG_RECURSIVE_DOUBLING : NC_ALG_DISSEMINATION;
}
