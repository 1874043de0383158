/* Random datatype trees for the datatype-engine tests, and their reference layout.
 *
 * A gtype records the constructor calls of an MPI datatype (every constructor; negative,
 * unsorted displacements; zero-length blocks; resized extents).  test_dtype.c turns it into
 * an MPI datatype (the host's MPI_Pack is then the oracle); test_dtype_core.c turns it into
 * the engine's description through the core constructors and checks it against `map`: the
 * displacement of every data byte in typemap order, enumerated here straight from the
 * constructor arguments, with MPI's lb/ub rule. */
#ifndef NC_TEST_DTYPE_GEN_H
#define NC_TEST_DTYPE_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    G_BASIC, G_CONTIG, G_VECTOR, G_HVECTOR, G_INDEXED, G_HINDEXED, G_INDEXED_BLOCK,
    G_HINDEXED_BLOCK, G_STRUCT, G_SUBARRAY, G_RESIZED, G_DUP, G_DARRAY, G_KINDS
};
/* Basic types: sizes 1, 2, 4, 8, 16, and a padded pair (double + int, extent 16). */
enum { G_BASICS = 6, G_PAIR = 5 };
static const int g_basic_size[G_BASICS] = {1, 2, 4, 8, 16, 12};

#define G_MAX_N 5
#define G_MAX_MAP (1 << 14)

typedef struct gtype gtype;
struct gtype {
    int kind, basic;
    int count, blocklen;  /* CONTIG / VECTOR / HVECTOR / *_BLOCK */
    long stride;          /* VECTOR: in child extents; HVECTOR: bytes */
    int n;                /* INDEXED family, STRUCT */
    int blocklens[G_MAX_N];
    long disps[G_MAX_N];  /* INDEXED, INDEXED_BLOCK: child extents; others: bytes */
    gtype *kids[G_MAX_N]; /* STRUCT: n children; otherwise kids[0] */
    int ndims, order_c;   /* SUBARRAY, DARRAY */
    int sizes[3], subsizes[3], starts[3];
    int psizes[3], distribs[3], dargs[3], rank; /* DARRAY: distribution of rank `rank` */
    long lb, extent;      /* RESIZED: new bounds; after g_layout: every node's */
    long *map;            /* after g_layout: byte displacements in typemap order */
    size_t size;
};

/* The fuzz target's mode: while g_bytes is set, every draw takes the next input byte (0 once
 * they run out), so the fuzzer's mutations map onto the tree's shape.  (Every range the
 * generator draws from has at most 256 values.) */
static const unsigned char *g_bytes;
static size_t g_bytes_left;

static inline long g_rand(uint64_t *s, long lo, long hi)
{
    if (g_bytes) {
        unsigned v = 0;
        if (g_bytes_left) v = *g_bytes++, g_bytes_left--;
        return lo + (long)(v % (unsigned long)(hi - lo + 1));
    }
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (long)(z % (uint64_t)(hi - lo + 1));
}

/* What a host MPI handles: darray (of basic types only), and empty types (size 0) as
 * children (the host MPIs here mishandle copies of them: MPICH divides by zero, Open MPI
 * packs past the extent). */
enum { G_WITH_DARRAY = 1, G_WITH_EMPTY = 2, G_NO_BACKWARD_OVERLAP = 4 };
/* G_NO_BACKWARD_OVERLAP: no (h)vector whose blocks step backwards by less than a block
 * (Open MPI 4.1 reports such a type, and one stepping back by exactly a block, as contiguous,
 * forwards, with a wrong extent). */

static inline int g_layout(gtype *g);
static inline long g_extent_of(gtype *g);

