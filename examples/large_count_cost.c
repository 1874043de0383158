/* What a large-count call costs against the int form: MPI_Allreduce_c and MPI_Bcast_c next to
 * MPI_Allreduce and MPI_Bcast, through nodecoll (MPI_) and through the host (PMPI_), the four
 * variants interleaved round by round so that a noisy machine hurts them alike.
 *
 *   large_count_cost [iterations] [bytes...]     (default: 2000 iterations; 8 and 16 MiB)
 *
 * Per size and variant: the median over 15 rounds of the slowest rank's mean time per call
 * (each round: a barrier, then `iterations` calls, 16 MiB: a tenth as many).  Allreduce sums
 * doubles; Bcast sends bytes from root 0.  Checks that the four variants agree. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4

enum { ROUNDS = 15, VARIANTS = 4 };
static const char *names[VARIANTS] = {"MPI_X (nodecoll)", "MPI_X_c (nodecoll)", "PMPI_X (host)", "PMPI_X_c (host)"};

static int call(int coll, int v, double *in, double *out, size_t bytes)
{
    MPI_Count n = coll ? (MPI_Count)bytes : (MPI_Count)(bytes / sizeof(double));
    switch (coll * VARIANTS + v) {
    case 0: return MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case 1: return MPI_Allreduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case 2: return PMPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case 3: return PMPI_Allreduce_c(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    case 4: return MPI_Bcast(out, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    case 5: return MPI_Bcast_c(out, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    case 6: return PMPI_Bcast(out, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    default: return PMPI_Bcast_c(out, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 2000;
    size_t defaults[] = {8, (size_t)16 << 20}, nsizes = argc > 2 ? (size_t)argc - 2 : 2;
    if (rank == 0) printf("%d ranks, %d iterations (16 MiB: %d), median of %d rounds, us per call\n", size, iterations,
                          iterations / 10 > 0 ? iterations / 10 : 1, ROUNDS);
    for (size_t k = 0; k < nsizes; k++) {
        size_t bytes = argc > 2 ? (size_t)atoll(argv[2 + k]) : defaults[k];
        int iters = bytes >= ((size_t)1 << 20) ? (iterations / 10 > 0 ? iterations / 10 : 1) : iterations;
        size_t n = bytes / sizeof(double) ? bytes / sizeof(double) : 1;
        double *in = malloc(n * sizeof(double)), *out[VARIANTS];
        for (size_t i = 0; i < n; i++) in[i] = (double)((i + (size_t)rank) % 1000);
        for (int v = 0; v < VARIANTS; v++) out[v] = calloc(n, sizeof(double));
        for (int coll = 0; coll < 2; coll++) {
            double samples[VARIANTS][ROUNDS];
            for (int round = 0; round < ROUNDS; round++)
                for (int v = 0; v < VARIANTS; v++) {
                    if (coll == 1 && rank == 0) memcpy(out[v], in, bytes);
                    PMPI_Barrier(MPI_COMM_WORLD);
                    double t = MPI_Wtime();
                    for (int i = 0; i < iters; i++) bad |= call(coll, v, in, out[v], bytes) != MPI_SUCCESS;
                    t = (MPI_Wtime() - t) / iters, samples[v][round] = t;
                    PMPI_Allreduce(&t, &samples[v][round], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                }
            for (int v = 1; v < VARIANTS; v++) bad |= memcmp(out[v], out[0], bytes) != 0;
            if (rank == 0) {
                printf("%-9s %10zu B:", coll ? "Bcast" : "Allreduce", bytes);
                for (int v = 0; v < VARIANTS; v++) {
                    qsort(samples[v], ROUNDS, sizeof(double), by_value);
                    printf("  %s %.3f", names[v], 1e6 * samples[v][ROUNDS / 2]);
                }
                printf("\n");
            }
        }
        free(in);
        for (int v = 0; v < VARIANTS; v++) free(out[v]);
    }
    int any = 0;
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0 && any) printf("the variants disagree or failed\n");
    MPI_Finalize();
    return any;
}

#else

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    printf("large_count_cost: the host has no MPI_<Coll>_c forms\n");
    MPI_Finalize();
    return 0;
}

#endif
