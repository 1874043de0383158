/* The data-movement machinery (move.h). */
#include "move.h"

#include <stdlib.h>
#include <string.h>

#include "heap_only.h"
#include "watch.h"
#include "../core/fatal.h"
#include "steps.h"
#include "../core/team.h"

const char nc_in_place_marker;

size_t nc_move_table_bytes(const nc_comm *c)
{
    size_t bytes = (size_t)c->size * sizeof(nc_span);
    size_t edges = c->neighbors ? (size_t)c->neighbors->max_degree * sizeof(nc_edge_span) : 0;
    if (edges > bytes) bytes = edges;
    return (bytes + 127) / 128 * 128; /* the slot payload starts on a line of its own */
}

/* The slot never outgrows one ring segment: a small NODECOLL_SEGMENT_SIZE shrinks the whole
 * segment, this area included. */
size_t nc_move_area_bytes(const nc_comm *c)
{
    size_t slot = (size_t)c->cfg.move_slot, seg = (size_t)c->cfg.segment_size;
    return nc_move_table_bytes(c) + (slot < seg ? slot : seg);
}

size_t nc_move_slot_bytes(const nc_comm *c) { return c->node.layout.move_bytes - nc_move_table_bytes(c); }

int nc_move_use_slot(const nc_comm *c, size_t bytes)
{
    return bytes <= (size_t)c->cfg.move_slot && bytes <= nc_move_slot_bytes(c);
}

int nc_move_readers_checked(nc_op *op, nc_node *n)
{
    /* (readers known to be done are dropped, so each is checked until done, once) */
    for (; n->move_nreaders > 0; n->move_nreaders--) {
        const nc_flag *done = &nc_node_ctl(n, n->move_readers[n->move_nreaders - 1])->move_done;
        if (!nc_flag_reached(op, done, n->move_readers_seq)) return 0;
    }
    return 1;
}

nc_span *nc_move_area(nc_comm *c, char **slot)
{
    char *area = nc_node_move_area(&c->node, c->node.rank);
    if (slot) *slot = area + nc_move_table_bytes(c);
    return (nc_span *)area;
}

const char *nc_move_reachable(nc_comm *c, const void *base, size_t extent)
{
    return nc_stage_reachable(&c->node, NC_STAGE_MOVE, base, extent);
}

void nc_move_publish(nc_node *n, uint64_t seq, const void *base, int in_slot, uint64_t bytes)
{
    nc_flag *f = &nc_node_ctl(n, n->rank)->move_pub;
    atomic_store_explicit(&f->aux[0], (uint64_t)(uintptr_t)base, memory_order_relaxed);
    atomic_store_explicit(&f->aux[1], (uint64_t)in_slot, memory_order_relaxed);
    atomic_store_explicit(&f->aux[2], bytes, memory_order_relaxed);
    nc_flag_post(f, seq);
}

void nc_move_release(nc_node *n, uint64_t seq, const int *readers, int nreaders)
{
    if (readers != n->move_readers) memcpy(n->move_readers, readers, (size_t)nreaders * sizeof *readers);
    n->move_nreaders = nreaders;
    n->move_readers_seq = seq;
}

/* Where a local read of a publication's bytes at off starts; NULL when they live in another
 * process and need a single-copy read. */
static const char *local_bytes(nc_comm *c, const nc_pub *p, uint64_t off)
{
    nc_node *n = &c->node;
    if (p->in_slot) return nc_node_move_area(n, p->rank) + nc_move_table_bytes(c) + off;
    return p->rank == n->rank ? p->base + off : NULL;
}

static void check_single_copy(nc_comm *c, const nc_pub *p, const char *what, int err)
{
    if (err) nc_single_copy_failed(c, p->rank, what, err);
}

void nc_move_read(nc_comm *c, const nc_pub *p, uint64_t off, void *dst, size_t len)
{
    if (!len) return;
    const char *src = local_bytes(c, p, off);
    if (p->in_slot) memcpy(dst, src, len); /* small: not worth a thread team */
    else if (src) nc_par_copy(dst, src, len);
    else /* a large read: the caller's thread team, if any, shares it */
        check_single_copy(c, p, "read from",
                          nc_par_single_copy(0, &c->node.peers[p->rank], (void *)(p->base + off), dst, len));
}

