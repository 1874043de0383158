#include "dtype.h"

#include <stdlib.h>
#include <string.h>

/* ---------- arithmetic that must not overflow silently ---------- */

static int mul_size(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static size_t mul_saturating(size_t a, size_t b)
{
    size_t r;
    return mul_size(a, b, &r) ? SIZE_MAX : r;
}

static size_t add_saturating(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Smallest and largest of {k * step : 0 <= k < n}, n >= 1. */
static void copies_span(size_t n, ptrdiff_t step, ptrdiff_t *lo, ptrdiff_t *hi)
{
    ptrdiff_t last = (ptrdiff_t)(n - 1) * step;
    *lo = last < 0 ? last : 0;
    *hi = last > 0 ? last : 0;
}

/* ---------- bounds: MPI's rule, the min / max over all copies of a child ---------- */

typedef struct bounds {
    int any, any_data;
    ptrdiff_t lb, ub, true_lb, true_ub;
} bounds;

/* Adds the copies of `child` at disp + {k * step : k < n}. */
static void bounds_add(bounds *b, ptrdiff_t disp, size_t n, ptrdiff_t step, const nc_dtype *child)
{
    if (n == 0) return;
    ptrdiff_t lo, hi;
    copies_span(n, step, &lo, &hi);
    ptrdiff_t lb = disp + lo + child->lb, ub = disp + hi + child->lb + child->extent;
    if (!b->any || lb < b->lb) b->lb = lb;
    if (!b->any || ub > b->ub) b->ub = ub;
    b->any = 1;
    if (!child->size) return;
    ptrdiff_t tlb = disp + lo + child->true_lb, tub = disp + hi + child->true_ub;
    if (!b->any_data || tlb < b->true_lb) b->true_lb = tlb;
    if (!b->any_data || tub > b->true_ub) b->true_ub = tub;
    b->any_data = 1;
}

static nc_dtype *with_bounds(nc_dtype *t, const bounds *b)
{
    if (!t) return NULL;
    t->lb = b->any ? b->lb : 0;
    t->extent = b->any ? b->ub - b->lb : 0;
    t->true_lb = b->any_data ? b->true_lb : 0;
    t->true_ub = b->any_data ? b->true_ub : 0;
    return t;
}

/* ---------- nodes ---------- */

static nc_dtype *node_new(nc_dt_kind kind)
{
    nc_dtype *t = calloc(1, sizeof *t);
    if (t) t->kind = kind;
    return t;
}

static nc_dtype *leaf(ptrdiff_t offset, size_t bytes)
{
    nc_dtype *t = node_new(NC_DT_LEAF);
    if (!t) return NULL;
    t->offset = offset;
    t->bytes = t->size = bytes;
    t->runs = bytes ? 1 : 0;
    t->extent = (ptrdiff_t)bytes;
    t->true_lb = offset;
    t->true_ub = offset + (ptrdiff_t)bytes;
    return t;
}

nc_dtype *nc_dt_bytes(size_t bytes)
{
    if (bytes > PTRDIFF_MAX) return NULL;
    return leaf(0, bytes);
}

void nc_dt_free(nc_dtype *t)
{
    if (!t) return;
    if (t->children) {
        for (size_t i = 0; i < t->count; i++) nc_dt_free(t->children[i]);
        free(t->children);
    }
    nc_dt_free(t->child);
    free(t->disp);
    free(t->lens);
    free(t->packed_before);
    free(t);
}

nc_dtype *nc_dt_resized(nc_dtype *t, ptrdiff_t lb, ptrdiff_t extent)
{
    if (t) {
        t->lb = lb;
        t->extent = extent;
    }
    return t;
}

/* Consecutive copies of a dense leaf are one longer run. */
static int is_dense_leaf(const nc_dtype *t)
{
    return t->kind == NC_DT_LEAF && t->bytes && (ptrdiff_t)t->bytes == t->extent;
}

int nc_dt_is_contiguous(const nc_dtype *t)
{
    return t->size == 0 || (is_dense_leaf(t) && t->offset == 0);
}

double nc_dt_mean_run(const nc_dtype *t)
{
    return t->runs ? (double)t->size / (double)t->runs : 0.0;
}

/* ---------- vector ---------- */

static nc_dtype *make_vector(size_t count, size_t blocklen, ptrdiff_t stride, ptrdiff_t offset,
                             nc_dtype *child, const bounds *b)
{
    size_t copies, size;
    if (mul_size(count, blocklen, &copies) || mul_size(copies, child->size, &size) ||
        size > PTRDIFF_MAX) {
        nc_dt_free(child);
        return NULL;
    }
    if (size == 0) {
        nc_dt_free(child);
        return with_bounds(leaf(0, 0), b);
    }
    if (is_dense_leaf(child)) { /* a block is one run; equally spaced runs may touch */
        size_t run = blocklen * child->bytes;
        ptrdiff_t start = offset + child->offset;
        if (count == 1 || stride == (ptrdiff_t)run) {
            nc_dt_free(child);
            return with_bounds(leaf(start, size), b);
        }
        child->bytes = child->size = run;
        child->extent = (ptrdiff_t)run;
        blocklen = 1;
    }
    if (count * blocklen == 1 && (child->kind == NC_DT_LEAF || child->kind == NC_DT_VECTOR)) {
        child->offset += offset; /* one copy: the child itself, moved */
        return with_bounds(child, b);
    }
    if (blocklen == 1 && child->kind == NC_DT_VECTOR && child->blocklen == 1 &&
        stride == (ptrdiff_t)child->count * child->stride) { /* blocks continue the child's */
        child->count *= count;
        child->offset += offset;
        child->runs = mul_saturating(child->runs, count);
        child->size = size;
        return with_bounds(child, b);
    }
    nc_dtype *t = node_new(NC_DT_VECTOR);
    if (!t || child->depth + 1 > NC_DT_MAX_DEPTH) {
        free(t);
        nc_dt_free(child);
        return NULL;
    }
    t->count = count;
    t->blocklen = blocklen;
    t->stride = stride;
    t->offset = offset;
    t->child = child;
    t->size = size;
    t->runs = mul_saturating(count * blocklen, child->runs); /* blocklen may have been folded */
    t->depth = child->depth + 1;
    return with_bounds(t, b);
}

nc_dtype *nc_dt_vector(size_t count, size_t blocklen, ptrdiff_t stride, nc_dtype *child)
{
    if (!child) return NULL;
    bounds b = {0};
    if (count && blocklen) {
        ptrdiff_t lo, hi;
        copies_span(count, stride, &lo, &hi);
        bounds_add(&b, lo, blocklen, child->extent, child);
        bounds_add(&b, hi, blocklen, child->extent, child);
    }
    return make_vector(count, blocklen, stride, 0, child, &b);
}

/* ---------- indexed and struct ---------- */

typedef struct entry {
    ptrdiff_t disp;
    size_t copies;
    nc_dtype *child;
} entry;

static void free_entries(entry *e, size_t n, nc_dtype *shared)
{
    if (shared) nc_dt_free(shared);
    else
        for (size_t i = 0; i < n; i++) nc_dt_free(e[i].child);
    free(e);
}

static size_t *prefix_sums(const size_t *sizes, size_t n)
{
    size_t *before = malloc((n ? n : 1) * sizeof *before), sum = 0;
    if (!before) return NULL;
    for (size_t i = 0; i < n; i++) {
        before[i] = sum;
        sum += sizes[i];
    }
    return before;
}

/* Runs at d[i] of len[i] bytes (merged, n >= 1): a leaf, a vector of equal equally spaced
 * runs, or a run list. */
static nc_dtype *make_runs(ptrdiff_t *d, size_t *len, size_t n, size_t size)
{
    if (n == 1) {
        nc_dtype *t = leaf(d[0], len[0]);
        free(d);
        free(len);
        return t;
    }
    int regular = 1;
    for (size_t i = 2; i < n && regular; i++)
        regular = len[i] == len[0] && d[i] - d[i - 1] == d[1] - d[0];
    if (regular && len[1] == len[0]) {
        nc_dtype *run = leaf(0, len[0]), *t = node_new(NC_DT_VECTOR);
        if (!run || !t) {
            free(run);
            free(t);
            t = NULL;
        } else {
            *t = (nc_dtype){.kind = NC_DT_VECTOR, .depth = 1, .count = n, .blocklen = 1,
                            .stride = d[1] - d[0], .offset = d[0], .child = run,
                            .size = size, .runs = n};
        }
        free(d);
        free(len);
        return t;
    }
    nc_dtype *t = node_new(NC_DT_RUNS);
    size_t *before = prefix_sums(len, n);
    if (!t || !before) {
        free(t);
        free(before);
        free(d);
        free(len);
        return NULL;
    }
    t->depth = 1;
    t->count = t->runs = n;
    t->size = size;
    t->disp = d;
    t->lens = len;
    t->packed_before = before;
    return t;
}

/* Every entry is copies of a dense leaf: the list of runs, neighbours merged. */
static nc_dtype *runs_of_entries(entry *e, size_t n, size_t size)
{
    ptrdiff_t *d = malloc(n * sizeof *d);
    size_t *len = malloc(n * sizeof *len), m = 0;
    if (!d || !len) {
        free(d);
        free(len);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        ptrdiff_t at = e[i].disp + e[i].child->offset;
        size_t bytes = e[i].copies * e[i].child->bytes;
        if (m && d[m - 1] + (ptrdiff_t)len[m - 1] == at) {
            len[m - 1] += bytes;
        } else {
            d[m] = at;
            len[m++] = bytes;
        }
    }
    return make_runs(d, len, m, size);
}

static nc_dtype *blocks_of_entries(entry *e, size_t n, size_t size, nc_dtype *shared)
{
    nc_dtype *t = node_new(NC_DT_BLOCKS);
    size_t *packed = malloc(n * sizeof *packed);
    if (t) {
        t->disp = malloc(n * sizeof *t->disp);
        t->lens = malloc(n * sizeof *t->lens);
        if (!shared) t->children = malloc(n * sizeof *t->children);
    }
    if (!t || !packed || !t->disp || !t->lens || (!shared && !t->children)) {
        if (t) t->children = (free(t->children), NULL);
        nc_dt_free(t);
        free(packed);
        return NULL;
    }
    t->count = n;
    t->child = shared;
    t->size = size;
    for (size_t i = 0; i < n; i++) {
        t->disp[i] = e[i].disp;
        t->lens[i] = e[i].copies;
        if (!shared) t->children[i] = e[i].child;
        packed[i] = e[i].copies * e[i].child->size;
        t->runs = add_saturating(t->runs, mul_saturating(e[i].copies, e[i].child->runs));
        if (e[i].child->depth + 1 > t->depth) t->depth = e[i].child->depth + 1;
    }
    t->packed_before = prefix_sums(packed, n);
    free(packed);
    if (!t->packed_before || t->depth > NC_DT_MAX_DEPTH) {
        if (shared) t->child = NULL; /* the caller still owns the children */
        else t->children = (free(t->children), NULL);
        nc_dt_free(t);
        return NULL;
    }
    return t;
}

/* Shared by indexed (one child, `shared`) and struct (children in the entries). */
static nc_dtype *make_blocks(size_t n, const ptrdiff_t *disp, const size_t *blocklens,
                             nc_dtype **children, nc_dtype *shared)
{
    bounds b = {0};
    size_t kept = 0, size = 0;
    entry *e = malloc((n ? n : 1) * sizeof *e);
    int ok = e != NULL, all_runs = 1;
    for (size_t i = 0; i < n; i++) {
        nc_dtype *child = shared ? shared : children[i];
        ok = ok && child;
        if (!ok) continue;
        bounds_add(&b, disp[i], blocklens[i], child->extent, child);
        size_t bytes;
        ok = !mul_size(blocklens[i], child->size, &bytes) && size + bytes >= size &&
             size + bytes <= PTRDIFF_MAX;
        size += bytes;
        if (bytes && !shared && blocklens[i] > 1 && is_dense_leaf(child)) {
            child->bytes = child->size = bytes; /* an owned child: its copies are one run */
            child->extent = (ptrdiff_t)bytes;
            e[kept++] = (entry){disp[i], 1, child};
            continue;
        }
        if (bytes) {
            e[kept++] = (entry){disp[i], blocklens[i], child};
            all_runs = all_runs && is_dense_leaf(child);
        } else if (!shared) {
            nc_dt_free(child);
            children[i] = NULL;
        }
    }
    if (!ok) {
        if (!shared)
            for (size_t i = 0; i < n; i++) nc_dt_free(children[i]);
        nc_dt_free(shared);
        free(e);
        return NULL;
    }
    nc_dtype *t;
    if (kept == 0) {
        t = leaf(0, 0);
    } else if (all_runs) {
        t = runs_of_entries(e, kept, size);
    } else if (kept == 1) { /* one block: a vector of one block at its displacement */
        entry only = e[0];
        free(e);
        return make_vector(1, only.copies, 0, only.disp, only.child, &b);
    } else {
        t = blocks_of_entries(e, kept, size, shared);
        if (t) { /* the node owns the children now */
            free(e);
            return with_bounds(t, &b);
        }
    }
    free_entries(e, kept, shared);
    return with_bounds(t, &b);
}

nc_dtype *nc_dt_indexed(size_t n, const ptrdiff_t *disp, const size_t *blocklens, nc_dtype *child)
{
    if (!child) return NULL;
    return make_blocks(n, disp, blocklens, NULL, child);
}

nc_dtype *nc_dt_struct(size_t n, const ptrdiff_t *disp, const size_t *blocklens, nc_dtype **children)
{
    return make_blocks(n, disp, blocklens, children, NULL);
}

/* ---------- the cursor ---------- */

/* Frame 0 is the cursor's own root node: found through the cursor, so a copied cursor
 * (the look-ahead's) refers to its own copy. */
static const nc_dtype *frame_node(const nc_dt_cursor *c, int k)
{
    return k ? c->stack[k].node : &c->root;
}

static size_t copies_of(const nc_dtype *n, size_t e)
{
    return n->kind == NC_DT_VECTOR ? n->blocklen : n->kind == NC_DT_BLOCKS ? n->lens[e] : 1;
}

static const nc_dtype *child_of(const nc_dtype *n, size_t e)
{
    return n->children ? n->children[e] : n->child;
}

/* Address of displacement 0 of copy `copy` of entry `e` (RUNS: the run itself). */
static uintptr_t entry_origin(const nc_dtype *n, uintptr_t origin, size_t e, size_t copy)
{
    switch (n->kind) {
    case NC_DT_VECTOR:
        return origin + (uintptr_t)(n->offset + (ptrdiff_t)e * n->stride +
                                    (ptrdiff_t)copy * n->child->extent);
    case NC_DT_BLOCKS:
        return origin + (uintptr_t)(n->disp[e] + (ptrdiff_t)copy * child_of(n, e)->extent);
    default:
        return origin + (uintptr_t)n->disp[e];
    }
}

static void step(const nc_dtype *n, nc_dt_frame *f)
{
    if (++f->copy == copies_of(n, f->entry)) {
        f->copy = 0;
        f->entry++;
    }
}

/* Enters the entry the top frame points at (stepping past it): either a run starts, `skip`
 * bytes into it, or a child frame is pushed.  Returns 1 when a run started. */
static int enter(nc_dt_cursor *c, size_t skip)
{
    nc_dt_frame *f = &c->stack[c->depth - 1];
    const nc_dtype *n = frame_node(c, c->depth - 1);
    size_t e = f->entry;
    uintptr_t at = entry_origin(n, f->origin, e, f->copy);
    step(n, f);
    const nc_dtype *child = n->kind == NC_DT_RUNS ? NULL : child_of(n, e);
    if (!child || child->kind == NC_DT_LEAF) {
        size_t bytes = child ? child->bytes : n->lens[e];
        c->run = at + (child ? (uintptr_t)child->offset : 0) + skip;
        c->run_left = bytes - skip;
        return 1;
    }
    c->stack[c->depth++] = (nc_dt_frame){child, at, 0, 0};
    return 0;
}

/* The next run after the current one; 0 at the end of the stream. */
static int next_run(nc_dt_cursor *c)
{
    while (c->depth > 0) {
        const nc_dtype *n = frame_node(c, c->depth - 1);
        if (c->stack[c->depth - 1].entry == n->count) {
            c->depth--;
            continue;
        }
        if (enter(c, 0)) return 1;
    }
    return 0;
}

/* Largest i with before[i] <= x (before[0] == 0, increasing). */
static size_t find_entry(const size_t *before, size_t n, size_t x)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (before[mid] <= x) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Points the top frame at the entry and copy holding packed byte `*rem` of its node and
 * leaves in *rem the offset inside that copy. */
static void seek_in_frame(nc_dt_cursor *c, size_t *rem)
{
    nc_dt_frame *f = &c->stack[c->depth - 1];
    const nc_dtype *n = frame_node(c, c->depth - 1);
    size_t e;
    if (n->kind == NC_DT_VECTOR) {
        size_t per_block = n->blocklen * n->child->size;
        e = *rem / per_block;
        *rem -= e * per_block;
    } else {
        e = find_entry(n->packed_before, n->count, *rem);
        *rem -= n->packed_before[e];
    }
    size_t copy_size = n->kind == NC_DT_RUNS ? n->lens[e] : child_of(n, e)->size;
    f->entry = e;
    f->copy = *rem / copy_size;
    *rem -= f->copy * copy_size;
}

void nc_dt_cursor_init(nc_dt_cursor *c, const nc_dtype *t, const void *base, size_t count,
                       size_t offset)
{
    c->root = (nc_dtype){.kind = NC_DT_VECTOR, .count = count, .blocklen = 1,
                         .stride = t->extent, .child = (nc_dtype *)t, .size = count * t->size,
                         .depth = t->depth + 1};
    c->total = c->root.size;
    c->offset = offset < c->total ? offset : c->total;
    c->run = 0;
    c->run_left = 0;
    c->depth = 0;
    if (c->offset == c->total) return;
    c->stack[c->depth++] = (nc_dt_frame){NULL, (uintptr_t)base, 0, 0};
    size_t rem = c->offset;
    do seek_in_frame(c, &rem);
    while (!enter(c, rem));
}

/* ---------- moving bytes ---------- */

static inline __attribute__((always_inline)) void copy_run(char *packed, uintptr_t at, size_t n,
                                                            int unpack)
{
    if (unpack) memcpy((void *)at, packed, n);
    else memcpy(packed, (const void *)at, n);
}

/* k runs of `bytes` bytes, `stride` apart: the vector kernel, with fixed-size copies (inline
 * loads and stores, no call) for the common element and small-block sizes.  (Variable-length
 * runs keep memcpy: an inline overlapping-copy variant measured slower on irregular lists.) */
static inline __attribute__((always_inline)) void copy_strided(char *packed, uintptr_t at,
                                                                ptrdiff_t stride, size_t bytes,
                                                                size_t k, int unpack)
{
#define NC_STRIDED(B)                                                                      \
    for (size_t i = 0; i < k; i++, packed += (B), at += (uintptr_t)stride)                 \
        copy_run(packed, at, (B), unpack);                                                 \
    return;
    /* Short elements: four per iteration, so loads and stores of several overlap. */
#define NC_STRIDED4(B)                                                                     \
    for (; k >= 4; k -= 4, packed += 4 * (B), at += 4 * (uintptr_t)stride) {               \
        copy_run(packed, at, (B), unpack);                                                 \
        copy_run(packed + (B), at + (uintptr_t)stride, (B), unpack);                       \
        copy_run(packed + 2 * (B), at + 2 * (uintptr_t)stride, (B), unpack);               \
        copy_run(packed + 3 * (B), at + 3 * (uintptr_t)stride, (B), unpack);               \
    }                                                                                      \
    NC_STRIDED(B)
    switch (bytes) {
    case 1: NC_STRIDED4(1)
    case 2: NC_STRIDED4(2)
    case 4: NC_STRIDED4(4)
    case 8: NC_STRIDED4(8)
    case 12: NC_STRIDED4(12) /* padded {double, int}, three floats or ints */
    case 16: NC_STRIDED4(16)
    case 24: NC_STRIDED(24)
    case 32: NC_STRIDED(32)
    case 48: NC_STRIDED(48)
    case 64: NC_STRIDED(64)
    default: NC_STRIDED(bytes)
    }
#undef NC_STRIDED4
#undef NC_STRIDED
}

/* Columns moved together by the tiled kernel, and the strides that make it pay: columns
 * close enough to share cache lines, rows far enough apart not to. */
#define NC_DT_TILE 8
#define NC_DT_TILE_MAX_STEP 16
#define NC_DT_TILE_MIN_ROW 256

static inline __attribute__((always_inline)) int is_strided_runs(const nc_dtype *n)
{
    return n->kind == NC_DT_VECTOR && n->blocklen == 1 && n->child->kind == NC_DT_LEAF;
}

typedef struct tile {
    char *packed;
    uintptr_t origin;            /* first row of the current column */
    ptrdiff_t row_step, col_step;
    size_t rows, first_row, more; /* rows < first_row of the current column are done */
    size_t first_bytes, column;  /* packed bytes of the current column's rest; of a column */
} tile;

static inline __attribute__((always_inline)) void copy_tile(const tile *tl, size_t run, int unpack)
{
    for (size_t i = 0; i < tl->rows; i++) {
        uintptr_t row = tl->origin + (uintptr_t)((ptrdiff_t)i * tl->row_step);
        if (i >= tl->first_row) copy_run(tl->packed + (i - tl->first_row) * run, row, run, unpack);
        char *out = tl->packed + tl->first_bytes + i * run;
        for (size_t t = 1; t <= tl->more; t++, out += tl->column)
            copy_run(out, row + (uintptr_t)((ptrdiff_t)t * tl->col_step), run, unpack);
    }
}

/* Balaji et al.'s transpose pattern: the top frame walks one column (a vector of single runs
 * whose rows lie far apart) of a parent vector whose next columns start a few bytes further.
 * Copying column after column reads every cache line once per column; moving up to
 * NC_DT_TILE columns row by row reads it once.  Continues the current column from its next
 * row; returns the bytes moved (0: the pattern does not apply here). */
static size_t copy_column_tile(nc_dt_cursor *c, char *packed, size_t len, int unpack)
{
    if (c->depth < 2) return 0;
    nc_dt_frame *col = &c->stack[c->depth - 1], *row = &c->stack[c->depth - 2];
    const nc_dtype *b = frame_node(c, c->depth - 1), *a = frame_node(c, c->depth - 2);
    if (!is_strided_runs(b) || a->kind != NC_DT_VECTOR || a->blocklen != 1 || a->child != b ||
        a->stride > NC_DT_TILE_MAX_STEP || b->stride < NC_DT_TILE_MIN_ROW || a->stride < (ptrdiff_t)b->child->bytes)
        return 0;
    size_t run = b->child->bytes, first_rows = b->count - col->entry, column = b->count * run;
    if (len < first_rows * run) return 0;
    size_t more = (len - first_rows * run) / column, left = a->count - row->entry;
    if (more > left) more = left;
    if (more > NC_DT_TILE - 1) more = NC_DT_TILE - 1;
    if (!more) return 0;
    tile tl = {packed, entry_origin(b, col->origin, 0, 0) + (uintptr_t)b->child->offset, b->stride, a->stride,
               b->count, col->entry, more, first_rows * run, column};
    switch (run) { /* fixed sizes: inline loads and stores */
    case 4: copy_tile(&tl, 4, unpack); break;
    case 8: copy_tile(&tl, 8, unpack); break;
    case 16: copy_tile(&tl, 16, unpack); break;
    default: copy_tile(&tl, run, unpack);
    }
    /* Leave the cursor in the last column moved, finished, as the plain kernel would. */
    col->origin += (uintptr_t)((ptrdiff_t)more * a->stride);
    col->entry = b->count;
    row->entry += more;
    return first_rows * run + more * column;
}

/* Moves whole runs of the top frame while they fit in `len`, when the frame produces runs
 * directly (a vector of single runs or a run list): no per-run descent. */
static inline __attribute__((always_inline)) size_t copy_whole_runs(nc_dt_cursor *c, char *packed,
                                                                    size_t len, int unpack)
{
    nc_dt_frame *f = &c->stack[c->depth - 1];
    const nc_dtype *n = frame_node(c, c->depth - 1);
    size_t done = 0;
    if (is_strided_runs(n)) {
        size_t tiled = copy_column_tile(c, packed, len, unpack);
        if (tiled) return tiled;
        size_t bytes = n->child->bytes, k = len / bytes;
        if (k > n->count - f->entry) k = n->count - f->entry;
        copy_strided(packed, entry_origin(n, f->origin, f->entry, 0) + (uintptr_t)n->child->offset,
                     n->stride, bytes, k, unpack);
        f->entry += k;
        done = k * bytes;
    } else if (n->kind == NC_DT_RUNS) {
        for (; f->entry < n->count && n->lens[f->entry] <= len - done; f->entry++) {
            copy_run(packed + done, f->origin + (uintptr_t)n->disp[f->entry], n->lens[f->entry],
                     unpack);
            done += n->lens[f->entry];
        }
    }
    return done;
}

static inline __attribute__((always_inline)) size_t move(nc_dt_cursor *c, char *packed,
                                                         size_t len, int unpack)
{
    size_t done = 0;
    while (done < len) {
        if (c->run_left) {
            size_t n = c->run_left < len - done ? c->run_left : len - done;
            copy_run(packed + done, c->run, n, unpack);
            c->run += n;
            c->run_left -= n;
            done += n;
            continue;
        }
        if (c->depth) done += copy_whole_runs(c, packed + done, len - done, unpack);
        if (done < len && !next_run(c)) break;
    }
    c->offset += done;
    return done;
}

size_t nc_dt_pack(nc_dt_cursor *c, void *dst, size_t len)
{
    return move(c, dst, len, 0);
}

size_t nc_dt_unpack(nc_dt_cursor *c, const void *src, size_t len)
{
    return move(c, (char *)src, len, 1);
}

/* One run per element (a padded struct): element by element in one pass, with fixed-size
 * copies for the common run lengths. */
static void copy_leaf_elements(const nc_dtype *t, const char *src, char *dst, size_t count)
{
    ptrdiff_t step = t->extent;
    src += t->offset;
    dst += t->offset;
#define NC_COPY_EACH(B)                                                                    \
    for (size_t e = 0; e < count; e++, src += step, dst += step) memcpy(dst, src, (B));   \
    return;
    switch (t->bytes) {
    case 4: NC_COPY_EACH(4)
    case 8: NC_COPY_EACH(8)
    case 12: NC_COPY_EACH(12)
    case 16: NC_COPY_EACH(16)
    case 24: NC_COPY_EACH(24)
    default: NC_COPY_EACH(t->bytes)
    }
#undef NC_COPY_EACH
}

void nc_dt_copy(const nc_dtype *t, const void *src, void *dst, size_t count)
{
    if (!count) return; /* (buffers may then be NULL) */
    if (t->kind == NC_DT_LEAF) {
        copy_leaf_elements(t, src, dst, count);
        return;
    }
    enum { PIECE = 16384 }; /* a cache-resident hop between the two layouts */
    char piece[PIECE];
    nc_dt_cursor from, to;
    nc_dt_cursor_init(&from, t, src, count, 0);
    nc_dt_cursor_init(&to, t, dst, count, 0);
    for (size_t n; (n = nc_dt_pack(&from, piece, PIECE)) > 0;) nc_dt_unpack(&to, piece, n);
}

/* Walks up to `len` bytes as runs (touching contiguous neighbours merged), recording them
 * in `iov` when given, stopping after `max_runs` runs. */
static size_t walk_runs(nc_dt_cursor *c, struct iovec *iov, size_t max_runs, size_t len,
                        size_t *nruns)
{
    size_t done = 0, k = 0;
    uintptr_t last_end = 0;
    while (done < len) {
        if (!c->run_left && !next_run(c)) break;
        size_t n = c->run_left < len - done ? c->run_left : len - done;
        if (k && c->run == last_end) {
            if (iov) iov[k - 1].iov_len += n;
        } else {
            if (k == max_runs) break;
            if (iov) iov[k] = (struct iovec){(void *)c->run, n};
            k++;
        }
        c->run += n;
        c->run_left -= n;
        last_end = c->run;
        done += n;
    }
    c->offset += done;
    *nruns = k;
    return done;
}

size_t nc_dt_iov(nc_dt_cursor *c, struct iovec *iov, size_t max_iov, size_t len, size_t *niov)
{
    return walk_runs(c, iov, max_iov, len, niov);
}

nc_dt_shape nc_dt_lookahead(const nc_dt_cursor *c, size_t len, size_t max_runs,
                            size_t dense_min_run)
{
    nc_dt_cursor ahead = *c; /* the copying context stays where it is */
    nc_dt_shape s = {0, 0, 0};
    s.bytes = walk_runs(&ahead, NULL, max_runs, len, &s.runs);
    s.dense = s.runs && s.bytes / s.runs >= dense_min_run;
    return s;
}

/* ---------- subarray ---------- */

nc_dtype *nc_dt_subarray(int ndims, const size_t *sizes, const size_t *subsizes,
                         const size_t *starts, int order_c, nc_dtype *child)
{
    if (!child) return NULL;
    ptrdiff_t stride = child->extent, offset = 0;
    nc_dtype *t = child;
    for (int k = 0; k < ndims && t; k++) { /* from the fastest dimension out */
        int d = order_c ? ndims - 1 - k : k;
        t = nc_dt_vector(subsizes[d], 1, stride, t);
        offset += (ptrdiff_t)starts[d] * stride;
        stride *= (ptrdiff_t)sizes[d];
    }
    size_t one = 1;
    t = t ? nc_dt_indexed(1, &offset, &one, t) : NULL;
    return nc_dt_resized(t, 0, stride);
}
