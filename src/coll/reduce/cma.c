/* Single-copy reduce-scatter by slices: each rank reduces one slice of the vector (its block
 * for Reduce_scatter), reading the others' input buffers in cache-sized chunks (with
 * process_vm_readv, or folding them straight from their shared heaps), and writes each
 * reduced chunk straight into the result buffers that need it: every rank's for Allreduce,
 * the root's for Reduce, its own for Reduce_scatter.
 * Only the owner of a slice touches that slice of anybody's buffer, so in place is safe; one
 * closing wait keeps every buffer alive until its readers are done. */
#include <stdlib.h>

#include "reduce.h"
#include "../ledger.h"
#include "../registry.h"
#include "../watch.h"
#include "../../core/fatal.h"

typedef struct cma_state {
    nc_reduce_head head;
    uint64_t g;
    int q;
    char **input, **result; /* every node rank's buffers */
    size_t lo, hi;          /* my slice */
    char *aside;
} cma_state;
NC_REDUCE_STATE_FITS(cma_state);

/* Where node rank q's buffers are, once it published them for call g. */
static void learn_buffers(cma_state *st, const nc_node *n)
{
    const nc_flag *pub = &nc_node_ctl(n, st->q)->pub;
    st->input[st->q] = (char *)(uintptr_t)atomic_load_explicit(&pub->aux[0], memory_order_relaxed);
    st->result[st->q] = (char *)(uintptr_t)atomic_load_explicit(&pub->aux[1], memory_order_relaxed);
}

/* Where my result for elements [e, e + cnt) ends up in my own memory, or NULL: none does. */
static char *own_result(const cma_state *st, const nc_node *n, size_t e)
{
    const nc_reduce_call *call = &st->head.call;
    size_t es = call->red->elem_size;
    if (call->deliver == NC_DELIVER_OWN) return (st->aside ? st->aside : call->recv) + (e - st->lo) * es;
    if (call->deliver == NC_DELIVER_ALL || call->deliver == n->rank) return st->result[n->rank] + e * es;
    return NULL;
}

/* My result for elements [e, e + cnt), built at `built`, to whoever needs it but me
 * (`mine_done`: it was built in my own result). */
static void deliver_chunk(const cma_state *st, nc_comm *c, size_t e, const char *built, size_t cnt, int mine_done)
{
    const nc_node *n = &c->node;
    const nc_reduce_call *call = &st->head.call;
    size_t es = call->red->elem_size, off = e * es, len = cnt * es;
    if (call->deliver == NC_DELIVER_OWN) {
        if (!mine_done) nc_copy_bytes(own_result(st, n, e), built, len);
        return;
    }
    for (int q = 0; q < n->size; q++) {
        if (call->deliver != NC_DELIVER_ALL && call->deliver != q) continue;
        if (q != n->rank) nc_node_single_copy_or_die(c, q, st->result[q] + off, (char *)(uintptr_t)built, len, 1);
        else if (!mine_done) nc_copy_bytes(st->result[q] + off, built, len);
    }
}

/* Node rank q's input chunk [off, off + len): mine, or a peer's where its shared heap maps it
 * here (folded straight from there: no copy), else read into `into`. */
static const char *input_chunk(const cma_state *st, nc_comm *c, int q, size_t off, size_t len, char *into)
{
    nc_node *n = &c->node;
    if (q == n->rank) return st->head.call.send + off;
    const char *mapped = nc_peer_mapped(&n->peers[q], st->input[q] + off, len);
    if (mapped) {
        nc_peer_counted(1, len);
        return mapped;
    }
    nc_node_single_copy_or_die(c, q, st->input[q] + off, into, len, 0);
    return into;
}

static int overlap(const char *a, const char *b, size_t len) { return a < b + len && b < a + len; }

/* Where to build my result for chunk [e, e + cnt): straight in my own result when that is not
 * my input (in place, my input chunk is still to be read), which saves copying it there.
 * (Other ranks' inputs are never in my memory: mapped, they lie apart; read, they land in
 * acc or tmp.) */
static char *chunk_target(const cma_state *st, const nc_node *n, size_t e, size_t len, char *acc)
{
    char *own = own_result(st, n, e);
    if (!own || overlap(own, st->head.call.send + e * st->head.call.red->elem_size, len)) return acc;
    return own;
}

