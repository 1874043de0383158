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
/* comm's topology as the host tells it (MPI_CART, MPI_GRAPH, MPI_DIST_GRAPH, or MPI_UNDEFINED:
 * none, degrees 0) and this rank's in- and out-degree; `weighted` (may be NULL): a
 * distributed graph with weights.  Not collective (the Fortran entry points size
 * Neighbor_alltoallw's type arrays with it). */
int nc_mpi_neighbor_degrees(MPI_Comm comm, int *indegree, int *outdegree, int *weighted);

#endif
