/* Differential test of the node-shared collectives (nodecoll_shared_*): every call is
 * repeated through PMPI_Bcast / PMPI_Allgather(v) / PMPI_Allreduce into a private buffer and
 * the node's copy must hold the same data (compared after MPI_Pack, so bytes between the
 * elements of a type with gaps do not count).
 *
 * Many rounds with random sizes, roots, datatypes, in-place or copied contributions, and
 * random per-rank delays while a result is held: the result is checked again after the
 * delay, so a writer that overwrote a result some rank still held would be caught.  Results
 * are released explicitly or by the next call, at random.  Two handles are used in turn
 * (independent flag sets), on COMM_WORLD and on a split with reversed rank order (ranks of a
 * node are then not consecutive). */
#include <unistd.h>

#include "common.h"

#define MAX_BYTES (96 * 1024)

enum { K_BYTE, K_INT, K_DOUBLE, K_VECTOR, K_KINDS };
static MPI_Datatype vector_type; /* 3 doubles out of every 5: gaps inside the extent */
static MPI_Op matmul_op;         /* 2x2 int matrix product: not commutative */

static MPI_Datatype type_of(int kind)
{
    switch (kind) {
    case K_BYTE: return MPI_BYTE;
    case K_INT: return MPI_INT;
    case K_DOUBLE: return MPI_DOUBLE;
    default: return vector_type;
    }
}

static size_t extent_of(MPI_Datatype type)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(type, &lb, &extent);
    return (size_t)extent;
}

static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < *len; i++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

static void make_types(void)
{
    MPI_Datatype v;
    MPI_Type_vector(1, 3, 5, MPI_DOUBLE, &v);
    MPI_Type_create_resized(v, 0, 5 * sizeof(double), &vector_type);
    MPI_Type_free(&v);
    MPI_Type_commit(&vector_type);
    MPI_Op_create(matmul, 0, &matmul_op);
}

/* Fills count elements with values every rank can reproduce (small integers for doubles, so
 * sums are exact in any order). */
static void fill(void *buf, int count, int kind, uint64_t seed)
{
    uint64_t rng = seed;
    size_t extent = extent_of(type_of(kind));
    for (int i = 0; i < count; i++) {
        char *e = (char *)buf + (size_t)i * extent;
        switch (kind) {
        case K_BYTE: *(unsigned char *)e = (unsigned char)t_rand(&rng); break;
        case K_INT: *(int *)e = (int)(t_rand(&rng) % 2001) - 1000; break;
        case K_DOUBLE: *(double *)e = (double)(int)(t_rand(&rng) % 2001) - 1000; break;
        default:
            for (int j = 0; j < 3; j++) ((double *)e)[j] = (double)(int)(t_rand(&rng) % 101);
        }
    }
}

/* Packs count elements of type at buf (type signature only, gaps left out). */
static char *packed(const void *buf, int count, MPI_Datatype type, int *bytes)
{
    int size;
    MPI_Pack_size(count, type, MPI_COMM_WORLD, &size);
    char *out = malloc((size_t)size + 1);
    *bytes = 0;
    MPI_Pack(buf, count, type, out, size, bytes, MPI_COMM_WORLD);
    return out;
}

static int same_data(const void *a, const void *b, int count, MPI_Datatype type)
{
    int na, nb;
    char *pa = packed(a, count, type, &na), *pb = packed(b, count, type, &nb);
    int same = na == nb && !memcmp(pa, pb, (size_t)na);
    free(pa);
    free(pb);
    return same;
}

typedef struct round_ctx {
    MPI_Comm comm;
    const char *name;
    int rank, size, round;
    uint64_t *delays; /* this rank's own generator */
} round_ctx;

static void maybe_sleep(round_ctx *r)
{
    uint64_t x = t_rand(r->delays);
    if (x % 3 == 0) usleep((useconds_t)(x >> 8) % 300);
}

/* The result must still hold the expected data after a random delay; then it is released
 * (explicitly, or by the next call). */
