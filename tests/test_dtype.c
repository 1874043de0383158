/* Datatype engine against the host MPI (issue 6).
 *
 * Property test: random datatype trees (tests/dtype_gen.h: depth up to 5, every constructor
 * including subarray and darray, negative and unsorted displacements, zero-length blocks,
 * resized extents) are built as MPI datatypes, decoded (src/mpi/dtype_decode.c) and packed
 * and unpacked over random byte ranges with the resumable cursor; the host's MPI_Pack and
 * MPI_Unpack must agree byte for byte.  Fixed cases add f90 types, MPI_BOTTOM with absolute
 * addresses and padded predefined pairs.  With more than one rank: MPI_Bcast of derived
 * datatypes through nodecoll against PMPI_Bcast, including bytes between the data.
 *
 * Usage: test_dtype [cases] [seed] */
#include "common.h"
#include "dtype_gen.h"
#include "mpi/dtype_decode.h"

static MPI_Datatype make(const gtype *g);

/* The random types the host MPI gets right (see dtype_gen.h). */
static int gen_flags(void)
{
    int open_mpi = strstr(t_mpi_name(), "Open MPI") != NULL;
    return G_WITH_DARRAY | (open_mpi ? G_NO_BACKWARD_OVERLAP : 0);
}

static MPI_Datatype make_list(const gtype *g, MPI_Datatype child)
{
    int n = g->n, ints[G_MAX_N];
    MPI_Aint aints[G_MAX_N];
    MPI_Datatype kids[G_MAX_N], t;
    for (int i = 0; i < n; i++) {
        ints[i] = (int)g->disps[i];
        aints[i] = g->disps[i];
        kids[i] = g->kind == G_STRUCT ? make(g->kids[i]) : child;
    }
    int *bl = (int *)g->blocklens;
    switch (g->kind) {
    case G_INDEXED: MPI_Type_indexed(n, bl, ints, child, &t); break;
    case G_HINDEXED: MPI_Type_create_hindexed(n, bl, aints, child, &t); break;
    case G_INDEXED_BLOCK: MPI_Type_create_indexed_block(n, g->blocklen, ints, child, &t); break;
    case G_HINDEXED_BLOCK: MPI_Type_create_hindexed_block(n, g->blocklen, aints, child, &t); break;
    default:
        MPI_Type_create_struct(n, bl, aints, kids, &t);
        for (int i = 0; i < n; i++) MPI_Type_free(&kids[i]);
    }
    return t;
}

static MPI_Datatype make_array(const gtype *g, MPI_Datatype child)
{
    MPI_Datatype t;
    int order = g->order_c ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    if (g->kind == G_SUBARRAY) {
        MPI_Type_create_subarray(g->ndims, g->sizes, g->subsizes, g->starts, order, child, &t);
        return t;
    }
    static const int distrib[3] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int dist[3], darg[3], procs = 1;
    for (int d = 0; d < g->ndims; d++) {
        dist[d] = distrib[g->distribs[d]];
        darg[d] = g->dargs[d] && g->distribs[d] ? g->dargs[d] : MPI_DISTRIBUTE_DFLT_DARG;
        procs *= g->psizes[d];
    }
    MPI_Type_create_darray(procs, g->rank, g->ndims, g->sizes, dist, darg, g->psizes, order, child, &t);
    return t;
}

static MPI_Datatype make(const gtype *g)
{
    if (g->kind == G_BASIC) { /* a dup, so every node can be freed alike */
        MPI_Datatype basics[G_BASICS] = {MPI_BYTE, MPI_SHORT, MPI_INT, MPI_DOUBLE,
                                         MPI_C_DOUBLE_COMPLEX, MPI_DOUBLE_INT}, t;
        MPI_Type_dup(basics[g->basic], &t);
        return t;
    }
    MPI_Datatype c = make(g->kids[0]), t = MPI_DATATYPE_NULL;
    switch (g->kind) {
    case G_CONTIG: MPI_Type_contiguous(g->count, c, &t); break;
    case G_VECTOR: MPI_Type_vector(g->count, g->blocklen, (int)g->stride, c, &t); break;
    case G_HVECTOR: MPI_Type_create_hvector(g->count, g->blocklen, g->stride, c, &t); break;
    case G_SUBARRAY:
    case G_DARRAY: t = make_array(g, c); break;
    case G_RESIZED: MPI_Type_create_resized(c, g->lb, g->extent, &t); break;
    case G_DUP: MPI_Type_dup(c, &t); break;
    default: t = make_list(g, c);
    }
    MPI_Type_free(&c);
    return t;
}

