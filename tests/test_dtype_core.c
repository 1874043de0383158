/* The datatype engine without MPI: random datatype trees (tests/dtype_gen.h) built through
 * the core constructors must pack, unpack, describe as iovecs and look ahead exactly as the
 * reference layout enumerated from the constructor arguments says, from any starting
 * offset and in chunks of any size (the resumable cursor).  Also fixed cases: every vector
 * kernel size, deep nests, huge counts (positions past 2^31 without touching memory).
 *
 * Usage: test_dtype_core [cases] [seed] [fuzz]  (any seed must pass; "fuzz": run the fuzz
 * target, LLVMFuzzerTestOneInput, on `cases` random inputs instead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dtype.h"
#include "dtype_gen.h"

static int failures;
#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fputc('\n', stderr);                                                           \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static nc_dtype *build(const gtype *g);

static nc_dtype *build_list(const gtype *g, long scale)
{
    ptrdiff_t disp[G_MAX_N];
    size_t bl[G_MAX_N];
    nc_dtype *kids[G_MAX_N];
    int same_len = g->kind == G_INDEXED_BLOCK || g->kind == G_HINDEXED_BLOCK;
    for (int i = 0; i < g->n; i++) {
        disp[i] = g->disps[i] * scale;
        bl[i] = (size_t)(same_len ? g->blocklen : g->blocklens[i]);
        if (g->kind == G_STRUCT) kids[i] = build(g->kids[i]);
    }
    if (g->kind == G_STRUCT) return nc_dt_struct((size_t)g->n, disp, bl, kids);
    return nc_dt_indexed((size_t)g->n, disp, bl, build(g->kids[0]));
}

static nc_dtype *build(const gtype *g)
{
    const gtype *c = g->kids[0];
    switch (g->kind) {
    case G_BASIC:
        if (g->basic == G_PAIR) {
            ptrdiff_t disp[2] = {0, 8};
            size_t bl[2] = {1, 1};
            nc_dtype *parts[2] = {nc_dt_bytes(8), nc_dt_bytes(4)};
            return nc_dt_resized(nc_dt_struct(2, disp, bl, parts), 0, 16);
        }
        return nc_dt_bytes((size_t)g_basic_size[g->basic]);
    case G_CONTIG:
        return nc_dt_vector((size_t)g->count, 1, c->extent, build(c));
    case G_VECTOR:
        return nc_dt_vector((size_t)g->count, (size_t)g->blocklen, g->stride * c->extent, build(c));
    case G_HVECTOR:
        return nc_dt_vector((size_t)g->count, (size_t)g->blocklen, g->stride, build(c));
    case G_INDEXED:
    case G_INDEXED_BLOCK:
        return build_list(g, c->extent);
    case G_HINDEXED:
    case G_HINDEXED_BLOCK:
    case G_STRUCT:
        return build_list(g, 1);
    case G_SUBARRAY: {
        size_t sizes[3], sub[3], starts[3];
        for (int d = 0; d < g->ndims; d++) {
            sizes[d] = (size_t)g->sizes[d];
            sub[d] = (size_t)g->subsizes[d];
            starts[d] = (size_t)g->starts[d];
        }
        return nc_dt_subarray(g->ndims, sizes, sub, starts, g->order_c, build(c));
    }
    case G_RESIZED:
        return nc_dt_resized(build(c), g->lb, g->extent);
    default: /* G_DUP */
        return build(c);
    }
}

/* A buffer holding every byte `count` elements touch, and the reference packing order. */
typedef struct layout {
    unsigned char *mem, *base;
    size_t span, total;
    size_t *at; /* packed byte k lives at base + at[k] (relative to mem) */
} layout;

static void layout_make(layout *l, const gtype *g, size_t count)
{
    long lo = 0, hi = 0;
    l->total = count * g->size;
    l->at = malloc((l->total ? l->total : 1) * sizeof *l->at);
    for (size_t e = 0; e < count; e++)
        for (size_t b = 0; b < g->size; b++) {
            long a = (long)e * g->extent + g->map[b];
            if ((e == 0 && b == 0) || a < lo) lo = a;
            if ((e == 0 && b == 0) || a >= hi) hi = a + 1;
        }
    l->span = (size_t)(hi - lo);
    l->mem = malloc(l->span + 1);
    l->base = l->mem - lo;
    for (size_t k = 0; k < l->total; k++)
        l->at[k] = (size_t)((long)(k / g->size) * g->extent + g->map[k % g->size] - lo);
}

