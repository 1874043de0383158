/* The cost model of schedules on a topology (model.h). */
#include "model.h"

#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fatal.h"

const char *const nc_model_coll_names[] = {"barrier", "bcast", "reduce", "allreduce", "slices"};

int nc_model_cores(const nc_model_machine *m)
{
    int n = 1;
    for (int l = 0; l < NC_TOPO_LEVELS; l++) n *= m->arity[l];
    return n;
}

void nc_model_place(const nc_model_machine *m, int place, int size, nc_topo_loc *locs)
{
    int cores = nc_model_cores(m), per[NC_TOPO_LEVELS]; /* cores per domain of each level */
    per[NC_TOPO_CORE] = 1;
    for (int l = NC_TOPO_CORE - 1; l >= 0; l--) per[l] = per[l + 1] * m->arity[l + 1];
    for (int r = 0; r < size; r++) {
        int core = nc_topo_deal(place, r, size, cores, m->arity[NC_TOPO_PACKAGE] * m->arity[NC_TOPO_NUMA]);
        for (int l = 0; l < NC_TOPO_LEVELS; l++) locs[r].id[l] = core / per[l];
    }
}

void nc_model_add(nc_model_schedule *s, int step, int reader, int owner, size_t bytes, int flag)
{
    if (s->count == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->reads = realloc(s->reads, s->cap * sizeof *s->reads);
        if (!s->reads) nc_fatal("out of memory for a model schedule");
    }
    s->reads[s->count++] = (nc_model_read){step, reader, owner, flag, bytes};
}

void nc_model_clear(nc_model_schedule *s) { s->count = 0; }

void nc_model_free(nc_model_schedule *s)
{
    free(s->reads);
    *s = (nc_model_schedule){0};
}

typedef struct tree_args {
    const nc_hier *h;
    int size, root, radix;
    nc_tree_shape shape;
} tree_args;

static nc_tree_pos place(const tree_args *a, int rank)
{
    return nc_tree_place(a->h, a->size, rank, a->root, a->radix, a->shape);
}

static int depth_of(const tree_args *a, int rank)
{
    int d = 0;
    for (; rank != a->root; d++) rank = place(a, rank).parent;
    return d;
}

static int tree_height(const tree_args *a)
{
    int height = 0;
    for (int r = 0; r < a->size; r++) {
        int d = depth_of(a, r);
        if (d > height) height = d;
    }
    return height;
}

static size_t frag_bytes(size_t bytes, size_t frag, size_t f)
{
    return bytes - f * frag < frag ? bytes - f * frag : frag;
}

/* The ring pipeline from `root` down the heap; returns its last step. */
static int schedule_bcast(nc_model_schedule *s, const tree_args *a, size_t bytes, size_t frag, int step0)
{
    size_t nfrag = bytes ? (bytes + frag - 1) / frag : 1;
    int last = step0;
    for (int x = 0; x < a->size; x++) {
        nc_tree_pos t = place(a, x);
        int step = step0 + depth_of(a, x);
        if (step > last) last = step;
        if (x == a->root) {
            if (t.children) nc_model_add(s, step, x, x, bytes, 0); /* packed into my ring */
            continue;
        }
        for (size_t f = 0; f < nfrag; f++) {
            nc_model_add(s, step, x, t.parent, NC_MODEL_LINE, 1);                /* its pub flag */
            nc_model_add(s, step, x, t.parent, frag_bytes(bytes, frag, f), 0);  /* its slot */
            nc_model_add(s, step, t.parent, x, NC_MODEL_LINE, 1);                /* my cons flag, before reuse */
        }
        if (t.children) nc_model_add(s, step, x, x, bytes, 0); /* out of my ring into my buffer */
    }
    return last;
}

