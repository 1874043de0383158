/* SUMMA matrix multiplication (Zhou et al., section 5.2.1) written twice: with plain MPI_Bcast
 * into private buffers, and with the node-shared Bcast, where every rank of a node multiplies
 * straight out of the node's one copy of the broadcast blocks.  Both must give bit-identical
 * C, which must also equal C computed directly (small integer entries: exact in doubles).
 *
 *   mpiexec -np P summa [b] [reps] [inner] [pmpi]
 *       b x b doubles per block and rank (default 32); reps measurements (default 3) of
 *       inner multiplications each (default 0: enough to last ~10 ms); "pmpi": the plain
 *       version calls the host's PMPI_Bcast instead of (nodecoll's) MPI_Bcast
 *
 * The P ranks form an r x c grid (r the largest divisor of P not above sqrt(P)); A is
 * (r*b) x (L*b) and B is (L*b) x (c*b) with L = lcm(r, c), so every rank owns L/c blocks of
 * A and L/r of B, and each of the L steps broadcasts one block of A along each grid row and
 * one of B down each grid column.  Prints the median time of a multiplication per version
 * and their ratio (plain / node-shared); small blocks repeat the multiplication within a
 * measurement so it lasts long enough to time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nodecoll.h"

typedef struct grid {
    int rank, size, r, c, i, j, L, b;
    MPI_Comm row, col; /* ranks of my grid row (ordered by j), of my grid column (by i) */
} grid;

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

static double a_entry(long gi, long gk) { return (double)((gi * 7 + gk * 3) % 11 - 5); }
static double b_entry(long gk, long gj) { return (double)((gk * 5 + gj * 2) % 13 - 6); }

/* Block (bi, bk) of A, or of B when `of_b`. */
static void make_block(double *out, int b, int bi, int bk, int of_b)
{
    for (int x = 0; x < b; x++)
        for (int y = 0; y < b; y++) {
            long row = (long)bi * b + x, col = (long)bk * b + y;
            out[x * b + y] = of_b ? b_entry(row, col) : a_entry(row, col);
        }
}

/* Cache-line aligned, like the node-shared copy (page aligned), so both versions read alike. */
static double *alloc_block(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(double))) abort();
    return p;
}

/* One copy of the machine code for both versions (inlined, the compiler may vectorise them
 * differently, which would bias the comparison). */
__attribute__((noinline)) static void multiply_add(double *c, const double *a, const double *bm, int b)
{
    for (int x = 0; x < b; x++)
        for (int k = 0; k < b; k++) {
            double v = a[x * b + k];
            for (int y = 0; y < b; y++) c[x * b + y] += v * bm[k * b + y];
        }
}

typedef struct blocks {
    double **a, **b; /* my blocks of A (index l / c) and of B (index l / r) */
} blocks;

static int (*plain_bcast)(void *, int, MPI_Datatype, int, MPI_Comm) = MPI_Bcast;

static void summa_plain(const grid *g, const blocks *mine, double *c, double *abuf, double *bbuf)
{
    size_t n = (size_t)g->b * g->b;
    memset(c, 0, n * sizeof *c);
    for (int l = 0; l < g->L; l++) {
        int a_root = l % g->c, b_root = l % g->r;
        if (g->j == a_root) memcpy(abuf, mine->a[l / g->c], n * sizeof *abuf);
        if (g->i == b_root) memcpy(bbuf, mine->b[l / g->r], n * sizeof *bbuf);
        plain_bcast(abuf, (int)n, MPI_DOUBLE, a_root, g->row);
        plain_bcast(bbuf, (int)n, MPI_DOUBLE, b_root, g->col);
        multiply_add(c, abuf, bbuf, g->b);
    }
}