/* Whether two packed bytes land on the same memory byte (unpack is then order-dependent). */
static int overlaps(const layout *l)
{
    unsigned char *seen = calloc(l->span + 1, 1);
    int dup = 0;
    for (size_t k = 0; k < l->total && !dup; k++) dup = seen[l->at[k]]++ != 0;
    free(seen);
    return dup;
}

static void fill(unsigned char *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)g_rand(s, 0, 255);
}

static void check_pack(const nc_dtype *t, const layout *l, size_t count, uint64_t *s, int id)
{
    unsigned char *want = malloc(l->total), *got = malloc(l->total + 1);
    for (size_t k = 0; k < l->total; k++) want[k] = l->mem[l->at[k]];
    /* the whole stream in random chunks, one cursor throughout (resumption) */
    nc_dt_cursor c;
    nc_dt_cursor_init(&c, t, l->base, count, 0);
    size_t done = 0;
    while (done < l->total) {
        size_t len = (size_t)g_rand(s, 1, 40);
        size_t n = nc_dt_pack(&c, got + done, len);
        CHECK(n == (len < l->total - done ? len : l->total - done), "case %d: pack returned %zu", id, n);
        if (!n) break;
        done += n;
    }
    CHECK(nc_dt_pack(&c, got, 1) == 0, "case %d: pack past the end", id);
    CHECK(!memcmp(got, want, l->total), "case %d: chunked pack differs", id);
    /* the whole stream in one call (the kernels that take many runs at once) */
    nc_dt_cursor_init(&c, t, l->base, count, 0);
    CHECK(nc_dt_pack(&c, got, l->total) == l->total && !memcmp(got, want, l->total), "case %d: whole pack differs",
          id);
    /* random ranges from a fresh position, with a look-ahead in between that must not move it */
    for (int r = 0; r < 6; r++) {
        size_t off = (size_t)g_rand(s, 0, (long)l->total - 1), len = (size_t)g_rand(s, 1, (long)l->total);
        size_t expect = len < l->total - off ? len : l->total - off;
        nc_dt_cursor_init(&c, t, l->base, count, off);
        nc_dt_shape ahead = nc_dt_lookahead(&c, len, SIZE_MAX, 8);
        CHECK(ahead.bytes == expect && (ahead.runs > 0), "case %d: look-ahead saw %zu of %zu bytes", id,
              ahead.bytes, expect);
        size_t n = nc_dt_pack(&c, got, len);
        CHECK(n == expect && !memcmp(got, want + off, n), "case %d: pack [%zu,+%zu) differs", id, off, len);
        CHECK(c.offset == off + n, "case %d: cursor offset %zu", id, c.offset);
    }
    /* iovecs, a few at a time */
    size_t off = (size_t)g_rand(s, 0, (long)l->total - 1);
    nc_dt_cursor_init(&c, t, l->base, count, off);
    done = 0;
    for (;;) {
        struct iovec iov[3];
        size_t niov, n = nc_dt_iov(&c, iov, 3, (size_t)g_rand(s, 1, 64), &niov);
        if (!n) break;
        for (size_t i = 0; i < niov; i++) {
            memcpy(got + done, iov[i].iov_base, iov[i].iov_len);
            done += iov[i].iov_len;
        }
    }
    CHECK(done == l->total - off && !memcmp(got, want + off, done), "case %d: iovecs differ", id);
    free(want);
    free(got);
}

static void check_unpack(const nc_dtype *t, const layout *l, size_t count, uint64_t *s, int id)
{
    unsigned char *src = malloc(l->total), *want = malloc(l->span), *orig = malloc(l->span);
    fill(src, l->total, s);
    memcpy(orig, l->mem, l->span);
    memcpy(want, l->mem, l->span);
    size_t off = (size_t)g_rand(s, 0, (long)l->total - 1), len = (size_t)g_rand(s, 1, (long)l->total);
    if (len > l->total - off) len = l->total - off;
    for (size_t k = off; k < off + len; k++) want[l->at[k]] = src[k];
    nc_dt_cursor c;
    nc_dt_cursor_init(&c, t, l->base, count, off);
    size_t done = 0;
    while (done < len) done += nc_dt_unpack(&c, src + off + done, (size_t)g_rand(s, 1, 33) % (len - done + 1));
    CHECK(!memcmp(l->mem, want, l->span), "case %d: unpack [%zu,+%zu) differs", id, off, len);
    memcpy(l->mem, orig, l->span);
    free(src);
    free(want);
    free(orig);
}