/* The memory `count` elements of `t` touch, and the host's packing of it. */
typedef struct sample {
    MPI_Datatype type;
    int count;
    size_t size, total, span;
    unsigned char *mem, *base;
    unsigned char *alloc; /* mem with a guard band each side: a host that writes outside
                           * the bounds it reports (Open MPI 4.1 does, for some types)
                           * must not corrupt the heap */
} sample;
#define GUARD 65536

static int sample_make(sample *s, MPI_Datatype t, int count, size_t max_total, uint64_t *rng)
{
    MPI_Count size, lb, extent, tlb, textent;
    MPI_Type_size_x(t, &size);
    if (size <= 0) return 0; /* (and Open MPI's true bounds of an empty type overflow) */
    MPI_Type_get_extent_x(t, &lb, &extent);
    MPI_Type_get_true_extent_x(t, &tlb, &textent);
    MPI_Count last = (MPI_Count)(count - 1) * extent;
    MPI_Count lo = tlb + (last < 0 ? last : 0), hi = tlb + textent + (last > 0 ? last : 0);
    if (size <= 0 || (size_t)(size * count) > max_total || hi - lo > (MPI_Count)max_total * 64) return 0;
    *s = (sample){t, count, (size_t)size, (size_t)(size * count), (size_t)(hi - lo), NULL, NULL, NULL};
    s->alloc = malloc(s->span + 2 * GUARD);
    s->mem = s->alloc + GUARD;
    s->base = s->mem - lo;
    for (size_t i = 0; i < s->span; i++) s->mem[i] = (unsigned char)t_rand(rng);
    return 1;
}

static void host_pack(const sample *s, unsigned char *out)
{
    int pos = 0;
    MPI_Pack(s->base, s->count, s->type, out, (int)s->total, &pos, MPI_COMM_SELF);
}

static void host_unpack(const sample *s, const unsigned char *in)
{
    int pos = 0;
    MPI_Unpack(in, (int)s->total, &pos, s->base, s->count, s->type, MPI_COMM_SELF);
}

/* MPI defines count elements as count single elements, extent apart.  Open MPI 4.1 breaks
 * this for some types (e.g. a struct with an empty block: it packs the copies back to back
 * although the extent says otherwise); such cases say nothing about us and are skipped. */
static int host_consistent(const sample *s)
{
    MPI_Aint lb, extent;
    MPI_Type_get_extent(s->type, &lb, &extent);
    unsigned char *whole = malloc(s->total), *single = malloc(s->total);
    host_pack(s, whole);
    for (int e = 0; e < s->count; e++) {
        int pos = 0;
        MPI_Pack(s->base + e * extent, 1, s->type, single + (size_t)e * s->size, (int)s->size,
                 &pos, MPI_COMM_SELF);
    }
    int same = !memcmp(whole, single, s->total);
    free(whole);
    free(single);
    return same;
}

static int host_inconsistent;

/* Whether two packed bytes share a memory byte (then unpacking depends on order). */
static int overlaps(const sample *s)
{
    unsigned char *keep = malloc(s->span), *ones = malloc(s->total);
    memcpy(keep, s->mem, s->span);
    memset(s->mem, 0, s->span);
    memset(ones, 1, s->total);
    host_unpack(s, ones);
    size_t set = 0;
    for (size_t i = 0; i < s->span; i++) set += s->mem[i];
    memcpy(s->mem, keep, s->span);
    free(keep);
    free(ones);
    return set != s->total;
}

