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
    /* Nobody reads my last publication any more: its staging copy goes back to the heap
     * (which keeps NODECOLL_HEAP_RETAIN bytes backed for the next one), so a communicator
     * does not hold one between calls. */
    if (n->stage[NC_STAGE_MOVE]) nc_stage_release_kind(n, NC_STAGE_MOVE);
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

const char *nc_move_reachable_blocks(nc_comm *c, const char *base, nc_span *table, int count, size_t end,
                                     size_t total)
{
    if (!end || nc_node_reachable(&c->node, base, end)) return base;
    char *copy = nc_stage(&c->node, NC_STAGE_MOVE, total);
    size_t at = 0;
    for (int i = 0; i < count; i++) {
        if (!table[i].len) continue;
        nc_par_copy(copy + at, base + table[i].off, table[i].len);
        table[i].off = at;
        at += table[i].len;
    }
    return copy;
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

/* ---- small publications --------------------------------------------------------------- */

/* The flag that announces fragment g (its data after the header word), and the ring
 * segment that holds a payload beyond it. */
static const nc_frag_place small_flag = {1, NC_INLINE_HEADER};

static int in_flag(uint64_t payload) { return payload <= NC_INLINE_ALIGNED_MAX; }

int nc_small_fits(const nc_comm *c, size_t bytes)
{
    return bytes <= (size_t)c->cfg.move_slot && (in_flag(bytes) || bytes <= c->node.layout.seg_size);
}

int nc_small_free(nc_op *op, nc_node *n, uint64_t g, size_t payload)
{
    return nc_slot_free(op, n, small_flag, g) && (in_flag(payload) || nc_slot_free(op, n, nc_ring_place, g));
}

char *nc_small_take(nc_node *n, uint64_t g, size_t payload)
{
    char *data = nc_slot_take(n, small_flag, g, NULL);
    return in_flag(payload) ? data : nc_slot_take(n, nc_ring_place, g, NULL);
}

void nc_small_post(nc_node *n, uint64_t g, uint64_t header)
{
    nc_flag *f = nc_frag_signal(n, small_flag, n->rank, g);
    atomic_store_explicit(&f->aux[0], header, memory_order_relaxed);
    nc_flag_post(f, g + 1);
    nc_flag_prepare(nc_frag_signal(n, small_flag, n->rank, g + 1), sizeof f->data);
}

/* A header: published in the round, by a rank whose receive buffer may be written into, with
 * a block of the low bits' length (payload lengths never reach this bit). */
#define SMALL_WRITABLE ((uint64_t)1 << 61)

void nc_small_put_in_round(nc_node *n, uint64_t g, uint64_t writable)
{
    nc_small_take(n, g, 0);
    nc_small_post(n, g, writable && writable < SMALL_WRITABLE ? SMALL_WRITABLE | writable : NC_SMALL_IN_ROUND);
}

void nc_small_put(nc_node *n, uint64_t g, const void *data, size_t bytes)
{
    char *slot = nc_small_take(n, g, bytes);
    if (bytes) memcpy(slot, data, bytes);
    nc_small_post(n, g, bytes);
}

int nc_small_published(nc_op *op, const nc_comm *c, int peer, uint64_t g, nc_small *s)
{
    /* A payload beyond the flag lies in the publisher's ring segment, read once the flag says
     * so: asking for its first lines now fetches them alongside the flag instead of after
     * it (128 B Gather, Scatter, Allgather 7-14 % faster; docs/design.md). */
    const char *ring = nc_frag_data(&c->node, nc_ring_place, peer, g);
    __builtin_prefetch(ring);
    __builtin_prefetch(ring + 64);
    nc_flag_fetch(nc_frag_signal(&c->node, small_flag, peer, g), sizeof ((nc_flag *)0)->data);
    if (nc_small_posted(c, peer, g, s)) return 1;
    return nc_flag_reached(op, nc_frag_signal(&c->node, small_flag, peer, g), g + 1) && nc_small_posted(c, peer, g, s);
}

int nc_small_posted(const nc_comm *c, int peer, uint64_t g, nc_small *s)
{
    const nc_node *n = &c->node;
    const nc_flag *f = nc_frag_signal(n, small_flag, peer, g);
    if (nc_flag_read(f) < g + 1) return 0;
    if (!s) return 1;
    uint64_t header = atomic_load_explicit(&f->aux[0], memory_order_relaxed);
    s->writable = header != NC_SMALL_IN_ROUND && (header & SMALL_WRITABLE) ? header & ~SMALL_WRITABLE : 0;
    if (s->writable) header = NC_SMALL_IN_ROUND;
    s->uniform = header != NC_SMALL_IN_ROUND && (header & NC_SMALL_UNIFORM);
    s->bytes = s->uniform ? header & ~NC_SMALL_UNIFORM : header;
    s->data = s->bytes == NC_SMALL_IN_ROUND ? NULL
              : in_flag(s->bytes)           ? nc_frag_data(n, small_flag, peer, g)
                                            : nc_frag_data(n, nc_ring_place, peer, g);
    return 1;
}

/* Whether comm rank i is another rank of my node with a non-empty block of v. */
static int reads_block(const nc_comm *c, const nc_vec *v, int i)
{
    return i != c->rank && c->node_of[i] == c->node_of[c->rank] && nc_vec_len(v, i);
}

static size_t small_table_bytes(const nc_node *n) { return (size_t)n->size * sizeof(nc_small_span); }

/* The length every other rank of my node gets, if they all get the same non-zero one; else 0. */
static size_t uniform_len(const nc_comm *c, const nc_vec *v)
{
    size_t len = 0;
    for (int i = 0; i < c->size; i++) {
        if (i == c->rank || c->node_of[i] != c->node_of[c->rank]) continue;
        if (!nc_vec_len(v, i) || (len && nc_vec_len(v, i) != len)) return 0;
        len = nc_vec_len(v, i);
    }
    return len;
}

/* Where reader `reader`'s block sits among publisher `publisher`'s alike blocks (node ranks). */
static size_t uniform_index(int reader, int publisher) { return (size_t)(reader - (reader > publisher)); }

size_t nc_small_blocks_bytes(const nc_comm *c, const nc_vec *v)
{
    size_t alike = uniform_len(c, v);
    if (alike) return alike * (size_t)(c->node.size - 1);
    size_t total = small_table_bytes(&c->node);
    for (int i = 0; i < c->size; i++) total += reads_block(c, v, i) ? nc_vec_len(v, i) : 0;
    return total;
}

void nc_small_put_blocks(nc_comm *c, uint64_t g, const nc_vec *v, size_t payload)
{
    nc_node *n = &c->node;
    char *slot = nc_small_take(n, g, payload);
    size_t alike = uniform_len(c, v);
    if (alike) {
        for (int i = 0; i < c->size; i++)
            if (reads_block(c, v, i))
                nc_vec_pack(v, i, slot + uniform_index(c->node_rank_of[i], n->rank) * alike, alike);
        nc_small_post(n, g, payload | NC_SMALL_UNIFORM);
        return;
    }
    nc_small_span *table = (nc_small_span *)(void *)slot;
    size_t at = small_table_bytes(n);
    for (int r = 0; r < n->size; r++) table[r] = (nc_small_span){0, 0}; /* (a few entries: no memset call) */
    for (int i = 0; i < c->size; i++) {
        if (!reads_block(c, v, i)) continue;
        size_t len = nc_vec_len(v, i);
        table[c->node_rank_of[i]] = (nc_small_span){(uint32_t)at, (uint32_t)len};
        nc_vec_pack(v, i, slot + at, len);
        at += len;
    }
    nc_small_post(n, g, payload);
}

const char *nc_small_my_block(const nc_comm *c, const nc_small *s, int peer, size_t *len)
{
    const nc_node *n = &c->node;
    if (s->uniform) {
        *len = s->bytes / (uint64_t)(n->size - 1);
        return s->data + uniform_index(n->rank, peer) * *len;
    }
    nc_small_span span;
    memcpy(&span, s->data + (size_t)n->rank * sizeof span, sizeof span);
    *len = span.len;
    return s->data + span.off;
}

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
        if (!len && !every_span) {
            if (!in_slot) table[i] = (nc_span){0, 0}; /* (nc_move_reachable_blocks reads it) */
            continue;
        }
        table[i] = (nc_span){in_slot ? at : nc_vec_off(send, i), len};
        if (in_slot && len) memcpy(slot + at, nc_vec_at(send, i), len);
        at += len;
        if (len && table[i].off + len > end) end = table[i].off + len;
        int local = c->node_of[i] == c->node_of[root], serves = every_span && c->node_rank_of[i] == 0;
        if (i != root && local && (len || serves)) n->move_readers[nreaders++] = c->node_rank_of[i];
    }
    nc_move_publish(n, seq, in_slot ? send->base : nc_move_reachable_blocks(c, send->base, table, c->size, end, total),
                    in_slot, total);
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
