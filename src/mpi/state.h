/* Per-communicator state, created lazily inside the first accelerated collective on a
 * communicator and cached on it with an attribute. */
#ifndef NC_MPI_STATE_H
#define NC_MPI_STATE_H

#include <mpi.h>

#include "../coll/comm.h"

typedef struct nc_mpi_comm {
    nc_comm coll;
    nc_alg_id fallback;   /* NC_ALG_COUNT when accelerated, else why the host MPI runs it */
    MPI_Comm comm;        /* the user's communicator (for clean-up at MPI_Finalize) */
    MPI_Comm node_comm, bridge_comm;
    struct nc_mpi_comm *prev, *next;
} nc_mpi_comm;

/* The accelerated state of comm, or NULL when this call must go to the host MPI (the reason
 * is counted for `coll`).  Collective on first use. */
nc_mpi_comm *nc_mpi_state(MPI_Comm comm, nc_coll_id coll);
/* The same without counting: NULL and the reason in *why. */
nc_mpi_comm *nc_mpi_lookup(MPI_Comm comm, nc_alg_id *why);

/* "Every rank is a node of its own": an nc_comm over a duplicate of comm whose bridge is the
 * whole communicator, for node-shared handles on a communicator nodecoll does not accelerate
 * (each rank then has a copy of its own, moved by the host MPI).  Collective. */
void nc_mpi_solo_comm(MPI_Comm comm, nc_comm *c, MPI_Comm *bridge_comm);
void nc_mpi_solo_comm_free(nc_comm *c, MPI_Comm *bridge_comm);

/* An MPI operation on an MPI datatype as the algorithms see it (nc_reduction.ctx points here). */
typedef struct nc_mpi_op {
    MPI_Datatype type;
    MPI_Op op;
} nc_mpi_op;
nc_reduction nc_mpi_reduction(nc_mpi_op *op, size_t extent, int commutative);

/* Counts a fallback for a call whose arguments we leave to the host MPI to judge. */
void nc_mpi_fallback(nc_coll_id coll, nc_alg_id reason);

/* Reports an error of ours through comm's error handler, as the host MPI would. */
int nc_mpi_raise(MPI_Comm comm, int err);

/* Frees every communicator's state; called at MPI_Finalize. */
void nc_mpi_release_all(void);

#endif
