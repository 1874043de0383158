/* nodecoll's own MPI error codes: each under a standard class, carrying a message that
 * MPI_Error_string returns (MPICH 4.0.2 mangles the strings of codes added to predefined
 * classes: there the message also goes to stderr). */
#ifndef NC_MPI_ERRORS_H
#define NC_MPI_ERRORS_H

#include <mpi.h>

#define NC_MPI_ERRORS(X)                                                                                  \
    X(NULL_HANDLE, MPI_ERR_ARG, "nodecoll: null, freed or invalid node-shared handle")                    \
    X(NULL_ARG, MPI_ERR_ARG, "nodecoll: a required pointer argument (result, buffer, handle, recvcounts) is NULL") \
    X(NOT_HELD, MPI_ERR_ARG, "nodecoll_shared_release: this rank holds no result on the handle (released twice?)") \
    X(COMM, MPI_ERR_COMM, "nodecoll_shared_create: the communicator is null or an intercommunicator")     \
    X(MAX_BYTES, MPI_ERR_ARG, "nodecoll_shared_create: max_bytes is negative")                            \
    X(MAX_DIFFERS, MPI_ERR_ARG, "nodecoll_shared_create: max_bytes differs between ranks")                \
    X(COUNT, MPI_ERR_COUNT, "nodecoll: negative count or displacement, or sendcount != recvcounts[rank]")  \
    X(TOO_BIG, MPI_ERR_TRUNCATE, "nodecoll: the result does not fit in the handle's max_bytes")           \
    X(TYPE, MPI_ERR_TYPE, "nodecoll: null datatype, or one with data outside [0, extent) of an element")   \
    X(ROOT, MPI_ERR_ROOT, "nodecoll_shared_bcast: root out of range")                                    \
    X(OP, MPI_ERR_OP, "nodecoll_shared_allreduce: MPI_OP_NULL")                                           \
    X(OP_ORDER, MPI_ERR_OP, "nodecoll_shared_allreduce: a non-commutative operation across nodes needs "  \
                            "the ranks of each node to be consecutive")                                   \
    X(IN_PLACE, MPI_ERR_BUFFER, "nodecoll: MPI_IN_PLACE without nodecoll_shared_get_buffer before the call") \
    X(REDUCE_IN_PLACE, MPI_ERR_BUFFER,                                                                    \
      "nodecoll_shared_allreduce: MPI_IN_PLACE is not allowed (contributions are private)")              \
    X(BUFFER, MPI_ERR_BUFFER, "nodecoll: NULL send buffer with a non-zero count")                         \
    X(MISMATCH, MPI_ERR_ARG,                                                                              \
      "nodecoll: ranks of a node passed different sizes, counts or roots to the same node-shared call") \
    X(CALL_MISMATCH, MPI_ERR_ARG,                                                                         \
      "nodecoll: ranks entered different collectives, or the same one with a different root, op or length " \
      "(NODECOLL_CHECK)")

typedef enum {
#define NC_ENUM_ERR(name, cls, msg) NC_ERR_##name,
    NC_MPI_ERRORS(NC_ENUM_ERR)
#undef NC_ENUM_ERR
    NC_ERR_COUNT_
} nc_mpi_error_id;

/* Raises error `e` through comm's error handler, as the host MPI raises its own; returns it. */
int nc_mpi_error(MPI_Comm comm, nc_mpi_error_id e);

#endif
