/* MPI_Reduce, MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan: the algorithms
 * are registered objects (src/coll/reduce/, registry.c). */
#include "engine.h"

int nc_reduce(nc_comm *c, const void *send, void *recv, size_t count, const nc_reduction *r, int root)
{
    nc_args a = {.coll = root < 0 ? NC_COLL_ALLREDUCE : NC_COLL_REDUCE, .root = root,
                 .reduce = {send, recv, count, NULL, r}};
    return nc_collective(c, &a, count * r->elem_size);
}

int nc_reduce_scatter(nc_comm *c, nc_coll_id coll, const void *send, void *recv, const size_t *counts,
                      const nc_reduction *r)
{
    size_t total = 0;
    for (int q = 0; q < c->size; q++) total += counts[q];
    nc_args a = {.coll = coll, .root = -1, .reduce = {send, recv, total, counts, r}};
    return nc_collective(c, &a, total * r->elem_size);
}

int nc_scan(nc_comm *c, const void *send, void *recv, size_t count, const nc_reduction *r, int exclusive)
{
    nc_args a = {.coll = exclusive ? NC_COLL_EXSCAN : NC_COLL_SCAN, .root = -1, .reduce = {send, recv, count, NULL, r}};
    return nc_collective(c, &a, count * r->elem_size);
}
