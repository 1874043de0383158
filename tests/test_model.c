/* Topology groups, the trees shaped from them and the cost model, without MPI (issue 19).
 *
 * For many machines (packages x NUMA x L3 x cores), placements (block, cyclic, scatter),
 * rank counts (3 to 256, oversubscribed too), levels, radices and roots:
 *   - every tree is a tree: each rank but the root has one parent, which lists it among its
 *     children once, and every rank is reached from the root; the root leads its groups;
 *   - heaps and ranges with one group (flat) or one rank per group are today's trees, edge for
 *     edge (the hierarchy drops out: nc_hier_build returns NULL);
 *   - block placement keeps rank order in the ranges (non-commutative reductions);
 *   - the model: for 64 to 256 ranks, the hierarchical Bcast moves at most (domains - 1) x
 *     message bytes across each level's boundary, Reduce the same, Allreduce twice that, and
 *     today's flat trees move more across the NUMA boundary.
 * `test_model table` prints the model's tables for the 128-core, 8-NUMA node instead
 * (docs/results-topology.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/hier.h"
#include "core/model.h"

static int failures;
#define CHECK(cond, ...)                           \
    do {                                           \
        if (!(cond)) {                             \
            if (failures++ < 20) {                 \
                fprintf(stderr, "FAIL: " __VA_ARGS__); \
                fputc('\n', stderr);               \
            }                                      \
        }                                          \
    } while (0)

static const char *place_names[] = {"auto", "cpu", "block", "cyclic", "scatter"};

/* Checks the tree of (h, root, radix, shape) over `size` ranks; returns its height. */
static int check_tree(const nc_hier *h, int size, int root, int radix, nc_tree_shape shape, const char *what)
{
    int *parent = malloc(sizeof(int) * (size_t)size), *seen = calloc((size_t)size, sizeof(int));
    for (int r = 0; r < size; r++) {
        nc_tree_pos t = nc_tree_place(h, size, r, root, radix, shape);
        parent[r] = t.parent;
        CHECK((r == root) == (t.parent < 0), "%s: rank %d parent %d (root %d)", what, r, t.parent, root);
        for (int i = 0; i < t.children; i++) {
            int c = nc_tree_child(h, size, &t, i);
            CHECK(c >= 0 && c < size && c != root, "%s: rank %d child %d is %d", what, r, i, c);
            if (c < 0 || c >= size) continue;
            seen[c]++;
            int back = nc_tree_place(h, size, c, root, radix, shape).parent;
            CHECK(back == r, "%s: child %d of %d has parent %d", what, c, r, back);
        }
    }
    int height = 0;
    for (int r = 0; r < size; r++) {
        CHECK(seen[r] == (r != root), "%s: rank %d is a child %d times", what, r, seen[r]);
        int d = 0, x = r;
        while (x != root && x >= 0 && d <= size) x = parent[x], d++;
        CHECK(x == root, "%s: rank %d does not reach the root", what, r);
        if (d > height) height = d;
    }
    free(parent);
    free(seen);
    return height;
}

/* The same edges as the flat trees (NULL). */
static void check_same_as_flat(const nc_hier *h, int size, int root, int radix, nc_tree_shape shape, const char *what)
{
    for (int r = 0; r < size; r++) {
        nc_tree_pos a = nc_tree_place(h, size, r, root, radix, shape);
        nc_tree_pos b = nc_tree_place(NULL, size, r, root, radix, shape);
        CHECK(a.parent == b.parent && a.children == b.children, "%s: rank %d differs from the flat tree", what, r);
    }
}

/* In a block placement the ranges' fold, acc = own op (child 1 op (...)), meets ranks in
 * order: the subtree of each child is a run of consecutive ranks following its parent's
 * earlier children. */
static int subtree_end(const nc_hier *h, int size, int r, int radix)
{
    nc_tree_pos t = nc_tree_place(h, size, r, 0, radix, NC_TREE_RANGE);
    int next = r + 1;
    for (int i = 0; i < t.children; i++) {
        int c = nc_tree_child(h, size, &t, i);
        if (c != next) return -1;
        next = subtree_end(h, size, c, radix);
        if (next < 0) return -1;
    }
    return next;
}

