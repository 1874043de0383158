/* Groups by topology level and the trees shaped from them (hier.h). */
#include "hier.h"

#include <stdlib.h>
#include <string.h>

#include "tree.h"

/* ---- building the groups ---------------------------------------------------------------- */

typedef struct sort_ctx {
    const int *a, *b; /* sort by a[], then b[], then the index */
} sort_ctx;

static int by_pair(const void *x, const void *y, void *arg)
{
    const sort_ctx *c = arg;
    int i = *(const int *)x, j = *(const int *)y;
    if (c->a[i] != c->a[j]) return c->a[i] < c->a[j] ? -1 : 1;
    if (c->b[i] != c->b[j]) return c->b[i] < c->b[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* next[r] = a dense number of the pair (prev[r], key[r]); returns how many there are. */
static int refine(const int *prev, const int *key, int size, int *next, int *scratch)
{
    sort_ctx ctx = {prev, key};
    for (int r = 0; r < size; r++) scratch[r] = r;
    qsort_r(scratch, (size_t)size, sizeof(int), by_pair, &ctx);
    int groups = 0;
    for (int i = 0; i < size; i++) {
        int r = scratch[i], q = i ? scratch[i - 1] : -1;
        if (i && (prev[r] != prev[q] || key[r] != key[q])) groups++;
        next[r] = groups;
    }
    return size ? groups + 1 : 0;
}

static int distinct(const int *key, int size, int *scratch, int *out)
{
    int *zero = calloc((size_t)size, sizeof(int));
    if (!zero) return 0;
    int n = refine(zero, key, size, out, scratch);
    free(zero);
    return n;
}

/* Locality order: by the lowest rank of the depth-1 group, then of the depth-2 group, ...,
 * then by rank. */
typedef struct order_ctx {
    int depth;
    int **min_of; /* [l][rank]: lowest rank of its depth-l group */
} order_ctx;

static int by_locality(const void *x, const void *y, void *arg)
{
    const order_ctx *c = arg;
    int i = *(const int *)x, j = *(const int *)y;
    for (int l = 1; l <= c->depth; l++)
        if (c->min_of[l][i] != c->min_of[l][j]) return c->min_of[l][i] < c->min_of[l][j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

void nc_hier_free(nc_hier *h)
{
    if (!h) return;
    free(h->order);
    free(h->pos);
    for (int l = 0; l < NC_TOPO_LEVELS + 2; l++) {
        if (l <= h->depth) free(h->group_of[l]); /* (depth D+1's is pos) */
        free(h->start[l]);
        if (l < NC_TOPO_LEVELS + 1) free(h->sub_first[l]);
    }
    free(h);
}

/* Numbers the groups of each depth in locality order (raw[l][r]: any numbering). */
static int number_groups(nc_hier *h, int **raw)
{
    int D = h->depth, P = h->size;
    for (int l = 0; l <= D + 1; l++) {
        if (l <= D) h->group_of[l] = malloc(sizeof(int) * (size_t)P);
        else h->group_of[l] = h->pos;
        h->start[l] = malloc(sizeof(int) * (size_t)(P + 1));
        if (!h->group_of[l] || !h->start[l]) return -1;
        int g = -1;
        for (int i = 0; i < P; i++) {
            int r = h->order[i];
            if (l == D + 1 || i == 0 || (l > 0 && raw[l][r] != raw[l][h->order[i - 1]])) h->start[l][++g] = i;
            if (l <= D) h->group_of[l][r] = g;
        }
        h->ngroups[l] = g + 1;
        h->start[l][g + 1] = P;
    }
    for (int l = 0; l <= D; l++) {
        h->sub_first[l] = malloc(sizeof(int) * (size_t)(h->ngroups[l] + 1));
        if (!h->sub_first[l]) return -1;
        for (int g = 0; g < h->ngroups[l]; g++) h->sub_first[l][g] = h->group_of[l + 1][h->order[h->start[l][g]]];
        h->sub_first[l][h->ngroups[l]] = h->ngroups[l + 1];
    }
    return 0;
}

nc_hier *nc_hier_build(const nc_topo_loc *locs, int size, int mask)
{
    if (size < 3 || mask <= 0) return NULL; /* (two ranks: any tree is one edge) */
    nc_hier *h = calloc(1, sizeof *h);
    int *raw[NC_TOPO_LEVELS + 2] = {0}, *min_of[NC_TOPO_LEVELS + 2] = {0};
    int *key = malloc(sizeof(int) * (size_t)size), *scratch = malloc(sizeof(int) * (size_t)size);
    int *trial = malloc(sizeof(int) * (size_t)size), *ids = malloc(sizeof(int) * (size_t)size);
    int ok = h && key && scratch && trial && ids;
    /* The candidate levels, coarse (fewest domains) first. */
    int cand[NC_TOPO_LEVELS], count[NC_TOPO_LEVELS], ncand = 0;
    for (int l = 0; ok && l < NC_TOPO_LEVELS; l++) {
        if (!(mask >> l & 1)) continue;
        for (int r = 0; r < size; r++) key[r] = locs[r].id[l];
        count[l] = distinct(key, size, scratch, ids);
        int at = ncand++;
        while (at > 0 && count[cand[at - 1]] > count[l]) {
            cand[at] = cand[at - 1];
            at--;
        }
        cand[at] = l;
    }
    /* Keep a level if it splits some group and leaves some rank with company. */
    raw[0] = ok ? calloc((size_t)size, sizeof(int)) : NULL;
    ok = ok && raw[0];
    int groups = 1;
    for (int i = 0; ok && i < ncand; i++) {
        for (int r = 0; r < size; r++) key[r] = locs[r].id[cand[i]];
        int n = refine(raw[h->depth], key, size, trial, scratch);
        if (n <= groups || n >= size) continue;
        h->level[h->depth++] = cand[i];
        raw[h->depth] = malloc(sizeof(int) * (size_t)size);
        if (!(ok = raw[h->depth] != NULL)) break;
        memcpy(raw[h->depth], trial, sizeof(int) * (size_t)size);
        groups = n;
    }
    if (ok && h->depth) {
        h->size = size;
        order_ctx octx = {h->depth, min_of};
        for (int l = 1; ok && l <= h->depth; l++) {
            min_of[l] = malloc(sizeof(int) * (size_t)size);
            if (!(ok = min_of[l] != NULL)) break;
            for (int r = 0; r < size; r++) ids[r] = size; /* lowest rank per raw group number */
            for (int r = 0; r < size; r++)
                if (r < ids[raw[l][r]]) ids[raw[l][r]] = r;
            for (int r = 0; r < size; r++) min_of[l][r] = ids[raw[l][r]];
        }
        h->order = malloc(sizeof(int) * (size_t)size);
        h->pos = malloc(sizeof(int) * (size_t)size);
        ok = ok && h->order && h->pos;
        if (ok) {
            for (int r = 0; r < size; r++) h->order[r] = r;
            qsort_r(h->order, (size_t)size, sizeof(int), by_locality, &octx);
            for (int i = 0; i < size; i++) h->pos[h->order[i]] = i;
            ok = number_groups(h, raw) == 0;
        }
    }
    for (int l = 0; l < NC_TOPO_LEVELS + 2; l++) {
        free(raw[l]);
        free(min_of[l]);
    }
    free(key);
    free(scratch);
    free(trial);
    free(ids);
    if (!ok || !h->depth) {
        if (h && !h->depth) free(h);
        else nc_hier_free(h);
        return NULL;
    }
    return h;
}

int nc_hier_in_rank_order(const nc_hier *h)
{
    for (int i = 0; h && i < h->size; i++)
        if (h->order[i] != i) return 0;
    return 1;
}

/* ---- trees ------------------------------------------------------------------------------- */

/* The range [lo, hi) of subgroup indices is rooted at lo; lo+1 .. hi-1 is cut into `parts`
 * consecutive sub-ranges, each rooted at its first index (every subtree is a run of
 * consecutive indices): nc_range_part. */
static int min_int(int a, int b) { return a < b ? a : b; }

static int leader(const nc_hier *h, int l, int g, int root)
{
    return h->group_of[l][root] == g ? root : h->order[h->start[l][g]];
}

/* The subgroups of depth-l group g: the first's index, how many, and which of them (rotated
 * to come first) holds g's leader. */
typedef struct subgroups {
    int base, m, s0;
} subgroups;

static subgroups subgroups_of(const nc_hier *h, int l, int g, int root)
{
    subgroups s = {h->sub_first[l][g], h->sub_first[l][g + 1] - h->sub_first[l][g], 0};
    if (h->group_of[l][root] == g) s.s0 = h->group_of[l + 1][root] - s.base;
    return s;
}

nc_tree_pos nc_tree_place_grouped(const nc_hier *h, int rank, int root, int radix, nc_tree_shape shape)
{
    nc_tree_pos t = {-1, 0, rank, root, radix < 1 ? 1 : radix, (signed char)shape, 0, 0, 0};
    int k = t.radix, v, plo;
    while (t.lead <= h->depth && leader(h, t.lead, h->group_of[t.lead][rank], root) != rank) t.lead++;
    if (t.lead > 0) {
        int l = t.lead - 1;
        subgroups s = subgroups_of(h, l, h->group_of[l][rank], root);
        v = (h->group_of[t.lead][rank] - s.base - s.s0 + s.m) % s.m;
        if (shape == NC_TREE_HEAP) {
            t.lo = v;
            t.parent = leader(h, t.lead, s.base + (nc_tree_parent(v, k) + s.s0) % s.m, root);
            t.children = nc_tree_child_count(v, k, s.m);
        } else {
            nc_range_find(v, s.m, k, &t.lo, &t.hi, &plo);
            t.parent = leader(h, t.lead, s.base + (plo + s.s0) % s.m, root);
            t.children = min_int(t.hi - t.lo - 1, k);
        }
    }
    for (int l = t.lead; l <= h->depth; l++) {
        int g = h->group_of[l][rank];
        t.children += min_int(h->sub_first[l][g + 1] - h->sub_first[l][g] - 1, k);
    }
    return t;
}

/* Child i among my children at depth l (count: how many there), as an index relative to
 * the group's rotated subgroups. */
static int child_index(const nc_tree_pos *t, int own, int m, int count, int i)
{
    if (t->shape == NC_TREE_HEAP) return (own ? nc_tree_first_child(t->lo, t->radix) : 1) + i;
    return own ? nc_range_part(t->lo, t->hi, count, i) : nc_range_part(0, m, count, i);
}

int nc_tree_child_of(const nc_hier *h, int size, const nc_tree_pos *t, int i)
{
    int first = t->lead > 0 ? t->lead - 1 : 0, last = h->depth;
    int heap = t->shape == NC_TREE_HEAP;
    /* heap: coarse to fine; ranges: fine to coarse */
    for (int step = 0; step <= last - first; step++) {
        int l = heap ? first + step : last - step;
        int own = l == t->lead - 1; /* the group I am a subgroup leader in, not its leader */
        subgroups s = subgroups_of(h, l, h->group_of[l][t->rank], t->root);
        int count = own ? (heap ? nc_tree_child_count(t->lo, t->radix, s.m) : min_int(t->hi - t->lo - 1, t->radix))
                        : min_int(s.m - 1, t->radix);
        if (i < count) return leader(h, l + 1, s.base + (child_index(t, own, s.m, count, i) + s.s0) % s.m, t->root);
        i -= count;
    }
    return -1;
}
