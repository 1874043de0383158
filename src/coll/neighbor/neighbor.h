/* What the neighbourhood collectives share (coll/neighbor/: allgather.c for
 * Neighbor_allgather(v), alltoall.c for Neighbor_alltoall(v,w)): one progress skeleton over
 * the communicator's cached neighbour lists (nc_neighbors, comm.h), which each algorithm
 * fills in with how it publishes and reads (nc_neighbor_kind).
 *
 * On the node, a rank publishes once per call and each receiver reads its in-edges straight
 * from their senders, from the sender's slots (move.h's small publications, when the whole
 * publication fits: the sender returns without waiting for its readers), its move area
 * (small blocks of a larger publication) or its buffer (single copy): nothing is forwarded.
 * In Balaji et al.'s bins: an in-edge with nothing to receive is never looked at (no flag
 * read, no wait), and of the senders that have published, the small blocks are read before
 * the large ones (a receiver waits only when none is ready, for the first small one left).
 * Edges from myself are local copies.
 * Across nodes, every rank sends its non-empty out-blocks to the remote ranks point to point
 * (small before large, each receive posted first), in an order that makes MPI's message
 * ordering pair each block with its in-edge (nc_neighbor_progress). */
#ifndef NC_NEIGHBOR_H
#define NC_NEIGHBOR_H

#include "../move.h"

typedef struct nc_neighbor_state {
    int pc;
    int awaits_readers; /* something I published is read from my buffer: await my readers */
    int count, progressed, nsends, nrecvs;
    uint64_t seq, g;
    size_t payload;
    int *edges;          /* the bin being read: its in-edges not read yet */
    int *recv_edges;     /* the in-edge of each remote receive */
    nc_xfer *xfers;      /* remote sends (at most outdegree), then receives */
    unsigned char *readers;    /* per node rank: reads my publication */
    unsigned char *small_send; /* per out-edge: sent in the small pass */
    char *landing;       /* remote blocks for a receive vector with a layout land here */
    nc_bridge_req req;
} nc_neighbor_state;
NC_STATE_FITS(nc_neighbor_state);

typedef struct nc_neighbor_kind {
    /* The bytes of my publication with every block my readers on the node take in it (it
     * goes through my slots when they fit), and, once they are taken, writes it there. */
    size_t (*slot_bytes)(const nc_comm *c, const nc_args *a);
    void (*fill_slot)(nc_comm *c, const nc_args *a, char *slot);
    /* Once my move area is claimed: publishes round `seq` for my readers on the node and
     * releases it (`marks`: one zeroed byte per node rank); 1 if my buffer is read directly. */
    int (*publish)(nc_comm *c, const nc_args *a, uint64_t seq, unsigned char *marks);
    /* A publication in node rank `peer`'s slots, as a reader sees it (its blocks in_slot,
     * at offsets from p.table), stored into *p.  (Not returned: a returned nc_pub went
     * through the stack and was read back in wider loads than its fields were stored with,
     * a store-forwarding stall per edge; docs/design.md.) */
    void (*slot_pub)(const nc_small *s, int peer, nc_pub *p);
    /* Reads in-edge k from its sender's publication p (a rank of my node other than me). */
    void (*read)(nc_comm *c, const nc_args *a, const nc_pub *p, int k);
    /* Out-edge j's block: where its bytes are, and how many. */
    const void *(*block)(const nc_args *a, int j, size_t *len);
} nc_neighbor_kind;

nc_step nc_neighbor_progress(nc_op *op, nc_neighbor_state *st, const nc_neighbor_kind *kind);

/* Whether comm rank r is on my node (a real rank: not -1). */
static inline int nc_neighbor_local(const nc_comm *c, int r) { return r >= 0 && c->node_of[r] == c->node_of[c->rank]; }

/* Marks node rank `peer` as a reader of my publication (once each). */
static inline void nc_neighbor_add_reader(nc_node *n, unsigned char *marks, int peer, int *nreaders)
{
    if (marks[peer]) return;
    marks[peer] = 1;
    n->move_readers[(*nreaders)++] = peer;
}

/* Small blocks are copied into the publisher's move area from its start (where no span
 * table of the data-movement family is needed, or right after the edge table), so that a
 * tiny block shares its cache lines with what announces it.  Room for them from `offset`. */
static inline size_t nc_neighbor_slot_room(const nc_comm *c, size_t offset)
{
    size_t area = c->node.layout.move_bytes, limit = (size_t)c->cfg.move_slot;
    size_t room = area > offset ? area - offset : 0;
    return room < limit ? room : limit;
}
/* Block k of the receive vector from publication p: `len` bytes at `off` from p->table (the
 * publisher's move area or slot: in_slot), or of its buffer (a single-copy read). */
void nc_neighbor_read_block(nc_comm *c, const nc_pub *p, int in_slot, uint64_t off, const nc_vec *recv, int k, size_t len);

/* The hard requirements: single copy everywhere, and a topology. */
int nc_neighbor_applies(const nc_comm *c, const nc_args *a);

#endif