static nc_model_machine machine(int packages, int numa, int l3, int cores)
{
    nc_model_machine m = {{packages, numa, l3, cores}};
    return m;
}

static void check_machines(void)
{
    static const int shapes[][4] = {{2, 4, 2, 8}, {2, 4, 4, 4}, {1, 8, 2, 8}, {2, 1, 1, 16}, {2, 2, 2, 2}, {4, 2, 3, 5},
                                    {1, 1, 1, 8}, {2, 4, 1, 8}};
    static const int sizes[] = {3, 5, 8, 13, 16, 31, 64, 100, 128, 200, 256};
    static const int masks[] = {NC_TOPO_AUTO_LEVELS, NC_TOPO_ALL_LEVELS, 1 << NC_TOPO_NUMA,
                                1 << NC_TOPO_NUMA | 1 << NC_TOPO_L3, 1 << NC_TOPO_L3 | 1 << NC_TOPO_CORE};
    static const int radices[] = {1, 2, 4, 8, 300};
    int trees = 0;
    for (size_t m = 0; m < sizeof shapes / sizeof shapes[0]; m++) {
        nc_model_machine mc = machine(shapes[m][0], shapes[m][1], shapes[m][2], shapes[m][3]);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int size = sizes[s];
            nc_topo_loc *locs = malloc(sizeof *locs * (size_t)size);
            for (int place = NC_PLACE_BLOCK; place <= NC_PLACE_SCATTER; place++) {
                nc_model_place(&mc, place, size, locs);
                for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
                    nc_hier *h = nc_hier_build(locs, size, masks[k]);
                    for (int q = 0; h && q < size; q++) CHECK(h->order[h->pos[q]] == q, "order/pos");
                    for (size_t x = 0; x < sizeof radices / sizeof radices[0]; x++) {
                        int roots[3] = {0, size - 1, (int)(m * 7 + s * 3 + (size_t)place) % size};
                        for (int i = 0; i < 3; i++) {
                            char what[160];
                            snprintf(what, sizeof what, "machine %d:%d:%d:%d %s np %d mask %d radix %d root %d",
                                     shapes[m][0], shapes[m][1], shapes[m][2], shapes[m][3], place_names[place], size,
                                     masks[k], radices[x], roots[i]);
                            check_tree(h, size, roots[i], radices[x], NC_TREE_HEAP, what);
                            check_tree(h, size, roots[i], radices[x], NC_TREE_RANGE, what);
                            trees += 2;
                        }
                        if (h && nc_hier_in_rank_order(h))
                            CHECK(subtree_end(h, size, 0, radices[x]) == size, "rank order lost: machine %zu np %d", m,
                                  size);
                    }
                    if (place == NC_PLACE_BLOCK && h) CHECK(nc_hier_in_rank_order(h), "block is not in rank order");
                    nc_hier_free(h);
                }
            }
            free(locs);
        }
    }
    printf("trees: %d checked\n", trees);
}

/* One group, or one rank per group: no hierarchy, the flat trees. */
static void check_degenerate(void)
{
    nc_topo_loc locs[64];
    for (int r = 0; r < 64; r++) locs[r] = (nc_topo_loc){{0, 0, 0, r}};
    CHECK(nc_hier_build(locs, 64, NC_TOPO_AUTO_LEVELS) == NULL, "one domain per level must be flat");
    CHECK(nc_hier_build(locs, 64, NC_TOPO_ALL_LEVELS) == NULL, "one rank per core must be flat");
    for (int r = 0; r < 64; r++) locs[r] = (nc_topo_loc){{r, r, r, r}};
    CHECK(nc_hier_build(locs, 64, NC_TOPO_ALL_LEVELS) == NULL, "one rank per domain must be flat");
    CHECK(nc_hier_build(locs, 64, 0) == NULL, "no levels must be flat");
    /* Several levels of which only one splits: one level left. */
    for (int r = 0; r < 64; r++) locs[r] = (nc_topo_loc){{0, r / 16, r / 16, r}};
    nc_hier *h = nc_hier_build(locs, 64, NC_TOPO_ALL_LEVELS);
    CHECK(h && h->depth == 1 && h->ngroups[1] == 4, "numa = l3 must give one level of 4 groups");
    nc_hier_free(h);
    /* The flat trees themselves are today's: the k-ary heap over rotated ranks. */
    for (int root = 0; root < 10; root += 3)
        for (int v = 0; v < 10; v++) {
            int r = nc_rank_of(v, root, 10);
            nc_tree_pos t = nc_tree_place(NULL, 10, r, root, 3, NC_TREE_HEAP);
            CHECK(t.parent == (v ? nc_rank_of(nc_tree_parent(v, 3), root, 10) : -1), "flat heap parent");
            CHECK(t.children == nc_tree_child_count(v, 3, 10), "flat heap children");
        }
    /* Groups that leave ranks in one group each: compared edge by edge with the flat trees. */
    nc_model_machine mc = machine(1, 1, 1, 64);
    nc_topo_loc many[64];
    nc_model_place(&mc, NC_PLACE_BLOCK, 64, many);
    check_same_as_flat(nc_hier_build(many, 64, NC_TOPO_ALL_LEVELS), 64, 5, 4, NC_TREE_HEAP, "one core each");
}

