/* nodecoll-bench-dtype: on one rank, pack and unpack throughput of the datatype engine
 * against memcpy of the same bytes and against the host MPI's MPI_Pack / MPI_Unpack, in one
 * run; then Balaji et al.'s transpose (a column-major matrix as a derived type) for growing N.
 * On several ranks, the same shapes and transposes as MPI_Bcast of the derived type: nodecoll
 * (the type used in place), the host's PMPI_Bcast, and a user's manual pack + byte Bcast +
 * unpack, alternated in one run; "plain root": nodecoll again with the root sending plain
 * doubles (the receivers' single-copy reads then go straight into their layouts).  Then
 * MPI_Allgather of plain doubles into blocks of each shape: nodecoll (the receive type used
 * in place), the host, and a manual byte Allgather + unpack of every block.  Last,
 * MPI_Allreduce with a user op on a padded struct (a type with a gap), nodecoll and host.
 *
 * Usage: mpiexec -np P nodecoll-bench-dtype [packed MiB per shape, default 16] [user]
 * ("user": only the user-op Allreduce table) */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/dtype_decode.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { OP_MEMCPY, OP_PACK, OP_UNPACK, OP_HOST_PACK, OP_HOST_UNPACK, OPS };
static const char *op_names[OPS] = {"memcpy", "pack", "unpack", "host pack", "host unpack"};

typedef struct run {
    MPI_Datatype type;
    int count;
    char *user, *packed, *copy;
    size_t bytes;
    const nc_dtype *d;
} run;

