/* k-ary trees over "virtual ranks": the tree is built once for root 0 and turned for any root
 * by rotating ranks (v = (r - root) mod n), so no per-root tables are needed. */
#ifndef NC_TREE_H
#define NC_TREE_H

static inline int nc_vrank(int rank, int root, int n) { return (rank - root + n) % n; }
static inline int nc_rank_of(int vrank, int root, int n) { return (vrank + root) % n; }

/* Parent of virtual rank v (v > 0) in a radix-k tree. */
static inline int nc_tree_parent(int v, int k) { return (v - 1) / k; }

/* Children of v are first .. first+count-1. */
static inline int nc_tree_first_child(int v, int k) { return v * k + 1; }
static inline int nc_tree_child_count(int v, int k, int n)
{
    long first = (long)v * k + 1;
    if (first >= n) return 0;
    return (int)((n - first) < k ? (n - first) : k);
}

/* A rank's place in the radix-k tree of n ranks rooted at `root`: its virtual rank, its parent
 * (-1 at the root) and its children first_child .. first_child + children - 1 (virtual). */
typedef struct nc_tree_pos {
    int vrank, parent, first_child, children;
    int root, radix;
} nc_tree_pos;

static inline nc_tree_pos nc_tree_pos_at(int rank, int n, int root, int radix)
{
    nc_tree_pos t = {nc_vrank(rank, root, n), -1, 0, 0, root, radix};
    if (t.vrank) t.parent = nc_rank_of(nc_tree_parent(t.vrank, radix), root, n);
    t.first_child = nc_tree_first_child(t.vrank, radix);
    t.children = nc_tree_child_count(t.vrank, radix, n);
    return t;
}

/* The place for (root, radix), from `memo` when it holds it (else computed into it): a
 * small call asks every time, and the place costs three integer divisions. */
static inline const nc_tree_pos *nc_tree_pos_memo(nc_tree_pos *memo, int rank, int n, int root, int radix)
{
    if (memo->radix != radix || memo->root != root) *memo = nc_tree_pos_at(rank, n, root, radix);
    return memo;
}

#endif