static void hold_and_check(round_ctx *r, nodecoll_shared h, const char *what, const void *got, const void *want,
                           int count, MPI_Datatype type)
{
    if (!same_data(got, want, count, type)) t_fail("%s round %d: %s differs from PMPI", r->name, r->round, what);
    maybe_sleep(r);
    if (!same_data(got, want, count, type))
        t_fail("%s round %d: %s changed while this rank held it", r->name, r->round, what);
    if (t_rand(r->delays) % 2) T_CHECK(nodecoll_shared_release(h) == MPI_SUCCESS, "release failed");
}

static void round_bcast(round_ctx *r, nodecoll_shared h, uint64_t *rng)
{
    int kind = (int)(t_rand(rng) % K_KINDS), root = (int)(t_rand(rng) % (uint64_t)r->size);
    MPI_Datatype type = type_of(kind);
    size_t extent = extent_of(type);
    int count = (int)(t_rand(rng) % (t_rand(rng) % 4 ? 256 : MAX_BYTES / extent + 1));
    int in_place = (int)(t_rand(rng) % 2);
    uint64_t seed = t_rand(rng);
    char *want = malloc((size_t)count * extent + 1);
    fill(want, count, kind, seed);
    maybe_sleep(r);
    const void *got = NULL;
    int err;
    if (r->rank == root && in_place) {
        void *buf;
        nodecoll_shared_get_buffer(h, &buf);
        fill(buf, count, kind, seed);
        err = nodecoll_shared_bcast(MPI_IN_PLACE, count, type, root, h, &got);
    } else {
        err = nodecoll_shared_bcast(r->rank == root ? want : NULL, count, type, root, h, &got);
    }
    T_CHECK(err == MPI_SUCCESS, "%s round %d: bcast error %d", r->name, r->round, err);
    PMPI_Bcast(want, count, type, root, r->comm);
    hold_and_check(r, h, "bcast", got, want, count, type);
    free(want);
}

static void round_allgather(round_ctx *r, nodecoll_shared h, uint64_t *rng)
{
    int kind = (int)(t_rand(rng) % K_KINDS);
    MPI_Datatype type = type_of(kind);
    size_t extent = extent_of(type);
    int limit = (int)(MAX_BYTES / extent / (size_t)r->size);
    int count = (int)(t_rand(rng) % (uint64_t)(t_rand(rng) % 4 ? (limit < 64 ? limit : 64) + 1 : limit + 1));
    int in_place = (int)(t_rand(rng) % 2);
    uint64_t seed = t_rand(rng) + (uint64_t)r->rank;
    size_t block = (size_t)count * extent;
    char *mine = malloc(block + 1), *want = malloc(block * (size_t)r->size + 1);
    fill(mine, count, kind, seed);
    maybe_sleep(r);
    const void *got = NULL;
    int err;
    if (in_place) {
        void *buf;
        nodecoll_shared_get_buffer(h, &buf);
        fill((char *)buf + (size_t)r->rank * block, count, kind, seed);
        err = nodecoll_shared_allgather(MPI_IN_PLACE, count, type, h, &got);
    } else {
        err = nodecoll_shared_allgather(mine, count, type, h, &got);
    }
    T_CHECK(err == MPI_SUCCESS, "%s round %d: allgather error %d", r->name, r->round, err);
    PMPI_Allgather(mine, count, type, want, count, type, r->comm);
    hold_and_check(r, h, "allgather", got, want, count * r->size, type);
    free(mine);
    free(want);
}