void nc_move_write(nc_comm *c, const nc_pub *p, uint64_t off, const void *src, size_t len)
{
    nc_node *n = &c->node;
    if (!len) return;
    check_single_copy(c, p, "write to",
                      nc_par_single_copy(1, &n->peers[p->rank], (void *)(p->base + off), (void *)src, len));
}


void nc_move_read_data(nc_comm *c, const nc_pub *p, uint64_t off, nc_data *d, size_t len)
{
    if (!len) return;
    if (nc_data_is_bytes(d)) {
        nc_move_read(c, p, off, d->base, len);
        return;
    }
    const char *src = local_bytes(c, p, off);
    if (src) nc_data_unpack(d, 0, src, len);
    else /* dense runs are read in place, sparse ones through a bounce buffer */
        check_single_copy(c, p, "read from", nc_data_read(d, &c->node.peers[p->rank], p->base + off, 0, len));
    nc_data_release(d); /* the bounce buffer: blocks are read one after another */
}

void nc_move_read_block(nc_comm *c, const nc_pub *p, uint64_t off, const nc_vec *v, int i, size_t len)
{
    if (v->blocks) nc_move_read_data(c, p, off, &v->blocks[i], len);
    else nc_move_read(c, p, off, nc_vec_at(v, i), len);
}

void nc_move_read_span_data(nc_comm *c, const nc_pub *p, int comm_rank, nc_data *d, size_t len)
{
    nc_span s = p->table[comm_rank];
    nc_move_read_data(c, p, s.off, d, nc_fit(c, s.len, len));
}

void nc_move_read_span(nc_comm *c, const nc_pub *p, int comm_rank, void *dst, size_t len)
{
    nc_data bytes = nc_data_bytes(dst);
    nc_move_read_span_data(c, p, comm_rank, &bytes, len);
}

void nc_move_read_span_block(nc_comm *c, const nc_pub *p, const nc_vec *v, int i)
{
    nc_span s = p->table[c->rank];
    nc_move_read_block(c, p, s.off, v, i, nc_fit(c, s.len, nc_vec_len(v, i)));
}

void nc_vec_unpack(const nc_vec *v, int i, const void *src, size_t len)
{
    if (v->blocks) nc_data_unpack(&v->blocks[i], 0, src, len);
    else if (len) nc_par_copy(nc_vec_at(v, i), src, len);
}

void nc_vec_pack(const nc_vec *v, int i, void *dst, size_t len)
{
    if (v->blocks) nc_data_pack(&v->blocks[i], 0, dst, len);
    else if (len) memcpy(dst, nc_vec_at(v, i), len);
}

void nc_move_done(nc_node *n, uint64_t seq) { nc_flag_post(&nc_node_ctl(n, n->rank)->move_done, seq); }

/* ---- building blocks ------------------------------------------------------------------ */

int nc_move_put(nc_comm *c, uint64_t seq, char *slot, const void *data, size_t bytes)
{
    int in_slot = !data || nc_move_use_slot(c, bytes);
    if (data && in_slot && bytes) memcpy(slot, data, bytes);
    nc_move_publish(&c->node, seq, in_slot ? data : nc_move_reachable(c, data, bytes), in_slot, bytes);
    return in_slot;
}

int nc_move_publish_blocks(nc_comm *c, uint64_t seq, const nc_vec *send, int root, int every_span)
{
    nc_node *n = &c->node;
    char *slot;
    nc_span *table = nc_move_area(c, &slot);
    size_t total = 0, at = 0, end = 0;
    for (int i = 0; i < c->size; i++) total += i == root ? 0 : nc_vec_len(send, i);
    int in_slot = nc_move_use_slot(c, total), nreaders = 0;
    for (int i = 0; i < c->size; i++) {
        size_t len = i == root ? 0 : nc_vec_len(send, i);
        if (!len && !every_span) continue;
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot && len) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        if (len && table[i].off + len > end) end = table[i].off + len;
        int local = c->node_of[i] == c->node_of[root], serves = every_span && c->node_rank_of[i] == 0;
        if (i != root && local && (len || serves)) n->move_readers[nreaders++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, in_slot ? send->base : nc_move_reachable(c, send->base, end), in_slot, total);
    nc_move_release(n, seq, n->move_readers, nreaders);
    return in_slot;
}

void nc_move_keep_own_block(nc_comm *c, const nc_args *a)
{
    const nc_vec *send = a->move.send_vec;
    if (a->move.recv)
        nc_data_unpack(a->move.recv, 0, nc_vec_at(send, a->root), nc_fit(c, nc_vec_len(send, a->root), a->move.recv_bytes));
}

