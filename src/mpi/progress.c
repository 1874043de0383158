/* Progress inside the host's blocking point-to-point calls.  While nodecoll has operations
 * outstanding, a rank blocked in MPI_Recv may be the one a peer's MPI_Wait depends on; with
 * the host's own nonblocking collectives its weak progress would move them along inside
 * that call.  So, and only then, the blocking calls below run as their nonblocking forms
 * waited for with nodecoll's progress (nc_mpi_wait_host); otherwise they go straight to the
 * host (one relaxed load). */
#include "request.h"

#define NC_EXPORT __attribute__((visibility("default")))

NC_EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (nc_mpi_host_may_block()) return PMPI_Recv(buf, count, type, source, tag, comm, status);
    MPI_Request r;
    int err = PMPI_Irecv(buf, count, type, source, tag, comm, &r);
    return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, status);
}

NC_EXPORT int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    if (nc_mpi_host_may_block()) return PMPI_Send(buf, count, type, dest, tag, comm);
    MPI_Request r;
    int err = PMPI_Isend(buf, count, type, dest, tag, comm, &r);
    return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, MPI_STATUS_IGNORE);
}

NC_EXPORT int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    if (nc_mpi_host_may_block()) return PMPI_Ssend(buf, count, type, dest, tag, comm);
    MPI_Request r;
    int err = PMPI_Issend(buf, count, type, dest, tag, comm, &r);
    return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, MPI_STATUS_IGNORE);
}

NC_EXPORT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                           MPI_Comm comm, MPI_Status *status)
{
    if (nc_mpi_host_may_block())
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                             recvtag, comm, status);
    MPI_Request recv, send;
    int err = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &recv);
    if (err != MPI_SUCCESS) return err;
    err = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &send);
    if (err != MPI_SUCCESS) {
        PMPI_Cancel(&recv);
        PMPI_Request_free(&recv);
        return err;
    }
    err = nc_mpi_wait_host(&send, MPI_STATUS_IGNORE);
    int recv_err = nc_mpi_wait_host(&recv, status);
    return err != MPI_SUCCESS ? err : recv_err;
}

NC_EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (nc_mpi_host_may_block()) return PMPI_Probe(source, tag, comm, status);
    for (;;) {
        int flag = 0, err = PMPI_Iprobe(source, tag, comm, &flag, status);
        if (err != MPI_SUCCESS || flag) return err;
        nc_mpi_idle();
    }
}

NC_EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    if (nc_mpi_host_may_block()) return PMPI_Mprobe(source, tag, comm, message, status);
    for (;;) {
        int flag = 0, err = PMPI_Improbe(source, tag, comm, &flag, message, status);
        if (err != MPI_SUCCESS || flag) return err;
        nc_mpi_idle();
    }
}

NC_EXPORT int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    if (nc_mpi_host_may_block()) return PMPI_Mrecv(buf, count, type, message, status);
    MPI_Request r;
    int err = PMPI_Imrecv(buf, count, type, message, &r);
    return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, status);
}

/* Polling calls progress too (a loop of MPI_Iprobe is a wait). */
NC_EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    if (!nc_mpi_host_may_block()) nc_mpi_idle_once();
    return PMPI_Iprobe(source, tag, comm, flag, status);
}

NC_EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    if (!nc_mpi_host_may_block()) nc_mpi_idle_once();
    return PMPI_Improbe(source, tag, comm, flag, message, status);
}
