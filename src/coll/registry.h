/* The registry: which algorithm runs each collective (registry.c). */
#ifndef NC_REGISTRY_H
#define NC_REGISTRY_H

#include "engine.h"

/* The algorithm for the call `a` describes, moving `bytes` (as the table counts them): the
 * one a NODECOLL_<COLL>_ALG setting forces if it applies, else the first row of the table
 * that matches and whose algorithm applies.  The same on every rank (settings agreed at
 * setup, sizes fixed by the type signatures). */
const nc_algorithm *nc_registry_select(const nc_comm *c, const nc_args *a, size_t bytes);
/* The same for the node algorithm of a step (the node Bcast inside a call). */
const nc_algorithm *nc_registry_select_step(const nc_comm *c, const nc_args *a, size_t bytes);

/* Whether the registry hands every call of `coll` on c to the host MPI (its row's algorithm
 * is the host's): the reason to count, else NC_ALG_COUNT.  Decided from the communicator
 * alone (the data-movement algorithms' requirements read nothing else), so the adapter
 * asks before it looks at the call's arguments. */
nc_alg_id nc_registry_host_reason(const nc_comm *c, nc_coll_id coll);

/* How the leaders spread the node regions of an Allgather(v) across nodes (a parameter of
 * that algorithm, planned once): ring, recursive doubling or dissemination, from the
 * NODECOLL_ALLGATHERV_ALG setting or from the node volumes (bytes per node, reordered
 * here), which every leader knows alike. */
nc_alg_id nc_registry_spread(const nc_comm *c, uint64_t *volumes, int nodes);

#endif
