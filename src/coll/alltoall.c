/* MPI_Alltoall(v,w): the algorithm is a registered object (src/coll/alltoall/, registry.c). */
#include "engine.h"

int nc_alltoallv(nc_comm *c, nc_coll_id coll, const nc_vec *send, const nc_vec *recv)
{
    nc_args a = {.coll = coll, .root = -1, .move = {.send_vec = send, .recv_vec = recv}};
    size_t bytes = 0; /* (counted: what this rank receives) */
    for (int i = 0; i < c->size; i++) bytes += nc_vec_len(recv, i);
    return nc_collective(c, &a, bytes);
}
