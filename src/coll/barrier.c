/* MPI_Barrier: the algorithms are registered objects (src/coll/barrier/, registry.c). */
#include "engine.h"

int nc_barrier(nc_comm *c)
{
    nc_args a = {.coll = NC_COLL_BARRIER, .root = -1};
    return nc_collective(c, &a, 0);
}