static void check_ranges(const sample *s, const nc_dtype *d, uint64_t *rng, const char *what)
{
    unsigned char *want = malloc(s->total), *got = malloc(s->total);
    host_pack(s, want);
    nc_dt_cursor c;
    nc_dt_cursor_init(&c, d, s->base, (size_t)s->count, 0);
    size_t done = 0, n;
    while ((n = nc_dt_pack(&c, got + done, (size_t)(t_rand(rng) % 64) + 1))) done += n;
    T_CHECK(done == s->total && !memcmp(got, want, s->total), "%s: chunked pack differs", what);
    for (int r = 0; r < 4; r++) {
        size_t off = t_rand(rng) % s->total, len = t_rand(rng) % s->total + 1;
        nc_dt_cursor_init(&c, d, s->base, (size_t)s->count, off);
        n = nc_dt_pack(&c, got, len);
        T_CHECK(n == (len < s->total - off ? len : s->total - off) && !memcmp(got, want + off, n),
                "%s: pack of [%zu, +%zu) differs", what, off, len);
    }
    if (!overlaps(s)) { /* unpack a random range: the host unpacks the whole stream with it */
        unsigned char *orig = malloc(s->span), *expect = malloc(s->span);
        memcpy(orig, s->mem, s->span);
        size_t off = t_rand(rng) % s->total, len = t_rand(rng) % (s->total - off) + 1;
        for (size_t k = off; k < off + len; k++) want[k] = (unsigned char)t_rand(rng);
        host_unpack(s, want);
        memcpy(expect, s->mem, s->span);
        memcpy(s->mem, orig, s->span);
        nc_dt_cursor_init(&c, d, s->base, (size_t)s->count, off);
        for (done = 0; done < len; done += n)
            n = nc_dt_unpack(&c, want + off + done, (t_rand(rng) % 48 + 1) % (len - done + 1));
        T_CHECK(!memcmp(s->mem, expect, s->span), "%s: unpack of [%zu, +%zu) differs", what, off, len);
        memcpy(s->mem, orig, s->span);
        free(orig);
        free(expect);
    }
    free(want);
    free(got);
}

/* One committed type: decoded (and cached), then checked at a random count. */
static int check_type(MPI_Datatype t, uint64_t *rng, const char *what)
{
    sample s;
    if (!sample_make(&s, t, (int)(t_rand(rng) % 3) + 1, 1 << 16, rng)) return 0;
    const nc_dtype *d = nc_mpi_dtype(t);
    T_CHECK(d != NULL, "%s: not decoded", what);
    T_CHECK(nc_mpi_dtype(t) == d, "%s: the description is not cached", what);
    if (d && host_consistent(&s)) check_ranges(&s, d, rng, what);
    else host_inconsistent += d != NULL;
    free(s.alloc);
    return d != NULL;
}

static void random_types(int cases, uint64_t seed)
{
    uint64_t rng = seed, gen = seed ^ 0xd1b54a32d192ed03ULL;
    int checked = 0;
    for (int i = 0; i < cases; i++) {
        gtype *g = g_random(&gen, 5, gen_flags());
        if (getenv("TEST_DTYPE_SHOW") && atoi(getenv("TEST_DTYPE_SHOW")) == i) g_print(stderr, g, 2);
        MPI_Datatype t = make(g);
        MPI_Type_commit(&t);
        char what[48];
        snprintf(what, sizeof what, "random type %d (seed %llu)", i, (unsigned long long)seed);
        int failed = t_failures;
        checked += check_type(t, &rng, what);
        if (t_failures > failed) g_print(stderr, g, 2);
        MPI_Type_free(&t);
        g_free(g);
    }
    if (t_rank == 0)
        printf("random types: %d of %d checked (%d skipped: the host's count packing differs from "
               "its single-element packing)\n", checked - host_inconsistent, cases, host_inconsistent);
}

