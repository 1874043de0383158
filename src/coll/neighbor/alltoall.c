/* Neighbor_alltoall(v,w): block j of the send vector goes to out-edge j.  On the node every
 * rank publishes an edge table (coll/move.h, nc_edge_span: per out-edge where its block is,
 * how long, to whom) at the start of its move area, with each small block copied right after
 * it while room lasts (NODECOLL_MOVE_SLOT) and the others left in its buffer for single-copy
 * reads; each receiver reads, for each in-edge,
 * the entry of the out-edge that feeds it (nc_neighbors.in_match: known on a Cartesian grid,
 * found once per communicator in the sender's table for a graph), in Balaji et al.'s bins
 * (neighbor.h).  Remote out-neighbours get their blocks point to point. */
#include <string.h>

#include "../algorithms.h"
#include "neighbor.h"
#include "../heap_only.h"
#include "../../core/team.h"

static const void *block(const nc_args *a, int j, size_t *len)
{
    *len = nc_vec_len(a->move.send_vec, j);
    return nc_vec_at(a->move.send_vec, j);
}

/* Whether out-edge j's block is read by a rank of my node other than me. */
static int read_on_node(const nc_comm *c, const nc_args *a, int j)
{
    int r = c->neighbors->out[j];
    return nc_vec_len(a->move.send_vec, j) && r != c->rank && nc_neighbor_local(c, r);
}

/* In my slots: my out-degree (the table's entries), the edge table, then every block a
 * reader on my node takes; offsets from the table's start, as in the move area. */
#define NC_SLOT_DEGREE_BYTES 16
static size_t table_bytes(const nc_comm *c)
{
    return nc_carved(sizeof(nc_edge_span) * (size_t)c->neighbors->outdegree);
}

static size_t slot_bytes(const nc_comm *c, const nc_args *a)
{
    size_t total = NC_SLOT_DEGREE_BYTES + table_bytes(c);
    for (int j = 0; j < c->neighbors->outdegree; j++)
        total += read_on_node(c, a, j) ? nc_vec_len(a->move.send_vec, j) : 0;
    return total;
}

static void fill_slot(nc_comm *c, const nc_args *a, char *slot)
{
    const nc_neighbors *nb = c->neighbors;
    const nc_vec *send = a->move.send_vec;
    uint64_t degree = (uint64_t)nb->outdegree;
    memcpy(slot, &degree, sizeof degree);
    char *base = slot + NC_SLOT_DEGREE_BYTES;
    nc_edge_span *table = (nc_edge_span *)(void *)base;
    size_t at = table_bytes(c);
    for (int j = 0; j < nb->outdegree; j++) {
        size_t len = nc_vec_len(send, j);
        int in_slot = read_on_node(c, a, j);
        table[j] = (nc_edge_span){in_slot ? at : 0, len, nb->out[j], (uint32_t)in_slot};
        if (in_slot) memcpy(base + at, nc_vec_at(send, j), len);
        at += in_slot ? len : 0;
    }
}

static void slot_pub(const nc_small *s, int peer, nc_pub *p)
{
    uint64_t degree;
    memcpy(&degree, s->data, sizeof degree);
    p->rank = peer;
    p->in_slot = 1;
    p->base = NULL;
    p->bytes = degree;
    p->table = (const nc_span *)(const void *)(s->data + NC_SLOT_DEGREE_BYTES);
}

/* A direct read's edge: a peer of my node reads it from my buffer. */
static int read_directly(const nc_comm *c, const nc_edge_span *e)
{
    return !e->in_slot && e->len && e->peer != c->rank && nc_neighbor_local(c, e->peer);
}

/* base, or where my node's peers cannot reach my buffer, my heap's copy of the directly read
 * blocks, packed, their offsets rewritten (as nc_move_reachable_blocks, for edge tables). */
