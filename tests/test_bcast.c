/* Differential test of MPI_Bcast: every accelerated call is repeated through PMPI_Bcast and
 * the whole receive buffer (gaps of derived types included) must match byte for byte.
 * Sizes from 0 B to 16 MiB, every root, predefined / padded / derived / mixed datatypes,
 * on COMM_WORLD, a duplicate and a split with shuffled rank order. */
#include <unistd.h>

#include "common.h"

enum { T_BYTE, T_INT, T_DOUBLE, T_DOUBLE_INT, T_VECTOR, T_MIXED, T_TYPES };
static const char *type_names[] = {"byte", "int", "double", "double_int", "vector", "mixed"};

typedef struct bcast_case {
    size_t bytes_hint;
    int kind, root;
} bcast_case;

/* vector: 3 doubles out of every 5; "mixed": the root sends ints through a contiguous
 * derived type while the others receive plain MPI_INT, as MPI allows. */
static MPI_Datatype vector_type, int4_type;

static void make_types(void)
{
    MPI_Type_vector(1, 3, 5, MPI_DOUBLE, &vector_type);
    MPI_Datatype v;
    MPI_Type_create_resized(vector_type, 0, 5 * sizeof(double), &v);
    MPI_Type_free(&vector_type);
    vector_type = v;
    MPI_Type_commit(&vector_type);
    MPI_Type_contiguous(4, MPI_INT, &int4_type);
    MPI_Type_commit(&int4_type);
}

/* Datatype, count and buffer extent for roughly `bytes` of payload on this rank. */
static void layout(int kind, size_t bytes, int is_root, MPI_Datatype *type, int *count, size_t *extent)
{
    switch (kind) {
    case T_BYTE: *type = MPI_BYTE; *count = (int)bytes; *extent = bytes; break;
    case T_INT: *type = MPI_INT; *count = (int)(bytes / 4); *extent = (size_t)*count * 4; break;
    case T_DOUBLE: *type = MPI_DOUBLE; *count = (int)(bytes / 8); *extent = (size_t)*count * 8; break;
    case T_DOUBLE_INT: {
        MPI_Aint lb, ext;
        MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext);
        *type = MPI_DOUBLE_INT; *count = (int)(bytes / 12); *extent = (size_t)*count * (size_t)ext;
        break;
    }
    case T_VECTOR: *type = vector_type; *count = (int)(bytes / 24); *extent = (size_t)*count * 40; break;
    default: { /* T_MIXED */
        int ints = (int)(bytes / 16) * 4;
        *type = is_root ? int4_type : MPI_INT;
        *count = is_root ? ints / 4 : ints;
        *extent = (size_t)ints * 4;
    }
    }
}

static size_t random_size(uint64_t *rng)
{
    switch (t_rand(rng) % 6) {
    case 0: return t_rand(rng) % 65;
    case 1: return t_rand(rng) % 4097;
    case 2: return t_rand(rng) % (64 << 10);
    case 3: return t_rand(rng) % (1 << 20);
    case 4: return t_rand(rng) % (4 << 20);
    default: return (t_rand(rng) % 8 == 0) ? (16u << 20) - t_rand(rng) % 3 : t_rand(rng) % (256 << 10);
    }
}

static void run_case(MPI_Comm comm, const char *comm_name, const bcast_case *c, uint64_t seed)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Datatype type;
    int count;
    size_t extent;
    layout(c->kind, c->bytes_hint, rank == c->root, &type, &count, &extent);
    unsigned char *got = malloc(extent + 1), *want = malloc(extent + 1);
    uint64_t rng = seed;
    for (size_t i = 0; i < extent; i++) {
        unsigned char root_byte = (unsigned char)t_rand(&rng);
        /* Non-roots start from a sentinel so bytes that should stay untouched (gaps) are checked too. */
        got[i] = want[i] = rank == c->root ? root_byte : (unsigned char)(0xA5 ^ i);
    }
    got[extent] = want[extent] = 0x3c; /* past the buffer: must stay */
    uint64_t fallbacks = nodecoll_stat_calls("bcast", "pmpi:*");
    int e1 = MPI_Bcast(got, count, type, c->root, comm);
    int e2 = PMPI_Bcast(want, count, type, c->root, comm);
    T_CHECK(e1 == MPI_SUCCESS && e2 == MPI_SUCCESS, "%s: errors %d/%d", comm_name, e1, e2);
    T_CHECK(size == 1 || nodecoll_stat_calls("bcast", "pmpi:*") == fallbacks, "%s: bcast of %zu bytes (%s) fell back",
            comm_name, c->bytes_hint, type_names[c->kind]);
    T_CHECK(got[extent] == 0x3c, "%s: bcast %s count %d root %d wrote past the buffer", comm_name, type_names[c->kind],
            count, c->root);
    if (memcmp(got, want, extent)) {
        size_t i = 0;
        while (got[i] == want[i]) i++;
        t_fail("%s: bcast %s count %d root %d differs at byte %zu of %zu (got %02x want %02x)", comm_name,
               type_names[c->kind], count, c->root, i, extent, got[i], want[i]);
    }
    free(got);
    free(want);
}