static void round_allgatherv(round_ctx *r, nodecoll_shared h, uint64_t *rng)
{
    int kind = (int)(t_rand(rng) % K_KINDS);
    MPI_Datatype type = type_of(kind);
    size_t extent = extent_of(type);
    int limit = (int)(MAX_BYTES / extent / (size_t)r->size / 2);
    int *counts = malloc(sizeof(int) * (size_t)r->size), *displs = malloc(sizeof(int) * (size_t)r->size);
    int with_displs = (int)(t_rand(rng) % 2), end = 0;
    for (int i = 0; i < r->size; i++) {
        counts[i] = (int)(t_rand(rng) % (uint64_t)((t_rand(rng) % 4 ? 40 : limit) + 1));
        int gap = (int)(t_rand(rng) % 3);
        displs[i] = end + gap;
        end = displs[i] + counts[i];
    }
    /* Reverse the block order sometimes: displacements need not grow with the rank. */
    if (with_displs && t_rand(rng) % 2)
        for (int i = 0; i < r->size; i++) displs[i] = end - displs[i] - counts[i];
    uint64_t seed = t_rand(rng) + (uint64_t)r->rank;
    int count = counts[r->rank];
    char *mine = malloc((size_t)count * extent + 1), *want = calloc((size_t)end * extent + 1, 1);
    fill(mine, count, kind, seed);
    maybe_sleep(r);
    const void *got = NULL;
    const int *used = NULL;
    int err;
    if (t_rand(rng) % 2) {
        void *buf;
        nodecoll_shared_get_buffer(h, &buf);
        int at = with_displs ? displs[r->rank] : 0;
        for (int i = 0; !with_displs && i < r->rank; i++) at += counts[i];
        fill((char *)buf + (size_t)at * extent, count, kind, seed);
        err = nodecoll_shared_allgatherv(MPI_IN_PLACE, count, counts, with_displs ? displs : NULL, type, h, &got,
                                         &used);
    } else {
        err = nodecoll_shared_allgatherv(mine, count, counts, with_displs ? displs : NULL, type, h, &got, &used);
    }
    T_CHECK(err == MPI_SUCCESS, "%s round %d: allgatherv error %d", r->name, r->round, err);
    if (!with_displs)
        for (int i = 0, at = 0; i < r->size; at += counts[i], i++) displs[i] = at;
    for (int i = 0; used && i < r->size; i++)
        T_CHECK(used[i] == displs[i], "%s round %d: displacement of rank %d is %d, not %d", r->name, r->round, i,
                used[i], displs[i]);
    if (r->size > 1)
        PMPI_Allgatherv(mine, count, type, want, counts, displs, type, r->comm);
    else /* MPICH 4.0.2's Allgatherv on one process ignores displs[0] */
        PMPI_Sendrecv(mine, count, type, 0, 0, want + (size_t)displs[0] * extent, count, type, 0, 0, r->comm,
                      MPI_STATUS_IGNORE);
    for (int i = 0; i < r->size; i++) {
        const char *g = (const char *)got + (size_t)displs[i] * extent, *w = want + (size_t)displs[i] * extent;
        if (!same_data(g, w, counts[i], type))
            t_fail("%s round %d: allgatherv block of rank %d differs from PMPI", r->name, r->round, i);
    }
    maybe_sleep(r);
    for (int i = 0; i < r->size; i++)
        if (!same_data((const char *)got + (size_t)displs[i] * extent, want + (size_t)displs[i] * extent, counts[i],
                       type))
            t_fail("%s round %d: allgatherv block of rank %d changed while held", r->name, r->round, i);
    free(counts);
    free(displs);
    free(mine);
    free(want);
}

static void round_allreduce(round_ctx *r, nodecoll_shared h, uint64_t *rng, int ordered_nodes)
{
    static const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN};
    int choice = (int)(t_rand(rng) % 4);
    int noncommutative = choice == 3 && ordered_nodes;
    int kind = noncommutative ? K_INT : (t_rand(rng) % 2 ? K_INT : K_DOUBLE);
    MPI_Datatype type = type_of(kind);
    MPI_Op op = noncommutative ? matmul_op : ops[choice % 3];
    size_t extent = extent_of(type);
    int count = (int)(t_rand(rng) % (t_rand(rng) % 4 ? 300 : MAX_BYTES / extent + 1));
    if (noncommutative) count -= count % 4; /* whole 2x2 matrices, as 4 ints each */
    uint64_t seed = t_rand(rng) + (uint64_t)r->rank;
    char *mine = malloc((size_t)count * extent + 1), *want = malloc((size_t)count * extent + 1);
    fill(mine, count, kind, seed);
    if (noncommutative)
        for (int i = 0; i < count; i++) ((int *)mine)[i] &= 3; /* small entries */
    maybe_sleep(r);
    const void *got = NULL;
    MPI_Datatype reduce_type = type;
    int reduce_count = count;
    if (noncommutative) {
        MPI_Type_contiguous(4, MPI_INT, &reduce_type);
        MPI_Type_commit(&reduce_type);
        reduce_count = count / 4;
    }
    int err = nodecoll_shared_allreduce(mine, reduce_count, reduce_type, op, h, &got);
    T_CHECK(err == MPI_SUCCESS, "%s round %d: allreduce error %d", r->name, r->round, err);
    PMPI_Allreduce(mine, want, reduce_count, reduce_type, op, r->comm);
    hold_and_check(r, h, noncommutative ? "allreduce (non-commutative)" : "allreduce", got, want, reduce_count,
                   reduce_type);
    if (noncommutative) MPI_Type_free(&reduce_type);
    free(mine);
    free(want);
}