static const char *reachable_direct(nc_comm *c, const char *base, nc_edge_span *table, int degree, size_t end,
                                    size_t total)
{
    if (nc_node_reachable(&c->node, base, end)) return base;
    char *copy = nc_stage(&c->node, NC_STAGE_MOVE, total);
    size_t at = 0;
    for (int j = 0; j < degree; j++) {
        nc_edge_span *e = &table[j];
        if (!read_directly(c, e)) continue;
        nc_par_copy(copy + at, base + e->off, e->len);
        e->off = at;
        at += e->len;
    }
    return copy;
}

static int publish(nc_comm *c, const nc_args *a, uint64_t seq, unsigned char *marks)
{
    nc_node *n = &c->node;
    const nc_neighbors *nb = c->neighbors;
    const nc_vec *send = a->move.send_vec;
    nc_edge_span *table = (nc_edge_span *)(void *)nc_move_area(c, NULL);
    size_t at = nc_carved(sizeof(nc_edge_span) * (size_t)nb->outdegree), end = at + nc_neighbor_slot_room(c, at);
    size_t direct_end = 0, direct_total = 0; /* of the blocks read from my buffer */
    size_t copy_max = (size_t)c->cfg.neighbor_copy_max; /* (tuning.md: a 16 KiB block copied took twice its read) */
    int direct = 0, nreaders = 0;
    for (int j = 0; j < nb->outdegree; j++) {
        int r = nb->out[j];
        size_t len = nc_vec_len(send, j);
        int reader = len && r != c->rank && nc_neighbor_local(c, r);
        int in_slot = reader && len <= copy_max && len <= end - at;
        table[j] = (nc_edge_span){in_slot ? at : nc_vec_off(send, j), len, r, (uint32_t)in_slot};
        if (in_slot) memcpy((char *)table + at, nc_vec_at(send, j), len);
        at += in_slot ? len : 0;
        direct |= reader && !in_slot;
        if (reader && !in_slot && table[j].off + len > direct_end) direct_end = table[j].off + len;
        direct_total += reader && !in_slot ? len : 0;
        if (reader) nc_neighbor_add_reader(n, marks, c->node_rank_of[r], &nreaders);
    }
    /* (the publication's length is the table's: a reader finds its edges in it) */
    const char *base = direct ? reachable_direct(c, send->base, table, nb->outdegree, direct_end, direct_total) : send->base;
    nc_move_publish(n, seq, base, 0, (uint64_t)nb->outdegree);
    nc_move_release(n, seq, n->move_readers, nreaders);
    return direct;
}

/* The sender's out-edge feeding in-edge k of a graph, found once in its table: its m-th
 * edge to me feeds my m-th edge from it. */
static int find_match(const nc_comm *c, const nc_pub *p, int k)
{
    const nc_edge_span *table = (const nc_edge_span *)(const void *)p->table;
    int m = c->neighbors->in_occurrence[k];
    for (uint64_t j = 0; j < p->bytes; j++)
        if (table[j].peer == c->rank && m-- == 0) return (int)j;
    return NC_NO_EDGE; /* (an erroneous graph: nothing is sent to this edge) */
}

static void read_edge(nc_comm *c, const nc_args *a, const nc_pub *pub, int k)
{
    nc_neighbors *nb = c->neighbors;
    const nc_vec *recv = a->move.recv_vec;
    if (nb->in_match[k] == -1) nb->in_match[k] = find_match(c, pub, k);
    if (nb->in_match[k] < 0 || (uint64_t)nb->in_match[k] >= pub->bytes) return;
    const nc_edge_span *e = (const nc_edge_span *)(const void *)pub->table + nb->in_match[k];
    nc_neighbor_read_block(c, pub, (int)e->in_slot, e->off, recv, k, nc_fit(c, e->len, nc_vec_len(recv, k)));
}

static const nc_neighbor_kind alltoall = {slot_bytes, fill_slot, publish, slot_pub, read_edge, block};

static nc_step progress(nc_op *op, void *state) { return nc_neighbor_progress(op, state, &alltoall); }

const nc_algorithm nc_neighbor_alltoall = {NC_ALG_CMA, nc_neighbor_applies, NULL, progress, 0};