typedef struct model_case {
    nc_model_coll coll;
    const nc_hier *h;
    int size, root, radix;
    size_t bytes;
} model_case;

static nc_model_count run_model(const model_case *mc, const nc_topo_loc *locs)
{
    nc_model_schedule s = {0};
    nc_model_count count;
    nc_model_schedule_coll(&s, mc->coll, mc->h, mc->size, mc->root, mc->radix, mc->bytes, 32768);
    nc_model_count_reads(&s, locs, mc->size, &count);
    nc_model_free(&s);
    return count;
}

/* Crossings of each level's boundary within (domains - 1) x bytes x passes (hierarchy), and
 * beyond it across the NUMA boundary for the flat trees. */
static void check_bounds(void)
{
    static const int sizes[] = {64, 96, 128, 200, 256};
    static const nc_model_coll colls[] = {NC_MODEL_BCAST, NC_MODEL_REDUCE, NC_MODEL_ALLREDUCE};
    int checked = 0, flat_within = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int size = sizes[s];
        nc_model_machine m = machine(2, 4, 2, size / 16 > 0 ? (size + 15) / 16 : 1);
        nc_topo_loc *locs = malloc(sizeof *locs * (size_t)size);
        for (int place = NC_PLACE_BLOCK; place <= NC_PLACE_SCATTER; place++) {
            nc_model_place(&m, place, size, locs);
            nc_hier *h = nc_hier_build(locs, size, NC_TOPO_AUTO_LEVELS);
            CHECK(h != NULL, "np %d %s: no hierarchy", size, place_names[place]);
            for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++)
                for (int radix = 2; radix <= 8; radix *= 2)
                    for (int root = 0; root < size; root += size / 3) {
                        size_t bytes = 1 << 20;
                        model_case hier = {colls[c], h, size, colls[c] == NC_MODEL_ALLREDUCE ? 0 : root, radix, bytes};
                        model_case flat = hier;
                        flat.h = NULL;
                        nc_model_count a = run_model(&hier, locs), b = run_model(&flat, locs);
                        uint64_t passes = colls[c] == NC_MODEL_ALLREDUCE ? 2 : 1;
                        for (int l = NC_TOPO_PACKAGE; l <= NC_TOPO_L3; l++)
                            CHECK(a.bytes[l] <= (uint64_t)(a.domains[l] - 1) * bytes * passes,
                                  "np %d %s %s radix %d root %d: %llu bytes cross the %s boundary, bound %llu", size,
                                  place_names[place], nc_model_coll_names[colls[c]], radix, root,
                                  (unsigned long long)a.bytes[l], nc_topo_level_names[l],
                                  (unsigned long long)(a.domains[l] - 1) * bytes * passes);
                        /* Today's trees at their default radices (Bcast 8, reduction fan-in 4) cross
                         * more.  (Not at every radix: in a block placement the 8 ranges of a radix-8
                         * fan-in from rank 0 are the 8 NUMA nodes' blocks.) */
                        if (radix == (colls[c] == NC_MODEL_BCAST ? 8 : 4))
                            CHECK(b.bytes[NC_TOPO_NUMA] > (uint64_t)(b.domains[NC_TOPO_NUMA] - 1) * bytes * passes,
                                  "np %d %s %s radix %d root %d: the flat tree keeps within the NUMA bound (%llu)",
                                  size, place_names[place], nc_model_coll_names[colls[c]], radix, root,
                                  (unsigned long long)b.bytes[NC_TOPO_NUMA]);
                        flat_within +=
                            b.bytes[NC_TOPO_NUMA] <= (uint64_t)(b.domains[NC_TOPO_NUMA] - 1) * bytes * passes;
                        checked++;
                    }
            nc_hier_free(h);
        }
        free(locs);
    }
    printf("model bounds: %d cases checked (the flat trees kept within the NUMA bound in %d)\n", checked, flat_within);
}