static void once(const run *r, int op)
{
    nc_dt_cursor c;
    int pos = 0;
    switch (op) {
    case OP_MEMCPY: memcpy(r->copy, r->packed, r->bytes); break;
    case OP_PACK:
        nc_dt_cursor_init(&c, r->d, r->user, (size_t)r->count, 0);
        nc_dt_pack(&c, r->packed, r->bytes);
        break;
    case OP_UNPACK:
        nc_dt_cursor_init(&c, r->d, r->user, (size_t)r->count, 0);
        nc_dt_unpack(&c, r->packed, r->bytes);
        break;
    case OP_HOST_PACK:
        MPI_Pack(r->user, r->count, r->type, r->packed, (int)r->bytes, &pos, MPI_COMM_SELF);
        break;
    default:
        MPI_Unpack(r->packed, (int)r->bytes, &pos, r->user, r->count, r->type, MPI_COMM_SELF);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of each of `n` variants over ROUNDS rounds (after one warm-up each), the
 * variants alternating within a round so drifting load hits them alike; `time_one` runs
 * variant v once and returns its seconds. */
#define ROUNDS 15
#define MAX_VARIANTS 8
static void alternated_medians(run *r, int n, double (*time_one)(run *r, int v), double *med)
{
    double t[MAX_VARIANTS][ROUNDS];
    for (int v = 0; v < n; v++) time_one(r, v);
    for (int i = 0; i < ROUNDS; i++)
        for (int v = 0; v < n; v++) t[v][i] = time_one(r, v);
    for (int v = 0; v < n; v++) {
        qsort(t[v], ROUNDS, sizeof(double), cmp_double);
        med[v] = t[v][ROUNDS / 2];
    }
}

static double time_op(run *r, int op)
{
    double t0 = now();
    once(r, op);
    return now() - t0;
}

static void run_init(run *r, MPI_Datatype type, int count)
{
    MPI_Type_commit(&type);
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(type, &lb, &extent);
    MPI_Type_get_true_extent(type, &tlb, &textent);
    int size;
    MPI_Type_size(type, &size);
    size_t span = (size_t)((count - 1) * extent + textent);
    r->type = type;
    r->count = count;
    r->bytes = (size_t)size * (size_t)count;
    r->user = (char *)malloc(span) - tlb;
    r->packed = malloc(r->bytes);
    r->copy = malloc(r->bytes);
    memset(r->user + tlb, 1, span);
    memset(r->packed, 2, r->bytes);
    memset(r->copy, 3, r->bytes);
    r->d = nc_mpi_dtype(type);
}

static void run_free(run *r)
{
    MPI_Aint tlb, textent;
    MPI_Type_get_true_extent(r->type, &tlb, &textent);
    free(r->user + tlb);
    free(r->packed);
    free(r->copy);
    MPI_Type_free(&r->type);
}

static int ranks = 1, my_rank;

/* ---- Bcast of derived datatypes (several ranks) ---- */

enum { BC_NODECOLL, BC_HOST, BC_MANUAL, BC_PLAIN_ROOT, BCASTS };
_Static_assert(OPS <= MAX_VARIANTS && BCASTS <= MAX_VARIANTS, "alternated_medians keeps MAX_VARIANTS rows");

static void bcast_once(run *r, int how)
{
    if (how == BC_NODECOLL) {
        MPI_Bcast(r->user, r->count, r->type, 0, MPI_COMM_WORLD);
    } else if (how == BC_PLAIN_ROOT) { /* the root sends plain doubles, the others receive the type */
        if (!my_rank) MPI_Bcast(r->packed, (int)(r->bytes / sizeof(double)), MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else MPI_Bcast(r->user, r->count, r->type, 0, MPI_COMM_WORLD);
    } else if (how == BC_HOST) {
        PMPI_Bcast(r->user, r->count, r->type, 0, MPI_COMM_WORLD);
    } else { /* what a user without a fast datatype path writes */
        nc_dt_cursor c;
        nc_dt_cursor_init(&c, r->d, r->user, (size_t)r->count, 0);
        if (!my_rank) nc_dt_pack(&c, r->packed, r->bytes);
        MPI_Bcast(r->packed, (int)r->bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (my_rank) nc_dt_unpack(&c, r->packed, r->bytes);
    }
}

/* One variant of a collective, timed on the slowest rank. */
static double time_slowest(run *r, int how, void (*once_of)(run *r, int how))
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    once_of(r, how);
    double mine = now() - t0, slowest;
    PMPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static double time_bcast(run *r, int how) { return time_slowest(r, how, bcast_once); }

static void bcast_shape(const char *name, run *r)
{
    double med[BCASTS];
    alternated_medians(r, BCASTS, time_bcast, med);
    if (my_rank) return;
    printf("%-28s %9.1f %7.0f %9.3f %9.3f %9.3f %7.2fx %7.2fx %11.3f\n", name, (double)r->bytes / 1048576.0,
           nc_dt_mean_run(r->d), med[BC_NODECOLL] * 1e3, med[BC_HOST] * 1e3, med[BC_MANUAL] * 1e3,
           med[BC_HOST] / med[BC_NODECOLL], med[BC_MANUAL] / med[BC_NODECOLL], med[BC_PLAIN_ROOT] * 1e3);
}

/* ---- Allgather into derived datatypes (several ranks) ---- */

enum { AG_NODECOLL, AG_HOST, AG_MANUAL, ALLGATHERS };
_Static_assert(ALLGATHERS <= MAX_VARIANTS, "alternated_medians keeps MAX_VARIANTS rows");
static char *ag_recv, *ag_packed; /* every rank's block in the shape's layout / packed */

static void allgather_once(run *r, int how)
{
    int doubles = (int)(r->bytes / sizeof(double));
    MPI_Aint lb, extent;
    MPI_Type_get_extent(r->type, &lb, &extent);
    if (how == AG_NODECOLL) {
        MPI_Allgather(r->packed, doubles, MPI_DOUBLE, ag_recv, r->count, r->type, MPI_COMM_WORLD);
    } else if (how == AG_HOST) {
        PMPI_Allgather(r->packed, doubles, MPI_DOUBLE, ag_recv, r->count, r->type, MPI_COMM_WORLD);
    } else {
        MPI_Allgather(r->packed, doubles, MPI_DOUBLE, ag_packed, doubles, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int b = 0; b < ranks; b++) {
            nc_dt_cursor c;
            nc_dt_cursor_init(&c, r->d, ag_recv + (MPI_Aint)b * extent * r->count, (size_t)r->count, 0);
            nc_dt_unpack(&c, ag_packed + (size_t)b * r->bytes, r->bytes);
        }
    }
}

static double time_allgather(run *r, int how) { return time_slowest(r, how, allgather_once); }

static void allgather_shape(const char *name, run *r)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(r->type, &lb, &extent);
    MPI_Type_get_true_extent(r->type, &tlb, &textent);
    size_t span = (size_t)((ranks * r->count - 1) * extent + textent);
    char *mem = malloc(span);
    memset(mem, 1, span);
    ag_recv = mem - tlb;
    ag_packed = malloc(r->bytes * (size_t)ranks);
    double med[ALLGATHERS];
    alternated_medians(r, ALLGATHERS, time_allgather, med);
    free(mem);
    free(ag_packed);
    if (my_rank) return;
    printf("%-28s %9.1f %7.0f %9.3f %9.3f %9.3f %7.2fx %7.2fx\n", name, (double)r->bytes / 1048576.0,
           nc_dt_mean_run(r->d), med[AG_NODECOLL] * 1e3, med[AG_HOST] * 1e3, med[AG_MANUAL] * 1e3,
           med[AG_HOST] / med[AG_NODECOLL], med[AG_MANUAL] / med[AG_NODECOLL]);
}

static int allgather_pass; /* shapes() runs twice on several ranks: Bcast, then Allgather */

/* One table row: GB/s of every operation, and the engine's gain over the host (one rank),
 * or the Bcast times (several). */
static void shape(const char *name, MPI_Datatype type, int count)
{
    run r;
    run_init(&r, type, count);
    if (!r.d) {
        printf("%-28s not decoded\n", name);
        run_free(&r);
        return;
    }
    if (ranks > 1) {
        if (allgather_pass) allgather_shape(name, &r);
        else bcast_shape(name, &r);
        run_free(&r);
        return;
    }
    double gbs[OPS], med[OPS];
    alternated_medians(&r, OPS, time_op, med);
    for (int op = 0; op < OPS; op++) gbs[op] = (double)r.bytes / med[op] / 1e9;
    printf("%-28s %9.1f %7.0f %7.2f %7.2f %7.2f %7.2f %7.2f %6.1fx %6.1fx\n", name,
           (double)r.bytes / 1048576.0, nc_dt_mean_run(r.d), gbs[0], gbs[1], gbs[2], gbs[3], gbs[4],
           gbs[1] / gbs[3], gbs[2] / gbs[4]);
    run_free(&r);
}

static void shapes(size_t mib)
{
    size_t doubles = mib * 1048576 / 8;
    if (ranks > 1 && !my_rank && allgather_pass)
        printf("\n%-28s %9s %7s %9s %9s %9s %8s %8s\n", "Allgather into shape (ms)", "MiB/blk", "run B", "nodecoll",
               "host", "manual", "host x", "manual x");
    else if (ranks > 1 && !my_rank)
        printf("%-28s %9s %7s %9s %9s %9s %8s %8s %11s\n", "Bcast of shape (ms)", "MiB", "run B", "nodecoll", "host",
               "manual", "host x", "manual x", "plain root");
    else if (ranks == 1)
        printf("%-28s %9s %7s %7s %7s %7s %7s %7s %7s %7s\n", "shape (GB/s)", "MiB", "run B", op_names[0],
               op_names[1], op_names[2], "h.pack", "h.unpk", "pack", "unpack");
    static const int blocks[] = {1, 8, 64, 512};
    for (int i = 0; i < 4; i++) { /* every other block of b doubles */
        MPI_Datatype t;
        MPI_Type_vector((int)(doubles / (size_t)blocks[i]), blocks[i], 2 * blocks[i], MPI_DOUBLE, &t);
        char name[40];
        snprintf(name, sizeof name, "vector %d doubles/block", blocks[i]);
        shape(name, t, 1);
    }
    { /* blocks of 1..16 doubles with gaps of 1..16 doubles, pseudo-random */
        int n = 0, at = 0, cap = (int)(doubles / 4);
        int *len = malloc((size_t)cap * sizeof *len), *disp = malloc((size_t)cap * sizeof *disp);
        unsigned x = 12345;
        for (size_t total = 0; total < doubles && n < cap; n++) {
            x = x * 1103515245u + 12345u;
            len[n] = 1 + (int)((x >> 16) % 16);
            disp[n] = at;
            at += len[n] + 1 + (int)((x >> 8) % 16);
            total += (size_t)len[n];
        }
        MPI_Datatype t;
        MPI_Type_indexed(n, len, disp, MPI_DOUBLE, &t);
        shape("indexed, irregular gaps", t, 1);
        free(len);
        free(disp);
    }
    { /* the faces of a 256^3 array of doubles: last index fixed (sparsest) and first fixed */
        int sizes[3] = {256, 256, 256}, sub_x[3] = {256, 256, 1}, sub_z[3] = {1, 256, 256},
            starts[3] = {0, 0, 0};
        MPI_Datatype t;
        MPI_Type_create_subarray(3, sizes, sub_x, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
        shape("256^3 face, last index", t, 1);
        MPI_Type_create_subarray(3, sizes, sub_z, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
        shape("256^3 face, first index", t, 1);
    }
    { /* Balaji et al., figure 4: a column of a matrix of 3-double elements, 8 columns wide */
        MPI_Datatype elem, col;
        MPI_Type_contiguous(3, MPI_DOUBLE, &elem);
        MPI_Type_vector((int)(doubles / 3), 1, 8, elem, &col);
        MPI_Type_free(&elem);
        shape("matrix column, 3 doubles", col, 1);
    }
}

/* Balaji et al., section 5.2: an N x N matrix of doubles packed in column-major order (a
 * column type resized to one double, N of them), whole, and in 64 KiB pieces with a look-ahead before
 * each piece as a pipelined sender does: time per byte must not grow with N. */
static void transpose(void)
{
    if (ranks > 1 && !my_rank)
        printf("\nBcast of transpose N  MiB  ns/double  nodecoll ms   host ms  manual ms   host x  manual x\n");
    else if (ranks == 1)
        printf("\ntranspose N  MiB     pack ms  ns/double  piecewise+lookahead ms  host pack ms\n");
    for (int n = 64; n <= 4096; n *= 2) {
        MPI_Datatype col, colr, t;
        MPI_Type_vector(n, 1, n, MPI_DOUBLE, &col);
        MPI_Type_create_resized(col, 0, sizeof(double), &colr);
        MPI_Type_contiguous(n, colr, &t);
        MPI_Type_free(&col);
        MPI_Type_free(&colr);
        run r;
        run_init(&r, t, 1);
        if (ranks > 1) {
            double med[BCASTS];
            alternated_medians(&r, BCASTS, time_bcast, med);
            if (!my_rank)
                printf("%20d %5.1f %10.2f %11.3f %9.3f %10.3f %7.2fx %7.2fx\n", n, (double)r.bytes / 1048576.0,
                       med[BC_NODECOLL] * 1e9 / ((double)n * n), med[BC_NODECOLL] * 1e3, med[BC_HOST] * 1e3,
                       med[BC_MANUAL] * 1e3, med[BC_HOST] / med[BC_NODECOLL], med[BC_MANUAL] / med[BC_NODECOLL]);
            run_free(&r);
            continue;
        }
        double med[OPS];
        alternated_medians(&r, OPS, time_op, med);
        double whole = med[OP_PACK], host = med[OP_HOST_PACK];
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            nc_dt_cursor c;
            nc_dt_cursor_init(&c, r.d, r.user, 1, 0);
            for (size_t off = 0; off < r.bytes; off += 65536) {
                nc_dt_shape s = nc_dt_lookahead(&c, 65536, 16, 64);
                (void)s;
                nc_dt_pack(&c, r.packed + off, 65536);
            }
            double dt = now() - t0;
            if (dt < best) best = dt;
        }
        printf("%11d %5.1f %10.3f %10.2f %23.3f %13.3f\n", n, (double)r.bytes / 1048576.0, whole * 1e3,
               whole * 1e9 / ((double)n * n), best * 1e3, host * 1e3);
        run_free(&r);
    }
}

/* ---- Allreduce with a user op on a padded struct (several ranks) ---- */

typedef struct scored {
    double score;
    int id; /* then 4 bytes of padding: a type with a gap */
} scored;

static void keep_best(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const scored *a = in;
    scored *b = inout;
    for (int i = 0; i < *len; i++)
        if (a[i].score > b[i].score || (a[i].score == b[i].score && a[i].id < b[i].id)) b[i] = a[i];
}

enum { UR_NODECOLL, UR_HOST, USER_REDUCTIONS };
static scored *ur_in, *ur_out;
static MPI_Op ur_op;
static int ur_reps;

static void user_reduce_once(run *r, int how)
{
    for (int i = 0; i < ur_reps; i++)
        (how == UR_NODECOLL ? MPI_Allreduce : PMPI_Allreduce)(ur_in, ur_out, r->count, r->type, ur_op, MPI_COMM_WORLD);
}

static double time_user_reduce(run *r, int how) { return time_slowest(r, how, user_reduce_once) / ur_reps; }

static void user_reductions(void)
{
    int lens[2] = {1, 1};
    MPI_Aint disps[2] = {offsetof(scored, score), offsetof(scored, id)};
    MPI_Datatype fields[2] = {MPI_DOUBLE, MPI_INT}, plain;
    MPI_Type_create_struct(2, lens, disps, fields, &plain);
    run r = {0};
    MPI_Type_create_resized(plain, 0, sizeof(scored), &r.type);
    MPI_Type_commit(&r.type);
    MPI_Type_free(&plain);
    MPI_Op_create(keep_best, 1, &ur_op);
    if (!my_rank)
        printf("\n%-28s %9s %9s %9s %8s\n", "Allreduce, user op, {double,int} (us)", "MiB", "nodecoll", "host",
               "host x");
    static const int counts[] = {1, 64, 4096, 262144, 1048576};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        r.count = counts[k];
        ur_reps = r.count <= 64 ? 1000 : r.count <= 4096 ? 100 : 3;
        ur_in = malloc(sizeof(scored) * (size_t)r.count);
        ur_out = malloc(sizeof(scored) * (size_t)r.count);
        for (int i = 0; i < r.count; i++) ur_in[i] = (scored){(double)((i * 7 + my_rank * 13) % 101), my_rank};
        double med[USER_REDUCTIONS];
        alternated_medians(&r, USER_REDUCTIONS, time_user_reduce, med);
        if (!my_rank)
            printf("%-28d %9.1f %9.2f %9.2f %7.2fx\n", r.count, 12.0 * r.count / 1048576.0, med[UR_NODECOLL] * 1e6,
                   med[UR_HOST] * 1e6, med[UR_HOST] / med[UR_NODECOLL]);
        free(ur_in);
        free(ur_out);
    }
    MPI_Op_free(&ur_op);
    MPI_Type_free(&r.type);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
    size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 16;
    if (ranks > 1 && argc > 2 && !strcmp(argv[2], "user")) { /* the user-op table alone */
        user_reductions();
        MPI_Finalize();
        return 0;
    }
    if (ranks == 1) printf("nodecoll-bench-dtype: one core, medians of %d alternated rounds; packed MiB per shape %zu\n",
                           ROUNDS, mib);
    else if (!my_rank)
        printf("nodecoll-bench-dtype: MPI_Bcast of derived types from rank 0 to %d ranks, slowest rank, medians of %d "
               "alternated rounds; packed MiB per shape %zu\n", ranks, ROUNDS, mib);
    shapes(mib);
    transpose();
    if (ranks > 1) {
        allgather_pass = 1;
        shapes(mib);
        user_reductions();
    }
    MPI_Finalize();
    return 0;
}
