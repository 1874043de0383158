/* An allgather-driven iteration shaped like the BPMF sampler of Zhou et al. (section 5.2.2):
 * users and items each have K latent factors; every iteration each rank updates the rows of
 * its own users from all item rows, the user rows are allgathered, then each rank updates
 * its items from all user rows, and those are allgathered.  Rows are split unevenly
 * (Allgatherv).
 *
 * Written twice: with MPI_Allgatherv into private full copies, and with the node-shared
 * Allgatherv, where each rank computes its rows straight into the node's copy
 * (nodecoll_shared_get_buffer, then MPI_IN_PLACE) and reads the other side's rows in place.
 * The factors must come out bit-identical.
 *
 *   mpiexec -np P bpmf_loop [users] [items] [iterations]   (defaults 3000 2000 10)
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodecoll.h"

#define K 16       /* latent factors per row */
#define RATINGS 12 /* ratings per user (and, symmetrically, per item) */

typedef struct split {
    int *counts, *displs; /* in doubles: rows * K */
    int first, rows;      /* my rows */
} split;

static split split_rows(int n, int size, int rank)
{
    split s = {malloc(sizeof(int) * (size_t)size), malloc(sizeof(int) * (size_t)size), 0, 0};
    for (int r = 0, at = 0; r < size; r++) {
        int rows = n / size + (r < n % size);
        s.counts[r] = rows * K;
        s.displs[r] = at * K;
        if (r == rank) s.first = at, s.rows = rows;
        at += rows;
    }
    return s;
}

/* Row `row` of one side from all rows of the other: a smooth function of its ratings. */
static void update_row(double *out, int row, const double *other, int other_rows, int iter)
{
    double acc[K] = {0};
    for (int t = 0; t < RATINGS; t++) {
        int j = (row * 7 + t * 13 + iter) % other_rows;
        double rating = ((row + j) % 5 + 1) / 5.0;
        for (int k = 0; k < K; k++) acc[k] += rating * other[(size_t)j * K + k];
    }
    for (int k = 0; k < K; k++) out[k] = tanh(acc[k] / RATINGS + 0.01 * ((row + k) % 7));
}

static void update_rows(double *out, const split *s, const double *other, int other_rows, int iter)
{
    for (int i = 0; i < s->rows; i++) update_row(out + (size_t)i * K, s->first + i, other, other_rows, iter);
}

/* Plain MPI: private full copies of both sides on every rank. */
static double run_plain(int users, int items, int iters, const split *su, const split *si, double *u_all,
                        double *v_all)
{
    double *mine = malloc(sizeof(double) * (size_t)(su->rows > si->rows ? su->rows : si->rows) * K + 1);
    double t0 = MPI_Wtime();
    for (int i = 0; i < si->rows; i++)
        for (int k = 0; k < K; k++) mine[i * K + k] = 0.1 * ((si->first + i + k) % 9);
    MPI_Allgatherv(mine, si->rows * K, MPI_DOUBLE, v_all, si->counts, si->displs, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int it = 0; it < iters; it++) {
        update_rows(mine, su, v_all, items, it);
        MPI_Allgatherv(mine, su->rows * K, MPI_DOUBLE, u_all, su->counts, su->displs, MPI_DOUBLE, MPI_COMM_WORLD);
        update_rows(mine, si, u_all, users, it);
        MPI_Allgatherv(mine, si->rows * K, MPI_DOUBLE, v_all, si->counts, si->displs, MPI_DOUBLE, MPI_COMM_WORLD);
    }
    free(mine);
    return MPI_Wtime() - t0;
}

/* Node-shared: one copy of each side per node; each rank writes its rows in place. */
static double run_shared(int users, int items, int iters, const split *su, const split *si, nodecoll_shared hu,
                         nodecoll_shared hv, const double **u_out, const double **v_out)
{
    const double *u_all = NULL, *v_all = NULL;
    double *buf;
    double t0 = MPI_Wtime();
    nodecoll_shared_get_buffer(hv, (void **)&buf);
    for (int i = 0; i < si->rows; i++)
        for (int k = 0; k < K; k++) buf[(size_t)(si->first + i) * K + k] = 0.1 * ((si->first + i + k) % 9);
    nodecoll_shared_allgatherv(MPI_IN_PLACE, si->rows * K, si->counts, si->displs, MPI_DOUBLE, hv,
                               (const void **)&v_all, NULL);
    for (int it = 0; it < iters; it++) {
        nodecoll_shared_get_buffer(hu, (void **)&buf);
        update_rows(buf + (size_t)su->first * K, su, v_all, items, it);
        nodecoll_shared_allgatherv(MPI_IN_PLACE, su->rows * K, su->counts, su->displs, MPI_DOUBLE, hu,
                                   (const void **)&u_all, NULL);
        nodecoll_shared_get_buffer(hv, (void **)&buf); /* gives back the old item rows */
        update_rows(buf + (size_t)si->first * K, si, u_all, users, it);
        nodecoll_shared_allgatherv(MPI_IN_PLACE, si->rows * K, si->counts, si->displs, MPI_DOUBLE, hv,
                                   (const void **)&v_all, NULL);
    }
    double t = MPI_Wtime() - t0;
    *u_out = u_all;
    *v_out = v_all;
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int users = argc > 1 ? atoi(argv[1]) : 3000, items = argc > 2 ? atoi(argv[2]) : 2000;
    int iters = argc > 3 ? atoi(argv[3]) : 10;
    split su = split_rows(users, size, rank), si = split_rows(items, size, rank);
    double *u_all = malloc(sizeof(double) * (size_t)users * K), *v_all = malloc(sizeof(double) * (size_t)items * K);
    nodecoll_shared hu, hv;
    nodecoll_shared_create(MPI_COMM_WORLD, (MPI_Aint)(sizeof(double) * (size_t)users * K), &hu);
    nodecoll_shared_create(MPI_COMM_WORLD, (MPI_Aint)(sizeof(double) * (size_t)items * K), &hv);

    const double *u_shared, *v_shared;
    double t_plain = run_plain(users, items, iters, &su, &si, u_all, v_all);
    double t_shared = run_shared(users, items, iters, &su, &si, hu, hv, &u_shared, &v_shared);
    long bad = memcmp(u_all, u_shared, sizeof(double) * (size_t)users * K) != 0 ||
               memcmp(v_all, v_shared, sizeof(double) * (size_t)items * K) != 0, total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double times[2] = {t_plain, t_shared}, slowest[2];
    MPI_Reduce(times, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("bpmf_loop: %d ranks, %d users, %d items, %d iterations: plain %.2f ms, node-shared %.2f ms\n", size,
               users, items, iters, slowest[0] * 1e3, slowest[1] * 1e3);
        printf("bpmf_loop: %s\n", total ? "FAILED (factors differ)" : "factors identical in both versions");
    }
    nodecoll_shared_free(&hu);
    nodecoll_shared_free(&hv);
    free(u_all);
    free(v_all);
    MPI_Finalize();
    return total ? 1 : 0;
}