/* The tables of docs/results-topology.md: 128 ranks on 128 cores, 2 packages x 4 NUMA x 2 L3
 * x 8 cores; radix 8 (Bcast, Barrier) and 4 (reduction fan-in, also Allreduce's). */
static void print_tables(void)
{
    nc_model_machine m = machine(2, 4, 2, 8);
    enum { SIZE = 128 };
    static const nc_model_coll colls[] = {NC_MODEL_BARRIER, NC_MODEL_BCAST, NC_MODEL_REDUCE, NC_MODEL_ALLREDUCE,
                                          NC_MODEL_SLICES};
    static const struct {
        const char *name;
        int mask;
    } trees[] = {{"flat (today)", 0},
                 {"numa", 1 << NC_TOPO_NUMA},
                 {"numa,l3", 1 << NC_TOPO_NUMA | 1 << NC_TOPO_L3},
                 {"package,numa,l3", NC_TOPO_AUTO_LEVELS}};
    nc_topo_loc locs[SIZE];
    for (int big = 1; big >= 0; big--) {
        size_t bytes = big ? 1 << 20 : 8;
        if (big)
            printf("\n1 MiB: payload MiB crossing each boundary, MiB copied in all, steps\n\n"
                   "| placement | collective | levels | package | NUMA | L3 | copied | steps |\n"
                   "|---|---|---|---|---|---|---|---|\n");
        else
            printf("\n8 B: cache lines crossing each boundary (flags and data), steps\n\n"
                   "| placement | collective | levels | package | NUMA | L3 | steps |\n"
                   "|---|---|---|---|---|---|---|\n");
        for (int place = NC_PLACE_BLOCK; place <= NC_PLACE_SCATTER; place++) {
            nc_model_place(&m, place, SIZE, locs);
            for (size_t c = 0; c < sizeof colls / sizeof colls[0]; c++) {
                if ((colls[c] == NC_MODEL_BARRIER && big) || (colls[c] == NC_MODEL_SLICES && !big)) continue;
                for (size_t t = 0; t < sizeof trees / sizeof trees[0]; t++) {
                    if (colls[c] == NC_MODEL_SLICES && t) continue;
                    nc_hier *h = nc_hier_build(locs, SIZE, trees[t].mask);
                    int radix = colls[c] == NC_MODEL_REDUCE || colls[c] == NC_MODEL_ALLREDUCE ? 4 : 8;
                    model_case mc = {colls[c], h, SIZE, 0, radix, bytes};
                    nc_model_count n = run_model(&mc, locs);
                    const char *levels = colls[c] == NC_MODEL_SLICES ? "slices (today, large)" : trees[t].name;
                    double mib = 1024.0 * 1024.0;
                    if (big)
                        printf("| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %d |\n", place_names[place],
                               nc_model_coll_names[colls[c]], levels, n.bytes[0] / mib, n.bytes[1] / mib,
                               n.bytes[2] / mib, n.copied / mib, n.steps);
                    else
                        printf("| %s | %s | %s | %llu | %llu | %llu | %d |\n", place_names[place],
                               nc_model_coll_names[colls[c]], levels, (unsigned long long)n.lines[0],
                               (unsigned long long)n.lines[1], (unsigned long long)n.lines[2], n.steps);
                    nc_hier_free(h);
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "table")) {
        print_tables();
        return 0;
    }
    check_degenerate();
    check_machines();
    check_bounds();
    if (failures) fprintf(stderr, "test_model: %d failures\n", failures);
    else printf("test_model: passed\n");
    return failures != 0;
}
