/* Zhou et al., figure 7: within one node, the node-shared Allgather against MPI_Allgather, for
 * 1 to 32768 doubles per rank.  Each variant has every rank write its block (into its send
 * buffer, or in place into the node's copy after nodecoll_shared_get_buffer) and then make
 * the call; the node-shared cost stays nearly flat because no rank copies anyone's data.
 *
 *   mpiexec -np P shared_allgather_bench [max_count] [rounds]
 *
 * Per size: the variants alternate within each round; a round's time per call is the
 * slowest rank's; the median over rounds is printed (microseconds), with PMPI / shared.
 * "MPI_Allgather" is whatever the program links: the host MPI's, or nodecoll's where it
 * accelerates Allgather; "PMPI" always the host's.  "MPI+MPI" is Zhou et al.'s own scheme on
 * one node: an MPI-3 shared window, each rank writes its block between two MPI_Barriers
 * (the first so nobody still reads the previous result, the second so all blocks are in).
 * After each size every variant's result is checked; the exit status is 1 if any was wrong. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodecoll.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

#define VARIANTS 4

typedef struct bench {
    int rank, size, count, iters;
    double *send, *recv, *window_base;
    const double *shared_result; /* the node-shared variant's last result */
    nodecoll_shared h;
} bench;

static void write_block(double *block, int count, int iter)
{
    for (int i = 0; i < count; i++) block[i] = iter + i;
}

/* Seconds per call of variant v (0: PMPI_Allgather, 1: MPI_Allgather, 2: node-shared,
 * 3: Zhou et al.'s window and barriers), slowest rank. */
static double time_variant(bench *b, int v)
{
    const void *result;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < b->iters; it++) {
        if (v == 3) {
            MPI_Barrier(MPI_COMM_WORLD);
            write_block(b->window_base + (size_t)b->rank * b->count, b->count, it);
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (v == 2) {
            double *buf;
            nodecoll_shared_get_buffer(b->h, (void **)&buf);
            write_block(buf + (size_t)b->rank * b->count, b->count, it);
            nodecoll_shared_allgather(MPI_IN_PLACE, b->count, MPI_DOUBLE, b->h, &result);
            b->shared_result = result;
        } else {
            write_block(b->send, b->count, it);
            (v ? MPI_Allgather : PMPI_Allgather)(b->send, b->count, MPI_DOUBLE, b->recv, b->count, MPI_DOUBLE,
                                                 MPI_COMM_WORLD);
        }
    }
    double t = (MPI_Wtime() - t0) / b->iters, slowest;
    PMPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* Runs variant v once more and checks its result: every rank's block of the last call (the
 * benchmark is also a test: a wrong result fails it).  Returns the number of bad values. */
static int verify_variant(bench *b, int v)
{
    int iters = b->iters, bad = 0;
    b->iters = 1;
    time_variant(b, v);
    b->iters = iters;
    const double *all = v == 3 ? b->window_base : v == 2 ? b->shared_result : b->recv;
    for (size_t k = 0; k < (size_t)b->size * (size_t)b->count; k++) bad += all[k] != (double)(k % (size_t)b->count);
    if (bad) fprintf(stderr, "shared_allgather_bench: rank %d, %d doubles per rank, variant %d: %d wrong values\n",
                     b->rank, b->count, v, bad);
    MPI_Barrier(MPI_COMM_WORLD); /* (the window variant: nobody rewrites a block still being checked) */
    return bad;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    bench b;
    int max_count = argc > 1 ? atoi(argv[1]) : 32768, rounds = argc > 2 ? atoi(argv[2]) : 7;
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    b.send = malloc(sizeof(double) * (size_t)max_count);
    b.recv = malloc(sizeof(double) * (size_t)max_count * (size_t)b.size);
    MPI_Aint bytes = (MPI_Aint)(sizeof(double) * (size_t)max_count * (size_t)b.size);
    nodecoll_shared_create(MPI_COMM_WORLD, bytes, &b.h);
    MPI_Win window; /* Zhou et al.: the leader allocates, everybody queries its base */
    MPI_Aint window_size;
    int disp_unit;
    MPI_Win_allocate_shared(b.rank ? 0 : bytes, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &b.window_base, &window);
    MPI_Win_shared_query(window, 0, &window_size, &disp_unit, &b.window_base);
    if (b.rank == 0)
        printf("%8s %12s %12s %12s %12s %8s  (us per call, %d ranks, median of %d rounds)\n", "doubles", "PMPI",
               "MPI_Allgather", "node-shared", "MPI+MPI", "PMPI/ns", b.size, rounds);
    double *t[VARIANTS];
    int bad = 0;
    for (int v = 0; v < VARIANTS; v++) t[v] = malloc(sizeof(double) * (size_t)rounds);
    for (b.count = 1; b.count <= max_count; b.count *= 2) {
        b.iters = 1;
        /* Calibrate: about 20 ms per variant and round. */
        for (double dt; (dt = time_variant(&b, 0) * b.iters) < 0.02 && b.iters < (1 << 20);) {
            int next = dt > 0 ? (int)(b.iters * 0.02 / dt) + 1 : b.iters * 8;
            b.iters = next > b.iters * 8 ? b.iters * 8 : next;
            PMPI_Bcast(&b.iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
        for (int r = 0; r < rounds; r++)
            for (int k = 0; k < VARIANTS; k++) {
                int v = (k + r) % VARIANTS;
                t[v][r] = time_variant(&b, v);
            }
        for (int v = 0; v < VARIANTS; v++) bad += verify_variant(&b, v);
        for (int v = 0; v < VARIANTS; v++) qsort(t[v], (size_t)rounds, sizeof(double), cmp_double);
        if (b.rank == 0)
            printf("%8d %12.3f %12.3f %12.3f %12.3f %8.2f\n", b.count, t[0][rounds / 2] * 1e6, t[1][rounds / 2] * 1e6,
                   t[2][rounds / 2] * 1e6, t[3][rounds / 2] * 1e6, t[0][rounds / 2] / t[2][rounds / 2]);
    }
    MPI_Win_free(&window);
    nodecoll_shared_free(&b.h);
    int any_bad = 0;
    PMPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
