/* Per-process call counters by collective and algorithm (each thread counts in its own block,
 * summed when read: exact totals, no locked instruction on the fast path; stats.c). */
#ifndef NC_STATS_H
#define NC_STATS_H

#include <stddef.h>
#include <stdint.h>

/* Names match nodecoll-bench's --coll names. */
#define NC_COLLECTIVES(X)                                                                  \
    X(BARRIER, "barrier") X(BCAST, "bcast") X(REDUCE, "reduce") X(ALLREDUCE, "allreduce")  \
    X(REDUCE_SCATTER, "reduce_scatter") X(REDUCE_SCATTER_BLOCK, "reduce_scatter_block")    \
    X(SCAN, "scan") X(EXSCAN, "exscan") X(GATHER, "gather") X(GATHERV, "gatherv")          \
    X(SCATTER, "scatter") X(SCATTERV, "scatterv") X(ALLGATHER, "allgather")                \
    X(ALLGATHERV, "allgatherv") X(ALLTOALL, "alltoall") X(ALLTOALLV, "alltoallv")          \
    X(ALLTOALLW, "alltoallw") X(NEIGHBOR_ALLGATHER, "neighbor_allgather")                  \
    X(NEIGHBOR_ALLGATHERV, "neighbor_allgatherv") X(NEIGHBOR_ALLTOALL, "neighbor_alltoall")  \
    X(NEIGHBOR_ALLTOALLV, "neighbor_alltoallv") X(NEIGHBOR_ALLTOALLW, "neighbor_alltoallw")  \
    X(SINGLE_COPY, "single_copy") X(REQUESTS, "requests")
/* (single_copy is no collective: it counts the transfers of the single-copy algorithms by the
 * way they took, heap or cma, core/single_copy.h; nor is requests: it counts the nonblocking
 * calls that restarted the request of the same call before them, `repeated`,
 * src/mpi/request.c) */

/* Node-level algorithms, inter-node steps, staging, and every reason to use the host MPI. */
#define NC_ALGORITHMS(X)                                                                   \
    X(FLAT, "flat") X(TREE, "tree") X(DISSEMINATION, "dissemination") X(SHM, "shm")        \
    X(CMA, "cma") X(CHAIN, "chain") X(RECURSIVE_DOUBLING, "recursive-doubling") X(ORDERED, "ordered") X(BRIDGE, "bridge") X(RING, "ring") X(PACKED, "packed") X(TYPED, "typed") X(PMPI_DISABLED, "pmpi:disabled") \
    X(PMPI_ARGS, "pmpi:args") X(PMPI_TYPE, "pmpi:type") X(PMPI_NO_CMA, "pmpi:no-cma") X(PMPI_INTERCOMM, "pmpi:intercomm") X(PMPI_SIZE1, "pmpi:size1") \
    X(PMPI_NO_SHM, "pmpi:no-shm") X(PMPI_NOT_SET_UP, "pmpi:not-set-up") X(PMPI_FINALIZED, "pmpi:finalized") \
    X(NODE_SHARED, "node-shared") X(HIERARCHY, "hierarchy") X(HEAP, "heap") X(REPEATED, "repeated")

typedef enum {
#define NC_ENUM_COLL(id, name) NC_COLL_##id,
    NC_COLLECTIVES(NC_ENUM_COLL)
#undef NC_ENUM_COLL
    NC_COLL_COUNT
} nc_coll_id;

typedef enum {
#define NC_ENUM_ALG(id, name) NC_ALG_##id,
    NC_ALGORITHMS(NC_ENUM_ALG)
#undef NC_ENUM_ALG
    NC_ALG_COUNT
} nc_alg_id;

const char *nc_coll_name(nc_coll_id c);
const char *nc_alg_name(nc_alg_id a);
int nc_alg_is_fallback(nc_alg_id a);

void nc_stats_count(nc_coll_id c, nc_alg_id a, size_t bytes);

#endif