/* Whether every node holds consecutive ranks of comm (a non-commutative Allreduce needs it
 * across nodes); known to the test from the placement settings. */
static int ordered_nodes(MPI_Comm comm, int reversed)
{
    const char *map = getenv("NODECOLL_NODE_MAP"), *per_node = getenv("NODECOLL_RANKS_PER_NODE");
    int size;
    MPI_Comm_size(comm, &size);
    int k = per_node ? atoi(per_node) : 0;
    int multinode = k > 0 && k < t_size;
    if (!multinode) return 1;
    return !reversed && !(map && !strcmp(map, "cyclic"));
}

static void run_on(MPI_Comm comm, const char *name, int rounds, uint64_t seed, int reversed)
{
    round_ctx r = {comm, name, 0, 0, 0, NULL};
    uint64_t delays = seed * 7919 + (uint64_t)t_rank; /* differs per rank */
    r.delays = &delays;
    MPI_Comm_rank(comm, &r.rank);
    MPI_Comm_size(comm, &r.size);
    nodecoll_shared a, b;
    T_CHECK(nodecoll_shared_create(comm, MAX_BYTES, &a) == MPI_SUCCESS, "create failed");
    T_CHECK(nodecoll_shared_create(comm, MAX_BYTES, &b) == MPI_SUCCESS, "create failed");
    uint64_t rng = seed;
    int ordered = ordered_nodes(comm, reversed);
    for (r.round = 0; r.round < rounds; r.round++) {
        nodecoll_shared h = t_rand(&rng) % 2 ? a : b;
        switch (t_rand(&rng) % 4) {
        case 0: round_bcast(&r, h, &rng); break;
        case 1: round_allgather(&r, h, &rng); break;
        case 2: round_allgatherv(&r, h, &rng); break;
        default: round_allreduce(&r, h, &rng, ordered);
        }
    }
    nodecoll_shared_free(&a);
    nodecoll_shared_free(&b);
    T_CHECK(a == NODECOLL_SHARED_NULL && b == NODECOLL_SHARED_NULL, "free did not clear the handle");
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    make_types();
    /* Oversubscribed, every PMPI reference call of MPICH costs milliseconds: fewer rounds. */
    int oversubscribed_mpich = t_size > 2 && strstr(t_mpi_name(), "MPICH") != NULL;
    int rounds = t_scale(oversubscribed_mpich ? 40 : t_size > 3 ? 120 : 300);
    run_on(MPI_COMM_WORLD, "world", rounds, 1, 0);
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &reversed);
    run_on(reversed, "reversed", rounds / 3 + 1, 2, 1);
    MPI_Comm_free(&reversed);

    const char *enable = getenv("NODECOLL_ENABLE");
    int accelerated = !(enable && !strcmp(enable, "0")) && t_size > 1;
    uint64_t shared = nodecoll_stat_calls("allgather", "node-shared") + nodecoll_stat_calls("bcast", "node-shared");
    if (accelerated) T_CHECK(shared > 0, "the node-shared path never ran");
    MPI_Type_free(&vector_type);
    MPI_Op_free(&matmul_op);
    return t_finish("shared");
}