/* every_root_at_edges: the fixed sizes below at each root (most of the test's bytes: not on a
 * plain duplicate, whose layout is the world's). */
static void run_on(MPI_Comm comm, const char *comm_name, int cases, int every_root_at_edges, uint64_t seed)
{
    int size;
    MPI_Comm_size(comm, &size);
    uint64_t rng = seed;
    for (int i = 0; i < cases; i++) {
        bcast_case c = {random_size(&rng), (int)(t_rand(&rng) % T_TYPES), (int)(t_rand(&rng) % (uint64_t)size)};
        run_case(comm, comm_name, &c, t_rand(&rng));
    }
    /* Every root and every type at a few fixed sizes, around the segment and chunk edges. */
    static const size_t edges[] = {1, 8, 4096, 32767, 32768, 32769, 65536, 1 << 20};
    for (size_t e = 0; every_root_at_edges && e < sizeof edges / sizeof edges[0]; e++)
        for (int root = 0; root < size; root++) {
            bcast_case c = {edges[e] * 16, (int)((e + (size_t)root) % T_TYPES), root};
            run_case(comm, comm_name, &c, t_rand(&rng));
        }
}

/* Ranks 2 and up receive a large Bcast with a derived type (they take no push from the root
 * and do not wait for it), rank 1 with MPI_INT and late: ranks 2 and up run ahead into the
 * next Bcast while the root still pushes the first to rank 1.  The root must never write
 * the first call's tail into a buffer offered for the second (it did, with single copy and
 * push, before the offers carried their call). */
static void push_while_a_rank_runs_ahead(void)
{
    if (t_size < 4) return;
    enum { NV = 70000, NC = 180000 };
    MPI_Datatype every_other;
    MPI_Type_vector(NV, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int *v = malloc(sizeof(int) * 2 * NV), *c = malloc(sizeof(int) * NC), last = t_size - 1;
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 2 * NV; i++) v[i] = t_rank == 0 ? it + i : -1;
        for (int i = 0; i < NC; i++) c[i] = t_rank == last ? 3 * it + i : -2;
        MPI_Barrier(MPI_COMM_WORLD);
        if (t_rank == 1) usleep(50000);
        if (t_rank <= 1) MPI_Bcast(v, NV, MPI_INT, 0, MPI_COMM_WORLD);
        else MPI_Bcast(v, 1, every_other, 0, MPI_COMM_WORLD);
        MPI_Bcast(c, NC, MPI_INT, last, MPI_COMM_WORLD);
        int wrong = 0;
        for (int i = 0; i < NC; i++) wrong += c[i] != 3 * it + i;
        T_CHECK(!wrong, "push while a rank runs ahead: %d wrong ints in the second Bcast (round %d)", wrong, it);
    }
    free(v);
    free(c);
    MPI_Type_free(&every_other);
}

/* One root several times in a row at sizes around Bcast's chain of inline flags (112 and
 * 224 bytes): whichever node algorithm runs, the next call's announcement must find its
 * slots free (a chain announced before a single-copy call, which took one fragment, left
 * the root's next call waiting forever for a slot no rank released). */
static void one_root_in_a_row(void)
{
    static const int sizes[] = {100, 120, 200, 224, 240, 300, 8};
    char buf[300];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int it = 0; it < 4; it++) {
            for (int i = 0; i < sizes[s]; i++) buf[i] = t_rank == 0 ? (char)(it * 7 + i) : -1;
            MPI_Bcast(buf, sizes[s], MPI_CHAR, 0, MPI_COMM_WORLD);
            int wrong = 0;
            for (int i = 0; i < sizes[s]; i++) wrong += buf[i] != (char)(it * 7 + i);
            T_CHECK(!wrong, "one root in a row: %d wrong bytes of %d (call %d)", wrong, sizes[s], it);
        }
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    one_root_in_a_row();
    push_while_a_rank_runs_ahead();
    make_types();
    int cases = t_scale(60);
    run_on(MPI_COMM_WORLD, "world", cases, 1, 1);

    MPI_Comm dup, shuffled;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    run_on(dup, "dup", cases / 3 + 1, 0, 2);
    /* Reverse order inside two halves: ranks of a node are no longer consecutive. */
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, -t_rank, &shuffled);
    run_on(shuffled, "split", cases / 3 + 1, 1, 3);
    MPI_Comm_free(&shuffled);
    MPI_Comm_free(&dup);

    MPI_Type_free(&vector_type);
    MPI_Type_free(&int4_type);
    if (t_size > 1) T_CHECK(nodecoll_stat_calls("bcast", "*") > nodecoll_stat_calls("bcast", "pmpi:*"),
                            "the accelerated path never ran");
    return t_finish("bcast");
}
