/* Flat reduction: every rank publishes its input (inline flags or ring segments) and folds
 * everybody's in rank order, Allreduce the whole vector, Reduce_scatter its own block: one
 * cache-line transfer for a small Allreduce, no fan-out step, and the same code on the same
 * inputs gives every rank the same bits.  A Reduce to a root is the fan-in whose radix is
 * the node size (tree.c): the root alone folds. */
#include "reduce.h"
#include "../ledger.h"

typedef struct everybody_folds {
    nc_frag_plan p;
    size_t lo, hi; /* the elements I keep (recv[0] is element lo) */
    uint64_t k, g, posted;
    size_t first, cnt, from, to;
    int q;
} everybody_folds;

typedef struct flat_state {
    nc_reduce_head head;
    union {
        nc_fanin fanin;
        everybody_folds all;
    } run;
} flat_state;
NC_REDUCE_STATE_FITS(flat_state);

/* How many of my fragments are out before I fold fragment k: a chain of inline flags all of
 * them, as its first flag is posted last; ring segments each just before its fold, as the
 * ring may hold fewer segments than the call has. */
static uint64_t published_before_fold(const nc_frag_plan *p, uint64_t k) { return p->place.in_flag ? p->nfrag : k + 1; }

/* Folds rank f->q's elements [from, to) of the current fragment into my result. */
static void fold_one(const nc_reduce_call *call, const everybody_folds *f, const nc_node *n)
{
    const char *src = nc_frag_data(n, f->p.place, f->q, f->g) + (f->from - f->first) * f->p.elem;
    char *dst = call->recv + (f->from - f->lo) * f->p.elem;
    if (f->q == n->size - 1) nc_copy_bytes(dst, src, (f->to - f->from) * f->p.elem);
    else nc_fold(call->red, src, dst, f->to - f->from);
}

static nc_step progress(nc_op *op, void *state)
{
    flat_state *st = state;
    everybody_folds *f = &st->run.all;
    const nc_reduce_call *call = &st->head.call;
    nc_node *n = &op->c->node;
    NC_BEGIN(&st->head);
    if (call->deliver >= 0) {
        nc_fanin_setup(&st->run.fanin, call, NULL, n->size - 1, 0, call->deliver);
        NC_AWAIT_STEP(&st->head, nc_fanin_progress(op, &st->run.fanin));
    } else {
        f->lo = call->deliver == NC_DELIVER_OWN ? call->first[n->rank] : 0;
        f->hi = call->deliver == NC_DELIVER_OWN ? call->first[n->rank + 1] : call->count;
        f->p = nc_plan_fragments(n, call->count, call->red->elem_size, (size_t)op->c->cfg.reduce_inline_max);
        /* My input goes to my slots (from there on it is my input: in place, recv is my result). */
        for (f->k = f->posted = 0; f->k < f->p.nfrag; f->k++) {
            for (; f->posted < published_before_fold(&f->p, f->k); f->posted++) {
                NC_AWAIT(&st->head, nc_slot_free(op, n, f->p.place, f->p.g0 + f->posted));
                nc_copy_bytes(nc_slot_take(n, f->p.place, f->p.g0 + f->posted, NULL),
                              call->send + nc_frag_first(&f->p, f->posted) * f->p.elem, nc_frag_count(&f->p, f->posted) * f->p.elem);
                nc_frag_publish(n, &f->p, f->posted);
            }
            f->g = f->p.g0 + f->k;
            f->first = nc_frag_first(&f->p, f->k);
            f->cnt = nc_frag_count(&f->p, f->k);
            f->from = f->first > f->lo ? f->first : f->lo;
            f->to = nc_min_size(f->first + f->cnt, f->hi);
            for (f->q = n->size - 1; f->q >= 0 && f->from < f->to; f->q--) {
                if (f->q != n->rank) NC_AWAIT(&st->head, nc_frag_published(op, n, &f->p, f->q, f->k));
                fold_one(call, f, n);
            }
            nc_consumed_through(n, f->g);
        }
    }
    NC_END(&st->head);
}

static int always(const nc_comm *c, const nc_args *a) { return 1; }

const nc_algorithm nc_reduce_flat = {NC_ALG_FLAT, always, NULL, progress, 0};
