/* A communicator's virtual topology for the neighbourhood collectives (topology.c). */
#ifndef NC_MPI_TOPOLOGY_H
#define NC_MPI_TOPOLOGY_H

#include <mpi.h>

#include "../coll/comm.h"

/* Reads comm's neighbour lists into c->neighbors (left NULL without a topology), once, while
 * its state is set up: collective (every rank learns the largest neighbourhood, which sizes
 * the edge tables of the shared segment).  c->size and c->rank are set. */
void nc_mpi_topology_read(nc_comm *c, MPI_Comm comm);
void nc_mpi_topology_free(nc_comm *c);

#endif
