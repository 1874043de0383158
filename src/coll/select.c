#include "select.h"

#include <stddef.h>

#define NC_NO_SETTING ((size_t)-1)
#define NC_SETTING(field) offsetof(nc_config, field)

/* First matching row wins.  A row applies when the node has at most `max_ranks_setting`
 * ranks and the message has at least `min_bytes_setting` and at most `max_bytes_setting`
 * bytes (all read from the agreed settings, so every rank decides alike), and what the row
 * `needs` holds: single-copy on this node.  Reductions count the bytes of the whole vector.
 * (The data-movement collectives are chosen by the registry, registry.c.) */
enum { NEEDS_CMA = 1 };

typedef struct nc_rule {
    nc_coll_id coll;
    nc_alg_id alg;
    size_t max_ranks_setting;
    size_t min_bytes_setting;
    size_t max_bytes_setting;
    int needs;
} nc_rule;

#define NC_ANY NC_NO_SETTING
static const nc_rule rules[] = {
    {NC_COLL_BARRIER, NC_ALG_DISSEMINATION, NC_ANY, NC_ANY, NC_ANY, 0},
    {NC_COLL_BCAST, NC_ALG_CMA, NC_ANY, NC_SETTING(bcast_cma_min), NC_ANY, NEEDS_CMA},
    {NC_COLL_BCAST, NC_ALG_SHM, NC_ANY, NC_ANY, NC_ANY, 0},
};
#undef NC_ANY

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
    return !(r->needs & NEEDS_CMA) || c->node.cma;
}

nc_alg_id nc_select(const nc_comm *c, nc_coll_id coll, size_t bytes)
{
    nc_alg_id alg = forced(c, coll);
    if (alg != NC_ALG_COUNT) return alg;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].coll == coll && rule_applies(&rules[i], c, bytes)) return rules[i].alg;
    return NC_ALG_COUNT; /* unreachable: every collective has a catch-all row */
}
