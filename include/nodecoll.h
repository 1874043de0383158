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

#ifdef __cplusplus
}
#endif

#endif /* NODECOLL_H */
