/* The reduction family's shared pieces (reduce.h): folds, scratch, fragment plans, the node
 * reduction step and the forward step. */
#include <stdlib.h>

#include "reduce.h"
#include "../ledger.h"
#include "../registry.h"
#include "../../core/fatal.h"
#include "../../core/team.h"

void nc_copy_bytes(void *dst, const void *src, size_t len)
{
    if (len) nc_par_copy(dst, src, len);
}

void nc_fold(const nc_reduction *r, const void *lower, void *acc, size_t count)
{
    if (count) nc_par_reduce(r, lower, acc, count);
}

void nc_fold_into(const nc_reduction *r, const void *lower, const void *upper, void *out, size_t count)
{
    if (!count) return;
    if (r->into) {
        nc_par_reduce_into(r, lower, upper, out, count);
        return;
    }
    nc_copy_bytes(out, upper, count * r->elem_size);
    nc_par_reduce(r, lower, out, count);
}

char *nc_reduce_scratch(nc_node *n, int which, size_t bytes)
{
    if (!n->scratch[which] || n->scratch_bytes[which] < bytes) {
        free(n->scratch[which]);
        n->scratch[which] = nc_alloc_or_die(bytes);
        n->scratch_bytes[which] = bytes;
    }
    return n->scratch[which];
}

size_t nc_slice_first(const nc_reduce_call *call, int size, int q)
{
    if (call->deliver == NC_DELIVER_OWN) return call->first[q];
    size_t parts = (size_t)size, at = (size_t)q;
    return call->count / parts * at + nc_min_size(at, call->count % parts);
}

size_t *nc_block_starts(const size_t *counts, int size)
{
    size_t *first = nc_alloc_or_die(sizeof(size_t) * (size_t)(size + 1));
    first[0] = 0;
    for (int q = 0; q < size; q++) first[q + 1] = first[q] + counts[q];
    return first;
}

void nc_keep_block(char *recv, const char *whole, const size_t *first, int rank, size_t elem)
{
    nc_copy_bytes(recv, whole + first[rank] * elem, (first[rank + 1] - first[rank]) * elem);
}

nc_reduce_call nc_whole_vector_call(nc_node *n, const nc_reduce_call *call)
{
    nc_reduce_call whole = *call;
    if (call->deliver == NC_DELIVER_OWN) {
        whole.deliver = NC_DELIVER_ALL;
        whole.recv = nc_reduce_scratch(n, NC_SCRATCH_VECTOR, call->count * call->red->elem_size);
    }
    return whole;
}

void nc_keep_own_block(const nc_node *n, const nc_reduce_call *call, const nc_reduce_call *whole)
{
    if (call->deliver == NC_DELIVER_OWN) nc_keep_block(call->recv, whole->recv, call->first, n->rank, call->red->elem_size);
}


/* ---- the node reduction step --------------------------------------------------------- */


/* heap_agreed: as if every rank's buffers were in the shared heaps (nc_args). */
static const nc_algorithm *choose(const nc_comm *c, nc_coll_id coll, const nc_reduce_call *call, int heap_agreed)
{
    nc_args a = {.coll = coll, .root = call->deliver >= 0 ? call->deliver : -1, .heap_agreed = heap_agreed,
                 .reduce = {call->send, call->recv, call->count, NULL, call->red}};
    return nc_registry_select_step(c, &a, call->count * call->red->elem_size);
}

/* Whether what the slice algorithm reaches of my memory lies in my heap: my input, which every
 * slice's owner reads, and my result when the others write it. */
static int slices_reach_me(const nc_node *n, const nc_reduce_call *call)
{
    size_t bytes = call->count * call->red->elem_size;
    int written = call->deliver == NC_DELIVER_ALL || call->deliver == n->rank;
    return nc_heap_holds(call->send, bytes) && (!written || nc_heap_holds(call->recv, bytes));
}

nc_step nc_node_reduce_progress(nc_op *op, nc_node_reduce_step *st)
{
    nc_node *n = &op->c->node;
    const nc_reduce_call *call = &nc_node_reduce_head(st)->call;
    NC_BEGIN(st);
    if (n->size == 1) { /* (only a node of a hierarchy: a one-rank communicator is the host's) */
        if (call->send != call->recv) nc_copy_bytes(call->recv, call->send, call->count * call->red->elem_size);
        st->alg = &nc_reduce_flat;
        return NC_DONE;
    }
    /* Where the slices need every rank's buffers in its heap (without CMA), or are chosen
     * only when they are (Reduce), the node votes first, and the others run otherwise. */
    st->alg = choose(op->c, st->coll, call, n->heap);
    if (st->alg == &nc_reduce_cma && n->heap &&
        (nc_heap_only(op->c) || choose(op->c, st->coll, call, 0) != &nc_reduce_cma)) {
        nc_heap_vote_setup(&st->vote, slices_reach_me(n, call));
        NC_AWAIT_STEP(st, nc_heap_vote_progress(op, &st->vote));
        if (!st->vote.all) st->alg = choose(op->c, st->coll, call, 0);
    }
    if (st->alg->plan) st->alg->plan(op, st->alg_state);
    NC_AWAIT_STEP(st, st->alg->progress(op, st->alg_state));
    NC_END(st);
}

/* ---- the forward step ------------------------------------------------------------------ */

void nc_node_forward_setup(nc_node_forward_step *st, int from, int to, const char *src, char *dst, size_t bytes)
{
    st->pc = 0;
    st->from = from;
    st->to = to;
    st->src = src;
    st->dst = dst;
    st->bytes = bytes;
}

nc_step nc_node_forward_progress(nc_op *op, nc_node_forward_step *st)
{
    nc_node *n = &op->c->node;
    NC_BEGIN(st);
    st->p = nc_plan_fragments(n, st->bytes, 1, (size_t)op->c->cfg.reduce_inline_max);
    for (st->k = 0; st->k < st->p.nfrag; st->k++) {
        st->g = st->p.g0 + st->k;
        st->off = nc_frag_first(&st->p, st->k);
        st->len = nc_frag_count(&st->p, st->k);
        if (n->rank == st->from) {
            NC_AWAIT(st, nc_slot_free(op, n, st->p.place, st->g));
            nc_copy_bytes(nc_slot_take(n, st->p.place, st->g, NULL), st->src + st->off, st->len);
            nc_frag_publish(n, &st->p, st->k);
        } else if (n->rank == st->to) {
            NC_AWAIT(st, nc_frag_published(op, n, &st->p, st->from, st->k));
            nc_copy_bytes(st->dst + st->off, nc_frag_data(n, st->p.place, st->from, st->g), st->len);
        }
        nc_consumed_through(n, st->g); /* everybody, so `from` can reuse its slots within a long message */
    }
    NC_END(st);
}
