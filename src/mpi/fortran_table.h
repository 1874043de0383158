/* The one table of nodecoll's Fortran entry points (fortran.c generates them from it).
 *
 * Where the host's Fortran bindings call PMPI_* themselves, a Fortran program would never
 * reach nodecoll: Open MPI 4.1's mpif.h / `use mpi` bindings (libmpi_mpifh) and its mpi_f08
 * module (libmpi_usempif08, through the same C functions) call PMPI_ for everything; MPICH
 * 4.0's mpif.h / `use mpi` bindings call MPI_* (nodecoll's C entry points serve them), but
 * its mpi_f08 routines without a choice buffer (Barrier, Finalize, the completion calls,
 * Type_commit/free, the probes) call PMPI_ directly (found with objdump; those with buffers
 * go through C helpers that call MPI_*).  nodecoll therefore provides, under Open MPI,
 * every entry of this table under every name the host exports (mpi_x, mpi_x_, mpi_x__,
 * MPI_X and mpi_f08's mpi_x_f08_), and under MPICH only the mpi_f08 names of the entries
 * without buffers: no call is intercepted twice.
 *
 * Each entry point converts its arguments as the host's binding does (handles with the
 * *_f2c/_c2f functions, the host's Fortran MPI_IN_PLACE and MPI_BOTTOM sentinels, statuses,
 * LOGICAL flags) and calls nodecoll's C entry point of the same name, which runs nodecoll's
 * path or hands the call to the host's PMPI_ function, as the binding would have; the error
 * code comes back in ierror (which mpi_f08 may omit: NULL).
 *
 * X(forms, buffers, Name, lower, UPPER, arguments):
 *   forms      COLL: the blocking call MPI_<Name>, its nonblocking form MPI_I<lower> (one
 *              more argument, the request) and its persistent form (info, request);
 *              NCOLL: the same for a neighbourhood collective, whose persistent form the
 *              host may lack apart (request.h); ONE: MPI_<Name> only
 *   buffers    BUF when a choice buffer is among the arguments, else NOBUF
 *   lower, UPPER  the Fortran name without "mpi_" in both cases (the preprocessor cannot
 *              change case)
 *   arguments  a sequence of (kind, name), in the C call's order; the kinds (fortran.c):
 *     BUF     a choice buffer (MPI_BOTTOM)           IPBUF  one that may be MPI_IN_PLACE too
 *     INT     an INTEGER passed as int               INTS   an INTEGER array (counts, displs)
 *     AINTS   an INTEGER(KIND=MPI_ADDRESS_KIND) array (Neighbor_alltoallw's displacements)
 *     TYPE, OP, COMM, INFO   handles                 STYPES, RTYPES  Alltoallw's type arrays
 *                                                    (send: none when sendbuf is in place)
 *     OUT_TYPES, IN_TYPES  Neighbor_alltoallw's type arrays (one per out-edge, per in-edge)
 *     REQUEST out, REQUEST_INOUT, REQUEST_IN,        STATUS   a status (MPI_STATUS_IGNORE)
 *     REQUEST_FREED (Request_free's)
 *     FLAG    a LOGICAL result                       MESSAGE out, MESSAGE_INOUT
 *     TYPE_INOUT, OP_INOUT  a datatype or op the call replaces (commit, free)
 * The completion calls on arrays of requests (Waitall ... Startall) and MPI_OP_CREATE (its
 * function argument) are written out in fortran.c; their names come from the same naming
 * rule. */
#ifndef NC_MPI_FORTRAN_TABLE_H
#define NC_MPI_FORTRAN_TABLE_H

