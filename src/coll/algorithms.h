/* Every registered algorithm (one file each under src/coll/<family>/), and what they share.
 * Which one runs is decided by the registry (registry.c), the only place selection lives. */
#ifndef NC_ALGORITHMS_H
#define NC_ALGORITHMS_H

#include "engine.h"

extern const nc_algorithm nc_barrier_flat, nc_barrier_tree, nc_barrier_dissemination;
extern const nc_algorithm nc_bcast_hierarchy;         /* a call: node steps and the bridge */
extern const nc_algorithm nc_bcast_shm, nc_bcast_cma; /* node steps */
/* Reductions (src/coll/reduce/): a call's algorithms, then the node steps the hierarchy runs. */
extern const nc_algorithm nc_reduce_hierarchy, nc_reduce_ordered, nc_scan_chain, nc_scan_hierarchy;
extern const nc_algorithm nc_reduce_tree, nc_reduce_flat, nc_reduce_cma, nc_reduce_shm, nc_reduce_recursive_doubling;

#endif
