/* Neighbor_allgather(v): every rank sends one block, the same to each out-neighbour.  On the
 * node it publishes the block once (copied into its move area when small, else its buffer
 * stays readable by single copy) and each in-neighbour on the node reads it into every in-edge it feeds,
 * in Balaji et al.'s bins (neighbor.h); remote out-neighbours get it point to point. */
#include <string.h>

#include "../algorithms.h"
#include "neighbor.h"

/* My one block, for every out-edge. */
static const void *block(const nc_args *a, int j, size_t *len)
{
    *len = a->move.send_bytes;
    return a->move.send;
}

/* In my slots: my block, if a rank of my node other than me reads it. */
static size_t slot_bytes(const nc_comm *c, const nc_args *a)
{
    const nc_neighbors *nb = c->neighbors;
    for (int j = 0; a->move.send_bytes && j < nb->outdegree; j++)
        if (nb->out[j] != c->rank && nc_neighbor_local(c, nb->out[j])) return a->move.send_bytes;
    return 0;
}

static void fill_slot(nc_comm *c, const nc_args *a, char *slot)
{
    if (slot_bytes(c, a)) memcpy(slot, a->move.send, a->move.send_bytes);
}

static void slot_pub(const nc_small *s, int peer, nc_pub *p)
{
    p->rank = peer;
    p->in_slot = 1;
    p->base = NULL;
    p->bytes = s->bytes;
    p->table = (const nc_span *)(const void *)s->data;
}

static int publish(nc_comm *c, const nc_args *a, uint64_t seq, unsigned char *marks)
{
    nc_node *n = &c->node;
    const nc_neighbors *nb = c->neighbors;
    size_t len = a->move.send_bytes;
    int in_slot = len <= nc_neighbor_slot_room(c, 0), nreaders = 0;
    if (in_slot && len) memcpy(nc_move_area(c, NULL), a->move.send, len);
    for (int j = 0; len && j < nb->outdegree; j++) {
        int r = nb->out[j];
        if (r != c->rank && nc_neighbor_local(c, r)) nc_neighbor_add_reader(n, marks, c->node_rank_of[r], &nreaders);
    }
    const void *direct = in_slot || !nreaders ? a->move.send : nc_move_reachable(c, a->move.send, len);
    nc_move_publish(n, seq, direct, in_slot, len);
    nc_move_release(n, seq, n->move_readers, nreaders);
    return !in_slot && nreaders;
}

static void read_edge(nc_comm *c, const nc_args *a, const nc_pub *pub, int k)
{
    const nc_vec *recv = a->move.recv_vec;
    nc_neighbor_read_block(c, pub, pub->in_slot, 0, recv, k, nc_fit(c, pub->bytes, nc_vec_len(recv, k)));
}

static const nc_neighbor_kind allgather = {slot_bytes, fill_slot, publish, slot_pub, read_edge, block};

static nc_step progress(nc_op *op, void *state) { return nc_neighbor_progress(op, state, &allgather); }

const nc_algorithm nc_neighbor_allgather = {NC_ALG_CMA, nc_neighbor_applies, NULL, progress, 0};