void nc_move_offer_setup(nc_move_offer_step *st, uint64_t seq, const void *data, size_t bytes, const int *readers,
                         int nreaders)
{
    *st = (nc_move_offer_step){.seq = seq, .data = data, .bytes = bytes, .readers = readers, .nreaders = nreaders};
}

static int offer(nc_comm *c, const nc_move_offer_step *st)
{
    char *slot;
    nc_move_area(c, &slot);
    int in_slot = nc_move_put(c, st->seq, slot, st->data, st->bytes);
    nc_move_release(&c->node, st->seq, st->readers, st->nreaders);
    return in_slot;
}

nc_step nc_move_offer_progress(nc_op *op, nc_move_offer_step *st)
{
    nc_node *n = &op->c->node;
    NC_BEGIN(st);
    NC_AWAIT(st, nc_move_readers_done(op, n));
    st->in_slot = offer(op->c, st);
    if (!st->in_slot) NC_AWAIT(st, nc_move_readers_done(op, n));
    NC_END(st);
}

void nc_move_collect_setup(nc_move_collect_step *st, uint64_t seq, const void *data, size_t bytes, char *dst,
                           size_t room)
{
    st->pc = 0;
    st->seq = seq;
    st->data = data;
    st->bytes = bytes;
    st->dst = dst;
    st->room = room;
    st->at = 0;
}

/* The leader, once every member has published: its own block, then the members' in node
 * rank order.  Members that send more than the receivers expect (an erroneous program)
 * must not write past the region: what does not fit is dropped. */
static void collect_blocks(nc_comm *c, nc_move_collect_step *st)
{
    nc_node *n = &c->node;
    if (!st->dst) {
        size_t total = st->bytes;
        for (int r = 1; r < n->size; r++) total += nc_move_pub(c, r).bytes;
        st->dst = nc_move_scratch(c, NC_MOVE_DATA, total);
        st->room = total;
    }
    st->at = st->bytes < st->room ? st->bytes : st->room;
    if (st->at) memcpy(st->dst, st->data, st->at);
    for (int r = 1; r < n->size; r++) {
        nc_pub p = nc_move_pub(c, r);
        size_t len = p.bytes < st->room - st->at ? p.bytes : st->room - st->at;
        nc_move_read(c, &p, 0, st->dst + st->at, len);
        st->at += len;
    }
    nc_move_done(n, st->seq);
}

nc_step nc_move_collect_progress(nc_op *op, nc_move_collect_step *st)
{
    static const int leader = 0;
    nc_comm *c = op->c;
    NC_BEGIN(st);
    if (!nc_comm_is_leader(c)) {
        nc_move_offer_setup(&st->offer, st->seq, st->data, st->bytes, &leader, 1);
        NC_AWAIT_STEP(st, nc_move_offer_progress(op, &st->offer));
    } else {
        for (st->r = 1; st->r < c->node.size; st->r++) NC_AWAIT(st, nc_move_published(op, c, st->r, st->seq, NULL));
        collect_blocks(c, st);
    }
    NC_END(st);
}

char *nc_move_scratch(nc_comm *c, nc_move_scratch_kind kind, size_t bytes)
{
    nc_node *n = &c->node;
    if (n->move_scratch_bytes[kind] < bytes || !n->move_scratch[kind]) {
        free(n->move_scratch[kind]);
        n->move_scratch[kind] = nc_alloc_or_die(bytes ? bytes : 1);
        n->move_scratch_bytes[kind] = bytes;
    }
    return n->move_scratch[kind];
}

void nc_move_sorted_offsets(const nc_comm *c, const nc_vec *v, size_t *off)
{
    size_t at = 0;
    for (int k = 0; k < c->size; k++) {
        int r = c->node_members[k];
        off[r] = at;
        at += nc_vec_len(v, r);
    }
    off[c->size] = at;
}

size_t nc_move_node_off(const nc_comm *c, const size_t *sorted, int node)
{
    int first = c->node_start[node];
    return first < c->size ? sorted[c->node_members[first]] : sorted[c->size];
}

size_t nc_move_node_bytes(const nc_comm *c, const size_t *sorted, int node)
{
    return nc_move_node_off(c, sorted, node + 1) - nc_move_node_off(c, sorted, node);
}
