/* The bridge transport (bridge.c): inter-node steps through the host MPI. */
#ifndef NC_MPI_BRIDGE_H
#define NC_MPI_BRIDGE_H

#include <mpi.h>

#include "../coll/comm.h"

/* The steps on `bridge_comm` (one leader per node: bridge rank `rank` of `size`; rank -1 off
 * the leaders) and on `whole_comm` (every rank of the communicator). */
nc_bridge nc_mpi_bridge(MPI_Comm *bridge_comm, MPI_Comm *whole_comm, int size, int rank);

#endif
