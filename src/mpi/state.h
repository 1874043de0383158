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

/* What nc_reduction.host points to: the call's own op and datatype, for inter-node steps
 * through the host MPI (user-defined ops included). */
typedef struct nc_host_op {
    MPI_Op op;
    MPI_Datatype type;
} nc_host_op;

/* The accelerated state of comm, or NULL when this call must go to the host MPI (the reason
 * is counted for `coll`).  Collective on first use. */
nc_mpi_comm *nc_mpi_state(MPI_Comm comm, nc_coll_id coll);

/* Counts a fallback for a call whose arguments we leave to the host MPI to judge. */
void nc_mpi_fallback(nc_coll_id coll, nc_alg_id reason);

/* Reports an error of ours through comm's error handler, as the host MPI would. */
int nc_mpi_raise(MPI_Comm comm, int err);

/* Frees every communicator's state; called at MPI_Finalize. */
void nc_mpi_release_all(void);

#endif