/* A random tree of at most `depth` constructor levels. */
static inline gtype *g_random(uint64_t *s, int depth, int flags)
{
    int darray = flags & G_WITH_DARRAY;
    gtype *g = calloc(1, sizeof *g);
    g->kind = depth == 0 || g_rand(s, 0, 9) < 2 ? G_BASIC : (int)g_rand(s, 1, G_KINDS - 1);
    if (g->kind == G_DARRAY && !darray) g->kind = G_SUBARRAY;
    if (g->kind == G_BASIC) {
        g->basic = (int)g_rand(s, 0, G_BASICS - 1);
        return g;
    }
    /* darray of a derived type is refused by some MPIs: a basic one */
    g->kids[0] = g_random(s, g->kind == G_DARRAY ? 0 : depth - 1, flags);
    g->count = (int)g_rand(s, 0, 4) == 0 ? 0 : (int)g_rand(s, 1, 4);
    g->blocklen = (int)g_rand(s, 0, 3);
    g->stride = g_rand(s, -5, 6);
    if (g->kind == G_HVECTOR) g->stride = g_rand(s, -40, 60);
    if (!(flags & G_WITH_EMPTY)) { /* zero-length blocks, but never an empty type */
        if (!g->count) g->count = 1;
        if (!g->blocklen) g->blocklen = 1;
    }
    if ((flags & G_NO_BACKWARD_OVERLAP) && (g->kind == G_VECTOR || g->kind == G_HVECTOR) &&
        g->stride < 0) {
        long unit = g->kind == G_VECTOR ? 1 : g_extent_of(g->kids[0]);
        if (unit < 0) g->stride = -g->stride;
        else if (-g->stride <= g->blocklen * unit) g->stride = -g->blocklen * unit - g_rand(s, 1, 3);
    }
    g->n = (int)g_rand(s, 1, G_MAX_N);
    for (int i = 0; i < g->n; i++) {
        g->blocklens[i] = (int)g_rand(s, 0, 3);
        g->disps[i] = g->kind == G_INDEXED || g->kind == G_INDEXED_BLOCK ? g_rand(s, -6, 8)
                                                                        : g_rand(s, -48, 64);
        if (g->kind == G_STRUCT && i) g->kids[i] = g_random(s, depth - 1, flags);
    }
    if (!(flags & G_WITH_EMPTY) && !g->blocklens[0]) g->blocklens[0] = 1;
    g->ndims = (int)g_rand(s, 1, 3);
    g->order_c = (int)g_rand(s, 0, 1);
    for (int d = 0; d < g->ndims; d++) {
        g->sizes[d] = (int)g_rand(s, 1, 4);
        g->subsizes[d] = (int)g_rand(s, 1, g->sizes[d]);
        g->starts[d] = (int)g_rand(s, 0, g->sizes[d] - g->subsizes[d]);
        g->psizes[d] = (int)g_rand(s, 1, 2);
        g->distribs[d] = (int)g_rand(s, 0, 2); /* none / block / cyclic */
        g->dargs[d] = (int)g_rand(s, 0, 1) ? 0 : (int)g_rand(s, 1, 2); /* 0: default */
        if (g->distribs[d] == 0) g->psizes[d] = 1;
        if (g->distribs[d] == 1 && g->dargs[d] && g->dargs[d] * g->psizes[d] < g->sizes[d])
            g->dargs[d] = 0; /* a block too small to cover the dimension is invalid */
    }
    int procs = 1;
    for (int d = 0; d < g->ndims; d++) procs *= g->psizes[d];
    g->rank = (int)g_rand(s, 0, procs - 1);
    g->lb = g_rand(s, -16, 16);
    g->extent = g_rand(s, 1, 24);
    return g;
}

static inline void g_free(gtype *g)
{
    if (!g) return;
    for (int i = 0; i < G_MAX_N; i++) g_free(g->kids[i]);
    free(g->map);
    free(g);
}

/* Prints the constructor calls of g (to reproduce a failing case). */
static inline void g_print(FILE *f, const gtype *g, int indent)
{
    static const char *names[G_KINDS] = {"basic", "contig", "vector", "hvector", "indexed",
        "hindexed", "indexed_block", "hindexed_block", "struct", "subarray", "resized", "dup", "darray"};
    fprintf(f, "%*s%s", indent, "", names[g->kind]);
    if (g->kind == G_BASIC) fprintf(f, " size %d%s", g_basic_size[g->basic], g->basic == G_PAIR ? " (pair)" : "");
    else if (g->kind <= G_HVECTOR) fprintf(f, " count %d blocklen %d stride %ld", g->count, g->blocklen, g->stride);
    else if (g->kind <= G_STRUCT) {
        fprintf(f, " n %d blocklen %d:", g->n, g->blocklen);
        for (int i = 0; i < g->n; i++) fprintf(f, " (%ld x%d)", g->disps[i], g->blocklens[i]);
    } else if (g->kind == G_RESIZED) fprintf(f, " lb %ld extent %ld", g->lb, g->extent);
    else if (g->kind != G_DUP) {
        fprintf(f, " %s rank %d:", g->order_c ? "C" : "Fortran", g->rank);
        for (int d = 0; d < g->ndims; d++)
            fprintf(f, " [%d %d %d | p%d dist%d darg%d]", g->sizes[d], g->subsizes[d], g->starts[d],
                    g->psizes[d], g->distribs[d], g->dargs[d]);
    }
    fputc('\n', f);
    for (int i = 0; i < G_MAX_N; i++)
        if (g->kids[i]) g_print(f, g->kids[i], indent + 2);
}