/* nc_dt_copy into a second buffer of the same layout: every data byte arrives, no gap byte
 * of the destination changes. */
static void check_copy(const nc_dtype *t, const layout *l, size_t count, uint64_t *s, int id)
{
    unsigned char *dst = malloc(l->span + 1), *want = malloc(l->span + 1);
    fill(dst, l->span, s);
    memcpy(want, dst, l->span);
    for (size_t k = 0; k < l->total; k++) want[l->at[k]] = l->mem[l->at[k]];
    nc_dt_copy(t, l->base, dst + (l->base - l->mem), count);
    CHECK(!memcmp(dst, want, l->span), "case %d: copy between layouts differs", id);
    free(dst);
    free(want);
}

/* One generated tree against its reference layout: pack, unpack and copy of 1-3 elements.
 * Returns whether it was checked (some trees are too large, empty or not buildable). */
static int check_tree(gtype *g, uint64_t *s, int id)
{
    if (!g_layout(g)) return 0;
    nc_dtype *t = build(g);
    CHECK(t != NULL, "case %d: not built", id);
    if (!t) return 0;
    CHECK(t->size == g->size && t->lb == g->lb && t->extent == g->extent,
          "case %d: size/lb/extent %zu/%td/%td, want %zu/%ld/%ld", id, t->size, t->lb, t->extent, g->size,
          g->lb, g->extent);
    size_t count = (size_t)g_rand(s, 1, 3);
    int tested = g->size && (long)(count * g->size) <= G_MAX_MAP * 4;
    if (tested) {
        layout l;
        layout_make(&l, g, count);
        fill(l.mem, l.span, s);
        check_pack(t, &l, count, s, id);
        if (!overlaps(&l)) {
            check_unpack(t, &l, count, s, id);
            check_copy(t, &l, count, s, id);
        }
        free(l.mem);
        free(l.at);
    }
    nc_dt_free(t);
    return tested;
}

static void random_cases(int cases, uint64_t seed)
{
    uint64_t s = seed;
    int tested = 0;
    for (int id = 0; id < cases; id++) {
        gtype *g = g_random(&s, 5, G_WITH_EMPTY);
        tested += check_tree(g, &s, id);
        g_free(g);
    }
    printf("random trees: %d packed and unpacked (%d generated)\n", tested, cases);
}

/* The fuzz target (libFuzzer's entry point; scripts/fuzz.sh builds it with clang): the
 * input's bytes choose the tree, one byte per draw of the generator; a hash of them seeds
 * the element count, the fill and the ranges checked.  A failed check aborts, so the fuzzer
 * keeps the input. */
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    uint64_t s = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < size; i++) s = (s ^ data[i]) * 1099511628211ULL;
    g_bytes = data;
    g_bytes_left = size;
    gtype *g = g_random(&s, 5, G_WITH_EMPTY);
    g_bytes = NULL;
    int before = failures;
    check_tree(g, &s, -1);
    if (failures != before) {
        g_print(stderr, g, 0);
        abort();
    }
    g_free(g);
    return 0;
}

/* The fuzz target on random inputs of 0-400 bytes, for builds without libFuzzer (CI). */
static void replay_fuzz_target(int inputs, uint64_t seed)
{
    uint64_t s = seed;
    unsigned char buf[400];
    for (int i = 0; i < inputs; i++) {
        size_t n = (size_t)g_rand(&s, 0, sizeof buf);
        for (size_t k = 0; k < n; k++) buf[k] = (unsigned char)g_rand(&s, 0, 255);
        LLVMFuzzerTestOneInput(buf, n);
    }
    printf("fuzz target: %d random inputs\n", inputs);
}

