/* Groups of a node's ranks by topology level, and the trees shaped from them.
 *
 * A hierarchy of depth D cuts the node (depth 0, one group) into groups at depths 1..D, each
 * group of depth l a union of groups of depth l+1, and depth D+1 is the ranks themselves.
 * Ranks are kept in a locality order in which every group is a contiguous run and the
 * subgroups of a group follow each other, ordered by their lowest rank.
 *
 * A tree for root R: every group's leader is R if R is in it, else its first rank in the
 * locality order; within each group, the leaders of its subgroups form a tree (a k-ary heap
 * or consecutive ranges, over the subgroups rotated so the one holding the group's leader
 * comes first) rooted at the group's leader.  So each subgroup other than the root's is
 * entered by exactly one edge of the tree: data crosses each domain boundary once.
 *
 * Depth 0 (no hierarchy: NULL) is today's trees exactly: the heap is the k-ary tree over
 * ranks rotated by the root (v = (r - root) mod n), the ranges those of the reduction
 * fan-in.  No MPI, no hwloc: the model and the MPI-free tests use the same code as the
 * algorithms. */
#ifndef NC_HIER_H
#define NC_HIER_H

#include "topo.h"
#include "tree.h"

typedef struct nc_hier {
    int size;  /* ranks of the node */
    int depth; /* D >= 1 (a flat node has no hierarchy) */
    int level[NC_TOPO_LEVELS]; /* the topology level of depth 1..D (level[l-1]) */
    int *order, *pos;          /* locality order: order[pos[r]] == r */
    int ngroups[NC_TOPO_LEVELS + 2];
    int *group_of[NC_TOPO_LEVELS + 2];  /* [l][rank]: its group at depth l (depth D+1: pos) */
    int *start[NC_TOPO_LEVELS + 2];     /* [l][g]: position of group g's first rank; [l][ngroups] = size */
    int *sub_first[NC_TOPO_LEVELS + 1]; /* [l][g]: group g's first subgroup (depth l+1); [l][ngroups] */
} nc_hier;

/* The hierarchy of `size` ranks at `locs` by the levels of `mask` (bits NC_TOPO_*), ordered
 * coarse to fine by how many domains hold the ranks; a level that splits no group, or leaves
 * every rank alone, drops out.  NULL when nothing is left (flat) or out of memory. */
nc_hier *nc_hier_build(const nc_topo_loc *locs, int size, int mask);
void nc_hier_free(nc_hier *h);

/* Whether the locality order is rank order and rank 0 leads every group (block placement):
 * then the range trees fold in rank order, as a non-commutative operation needs. */
int nc_hier_in_rank_order(const nc_hier *h);

/* Domains of depth l (1..D) that hold ranks. */
static inline int nc_hier_groups(const nc_hier *h, int l) { return h ? h->ngroups[l] : 1; }

typedef enum { NC_TREE_HEAP, NC_TREE_RANGE } nc_tree_shape;

/* One rank's place in the tree of root `root` and radix `radix`: its parent (a node rank, -1
 * at the root) and how many children it has; nc_tree_child names them.  Children come
 * coarse level first in a heap (its largest subtrees start first), finest first in ranges
 * (rank order within a block placement). */
typedef struct nc_tree_pos {
    int parent, children;
    int rank, root, radix;
    signed char shape, lead; /* lead: the shallowest depth whose group this rank leads */
    int lo, hi;              /* my subgroup's rotated index among my depth lead-1 group's (heap: lo), range: my range */
} nc_tree_pos;

/* The first index of part i of the range [lo, hi) cut into `parts` (lo itself is the range's
 * root; lo+1 .. hi-1 is cut into consecutive runs). */
static inline int nc_range_part(int lo, int hi, int parts, int i)
{
    return lo + 1 + (int)((long)i * (hi - lo - 1) / parts);
}

/* My range among m indices (rooted at index 0), and its parent's first index (-1 at the top). */
static inline void nc_range_find(int v, int m, int radix, int *lo, int *hi, int *parent)
{
    *lo = 0;
    *hi = m;
    *parent = -1;
    while (v != *lo) {
        int parts = *hi - *lo - 1 < radix ? *hi - *lo - 1 : radix, i = 0;
        while (nc_range_part(*lo, *hi, parts, i + 1) <= v) i++;
        *parent = *lo;
        int next_lo = nc_range_part(*lo, *hi, parts, i);
        *hi = nc_range_part(*lo, *hi, parts, i + 1);
        *lo = next_lo;
    }
}

nc_tree_pos nc_tree_place_grouped(const nc_hier *h, int rank, int root, int radix, nc_tree_shape shape);
/* (flat trees inline: every call plans its tree, and a flat one is a few instructions) */
static inline nc_tree_pos nc_tree_place(const nc_hier *h, int size, int rank, int root, int radix,
                                        nc_tree_shape shape)
{
    if (h) return nc_tree_place_grouped(h, rank, root, radix, shape);
    nc_tree_pos t = {-1, 0, rank, root, radix < 1 ? 1 : radix, (signed char)shape, 0, 0, 0};
    int v = nc_vrank(rank, root, size), plo;
    t.lead = v ? 1 : 0; /* one group: the subgroups are the ranks, rotated by the root */
    if (shape == NC_TREE_HEAP) {
        t.lo = v;
        if (v) t.parent = nc_rank_of(nc_tree_parent(v, t.radix), root, size);
        t.children = nc_tree_child_count(v, t.radix, size);
    } else {
        nc_range_find(v, size, t.radix, &t.lo, &t.hi, &plo);
        if (plo >= 0) t.parent = nc_rank_of(plo, root, size);
        t.children = t.hi - t.lo - 1 < t.radix ? t.hi - t.lo - 1 : t.radix;
    }
    return t;
}
/* Node rank of child i (0 <= i < children). */
int nc_tree_child_of(const nc_hier *h, int size, const nc_tree_pos *t, int i);
static inline int nc_tree_child(const nc_hier *h, int size, const nc_tree_pos *t, int i)
{
    /* (flat trees inline: every small Bcast and reduction asks for its children) */
    if (h) return nc_tree_child_of(h, size, t, i);
    int v = t->shape == NC_TREE_HEAP ? nc_tree_first_child(t->lo, t->radix) + i
                                     : nc_range_part(t->lo, t->hi, t->children, i);
    return nc_rank_of(v, t->root, size);
}

#endif
