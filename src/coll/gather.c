/* MPI_Gather(v) and MPI_Scatter(v): the algorithms are registered objects (src/coll/gather/,
 * src/coll/scatter/, registry.c). */
#include "engine.h"

int nc_gatherv(nc_comm *c, nc_coll_id coll, const void *send, size_t send_bytes, const nc_vec *recv, int root)
{
    nc_args a = {.coll = coll, .root = root, .move = {.send = send, .send_bytes = send_bytes, .recv_vec = recv}};
    return nc_collective(c, &a, send_bytes);
}

int nc_scatterv(nc_comm *c, nc_coll_id coll, const nc_vec *send, nc_data *recv, size_t recv_bytes, int root)
{
    nc_args a = {.coll = coll, .root = root, .move = {.send_vec = send, .recv = recv, .recv_bytes = recv_bytes}};
    return nc_collective(c, &a, recv_bytes);
}
