/* The registry: which algorithm runs each collective (registry.c). */
#ifndef NC_REGISTRY_H
#define NC_REGISTRY_H

#include "engine.h"

/* The algorithm for the call `a` describes, moving `bytes` (as the table counts them): the
 * one a NODECOLL_<COLL>_ALG setting forces if it applies, else the one a tuning rule names
 * (NODECOLL_TUNE_FILE) if it applies, else the first row of the table that matches and whose
 * algorithm applies.  The same on every rank (settings agreed at
 * setup, sizes fixed by the type signatures).  Level 0: a call's algorithm; 1: the node
 * algorithm of a step (the node Bcast inside a call). */
const nc_algorithm *nc_registry_choose(const nc_comm *c, const nc_args *a, size_t bytes, int level);

/* What a call's algorithms' `applies` read of it besides its collective and size: whether a
 * node step's buffers are agreed to be in the shared heaps; nothing else for Barrier, Bcast
 * and the data-movement family (whose rows read only the communicator); for the reductions
 * whether it has a root and whether its op commutes. */
static inline int nc_registry_key(const nc_args *a)
{
    switch (a->coll) {
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
    case NC_COLL_REDUCE_SCATTER:
    case NC_COLL_REDUCE_SCATTER_BLOCK:
    case NC_COLL_SCAN:
    case NC_COLL_EXSCAN: return (a->root < 0) | !!a->reduce.red->commutative << 1 | a->heap_agreed << 2;
    default: return a->heap_agreed;
    }
}

/* nc_registry_choose, answered from the last choice for a call that is alike (inline: every
 * blocking call asks, usually the same question). */
static inline const nc_algorithm *nc_registry_select_at(const nc_comm *c, const nc_args *a, size_t bytes, int level)
{
    const nc_choice *last = &c->chosen[level][a->coll];
    if (last->alg && last->bytes == bytes && last->key == nc_registry_key(a)) return last->alg;
    return nc_registry_choose(c, a, bytes, level);
}
static inline const nc_algorithm *nc_registry_select(const nc_comm *c, const nc_args *a, size_t bytes)
{
    return nc_registry_select_at(c, a, bytes, 0);
}
static inline const nc_algorithm *nc_registry_select_step(const nc_comm *c, const nc_args *a, size_t bytes)
{
    return nc_registry_select_at(c, a, bytes, 1);
}

/* Whether the registry hands every call of `coll` on c to the host MPI (its row's algorithm
 * is the host's): the reason to count, else NC_ALG_COUNT.  Decided from the communicator
 * alone (the data-movement algorithms' requirements read nothing else), so the adapter
 * asks before it looks at the call's arguments. */
nc_alg_id nc_registry_host_reason(const nc_comm *c, nc_coll_id coll);

/* A parameter of a call of `coll` moving `bytes` (the radix of a tree, the step of a single-
 * copy algorithm): a tuning rule's, else `setting`'s (planned with the call; a setting the
 * environment gave has taken the rules' parameter out at setup, core/tune.h). */
int64_t nc_registry_param_ruled(const nc_comm *c, nc_coll_id coll, size_t bytes, nc_tune_param p, int64_t setting);
static inline int64_t nc_registry_param(const nc_comm *c, nc_coll_id coll, size_t bytes, nc_tune_param p,
                                        int64_t setting)
{
    return c->tune ? nc_registry_param_ruled(c, coll, bytes, p, setting) : setting;
}
static inline int nc_registry_radix(const nc_comm *c, nc_coll_id coll, size_t bytes, int64_t setting)
{
    return (int)nc_registry_param(c, coll, bytes, NC_TUNE_RADIX, setting);
}

/* The shape of a reduction fan-in to node rank `root` (a parameter of the tree algorithm,
 * planned once): the node's topology groups or NULL (contiguous rank ranges), and the rank
 * the tree is rooted at (*top; the root copies the result from it when they differ). */
const nc_hier *nc_registry_fanin_shape_grouped(const nc_comm *c, const nc_reduction *red, int root, int *top);
static inline const nc_hier *nc_registry_fanin_shape(const nc_comm *c, const nc_reduction *red, int root, int *top)
{
    *top = 0;
    return c->node.hier ? nc_registry_fanin_shape_grouped(c, red, root, top) : NULL;
}

/* How the leaders spread the node regions of an Allgather(v) across nodes (a parameter of
 * that algorithm, planned once): ring, recursive doubling or dissemination, from the
 * NODECOLL_ALLGATHERV_ALG setting or from the node volumes (bytes per node, reordered
 * here), which every leader knows alike. */
nc_alg_id nc_registry_spread(const nc_comm *c, uint64_t *volumes, int nodes);

#endif
