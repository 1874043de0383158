/*
 * nodecoll — shared-memory collectives for an existing MPI.
 *
 * Linking -lnodecoll (or preloading libnodecoll-<mpi>.so) is enough to accelerate
 * the MPI collectives; this header adds what plain MPI cannot express:
 * introspection of which algorithm ran, and (later) node-shared results.
 *
 * Every function here may be called before MPI_Init and after MPI_Finalize.
 */
#ifndef NODECOLL_H
#define NODECOLL_H

#include <stdint.h>
/* nodecoll's own MPI-free layers build without mpi.h; users always get it. */
#ifndef NODECOLL_WITHOUT_MPI
#include <mpi.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define NODECOLL_VERSION_MAJOR 0
#define NODECOLL_VERSION_MINOR 1
#define NODECOLL_VERSION_PATCH 0

/* "0.1.0" */
const char *nodecoll_version(void);

/* Name and version of the MPI library this build of nodecoll wraps, e.g. "Open MPI 4.1.4". */
const char *nodecoll_mpi_library(void);

/*
 * Counters: how many calls of each collective took each path.
 *
 * collective: "barrier", "bcast", ...
 * algorithm:  the algorithm that ran ("flat", "tree", "dissemination", "shm", "cma",
 *             "hier" for calls spanning several nodes), or a fallback reason
 *             ("pmpi:intercomm", "pmpi:size1", "pmpi:disabled", "pmpi:args",
 *             "pmpi:no-shm", ...).  The full list is printed by nodecoll-info.
 *
 * Counters are per process, summed over communicators and threads.
 */
typedef struct nodecoll_stat {
    const char *collective;
    const char *algorithm;
    uint64_t calls;
    uint64_t bytes; /* payload bytes moved through this path by this process */
} nodecoll_stat;

/* Number of (collective, algorithm) counters; indices 0..n-1 are valid for nodecoll_stat_get. */
int nodecoll_stat_count(void);

/* Fills *out for counter `index`; returns 0, or -1 if index is out of range. */
int nodecoll_stat_get(int index, nodecoll_stat *out);

/* Calls counted for one pair; an algorithm of "*" sums every path of the collective,
 * and "pmpi:*" sums every fallback.  Unknown names give 0. */
uint64_t nodecoll_stat_calls(const char *collective, const char *algorithm);

/* Sets every counter to zero. */
void nodecoll_stat_reset(void);

/* Prints every non-zero counter, one per line, prefixed by `prefix` (may be NULL). */
void nodecoll_stat_print(void *FILE_stream, const char *prefix);

/*
 * Thread teams: collectives that the threads of one rank carry out together (MPI+OpenMP).
 *
 * Every thread of the team calls the same function with its index in the team (0 .. threads-1,
 * e.g. omp_get_thread_num() inside `#pragma omp parallel`).  Thread 0 makes the MPI call (so
 * MPI_THREAD_FUNNELED suffices when thread 0 is the main thread); the others wait inside the
 * call and take shares of its large copies, single-copy reads and reductions
 * (NODECOLL_TEAM_PART_MIN sets how large a share must be).  Arguments and results are those
 * of the MPI function of the same name, given by thread 0; the other threads' buffer
 * arguments are ignored.  Every thread returns thread 0's return code.  A team serves one
 * collective at a time; use one team per concurrently calling group of threads.
 *
 * Bad input (null team, thread index out of range, threads outside 1..64) returns
 * MPI_ERR_ARG through comm's error handler (nodecoll_team_create: MPI_COMM_WORLD's).
 */
typedef struct nodecoll_team_s *nodecoll_team;

int nodecoll_team_create(int threads, nodecoll_team *team);
int nodecoll_team_free(nodecoll_team *team);

#ifndef NODECOLL_WITHOUT_MPI
int nodecoll_team_bcast(nodecoll_team team, int thread, void *buf, int count, MPI_Datatype type, int root,
                        MPI_Comm comm);
int nodecoll_team_allreduce(nodecoll_team team, int thread, const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int nodecoll_team_allgather(nodecoll_team team, int thread, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm);
int nodecoll_team_alltoallv(nodecoll_team team, int thread, const void *sendbuf, const int sendcounts[],
                            const int sdispls[], MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
#endif

#ifdef __cplusplus
}
#endif

#endif /* NODECOLL_H */