static void summa_shared(const grid *g, const blocks *mine, double *c, nodecoll_shared row_h, nodecoll_shared col_h)
{
    size_t n = (size_t)g->b * g->b;
    memset(c, 0, n * sizeof *c);
    for (int l = 0; l < g->L; l++) {
        int a_root = l % g->c, b_root = l % g->r;
        const double *a, *bm;
        nodecoll_shared_bcast(g->j == a_root ? mine->a[l / g->c] : NULL, (int)n, MPI_DOUBLE, a_root, row_h,
                              (const void **)&a);
        nodecoll_shared_bcast(g->i == b_root ? mine->b[l / g->r] : NULL, (int)n, MPI_DOUBLE, b_root, col_h,
                              (const void **)&bm);
        multiply_add(c, a, bm, g->b); /* read in place: no copy on the node */
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    grid g;
    g.b = argc > 1 ? atoi(argv[1]) : 32;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    int inner = argc > 3 ? atoi(argv[3]) : 0;
    if (argc > 4 && !strcmp(argv[4], "pmpi")) plain_bcast = PMPI_Bcast;
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    for (g.r = 1; (g.r + 1) * (g.r + 1) <= g.size; g.r++) {}
    while (g.size % g.r) g.r--;
    g.c = g.size / g.r;
    g.L = g.r / gcd(g.r, g.c) * g.c;
    g.i = g.rank / g.c;
    g.j = g.rank % g.c;
    MPI_Comm_split(MPI_COMM_WORLD, g.i, g.j, &g.row);
    MPI_Comm_split(MPI_COMM_WORLD, g.j, g.i, &g.col);
    size_t n = (size_t)g.b * g.b;

    blocks mine = {calloc((size_t)(g.L / g.c), sizeof(double *)), calloc((size_t)(g.L / g.r), sizeof(double *))};
    for (int l = g.j; l < g.L; l += g.c) make_block(mine.a[l / g.c] = alloc_block(n), g.b, g.i, l, 0);
    for (int l = g.i; l < g.L; l += g.r) make_block(mine.b[l / g.r] = alloc_block(n), g.b, l, g.j, 1);
    double *c_plain = alloc_block(n), *c_shared = alloc_block(n), *abuf = alloc_block(n), *bbuf = alloc_block(n);
    nodecoll_shared row_h, col_h;
    nodecoll_shared_create(g.row, (MPI_Aint)(n * sizeof(double)), &row_h);
    nodecoll_shared_create(g.col, (MPI_Aint)(n * sizeof(double)), &col_h);

    double *t_plain = malloc(sizeof(double) * (size_t)reps), *t_shared = malloc(sizeof(double) * (size_t)reps);
    if (inner <= 0) { /* enough multiplications to last about 10 ms, as rank 0 measures */
        double t0 = MPI_Wtime();
        summa_plain(&g, &mine, c_plain, abuf, bbuf);
        double once = MPI_Wtime() - t0;
        inner = once >= 0.01 ? 1 : once > 0 ? (int)(0.01 / once) + 1 : 1000;
        MPI_Bcast(&inner, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int rep = 0; rep < reps; rep++) { /* alternate the versions: noise hits both alike */
        double t0, t1, t2;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int k = 0; k < inner; k++) summa_plain(&g, &mine, c_plain, abuf, bbuf);
        MPI_Barrier(MPI_COMM_WORLD);
        t1 = MPI_Wtime();
        for (int k = 0; k < inner; k++) summa_shared(&g, &mine, c_shared, row_h, col_h);
        MPI_Barrier(MPI_COMM_WORLD);
        t2 = MPI_Wtime();
        t_plain[rep] = (t1 - t0) / inner;
        t_shared[rep] = (t2 - t1) / inner;
    }

    /* Bit-identical versions, and both equal to C computed directly. */
    long bad = memcmp(c_plain, c_shared, n * sizeof(double)) != 0, total = 0;
    for (int x = 0; x < g.b; x++)
        for (int y = 0; y < g.b; y++) {
            long gi = (long)g.i * g.b + x, gj = (long)g.j * g.b + y;
            double want = 0;
            for (long k = 0; k < (long)g.L * g.b; k++) want += a_entry(gi, k) * b_entry(k, gj);
            bad += c_plain[x * g.b + y] != want;
        }
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double tp = median(t_plain, reps), ts = median(t_shared, reps);
    if (g.rank == 0) {
        printf("summa: %d ranks (%dx%d grid), %dx%d blocks, %d steps: plain (%s) %.4f ms, node-shared %.4f ms, "
               "ratio %.2f\n", g.size, g.r, g.c, g.b, g.b, g.L, plain_bcast == MPI_Bcast ? "MPI_Bcast" : "PMPI_Bcast",
               tp * 1e3, ts * 1e3, tp / ts);
        printf("summa: %s\n", total ? "FAILED (C differs)" : "C identical in both versions and correct");
    }
    nodecoll_shared_free(&row_h);
    nodecoll_shared_free(&col_h);
    MPI_Comm_free(&g.row);
    MPI_Comm_free(&g.col);
    MPI_Finalize();
    return total ? 1 : 0;
}