/* ---------- reference layout (not for DARRAY) ---------- */

typedef struct g_acc {
    long *map;
    size_t n;
    int any;
    long lb, ub;
    int too_big;
} g_acc;

/* Appends a copy of child `c` at displacement d. */
static inline void g_put(g_acc *a, const gtype *c, long d)
{
    if (!a->any || c->lb + d < a->lb) a->lb = c->lb + d;
    if (!a->any || c->lb + c->extent + d > a->ub) a->ub = c->lb + c->extent + d;
    a->any = 1;
    if (a->n + c->size > G_MAX_MAP) {
        a->too_big = 1;
        return;
    }
    for (size_t i = 0; i < c->size; i++) a->map[a->n++] = c->map[i] + d;
}

/* Fills map, size, lb and extent of g and its children; 0 if too large for the tests. */
static inline int g_layout(gtype *g)
{
    for (int i = 0; i < G_MAX_N; i++)
        if (g->kids[i] && !g_layout(g->kids[i])) return 0;
    g_acc a = {malloc(G_MAX_MAP * sizeof(long)), 0, 0, 0, 0, 0};
    const gtype *c = g->kids[0];
    long ce = c ? c->extent : 0;
    switch (g->kind) {
    case G_BASIC:
        a.any = 1;
        a.ub = g->basic == G_PAIR ? 16 : g_basic_size[g->basic];
        for (int i = 0; i < g_basic_size[g->basic]; i++) a.map[a.n++] = i; /* pair: 8 + 4 */
        break;
    case G_CONTIG:
        for (int i = 0; i < g->count; i++) g_put(&a, c, i * ce);
        break;
    case G_VECTOR:
    case G_HVECTOR:
        for (int i = 0; i < g->count; i++)
            for (int j = 0; j < g->blocklen; j++)
                g_put(&a, c, (g->kind == G_VECTOR ? g->stride * ce : g->stride) * i + j * ce);
        break;
    case G_INDEXED:
    case G_HINDEXED:
    case G_INDEXED_BLOCK:
    case G_HINDEXED_BLOCK:
    case G_STRUCT:
        for (int i = 0; i < g->n; i++) {
            const gtype *k = g->kind == G_STRUCT ? g->kids[i] : c;
            int bl = g->kind == G_INDEXED_BLOCK || g->kind == G_HINDEXED_BLOCK ? g->blocklen
                                                                                : g->blocklens[i];
            long d = g->kind == G_INDEXED || g->kind == G_INDEXED_BLOCK ? g->disps[i] * ce : g->disps[i];
            for (int j = 0; j < bl; j++) g_put(&a, k, d + j * k->extent);
        }
        break;
    case G_SUBARRAY: {
        int nd = g->ndims, idx[3] = {0, 0, 0};
        long total = 1;
        for (int d = 0; d < nd; d++) total *= g->subsizes[d];
        for (long e = 0; e < total; e++) {
            long rem = e, off = 0, mult = 1;
            /* the fastest index is the last (C) or the first (Fortran) */
            for (int k = 0; k < nd; k++) {
                int d = g->order_c ? nd - 1 - k : k;
                idx[d] = (int)(rem % g->subsizes[d]);
                rem /= g->subsizes[d];
                off += (idx[d] + g->starts[d]) * mult;
                mult *= g->sizes[d];
            }
            g_put(&a, c, off * ce);
        }
        long full = 1;
        for (int d = 0; d < nd; d++) full *= g->sizes[d];
        a.any = 1;
        a.lb = 0;
        a.ub = full * ce;
        break;
    }
    case G_RESIZED:
        g_put(&a, c, 0);
        a.lb = g->lb;
        a.ub = g->lb + g->extent;
        break;
    case G_DUP:
        g_put(&a, c, 0);
        break;
    default:
        free(a.map);
        return 0;
    }
    free(g->map);
    g->map = a.map;
    g->size = a.n;
    g->lb = a.any ? a.lb : 0;
    g->extent = a.any ? a.ub - a.lb : 0;
    return !a.too_big;
}

/* The extent of g (its reference layout), or -1 when it has none (darray). */
static inline long g_extent_of(gtype *g)
{
    return g_layout(g) ? g->extent : -1;
}

#endif
