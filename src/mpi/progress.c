/* Progress inside the host's blocking point-to-point calls.  While nodecoll has operations
 * outstanding, a rank blocked in MPI_Recv may be the one a peer's MPI_Wait depends on; with
 * the host's own nonblocking collectives its weak progress would move them along inside
 * that call.  So, and only then, the blocking calls below run as their nonblocking forms
 * waited for with nodecoll's progress (nc_mpi_wait_host); otherwise they go straight to the
 * host (one relaxed load).  Each is written once for its count type and generated in the int
 * form and, where the host has MPI-4's large-count functions, the _c form (MPI_Count counts:
 * what mpi_f08 callers with MPI_COUNT_KIND counts and mpi4py on MPICH reach). */
#include <stdlib.h>

#include "request.h"

#define NC_EXPORT __attribute__((visibility("default")))

#define NC_CAT_(a, b) a##b
#define NC_CAT(a, b) NC_CAT_(a, b)
#define NC_HOST(name, sfx) NC_CAT(PMPI_, NC_CAT(name, sfx))

/* MPI_<Blocking><sfx>, a send, as its nonblocking form MPI_<Nonblocking><sfx> waited for. */
#define NC_BLOCKING_SEND(sfx, count_t, Blocking, Nonblocking)                                                        \
    NC_EXPORT int NC_CAT(NC_CAT(MPI_, Blocking), sfx)(const void *buf, count_t count, MPI_Datatype type, int dest,    \
                                                      int tag, MPI_Comm comm)                                        \
    {                                                                                                                \
        if (nc_mpi_host_may_block()) return NC_HOST(Blocking, sfx)(buf, count, type, dest, tag, comm);               \
        MPI_Request r;                                                                                               \
        int err = NC_HOST(Nonblocking, sfx)(buf, count, type, dest, tag, comm, &r);                                  \
        return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, MPI_STATUS_IGNORE);                                   \
    }

/* The point-to-point calls of one count type (`count_t`), `sfx` "" or _c. */
#define NC_BLOCKING_P2P(sfx, count_t)                                                                                \
    NC_EXPORT int NC_CAT(MPI_Recv, sfx)(void *buf, count_t count, MPI_Datatype type, int source, int tag,            \
                                        MPI_Comm comm, MPI_Status *status)                                           \
    {                                                                                                                \
        if (nc_mpi_host_may_block()) return NC_HOST(Recv, sfx)(buf, count, type, source, tag, comm, status);        \
        MPI_Request r;                                                                                               \
        int err = NC_HOST(Irecv, sfx)(buf, count, type, source, tag, comm, &r);                                     \
        return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, status);                                              \
    }                                                                                                                \
    NC_BLOCKING_SEND(sfx, count_t, Send, Isend)                                                                      \
    NC_BLOCKING_SEND(sfx, count_t, Ssend, Issend)                                                                    \
    NC_BLOCKING_SEND(sfx, count_t, Rsend, Irsend)                                                                    \
    NC_EXPORT int NC_CAT(MPI_Sendrecv, sfx)(const void *sendbuf, count_t sendcount, MPI_Datatype sendtype, int dest, \
                                            int sendtag, void *recvbuf, count_t recvcount, MPI_Datatype recvtype,    \
                                            int source, int recvtag, MPI_Comm comm, MPI_Status *status)              \
    {                                                                                                                \
        if (nc_mpi_host_may_block())                                                                                 \
            return NC_HOST(Sendrecv, sfx)(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, \
                                          source, recvtag, comm, status);                                            \
        MPI_Request recv, send;                                                                                      \
        int err = NC_HOST(Irecv, sfx)(recvbuf, recvcount, recvtype, source, recvtag, comm, &recv);                  \
        if (err != MPI_SUCCESS) return err;                                                                          \
        err = NC_HOST(Isend, sfx)(sendbuf, sendcount, sendtype, dest, sendtag, comm, &send);                        \
        if (err != MPI_SUCCESS) {                                                                                    \
            PMPI_Cancel(&recv);                                                                                      \
            PMPI_Request_free(&recv);                                                                                \
            return err;                                                                                              \
        }                                                                                                            \
        err = nc_mpi_wait_host(&send, MPI_STATUS_IGNORE);                                                            \
        int recv_err = nc_mpi_wait_host(&recv, status);                                                              \
        return err != MPI_SUCCESS ? err : recv_err;                                                                  \
    }                                                                                                                \
    NC_EXPORT int NC_CAT(MPI_Mrecv, sfx)(void *buf, count_t count, MPI_Datatype type, MPI_Message *message,          \
                                         MPI_Status *status)                                                         \
    {                                                                                                                \
        if (nc_mpi_host_may_block()) return NC_HOST(Mrecv, sfx)(buf, count, type, message, status);                 \
        MPI_Request r;                                                                                               \
        int err = NC_HOST(Imrecv, sfx)(buf, count, type, message, &r);                                              \
        return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, status);                                              \
    }

