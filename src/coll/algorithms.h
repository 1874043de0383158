/* Every registered algorithm (one file each under src/coll/<family>/), and what they share.
 * Which one runs is decided by the registry (registry.c), the only place selection lives. */
#ifndef NC_ALGORITHMS_H
#define NC_ALGORITHMS_H

#include "engine.h"

extern const nc_algorithm nc_barrier_flat, nc_barrier_tree, nc_barrier_dissemination;
extern const nc_algorithm nc_bcast_node;              /* a call on one node: the node step alone */
extern const nc_algorithm nc_bcast_hierarchy;         /* a call: node steps and the bridge */
extern const nc_algorithm nc_bcast_shm, nc_bcast_cma; /* node steps */
/* Reductions (src/coll/reduce/): a call's algorithms, then the node steps the hierarchy runs. */
extern const nc_algorithm nc_reduce_hierarchy, nc_reduce_ordered, nc_scan_chain, nc_scan_hierarchy;
extern const nc_algorithm nc_reduce_tree, nc_reduce_flat, nc_reduce_cma, nc_reduce_shm, nc_reduce_recursive_doubling;

/* Data movement (move.h): each family on one node and across nodes; Alltoall(v,w) one
 * algorithm for both; and the host MPI, where single copy does not work on every node. */
extern const nc_algorithm nc_gather_on_node, nc_gather_across_nodes;
extern const nc_algorithm nc_scatter_on_node, nc_scatter_across_nodes;
extern const nc_algorithm nc_allgather_on_node, nc_allgather_across_nodes;
extern const nc_algorithm nc_alltoall_pairwise;
extern const nc_algorithm nc_move_host;
/* Neighbourhood collectives (coll/neighbor/), on one node and across nodes. */
extern const nc_algorithm nc_neighbor_allgather, nc_neighbor_alltoall;

/* The hard requirements of the data-movement algorithms (src/coll/host.c): large blocks
 * are read or written across the whole node, from any rank, with single copy. */
int nc_move_on_one_node(const nc_comm *c, const nc_args *a);
int nc_move_across_nodes(const nc_comm *c, const nc_args *a);
int nc_move_anywhere(const nc_comm *c, const nc_args *a);

#endif
