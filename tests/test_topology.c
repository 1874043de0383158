/* Barrier, Bcast, Reduce and Allreduce over topology groups (issue 19), against the host MPI
 * through PMPI, byte for byte: random sizes (inline, ring, single copy), roots, MPI_IN_PLACE,
 * commutative and non-commutative operations, on MPI_COMM_WORLD, on a communicator with the
 * ranks reversed (its groups are not in rank order) and on a split into halves.  Run on a
 * synthetic topology (HWLOC_SYNTHETIC) with the ranks dealt onto it (NODECOLL_TOPO_PLACE).
 *
 * NODECOLL_TEST_GROUPED=1: the node has groups, so the registry must have run Barrier as the
 * tree (not dissemination) and a small Allreduce as the tree (not flat); =0: the node is
 * flat, and Barrier is not the tree.  Usage: test_topology [cases [VAR=value ...]]: each
 * VAR=value is set in the environment before MPI_Init (values with spaces, colons or commas,
 * such as HWLOC_SYNTHETIC's, which the tests' environment lists cannot carry). */
#include "common.h"

static MPI_Op affine_op; /* non-commutative: (a, b) then (c, d) is x -> c(ax + b) + d */

static void affine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    uint32_t *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        uint32_t a = x[2 * i], b = x[2 * i + 1], c = y[2 * i], d = y[2 * i + 1];
        y[2 * i] = c * a;
        y[2 * i + 1] = c * b + d;
    }
}

static MPI_Datatype pair_type;

static size_t draw_count(uint64_t *rng)
{
    switch (t_rand(rng) % 5) {
    case 0: return 1 + t_rand(rng) % 12;        /* inline */
    case 1: return t_rand(rng) % 2000;          /* a fragment */
    case 2: return t_rand(rng) % 20000;         /* the ring, several fragments */
    case 3: return 40000 + t_rand(rng) % 60000; /* single copy for Bcast; slices for Allreduce */
    default: return t_rand(rng) % 300;
    }
}

static void fill(uint32_t *v, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) v[i] = (uint32_t)t_rand(&seed) | 1; /* odd: affine products stay informative */
}

static void check_bcast(MPI_Comm comm, const char *name, int rank, uint64_t *rng, int k)
{
    size_t n = draw_count(rng) * 3 + t_rand(rng) % 3;
    int size, root;
    MPI_Comm_size(comm, &size);
    root = (int)(t_rand(rng) % (uint64_t)size);
    unsigned char *got = malloc(n + 1), *want = malloc(n + 1);
    uint64_t seed = t_rand(rng);
    for (size_t i = 0; i < n; i++) want[i] = (unsigned char)t_rand(&seed);
    if (rank == root) memcpy(got, want, n);
    else memset(got, 0xa5, n);
    MPI_Bcast(got, (int)n, MPI_BYTE, root, comm);
    T_CHECK(!memcmp(got, want, n), "%s case %d: Bcast of %zu bytes from %d differs", name, k, n, root);
    free(got);
    free(want);
}

static void check_reduction(MPI_Comm comm, const char *name, int rank, uint64_t *rng, int k, int rooted)
{
    int size, root, which = (int)(t_rand(rng) % 3), in_place = t_rand(rng) % 4 == 0;
    MPI_Comm_size(comm, &size);
    root = (int)(t_rand(rng) % (uint64_t)size);
    size_t n = draw_count(rng) / 2 + 1;
    MPI_Op op = which == 0 ? MPI_SUM : which == 1 ? MPI_MAX : affine_op;
    /* (MAX on a signed type: MPICH 4.0.2's own MAX compares MPI_UINT32_T and MPI_UNSIGNED as
     * signed, 0x80000001 < 5, so it cannot be the oracle there) */
    MPI_Datatype type = which == 2 ? pair_type : which == 1 ? MPI_INT32_T : MPI_UINT32_T;
    size_t words = which == 2 ? 2 * n : n;
    uint32_t *send = malloc(words * 4), *got = malloc(words * 4), *want = malloc(words * 4);
    fill(send, words, t_rand(rng) + (uint64_t)rank * 7919);
    memset(got, 0x5a, words * 4);
    memset(want, 0x5a, words * 4);
    if (rooted) {
        int here = in_place && rank == root;
        if (here) memcpy(got, send, words * 4);
        MPI_Reduce(here ? MPI_IN_PLACE : send, got, (int)n, type, op, root, comm);
        PMPI_Reduce(send, want, (int)n, type, op, root, comm);
        if (rank == root)
            T_CHECK(!memcmp(got, want, words * 4), "%s case %d: Reduce (op %d) of %zu to %d differs", name, k, which,
                    n, root);
    } else {
        if (in_place) memcpy(got, send, words * 4);
        MPI_Allreduce(in_place ? MPI_IN_PLACE : send, got, (int)n, type, op, comm);
        PMPI_Allreduce(send, want, (int)n, type, op, comm);
        T_CHECK(!memcmp(got, want, words * 4), "%s case %d: Allreduce (op %d) of %zu differs", name, k, which, n);
    }
    free(send);
    free(got);
    free(want);
}

static void run_on(MPI_Comm comm, const char *name, int cases, uint64_t seed)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (int k = 0; k < cases; k++) {
        switch (t_rand(&seed) % 4) {
        case 0: MPI_Barrier(comm); break;
        case 1: check_bcast(comm, name, rank, &seed, k); break;
        default: check_reduction(comm, name, rank, &seed, k, (int)(t_rand(&seed) % 2)); break;
        }
    }
}

int main(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq) *eq = '\0', setenv(argv[i], eq + 1, 1); /* (nodecoll reads settings and hwloc at first use) */
    }
    t_init(&argc, &argv);
    MPI_Op_create(affine, 0, &affine_op);
    MPI_Type_contiguous(2, MPI_UINT32_T, &pair_type);
    MPI_Type_commit(&pair_type);
    int cases = t_scale(argc > 1 ? atoi(argv[1]) : 60);
    const char *grouped = getenv("NODECOLL_TEST_GROUPED");

    nodecoll_stat_reset();
    MPI_Barrier(MPI_COMM_WORLD);
    int small = 3;
    MPI_Allreduce(MPI_IN_PLACE, &small, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (grouped) {
        int want = atoi(grouped);
        T_CHECK((nodecoll_stat_calls("barrier", "tree") > 0) == want, "Barrier ran %s the tree (groups expected: %d)",
                want ? "without" : "as", want);
        T_CHECK(!want || nodecoll_stat_calls("allreduce", "tree") > 0, "a small Allreduce ran without the tree");
    }
    run_on(MPI_COMM_WORLD, "world", cases, 1);
    MPI_Comm reversed, half;
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &reversed);
    run_on(reversed, "reversed", cases / 2 + 1, 2);
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &half);
    run_on(half, "half", cases / 3 + 1, 3);
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&half);
    MPI_Type_free(&pair_type);
    MPI_Op_free(&affine_op);
    return t_finish("topology");
}
