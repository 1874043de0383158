/* k-ary trees over "virtual ranks": the tree is built once for root 0 and turned for any root
 * by rotating ranks (v = (r - root) mod n), so no per-root tables are needed. */
#ifndef NC_TREE_H
#define NC_TREE_H

/* (0 <= rank, root, vrank < n: a compare instead of a division, which every call's tree and
 * each child looked up would pay) */
static inline int nc_vrank(int rank, int root, int n) { return rank >= root ? rank - root : rank - root + n; }
static inline int nc_rank_of(int vrank, int root, int n) { return vrank + root < n ? vrank + root : vrank + root - n; }

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

#endif
