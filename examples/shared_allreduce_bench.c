/* The node-shared Allreduce (sum of doubles) against the host's PMPI_Allreduce, for choosing
 * NODECOLL_SHARED_CHUNK (set it in the environment; docs/results.md has the figures).
 *
 *   mpiexec -np P shared_allreduce_bench
 *
 * Per size: microseconds per call, slowest rank, median of 9 measurements. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "nodecoll.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over 9 measurements of `iters` calls, slowest rank. */
static double time_calls(int shared, const double *src, double *dst, int n, int iters, nodecoll_shared h)
{
    double t[9];
    const void *result;
    for (int k = 0; k < 9; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (shared) nodecoll_shared_allreduce(src, n, MPI_DOUBLE, MPI_SUM, h, &result);
            else PMPI_Allreduce(src, dst, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        double dt = (MPI_Wtime() - t0) / iters;
        MPI_Allreduce(&dt, &t[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, 9, sizeof *t, cmp_double);
    return t[4];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static const int sizes[] = {1024, 16384, 131072, 1048576};
    const int most = 1048576;
    nodecoll_shared h;
    nodecoll_shared_create(MPI_COMM_WORLD, (MPI_Aint)(most * sizeof(double)), &h);
    double *src = malloc(most * sizeof(double)), *dst = malloc(most * sizeof(double));
    for (int i = 0; i < most; i++) src[i] = i % 1000;
    const char *chunk = getenv("NODECOLL_SHARED_CHUNK");
    for (int s = 0; s < 4; s++) {
        int n = sizes[s], iters = n >= 131072 ? 20 : 200;
        double ts = time_calls(1, src, dst, n, iters, h), tp = time_calls(0, src, dst, n, iters, h);
        if (rank == 0)
            printf("%8d doubles: node-shared (chunk %s) %9.2f us, PMPI_Allreduce %9.2f us\n", n,
                   chunk ? chunk : "default", ts * 1e6, tp * 1e6);
    }
    nodecoll_shared_free(&h);
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
