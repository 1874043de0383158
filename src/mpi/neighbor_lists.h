/* A communicator's virtual topology for the neighbourhood collectives (neighbor_lists.c). */
#ifndef NC_MPI_NEIGHBOR_LISTS_H
#define NC_MPI_NEIGHBOR_LISTS_H

#include <mpi.h>

#include "../coll/comm.h"

/* Reads comm's neighbour lists into c->neighbors (left NULL without a topology), once, while
 * its state is set up: collective (every rank learns the largest neighbourhood, which sizes
 * the edge tables of the shared segment).  c->size and c->rank are set. */
void nc_mpi_neighbor_lists_read(nc_comm *c, MPI_Comm comm);
void nc_mpi_neighbor_lists_free(nc_comm *c);

#endif