/* The fan-in to `root` up the ranges; returns its last step. */
static int schedule_reduce(nc_model_schedule *s, const tree_args *a, size_t bytes, size_t frag, int step0)
{
    size_t nfrag = bytes ? (bytes + frag - 1) / frag : 1;
    int height = tree_height(a);
    for (int x = 0; x < a->size; x++) {
        nc_tree_pos t = place(a, x);
        int step = step0 + height - depth_of(a, x);
        nc_model_add(s, step, x, x, bytes, 0); /* my input, into my slot or folded there */
        for (int i = 0; i < t.children; i++) {
            int child = nc_tree_child(a->h, a->size, &t, i);
            for (size_t f = 0; f < nfrag; f++) {
                nc_model_add(s, step, x, child, NC_MODEL_LINE, 1);
                nc_model_add(s, step, x, child, frag_bytes(bytes, frag, f), 0);
            }
        }
    }
    return step0 + height;
}

static void schedule_barrier(nc_model_schedule *s, const tree_args *a)
{
    int height = tree_height(a);
    for (int x = 0; x < a->size; x++) {
        nc_tree_pos t = place(a, x);
        int depth = depth_of(a, x);
        for (int i = 0; i < t.children; i++)
            nc_model_add(s, height - depth, x, nc_tree_child(a->h, a->size, &t, i), NC_MODEL_LINE, 1);
        if (x != a->root) nc_model_add(s, height + depth, x, t.parent, NC_MODEL_LINE, 1);
    }
}

static void schedule_slices(nc_model_schedule *s, int size, size_t bytes)
{
    for (int x = 0; x < size; x++)
        for (int y = 0; y < size; y++) {
            size_t slice = bytes / (size_t)size + ((size_t)y < bytes % (size_t)size);
            size_t mine = bytes / (size_t)size + ((size_t)x < bytes % (size_t)size);
            if (x != y) nc_model_add(s, 0, x, y, NC_MODEL_LINE, 1);
            nc_model_add(s, 0, x, y, mine, 0); /* y's input, my slice of it */
            if (x == y) continue;
            nc_model_add(s, 1, x, y, NC_MODEL_LINE, 1);
            nc_model_add(s, 1, x, y, slice, 0); /* y's slice of the result */
        }
}

void nc_model_schedule_coll(nc_model_schedule *s, nc_model_coll coll, const nc_hier *h, int size, int root,
                            int radix, size_t bytes, size_t frag)
{
    tree_args a = {h, size, root, radix, NC_TREE_HEAP};
    switch (coll) {
    case NC_MODEL_BARRIER: a.root = 0; schedule_barrier(s, &a); break;
    case NC_MODEL_BCAST: schedule_bcast(s, &a, bytes, frag, 0); break;
    case NC_MODEL_REDUCE:
        a.shape = NC_TREE_RANGE;
        schedule_reduce(s, &a, bytes, frag, 0);
        break;
    case NC_MODEL_ALLREDUCE: {
        tree_args up = {h, size, 0, radix, NC_TREE_RANGE}, down = {h, size, 0, radix, NC_TREE_HEAP};
        schedule_bcast(s, &down, bytes, frag, schedule_reduce(s, &up, bytes, frag, 0) + 1);
        break;
    }
    case NC_MODEL_SLICES: schedule_slices(s, size, bytes); break;
    }
}

void nc_model_count_reads(const nc_model_schedule *s, const nc_topo_loc *locs, int size, nc_model_count *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->count; i++) {
        const nc_model_read *r = &s->reads[i];
        if (r->step + 1 > out->steps) out->steps = r->step + 1;
        if (!r->flag) out->copied += r->bytes;
        for (int l = 0; l < NC_TOPO_LEVELS; l++) {
            if (locs[r->reader].id[l] == locs[r->owner].id[l]) continue;
            out->lines[l] += r->flag ? 1 : (r->bytes + NC_MODEL_LINE - 1) / NC_MODEL_LINE;
            if (!r->flag) out->bytes[l] += r->bytes;
        }
    }
    for (int l = 0; l < NC_TOPO_LEVELS; l++) {
        int n = 0;
        for (int r = 0; r < size; r++) {
            int seen = 0;
            for (int q = 0; q < r && !seen; q++) seen = locs[q].id[l] == locs[r].id[l];
            n += !seen;
        }
        out->domains[l] = n;
    }
}