/* Reduces my slice of everybody's input, `chunk` elements at a time, in rank order from the
 * highest down: the two highest ranks' chunks combine in one pass into the chunk's target,
 * the lower ones fold into it.  Only I touch this slice of anybody's buffers, so I may
 * overwrite a peer's input there (in place) right after reading it. */
static void reduce_slice(const cma_state *st, nc_comm *c, nc_coll_id coll)
{
    nc_node *n = &c->node;
    const nc_reduce_call *call = &st->head.call;
    size_t es = call->red->elem_size;
    size_t chunk = (size_t)nc_registry_param(c, coll, call->count * es, NC_TUNE_CHUNK, c->cfg.reduce_chunk) / es;
    if (!chunk) chunk = 1;
    char *acc = nc_reduce_scratch(n, NC_SCRATCH_CHUNKS, 2 * chunk * es), *tmp = acc + chunk * es;
    int top = n->size - 1;
    for (size_t e = st->lo; e < st->hi; e += chunk) {
        size_t cnt = nc_min_size(chunk, st->hi - e), off = e * es, len = cnt * es;
        char *out = chunk_target(st, n, e, len, acc);
        const char *upper = input_chunk(st, c, top, off, len, acc);
        if (!top) {
            if (upper != out) nc_copy_bytes(out, upper, len);
        } else {
            const char *lower = input_chunk(st, c, top - 1, off, len, tmp);
            if (upper == out) nc_fold(call->red, lower, out, cnt); /* (read into acc, the target) */
            else nc_fold_into(call->red, lower, upper, out, cnt);
        }
        for (int q = top - 2; q >= 0; q--) nc_fold(call->red, input_chunk(st, c, q, off, len, tmp), out, cnt);
        deliver_chunk(st, c, e, out, cnt, out != acc);
    }
}

static nc_step progress(nc_op *op, void *state)
{
    cma_state *st = state;
    const nc_reduce_call *call = &st->head.call;
    nc_node *n = &op->c->node;
    nc_rank_ctl *me = nc_node_ctl(n, n->rank);
    NC_BEGIN(&st->head);
    st->g = nc_take_frags(n, 1);
    atomic_store_explicit(&me->pub.aux[0], (uint64_t)(uintptr_t)call->send, memory_order_relaxed);
    atomic_store_explicit(&me->pub.aux[1], (uint64_t)(uintptr_t)call->recv, memory_order_relaxed);
    nc_flag_post(&me->pub, st->g + 1);
    st->input = nc_alloc_or_die(sizeof(char *) * (size_t)n->size);
    st->result = nc_alloc_or_die(sizeof(char *) * (size_t)n->size);
    for (st->q = 0; st->q < n->size; st->q++) {
        if (st->q != n->rank) NC_AWAIT(&st->head, nc_flag_reached(op, &nc_node_ctl(n, st->q)->pub, st->g + 1));
        learn_buffers(st, n);
    }
    st->lo = nc_slice_first(call, n->size, n->rank);
    st->hi = nc_slice_first(call, n->size, n->rank + 1);
    /* In place, my block's result goes to the start of recv, which may be another rank's
     * slice of my input: kept aside until everybody is done. */
    st->aside = call->deliver == NC_DELIVER_OWN && call->send == call->recv && st->lo
                    ? nc_alloc_or_die((st->hi - st->lo) * call->red->elem_size)
                    : NULL;
    reduce_slice(st, op->c, op->args->coll);
    /* Others read my input and write my result: neither may go away before they are done. */
    nc_consumed_through(n, st->g);
    NC_AWAIT(&st->head, nc_all_consumed(op, n, st->g + 1));
    if (st->aside) nc_copy_bytes(call->recv, st->aside, (st->hi - st->lo) * call->red->elem_size);
    free(st->aside);
    free(st->input);
    free(st->result);
    NC_END(&st->head);
}

/* Every rank of the node reads every other's memory: the setup probe must have passed, or the
 * node's ranks agreed that the call's buffers lie in their shared heaps. */
const nc_algorithm nc_reduce_cma = {NC_ALG_CMA, nc_single_copy, NULL, progress, 0};
