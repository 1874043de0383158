/*
 * nodecoll — shared-memory collectives for an existing MPI.
 *
 * Linking -lnodecoll (or preloading libnodecoll-<mpi>.so) is enough to accelerate
 * the MPI collectives; this header adds what plain MPI cannot express:
 * introspection of which algorithm ran, and node-shared results (one read-only copy of a
 * collective's result per node, the hybrid "MPI+MPI" model; needs <mpi.h>, which this
 * header includes unless NODECOLL_WITHOUT_MPI is defined, as nodecoll's MPI-free layers do).
 *
 * The introspection functions may be called before MPI_Init and after MPI_Finalize.
 */
#ifndef NODECOLL_H
#define NODECOLL_H

#include <stddef.h>
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
 * collective "single_copy" counts instead the transfers of the single-copy algorithms by
 * the way they took: "heap" (through a peer's shared heap, NODECOLL_HEAP) or "cma".
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

/* Bytes of shared memory this process has mapped for nodecoll: the segments of accelerated
 * communicators and the regions of node-shared handles. */
size_t nodecoll_shm_mapped_bytes(void);

#ifndef NODECOLL_WITHOUT_MPI
/*
 * What nodecoll runs with on a communicator (local; the communicator's first accelerated
 * collective sets it up: before that, or where the host MPI serves it, MPI_ERR_COMM).
 *
 * nodecoll_comm_setting writes into `value` (at most `len` bytes) the value of a NODECOLL_*
 * setting (prefix optional) in force on comm, as a user would type it ("64K", "numa,l3"):
 * rank 0's settings, with the tuning rules' layout and levels for this node's size.  Given a
 * collective ("bcast", "allreduce", ...) and a byte count (as the rules count them), a
 * per-call parameter (NODECOLL_BARRIER_FANIN, _FANOUT, NODECOLL_BCAST_RADIX, NODECOLL_CMA_CHUNK
 * for Bcast, NODECOLL_REDUCE_FANIN, NODECOLL_REDUCE_CHUNK for the reductions) is the value a
 * call of that size takes: a tuning rule's where one applies.  collective NULL: the
 * communicator's value.  An unknown setting or collective: MPI_ERR_ARG.
 *
 * nodecoll_comm_groups writes the topology groups of this rank's node on comm: "flat", or
 * each level with its number of groups, coarse first ("package:2 numa:4").
 */
int nodecoll_comm_setting(MPI_Comm comm, const char *name, const char *collective, MPI_Aint bytes, char *value,
                          int len);
int nodecoll_comm_groups(MPI_Comm comm, char *groups, int len);
#endif

#ifndef NODECOLL_WITHOUT_MPI
/*
 * Node-shared collective results
 * ==============================
 *
 * Plain MPI gives every rank its own copy of a Bcast or Allgather result.  These calls put
 * the result once per node, in shared memory, and return a read-only pointer to it: the
 * node's memory for a result is its size plus one page, whatever the number of ranks.
 *
 *   nodecoll_shared h;
 *   nodecoll_shared_create(comm, n * size * sizeof(double), &h);      // collective
 *   for (...) {
 *       double *mine;                                                    // zero-copy input:
 *       nodecoll_shared_get_buffer(h, (void **)&mine);                   // write my block
 *       compute(mine + rank * n);                                        // in place
 *       const double *all;
 *       nodecoll_shared_allgather(MPI_IN_PLACE, n, MPI_DOUBLE, h, (const void **)&all);
 *       use(all);                          // valid until release or the next call on h
 *   }
 *   nodecoll_shared_free(&h);                                            // collective
 *
 * Rules
 * - A handle belongs to one communicator; every call on it is collective over that
 *   communicator (same order on every rank, as for MPI collectives).  Calls on different
 *   handles are independent.  One thread at a time may use a handle.
 * - A result stays valid until this rank calls nodecoll_shared_release, get_buffer or the
 *   next collective on the same handle.  Until every rank of the node has released it, no
 *   rank writes into it (nobody waits for anything else: no barriers).  So a rank must not
 *   hold a result while it waits for a rank of its node that is itself in get_buffer or a
 *   collective on the same handle (e.g. in an MPI_Barrier): release it first.
 * - The result is read-only.  A rank writes only its own contribution, only into the buffer
 *   nodecoll_shared_get_buffer returned, only between that call and the collective, which
 *   it then makes with MPI_IN_PLACE.  (Allgather(v): its own block; Bcast: the root, all of
 *   it.)  Without get_buffer, the send buffer is copied into the node's copy (one copy).
 * - Datatypes: any datatype whose data lies within [0, extent) of each element (every
 *   predefined type, vectors, structs...).  The result is laid out as MPI would lay out the
 *   receive buffer; bytes between elements are undefined.
 * - Memory: one region per handle (max_bytes rounded up to pages, plus a page), mapped by
 *   every rank of the node; the synchronisation flags live in the communicator's own
 *   control pages.  A communicator has 16 flag sets: beyond 16 live handles (or when shared
 *   memory is unavailable, or nodecoll is disabled), a handle falls back to one private
 *   copy per rank moved by the host MPI, with the same semantics.
 * - Errors follow MPI: the return value is MPI_SUCCESS or an error code, reported first
 *   through the communicator's error handler; MPI_Error_string tells what was wrong.
 *   Errors on a null handle go to MPI_COMM_WORLD's handler.  When the ranks of a node pass
 *   different sizes to the same Allgather(v) or Allreduce, all of them get an error of class
 *   MPI_ERR_ARG (a Bcast: the ranks whose size or root differs from the root's).  Across
 *   nodes such mismatches are not detected (the host MPI may report them on the bridge).
 * - Free every handle before its communicator and before MPI_Finalize.
 * - NODECOLL_SHARED_DEBUG=1 protects the pages (read-only while held, inaccessible once
 *   released): a read after release or a write into a result stops the process with a
 *   message naming the misuse.
 */
typedef struct nodecoll_shared_handle *nodecoll_shared;
#define NODECOLL_SHARED_NULL ((nodecoll_shared)0)

/* Collective over comm.  max_bytes: the largest result any call on the handle will produce
 * (equal on every rank). */
int nodecoll_shared_create(MPI_Comm comm, MPI_Aint max_bytes, nodecoll_shared *handle);

/* Collective.  Releases what this rank holds; sets *handle to NODECOLL_SHARED_NULL. */
int nodecoll_shared_free(nodecoll_shared *handle);

/* Releases this rank's result, waits until every rank of its node has released it, and
 * returns the node's buffer, where this rank may now write its contribution to the next
 * collective on the handle (then called with MPI_IN_PLACE).  Local (waits only for
 * releases). */
int nodecoll_shared_get_buffer(nodecoll_shared handle, void **buffer);

/* Gives the result back before the next call (optional: the next call does it too).
 * Error (MPI_ERR_ARG) if this rank holds no result, e.g. when it releases twice. */
int nodecoll_shared_release(nodecoll_shared handle);

/* MPI_Bcast: count elements of datatype from root.  buffer matters only at the root (the
 * data, or MPI_IN_PLACE after get_buffer); *result points at the node's copy. */
int nodecoll_shared_bcast(const void *buffer, int count, MPI_Datatype datatype, int root,
                          nodecoll_shared handle, const void **result);

/* MPI_Allgather: rank r's count elements are at *result + r * count * extent. */
int nodecoll_shared_allgather(const void *sendbuf, int count, MPI_Datatype datatype,
                              nodecoll_shared handle, const void **result);

/* MPI_Allgatherv: rank r's recvcounts[r] elements are at *result + displs[r] * extent.
 * displs may be NULL: blocks packed in rank order.  If result_displs is not NULL it receives
 * the displacements used (in elements; valid as long as the result). */
int nodecoll_shared_allgatherv(const void *sendbuf, int sendcount, const int recvcounts[],
                               const int displs[], MPI_Datatype datatype, nodecoll_shared handle,
                               const void **result, const int **result_displs);

/* MPI_Allreduce: the node's copy holds op over every rank's sendbuf (private; MPI_IN_PLACE
 * is not allowed).  A non-commutative op additionally needs the ranks of each node to be
 * consecutive when the communicator spans several nodes (MPI_ERR_OP otherwise). */
int nodecoll_shared_allreduce(const void *sendbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              nodecoll_shared handle, const void **result);

/* Local.  node_ranks: ranks sharing this rank's copy (1 when the handle fell back to one copy
 * per rank); node_bytes: shared memory that copy takes on the node (0 for a private copy).
 * Either may be NULL. */
int nodecoll_shared_info(nodecoll_shared handle, int *node_ranks, MPI_Aint *node_bytes);
#endif /* NODECOLL_WITHOUT_MPI */

#ifdef __cplusplus
}
#endif

#endif /* NODECOLL_H */