/* f90 types, MPI_BOTTOM with absolute addresses, a padded pair and a large-count vector. */
static void fixed_types(uint64_t *rng)
{
    MPI_Datatype real8, t;
    MPI_Type_create_f90_real(15, MPI_UNDEFINED, &real8);
    MPI_Type_vector(5, 2, 3, real8, &t);
    MPI_Type_commit(&t);
    check_type(t, rng, "vector of f90 real");
    MPI_Type_free(&t);

    double data[20];
    for (int i = 0; i < 20; i++) data[i] = i * 1.5;
    MPI_Aint addr[3];
    int bl[3] = {2, 1, 3};
    MPI_Get_address(&data[10], &addr[0]);
    MPI_Get_address(&data[1], &addr[1]);
    MPI_Get_address(&data[15], &addr[2]);
    MPI_Type_create_hindexed(3, bl, addr, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    const nc_dtype *d = nc_mpi_dtype(t);
    double want[6] = {data[10], data[11], data[1], data[15], data[16], data[17]}, got[6];
    nc_dt_cursor c; /* (MPICH 4.0.2's MPI_Pack refuses MPI_BOTTOM: the oracle is the data) */
    if (d) nc_dt_cursor_init(&c, d, MPI_BOTTOM, 1, 0);
    T_CHECK(d && nc_dt_pack(&c, got, 48) == 48 && !memcmp(got, want, 48), "MPI_BOTTOM hindexed differs");
    MPI_Type_free(&t);

    MPI_Type_contiguous(3, MPI_DOUBLE_INT, &t);
    MPI_Type_commit(&t);
    check_type(t, rng, "contiguous of MPI_DOUBLE_INT");
    MPI_Type_free(&t);
#if MPI_VERSION >= 4
    MPI_Type_vector_c(4, 3, 5, MPI_INT, &t);
    MPI_Type_commit(&t);
    check_type(t, rng, "large-count vector");
    MPI_Type_free(&t);
#endif
}

/* ---------- MPI_Bcast of derived datatypes against PMPI_Bcast ---------- */

static void bcast_types(int cases, uint64_t seed)
{
    uint64_t gen = seed, rng = seed + (uint64_t)t_rank;
    /* With the engine on, derived types are used in place; off, the host packs a copy. */
    const char *engine = getenv("NODECOLL_DTYPE_ENGINE");
    const char *path = engine && !strcmp(engine, "0") ? "packed" : "typed";
    uint64_t path_before = nodecoll_stat_calls("bcast", path);
    int ran = 0;
    for (int i = 0; i < cases; i++) {
        gtype *g = g_random(&gen, 4, gen_flags()); /* the same type on every rank */
        int count = (int)(g_rand(&gen, 1, 300)), root = (int)g_rand(&gen, 0, t_size - 1);
        MPI_Datatype t = make(g);
        MPI_Type_commit(&t);
        sample mine, host;
        int ok = sample_make(&mine, t, count, 1 << 20, &rng);
        if (ok) {
            host = mine;
            host.alloc = malloc(mine.span + 2 * GUARD);
            host.mem = host.alloc + GUARD;
            memcpy(host.mem, mine.mem, mine.span);
            host.base = host.mem + (mine.base - mine.mem);
            MPI_Bcast(mine.base, count, t, root, MPI_COMM_WORLD);
            PMPI_Bcast(host.base, count, t, root, MPI_COMM_WORLD);
            T_CHECK(!memcmp(mine.mem, host.mem, mine.span), "bcast case %d (%d elements, root %d) differs",
                    i, count, root);
            free(host.alloc);
            free(mine.alloc);
            ran++;
        }
        MPI_Type_free(&t);
        g_free(g);
    }
    T_CHECK(ran == 0 || nodecoll_stat_calls("bcast", path) > path_before,
            "derived-type Bcasts did not take nodecoll's %s path", path);
    if (t_rank == 0) printf("bcast: %d derived-type cases\n", ran);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int cases = t_scale(argc > 1 ? atoi(argv[1]) : 2000);
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    uint64_t rng = seed * 77 + (uint64_t)t_rank;
    if (t_size == 1) {
        random_types(cases, seed);
        fixed_types(&rng);
    } else {
        bcast_types(cases, seed);
    }
    return t_finish("test_dtype");
}
