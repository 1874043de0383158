/* MPI_Allgather(v): the algorithms are registered objects (src/coll/allgather/, registry.c). */
#include "engine.h"

int nc_allgatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv)
{
    nc_args a = {.coll = coll, .root = -1, .move = {.send = send, .send_bytes = send_bytes, .recv_vec = recv}};
    return nc_collective(c, &a, send_bytes);
}
