/* What a large-count call costs against the int form: MPI_Allreduce_c and MPI_Bcast_c next to
 * MPI_Allreduce and MPI_Bcast, through nodecoll (MPI_) and through the host (PMPI_), the four
 * variants interleaved round by round so that a noisy machine hurts them alike.
 *
 *   large_count_cost [iterations] [bytes...]     (default: 2000 iterations; 8 and 16 MiB)
 *
 * Per size and variant: the median over the rounds (15; 3 from 1 GiB) of the slowest rank's
 * mean time per call (each round: the buffer refilled, a barrier, then `iterations` calls;
 * from 1 MiB a tenth as many, from 1 GiB one).  One buffer per rank: Allreduce is MPI_MAX of
 * doubles in place, Bcast sends bytes from rank 0; a size whose count passes INT_MAX has no
 * int form ("-").  Each variant's result is checked after its rounds. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION < 4
#error "built only where the host has MPI-4's large-count forms (examples/CMakeLists.txt)"
#endif

enum { VARIANTS = 4 };
static const char *names[VARIANTS] = {"MPI_X (nodecoll)", "MPI_X_c (nodecoll)", "PMPI_X (host)", "PMPI_X_c (host)"};
static int rank, size;

static int call(int bcast, int v, char *buf, MPI_Count n)
{
    switch (bcast * VARIANTS + v) {
    case 0: return MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    case 1: return MPI_Allreduce_c(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    case 2: return PMPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    case 3: return PMPI_Allreduce_c(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    case 4: return MPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    case 5: return MPI_Bcast_c(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    case 6: return PMPI_Bcast(buf, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    default: return PMPI_Bcast_c(buf, n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
}

/* The data before a call (as ranks of `r`), and after it. */
static void fill(int bcast, char *buf, size_t bytes, int r)
{
    if (bcast) {
        for (size_t i = 0; i < bytes; i++) buf[i] = (char)(i * 7 + (size_t)r * 31);
        return;
    }
    for (size_t i = 0; i < bytes / sizeof(double); i++) ((double *)buf)[i] = (double)(i % 1000 + (size_t)r);
}

static int result_ok(int bcast, char *buf, size_t bytes)
{
    for (size_t i = 0; bcast && i < bytes; i++)
        if (buf[i] != (char)(i * 7)) return 0;
    for (size_t i = 0; !bcast && i < bytes / sizeof(double); i++)
        if (((double *)buf)[i] != (double)(i % 1000 + (size_t)size - 1)) return 0;
    return 1;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 2000, bad = 0;
    size_t defaults[] = {8, (size_t)16 << 20}, nsizes = argc > 2 ? (size_t)argc - 2 : 2;
    if (rank == 0) printf("%d ranks, %d iterations, us per call (median of the slowest rank's)\n", size, iterations);
    for (size_t k = 0; k < nsizes; k++) {
        size_t bytes = argc > 2 ? (size_t)atoll(argv[2 + k]) : defaults[k];
        int huge = bytes >= ((size_t)1 << 30), rounds = huge ? 3 : 15;
        int iters = huge ? 1 : bytes >= ((size_t)1 << 20) ? (iterations + 9) / 10 : iterations;
        char *buf = malloc(bytes + sizeof(double));
        if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int bcast = 0; bcast < 2; bcast++) {
            MPI_Count n = bcast ? (MPI_Count)bytes : (MPI_Count)(bytes / sizeof(double));
            double samples[VARIANTS][15];
            for (int round = 0; round < rounds; round++)
                for (int v = 0; v < VARIANTS; v++) {
                    if (v % 2 == 0 && n > INT_MAX) continue; /* (no int form of this count) */
                    fill(bcast, buf, bytes, rank);
                    PMPI_Barrier(MPI_COMM_WORLD);
                    double t = MPI_Wtime();
                    for (int i = 0; i < iters; i++) bad |= call(bcast, v, buf, n) != MPI_SUCCESS;
                    t = (MPI_Wtime() - t) / iters;
                    PMPI_Allreduce(&t, &samples[v][round], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                    if (round == rounds - 1 && !result_ok(bcast, buf, bytes)) {
                        bad = 1;
                        printf("rank %d: %s gave a wrong result\n", rank, names[v]);
                    }
                }
            if (rank != 0) continue;
            printf("%-9s %10zu B:", bcast ? "Bcast" : "Allreduce", bytes);
            for (int v = 0; v < VARIANTS; v++) {
                if (v % 2 == 0 && n > INT_MAX) {
                    printf("  %s -", names[v]);
                    continue;
                }
                qsort(samples[v], (size_t)rounds, sizeof(double), by_value);
                printf("  %s %.3f", names[v], 1e6 * samples[v][rounds / 2]);
            }
            printf("\n");
            fflush(stdout);
        }
        free(buf);
    }
    int any = 0;
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