NC_BLOCKING_P2P(, int)

#ifdef NODECOLL_HAVE_MPI_LARGE_COUNT
NC_BLOCKING_P2P(_c, MPI_Count)

/* MPI-4 has the nonblocking form of Sendrecv_replace wherever it has the _c functions. */
#define NC_SENDRECV_REPLACE(sfx, count_t)                                                                            \
    NC_EXPORT int NC_CAT(MPI_Sendrecv_replace, sfx)(void *buf, count_t count, MPI_Datatype type, int dest,           \
                                                    int sendtag, int source, int recvtag, MPI_Comm comm,             \
                                                    MPI_Status *status)                                              \
    {                                                                                                                \
        if (nc_mpi_host_may_block())                                                                                 \
            return NC_HOST(Sendrecv_replace, sfx)(buf, count, type, dest, sendtag, source, recvtag, comm, status);   \
        MPI_Request r;                                                                                               \
        int err = NC_HOST(Isendrecv_replace, sfx)(buf, count, type, dest, sendtag, source, recvtag, comm, &r);      \
        return err != MPI_SUCCESS ? err : nc_mpi_wait_host(&r, status);                                              \
    }
NC_SENDRECV_REPLACE(, int)
NC_SENDRECV_REPLACE(_c, MPI_Count)
#else
/* Sendrecv_replace without MPI-4's MPI_Isendrecv_replace: the outgoing data packed apart
 * (the receive overwrites the buffer it came from), sent as MPI_PACKED, which matches any
 * receive of the same type signature. */
static int sendrecv_replace_packed(void *buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                                   int recvtag, MPI_Comm comm, MPI_Status *status)
{
    int bytes = 0, position = 0, err = PMPI_Pack_size(count, type, comm, &bytes);
    if (err != MPI_SUCCESS) return err;
    void *packed = malloc(bytes > 0 ? (size_t)bytes : 1);
    if (!packed) return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
    err = PMPI_Pack(buf, count, type, packed, bytes, &position, comm);
    MPI_Request recv, send;
    if (err == MPI_SUCCESS) err = PMPI_Irecv(buf, count, type, source, recvtag, comm, &recv);
    if (err == MPI_SUCCESS) {
        err = PMPI_Isend(packed, position, MPI_PACKED, dest, sendtag, comm, &send);
        if (err != MPI_SUCCESS) {
            PMPI_Cancel(&recv);
            PMPI_Request_free(&recv);
        } else {
            err = nc_mpi_wait_host(&send, MPI_STATUS_IGNORE);
            int recv_err = nc_mpi_wait_host(&recv, status);
            if (err == MPI_SUCCESS) err = recv_err;
        }
    }
    free(packed);
    return err;
}

NC_EXPORT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag, int source,
                                   int recvtag, MPI_Comm comm, MPI_Status *status)
{
    if (nc_mpi_host_may_block())
        return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
    return sendrecv_replace_packed(buf, count, type, dest, sendtag, source, recvtag, comm, status);
}
#endif

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