/* (argument sequences the plain and the neighbourhood forms share) */
#define NC_F_ALLGATHER_SEQ \
    (IPBUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(BUF, recvbuf)(INT, recvcount)(TYPE, recvtype)(COMM, comm)
#define NC_F_ALLGATHERV_SEQ                                                                          \
    (IPBUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(BUF, recvbuf)(INTS, recvcounts)(INTS, displs) \
    (TYPE, recvtype)(COMM, comm)
#define NC_F_ALLTOALLV_SEQ                                                                                \
    (IPBUF, sendbuf)(INTS, sendcounts)(INTS, sdispls)(TYPE, sendtype)(BUF, recvbuf)(INTS, recvcounts) \
    (INTS, rdispls)(TYPE, recvtype)(COMM, comm)

#define NC_FORTRAN_TABLE(X)                                                                                       \
    /* collectives nodecoll accelerates */                                                                        \
    X(COLL, NOBUF, Barrier, barrier, BARRIER, (COMM, comm))                                                       \
    X(COLL, BUF, Bcast, bcast, BCAST, (BUF, buffer)(INT, count)(TYPE, datatype)(INT, root)(COMM, comm))           \
    X(COLL, BUF, Gather, gather, GATHER,                                                                          \
      (IPBUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(BUF, recvbuf)(INT, recvcount)(TYPE, recvtype)(INT, root)   \
      (COMM, comm))                                                                                               \
    X(COLL, BUF, Gatherv, gatherv, GATHERV,                                                                       \
      (IPBUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(BUF, recvbuf)(INTS, recvcounts)(INTS, displs)              \
      (TYPE, recvtype)(INT, root)(COMM, comm))                                                                    \
    X(COLL, BUF, Scatter, scatter, SCATTER,                                                                       \
      (BUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(IPBUF, recvbuf)(INT, recvcount)(TYPE, recvtype)(INT, root)   \
      (COMM, comm))                                                                                               \
    X(COLL, BUF, Scatterv, scatterv, SCATTERV,                                                                    \
      (BUF, sendbuf)(INTS, sendcounts)(INTS, displs)(TYPE, sendtype)(IPBUF, recvbuf)(INT, recvcount)              \
      (TYPE, recvtype)(INT, root)(COMM, comm))                                                                    \
    X(COLL, BUF, Allgather, allgather, ALLGATHER, NC_F_ALLGATHER_SEQ)                                             \
    X(COLL, BUF, Allgatherv, allgatherv, ALLGATHERV, NC_F_ALLGATHERV_SEQ)                                         \
    X(COLL, BUF, Alltoall, alltoall, ALLTOALL, NC_F_ALLGATHER_SEQ) /* (the same arguments) */                     \
    X(COLL, BUF, Alltoallv, alltoallv, ALLTOALLV, NC_F_ALLTOALLV_SEQ)                                             \
    X(COLL, BUF, Alltoallw, alltoallw, ALLTOALLW,                                                                 \
      (IPBUF, sendbuf)(INTS, sendcounts)(INTS, sdispls)(STYPES, sendtypes)(BUF, recvbuf)(INTS, recvcounts)        \
      (INTS, rdispls)(RTYPES, recvtypes)(COMM, comm))                                                             \
    X(NCOLL, BUF, Neighbor_allgather, neighbor_allgather, NEIGHBOR_ALLGATHER, NC_F_ALLGATHER_SEQ)                 \
    X(NCOLL, BUF, Neighbor_allgatherv, neighbor_allgatherv, NEIGHBOR_ALLGATHERV, NC_F_ALLGATHERV_SEQ)             \
    X(NCOLL, BUF, Neighbor_alltoall, neighbor_alltoall, NEIGHBOR_ALLTOALL, NC_F_ALLGATHER_SEQ)                    \
    X(NCOLL, BUF, Neighbor_alltoallv, neighbor_alltoallv, NEIGHBOR_ALLTOALLV, NC_F_ALLTOALLV_SEQ)                 \
    X(NCOLL, BUF, Neighbor_alltoallw, neighbor_alltoallw, NEIGHBOR_ALLTOALLW,                                     \
      (BUF, sendbuf)(INTS, sendcounts)(AINTS, sdispls)(OUT_TYPES, sendtypes)(BUF, recvbuf)(INTS, recvcounts)      \
      (AINTS, rdispls)(IN_TYPES, recvtypes)(COMM, comm))                                                          \
    X(COLL, BUF, Reduce, reduce, REDUCE,                                                                          \
      (IPBUF, sendbuf)(BUF, recvbuf)(INT, count)(TYPE, datatype)(OP, op)(INT, root)(COMM, comm))                  \
    X(COLL, BUF, Allreduce, allreduce, ALLREDUCE,                                                                 \
      (IPBUF, sendbuf)(BUF, recvbuf)(INT, count)(TYPE, datatype)(OP, op)(COMM, comm))                             \
    X(COLL, BUF, Reduce_scatter, reduce_scatter, REDUCE_SCATTER,                                                  \
      (IPBUF, sendbuf)(BUF, recvbuf)(INTS, recvcounts)(TYPE, datatype)(OP, op)(COMM, comm))                       \
    X(COLL, BUF, Reduce_scatter_block, reduce_scatter_block, REDUCE_SCATTER_BLOCK,                                \
      (IPBUF, sendbuf)(BUF, recvbuf)(INT, recvcount)(TYPE, datatype)(OP, op)(COMM, comm))                         \
    X(COLL, BUF, Scan, scan, SCAN, (IPBUF, sendbuf)(BUF, recvbuf)(INT, count)(TYPE, datatype)(OP, op)(COMM, comm)) \
    X(COLL, BUF, Exscan, exscan, EXSCAN,                                                                          \
      (IPBUF, sendbuf)(BUF, recvbuf)(INT, count)(TYPE, datatype)(OP, op)(COMM, comm))                             \
    /* the completion calls nodecoll's requests need (arrays: fortran.c) */                                      \
    X(ONE, NOBUF, Wait, wait, WAIT, (REQUEST_INOUT, request)(STATUS, status))                                     \
    X(ONE, NOBUF, Test, test, TEST, (REQUEST_INOUT, request)(FLAG, flag)(STATUS, status))                         \
    X(ONE, NOBUF, Request_get_status, request_get_status, REQUEST_GET_STATUS,                                     \
      (REQUEST_IN, request)(FLAG, flag)(STATUS, status))                                                          \
    X(ONE, NOBUF, Request_free, request_free, REQUEST_FREE, (REQUEST_FREED, request))                             \
    X(ONE, NOBUF, Start, start, START, (REQUEST_INOUT, request))                                                  \
    /* the blocking point-to-point calls that progress nodecoll's pending operations */                          \
    X(ONE, BUF, Send, send, SEND, (BUF, buf)(INT, count)(TYPE, datatype)(INT, dest)(INT, tag)(COMM, comm))        \
    X(ONE, BUF, Ssend, ssend, SSEND, (BUF, buf)(INT, count)(TYPE, datatype)(INT, dest)(INT, tag)(COMM, comm))     \
    X(ONE, BUF, Recv, recv, RECV,                                                                                 \
      (BUF, buf)(INT, count)(TYPE, datatype)(INT, source)(INT, tag)(COMM, comm)(STATUS, status))                  \
    X(ONE, BUF, Sendrecv, sendrecv, SENDRECV,                                                                     \
      (BUF, sendbuf)(INT, sendcount)(TYPE, sendtype)(INT, dest)(INT, sendtag)(BUF, recvbuf)(INT, recvcount)       \
      (TYPE, recvtype)(INT, source)(INT, recvtag)(COMM, comm)(STATUS, status))                                    \
    X(ONE, BUF, Mrecv, mrecv, MRECV, (BUF, buf)(INT, count)(TYPE, datatype)(MESSAGE_INOUT, message)(STATUS, status)) \
    X(ONE, NOBUF, Probe, probe, PROBE, (INT, source)(INT, tag)(COMM, comm)(STATUS, status))                       \
    X(ONE, NOBUF, Iprobe, iprobe, IPROBE, (INT, source)(INT, tag)(COMM, comm)(FLAG, flag)(STATUS, status))        \
    X(ONE, NOBUF, Mprobe, mprobe, MPROBE, (INT, source)(INT, tag)(COMM, comm)(MESSAGE, message)(STATUS, status))  \
    X(ONE, NOBUF, Improbe, improbe, IMPROBE,                                                                      \
      (INT, source)(INT, tag)(COMM, comm)(FLAG, flag)(MESSAGE, message)(STATUS, status))                          \
    /* what nodecoll tracks besides: committed types, types held by its requests, user ops, the end */          \
    X(ONE, NOBUF, Type_commit, type_commit, TYPE_COMMIT, (TYPE_INOUT, datatype))                                  \
    X(ONE, NOBUF, Type_free, type_free, TYPE_FREE, (TYPE_INOUT, datatype))                                        \
    X(ONE, NOBUF, Op_free, op_free, OP_FREE, (OP_INOUT, op))                                                      \
    X(ONE, NOBUF, Finalize, finalize, FINALIZE, )

#endif
