/* Fragments a rank publishes in its own shared memory for the others to read: inside its
 * inline flags when a small message fits one or a short chain of them (signal and data
 * arrive in one cache-line transfer per flag), else in its ring, announced by its pub flag.
 * Shared by every collective that uses the ring, so one rule protects a slot whoever filled
 * it last. */
#ifndef NC_FRAG_H
#define NC_FRAG_H

#include "../core/node.h"

typedef struct nc_frag_place {
    int in_flag;
    size_t skip; /* bytes left free at the start of an inline flag's data, for alignment */
} nc_frag_place;

/* The ring: a fragment per segment, announced by the pub flag. */
static const nc_frag_place nc_ring_place = {0, 0};

/* Inline data starts 8 bytes into the flag's data: aux[0] stays free for a header (Bcast's
 * byte count), and the data is 16-byte aligned, as long double and its pairs require. */
#define NC_INLINE_HEADER 8
#define NC_INLINE_ALIGNED_MAX (NC_INLINE_MAX - NC_INLINE_HEADER)

static inline nc_flag *nc_frag_signal(const nc_node *n, nc_frag_place p, int rank, uint64_t g)
{
    nc_rank_ctl *ctl = nc_node_ctl(n, rank);
    return p.in_flag ? &ctl->inline_frags[g % NC_INLINE_SLOTS] : &ctl->pub;
}

static inline char *nc_frag_data(const nc_node *n, nc_frag_place p, int rank, uint64_t g)
{
    return p.in_flag ? (char *)nc_node_ctl(n, rank)->inline_frags[g % NC_INLINE_SLOTS].data + p.skip
                     : nc_node_ring(n, rank, g);
}

static inline nc_slot_use *nc_frag_use(nc_node *n, nc_frag_place p, uint64_t g)
{
    return p.in_flag ? &n->inline_use[g % NC_INLINE_SLOTS] : &n->slot_use[g % (uint64_t)n->layout.nseg];
}

#endif