/* Every strided kernel size, with odd strides and negative ones. */
static void kernel_sizes(void)
{
    static const size_t sizes[] = {1, 2, 3, 4, 8, 12, 16, 24, 32, 40};
    unsigned char mem[4096], out[4096];
    for (size_t i = 0; i < sizeof mem; i++) mem[i] = (unsigned char)(i * 7 + 3);
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (ptrdiff_t stride = -60; stride <= 60; stride += 41) {
            size_t b = sizes[si], n = 20;
            nc_dtype *t = nc_dt_vector(n, 1, stride + (stride > 0 ? (ptrdiff_t)b : -(ptrdiff_t)b),
                                       nc_dt_bytes(b));
            ptrdiff_t st = stride + (stride > 0 ? (ptrdiff_t)b : -(ptrdiff_t)b);
            unsigned char *base = mem + 2048;
            nc_dt_cursor c;
            nc_dt_cursor_init(&c, t, base, 1, 0);
            CHECK(nc_dt_pack(&c, out, n * b) == n * b, "kernel %zu: short", b);
            int ok = 1;
            for (size_t k = 0; k < n * b; k++) ok = ok && out[k] == base[(ptrdiff_t)(k / b) * st + (ptrdiff_t)(k % b)];
            CHECK(ok, "kernel %zu stride %td differs", b, st);
            nc_dt_free(t);
        }
}

/* Positions beyond 2^31 elements and 2^32 bytes: seeking is arithmetic, nothing is touched. */
static void huge_counts(void)
{
    nc_dtype *col = nc_dt_vector(3, 1, 64, nc_dt_bytes(8)); /* 24 bytes, extent 136 */
    nc_dt_cursor c;
    size_t count = (size_t)1 << 33, off = ((size_t)1 << 32) * 24 + 16 + 3;
    nc_dt_cursor_init(&c, col, (void *)(uintptr_t)0x1000, count, off);
    struct iovec iov[2];
    size_t niov, n = nc_dt_iov(&c, iov, 2, 100, &niov);
    uintptr_t want = 0x1000 + ((uintptr_t)1 << 32) * 136 + 2 * 64 + 3;
    /* the run's last 5 bytes touch the next element's first run: one iovec of 13 */
    CHECK(n == 13 + 8 && niov == 2 && (uintptr_t)iov[0].iov_base == want && iov[0].iov_len == 13,
          "huge count: run at %p (%zu bytes), want %#lx", iov[0].iov_base, iov[0].iov_len,
          (unsigned long)want);
    CHECK(c.total == count * 24, "huge count: total %zu", c.total);
    nc_dt_free(col);
}

/* Normalisation: layouts that are contiguous in the end are single runs; dense levels fold. */
static void normal_forms(void)
{
    nc_dtype *t = nc_dt_vector(4, 2, 16, nc_dt_bytes(8)); /* 4 x 16 bytes, back to back */
    CHECK(t->kind == NC_DT_LEAF && t->bytes == 64 && nc_dt_is_contiguous(t), "dense vector not folded");
    nc_dt_free(t);
    ptrdiff_t d[3] = {0, 8, 20};
    size_t bl[3] = {1, 1, 0};
    t = nc_dt_indexed(3, d, bl, nc_dt_bytes(8));
    CHECK(t->kind == NC_DT_LEAF && t->size == 16, "adjacent blocks not merged / empty not dropped");
    nc_dt_free(t);
    /* a column of 3-double elements in an 8x8 matrix (Balaji et al., figure 6) */
    t = nc_dt_vector(8, 1, 8 * 24, nc_dt_vector(3, 1, 8, nc_dt_bytes(8)));
    CHECK(t->kind == NC_DT_VECTOR && t->depth == 1 && t->runs == 8 && nc_dt_mean_run(t) == 24,
          "matrix column: kind %d depth %d runs %zu", t->kind, t->depth, t->runs);
    nc_dt_free(t);
    nc_dtype *deep = nc_dt_bytes(4);
    for (int i = 0; i < 40 && deep; i++) { /* each level a struct of the last one and a byte */
        ptrdiff_t at[2] = {0, 1000};
        size_t one[2] = {1, 1};
        nc_dtype *parts[2] = {deep, nc_dt_bytes(1)};
        deep = nc_dt_struct(2, at, one, parts);
    }
    CHECK(deep == NULL, "a 40-level nest must be refused, not overflow the cursor");
}

static gtype *g_node(int kind, gtype *kid)
{
    gtype *g = calloc(1, sizeof *g);
    g->kind = kind;
    g->kids[0] = kid;
    return g;
}

