/* Helpers shared by the MPI tests: deterministic randomness, failure reporting that names
 * the case, and proof that the accelerated path (not the fallback) ran. */
#ifndef NC_TEST_COMMON_H
#define NC_TEST_COMMON_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodecoll.h"

/* Persistent collectives: MPI-4's MPI_<Coll>_init (MPICH 4), or Open MPI 4.1's MPIX_ forms
 * (mpi-ext.h); T_PERSISTENT where there are any. */
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#define T_INIT(Name) MPIX_##Name##_init
#else
#define T_INIT(Name) MPI_##Name##_init
#endif
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || MPI_VERSION >= 4
#define T_PERSISTENT 1
#endif

static int t_rank, t_size, t_failures;

static inline void t_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
}

/* NODECOLL_TEST_SCALE: 1 normally, smaller under sanitizers.  NODECOLL_TEST_CORES (set by the
 * harness for hosts whose own calls collapse when ranks outnumber the cores, MPICH 4.0: about
 * 8 ms per synchronising step of the PMPI oracle) shrinks it further by cores / ranks, so an
 * oversubscribed run costs about what a run on the cores does.  Call after t_init. */
static inline int t_scale(int n)
{
    const char *s = getenv("NODECOLL_TEST_SCALE"), *cores = getenv("NODECOLL_TEST_CORES");
    double f = s ? atof(s) : 1.0;
    if (cores && atoi(cores) > 0 && t_size > atoi(cores)) f = f * atoi(cores) / t_size;
    int v = (int)(n * f);
    return v < 1 ? 1 : v;
}

/* splitmix64: the same sequence on every rank from the same seed. */
static inline uint64_t t_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* order[0..n) = a random permutation of 0..n-1 (Fisher-Yates, n - 1 draws). */
static inline void t_permutation(int *order, int n, uint64_t *state)
{
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(t_rand(state) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

__attribute__((format(printf, 1, 2))) static inline void t_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL [rank %d/%d]: ", t_rank, t_size);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    t_failures++;
}

#define T_CHECK(cond, ...) \
    do { if (!(cond)) t_fail(__VA_ARGS__); } while (0)

static inline const char *t_mpi_name(void)
{
    return nodecoll_mpi_library();
}

/* Ends the test: exit code 1 on any rank's failure. */
static inline int t_finish(const char *name)
{
    int total = 0;
    PMPI_Allreduce(&t_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (t_rank == 0) printf("%s: %s (%d ranks, %s)\n", name, total ? "FAILED" : "passed", t_size, t_mpi_name());
    MPI_Finalize();
    return total ? 1 : 0;
}

#endif