/* Balaji et al.'s transpose, contiguous(n, resized(vector(n, 1, n, elem), extent elem)): the
 * tiled column kernel.  Whole random ranges (which start mid-column and end mid-column) and
 * column-sized chunks, packed and unpacked, against the reference layout. */
static void transposes(uint64_t seed)
{
    /* (n, element): rows at least NC_DT_TILE_MIN_ROW (256) bytes apart, within G_MAX_MAP */
    static const int ns[] = {40, 45, 64, 32, 40}, basics[] = {3, 3, 2, 4, 3}; /* 8, 8, 4, 16, 8-byte elements */
    uint64_t s = seed;
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int n = ns[k], basic = basics[k], skip = k == 4 ? 3 : 0; /* the last: columns start at row 3 */
        gtype *elem = g_node(G_BASIC, NULL), *col = g_node(G_VECTOR, elem);
        elem->basic = basic;
        col->count = n - skip, col->blocklen = 1, col->stride = n;
        if (skip) { /* a submatrix's columns: the column vector has a displacement */
            col = g_node(G_HINDEXED, col);
            col->n = 1, col->blocklens[0] = 1, col->disps[0] = (long)skip * n * g_basic_size[basic];
        }
        gtype *colr = g_node(G_RESIZED, col), *g = g_node(G_CONTIG, colr);
        colr->lb = 0, colr->extent = g_basic_size[basic];
        g->count = n;
        CHECK(g_layout(g), "transpose n=%d: too large for the reference layout", n);
        nc_dtype *t = build(g);
        layout l;
        size_t count = 1; /* (a second element would overlap the first: its extent is one row) */
        layout_make(&l, g, count);
        fill(l.mem, l.span, &s);
        unsigned char *want = malloc(l.total), *got = malloc(l.total), *orig = malloc(l.span);
        for (size_t q = 0; q < l.total; q++) want[q] = l.mem[l.at[q]];
        memcpy(orig, l.mem, l.span);
        for (int r = 0; r < 40; r++) {
            size_t off = (size_t)g_rand(&s, 0, (long)l.total - 1), len = (size_t)g_rand(&s, 1, (long)(l.total - off));
            size_t chunk = r % 2 ? len : (size_t)g_rand(&s, 1, 3 * (long)g->size / n);
            nc_dt_cursor c;
            nc_dt_cursor_init(&c, t, l.base, count, off);
            for (size_t done = 0; done < len;) done += nc_dt_pack(&c, got + done, chunk < len - done ? chunk : len - done);
            CHECK(!memcmp(got, want + off, len), "transpose n=%d elem %d: pack [%zu,+%zu) differs", n,
                  g_basic_size[basic], off, len);
            for (size_t q = off; q < off + len; q++) got[q - off] ^= 0x5a; /* new data to unpack */
            nc_dt_cursor_init(&c, t, l.base, count, off);
            for (size_t done = 0; done < len;) done += nc_dt_unpack(&c, got + done, chunk < len - done ? chunk : len - done);
            size_t bad = l.total;
            for (size_t q = 0; q < l.total && bad == l.total; q++)
                if (l.mem[l.at[q]] != (q >= off && q < off + len ? (unsigned char)(want[q] ^ 0x5a) : want[q])) bad = q;
            CHECK(bad == l.total, "transpose n=%d elem %d: unpack [%zu,+%zu) differs at packed byte %zu", n,
                  g_basic_size[basic], off, len, bad);
            memcpy(l.mem, orig, l.span);
        }
        free(want);
        free(got);
        free(orig);
        free(l.mem);
        free(l.at);
        nc_dt_free(t);
        g_free(g);
    }
}

#ifndef NC_FUZZ_TARGET
int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 3000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 6;
    clock_t t0 = clock();
    if (argc > 3 && !strcmp(argv[3], "fuzz")) {
        replay_fuzz_target(cases, seed);
    } else {
        kernel_sizes();
        huge_counts();
        normal_forms();
        transposes(seed);
        random_cases(cases, seed);
    }
    printf("test_dtype_core: %s (%.2f s)\n", failures ? "FAILED" : "passed",
           (double)(clock() - t0) / CLOCKS_PER_SEC);
    return failures != 0;
}
#endif
