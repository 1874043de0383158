/* Node-level data movement shared by the Gather, Scatter, Allgather and Alltoall families
 * (their algorithms: src/coll/gather/, scatter/, allgather/, alltoall/).
 *
 * A collective runs as one or more rounds; every rank of a node counts rounds alike
 * (nc_take_round, ledger.h).  In a round a rank that has data for others *publishes* it: its
 * buffer address and, for data that differs per reader, a table of spans (offset, length)
 * indexed by comm rank in its move area.  Small data is copied into the move area itself
 * (the slot): readers copy it from there and the publisher may finish at once; its next
 * publication first waits for exactly those readers.  Large data stays in the publisher's
 * buffer and the readers read it with one single-copy (CMA) call each; the publisher then
 * finishes only when every reader of it has posted `move_done`, because its buffer may be
 * reused afterwards.
 *
 * Readers contact only the ranks they need data from, and publishers wait only for the
 * ranks that read from them: a rank with nothing to exchange with a peer never touches
 * the peer's flags.
 *
 * Nothing here waits: what an algorithm waits for is a `ready` expression for NC_AWAIT
 * (engine.h), and the composite pieces are resumable steps (steps.h). */
#ifndef NC_MOVE_H
#define NC_MOVE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "ledger.h"

typedef struct nc_span {
    uint64_t off, len; /* bytes: from the published base (or the slot start) */
} nc_span;

/* A neighbourhood collective's publication (coll/neighbor/): one entry per out-edge of the
 * publisher, in its out-edge order, where the span table is; `peer` is the comm rank the edge
 * goes to (-1: none), so a receiver can find the edge that feeds it (nc_neighbors.in_match);
 * each block in the slot or not on its own. */
typedef struct nc_edge_span {
    uint64_t off, len;
    int32_t peer;
    uint32_t in_slot;
} nc_edge_span;

/* A publication's in_slot value when the publisher has instead written its data into the
 * reader's published buffer (gather's large blocks): nothing is left to read. */
#define NC_PUB_PUSHED 2

/* What a reader learnt from a publication (copied out of the publisher's flag line). */
typedef struct nc_pub {
    int rank;          /* node rank of the publisher */
    int in_slot;       /* 1: data sits in the publisher's move area, not its buffer; NC_PUB_PUSHED */
    const char *base;  /* the publisher's buffer (in its address space) */
    uint64_t bytes;    /* a single-block publication's length */
    const nc_span *table; /* the publisher's span table (shared memory), NULL if none */
} nc_pub;

/* Bytes of each rank's move area: the span table plus NODECOLL_MOVE_SLOT. */
size_t nc_move_area_bytes(const nc_comm *c);
/* Bytes of the move area reserved for the span table (one span per comm rank, or one edge
 * span per out-edge of the communicator's largest neighbourhood). */
size_t nc_move_table_bytes(const nc_comm *c);
/* Payload bytes that fit in a rank's slot. */
size_t nc_move_slot_bytes(const nc_comm *c);
/* Whether `bytes` of data should travel through the slot instead of a direct read. */
int nc_move_use_slot(const nc_comm *c, size_t bytes);

/* ---- publishing ---------------------------------------------------------------------- */

/* For `ready` expressions: whether the readers of my last release are done with it.  My
 * move area may be rewritten (a claim), and data published from my buffer reused, only
 * then; else op->wait names a reader not done yet.  (Inline: most claims find none left.) */
int nc_move_readers_checked(nc_op *op, nc_node *n);
static inline int nc_move_readers_done(nc_op *op, nc_node *n)
{
    return n->move_nreaders == 0 || nc_move_readers_checked(op, n);
}
/* My span table and (via slot) my slot payload area, once nc_move_readers_done. */
nc_span *nc_move_area(nc_comm *c, char **slot);
/* What I publish for direct reads of [base, base + extent): base itself when my node's peers
 * reach it with single copy, else (a node without CMA, a buffer outside my shared heap) a
 * copy in my heap, which stays mine until my next publication (heap_only.h). */
const char *nc_move_reachable(nc_comm *c, const void *base, size_t extent);
/* The same for the blocks table[0..count) of [base, base + end) (those with a length; total:
 * their bytes): a copy holds only the blocks, packed, the table's offsets rewritten to it
 * (the gaps between blocks may be memory nobody may read). */
const char *nc_move_reachable_blocks(nc_comm *c, const char *base, nc_span *table, int count, size_t end,
                                     size_t total);
/* Announces round `seq`: `base` is the buffer the spans refer to (ignored when in_slot). */
void nc_move_publish(nc_node *n, uint64_t seq, const void *base, int in_slot, uint64_t bytes);
/* Records who reads my publication of round `seq` (node ranks): slot data must outlive
 * them until my next claim; direct data until I finish, so the publisher then awaits
 * nc_move_readers_done before it ends. */
void nc_move_release(nc_node *n, uint64_t seq, const int *readers, int nreaders);

/* ---- reading ------------------------------------------------------------------------- */

/* Whether node rank `peer` has published round `seq` (no wait recorded). */
static inline int nc_move_has_published(const nc_comm *c, int peer, uint64_t seq)
{
    return nc_flag_read(&nc_node_ctl(&c->node, peer)->move_pub) >= seq;
}
/* A publication already awaited in this round. */
static inline nc_pub nc_move_pub(const nc_comm *c, int peer)
{
    const nc_node *n = &c->node;
    const nc_flag *f = &nc_node_ctl(n, peer)->move_pub;
    nc_pub p = {peer, (int)atomic_load_explicit(&f->aux[1], memory_order_relaxed),
                (const char *)(uintptr_t)atomic_load_explicit(&f->aux[0], memory_order_relaxed),
                atomic_load_explicit(&f->aux[2], memory_order_relaxed),
                (const nc_span *)nc_node_move_area(n, peer)};
    return p;
}
/* For `ready` expressions: whether `peer` has published round `seq`; then *pub (if not
 * NULL) describes the publication, else op->wait names it. */
static inline int nc_move_published(nc_op *op, nc_comm *c, int peer, uint64_t seq, nc_pub *pub)
{
    if (!nc_flag_reached(op, &nc_node_ctl(&c->node, peer)->move_pub, seq)) return 0;
    if (pub) *pub = nc_move_pub(c, peer);
    return 1;
}
/* Copies `len` bytes at offset `off` of a publication into `dst`. */
void nc_move_read(nc_comm *c, const nc_pub *p, uint64_t off, void *dst, size_t len);
/* Writes `len` bytes into a publication's buffer at offset `off` (its publisher asked for
 * them with a span table over its own receive buffer). */
void nc_move_write(nc_comm *c, const nc_pub *p, uint64_t off, const void *src, size_t len);
/* Copies my span of a table publication: at most `len` bytes (more is a truncation, nc_fit). */
void nc_move_read_span(nc_comm *c, const nc_pub *p, int comm_rank, void *dst, size_t len);
/* Copies `len` bytes at offset `off` of a publication into `d`'s layout, from its start. */
void nc_move_read_data(nc_comm *c, const nc_pub *p, uint64_t off, nc_data *d, size_t len);
/* My span of a table publication into `d`: at most `len` bytes (more: nc_fit). */
void nc_move_read_span_data(nc_comm *c, const nc_pub *p, int comm_rank, nc_data *d, size_t len);
/* Copies `len` bytes at offset `off` of a publication into block i of `v` (its layout). */
void nc_move_read_block(nc_comm *c, const nc_pub *p, uint64_t off, const nc_vec *v, int i, size_t len);
/* My span of a table publication into block i of `v`: at most its length (more: nc_fit). */
void nc_move_read_span_block(nc_comm *c, const nc_pub *p, const nc_vec *v, int i);
/* Local bytes into / out of block i of `v`, whatever its layout. */
void nc_vec_unpack(const nc_vec *v, int i, const void *src, size_t len);
void nc_vec_pack(const nc_vec *v, int i, void *dst, size_t len);

/* Tells publishers I have finished reading in round `seq`. */
void nc_move_done(nc_node *n, uint64_t seq);

/* ---- small publications: the ledger's slots, one fragment per call --------------------
 * Every call of these families on a node takes one pipeline fragment (nc_take_frags) besides
 * its round, on every rank alike.  A publisher whose payload fits a slot copies it into its
 * inline flag of that fragment (signal and data in one line transfer) or, beyond the flag,
 * into its ring segment of that fragment, and posts the flag with the payload's length in
 * its header; larger data is published in the round as above, and the flag's header says
 * so.  Either way the publisher of a small payload returns at once: the slot is reused only
 * when the ring of slots has wrapped and every rank's `cons` has passed it (ledger.h), so
 * calls back to back need no answer from their readers, as an MPI's eager messages need
 * none.  Every rank posts `cons` for the fragment when its call ends (nc_small_done). */

/* A flag header: the data is published in the call's round (move_pub), not in a slot. */
#define NC_SMALL_IN_ROUND UINT64_MAX
/* A header bit: a payload of one block per reader whose blocks are all alike (below). */
#define NC_SMALL_UNIFORM ((uint64_t)1 << 62)

/* What a reader learnt from a small publication's flag: `bytes` of payload at `data`
 * (shared memory), or data NULL: published in the round; `uniform`: its blocks are alike. */
typedef struct nc_small {
    uint64_t bytes;
    const char *data;
    int uniform;
    uint64_t writable; /* published in the round by a rank that offers its receive buffer to
                        * writers, with a block of this many bytes (nc_small_put_in_round);
                        * else 0 */
} nc_small;

/* A payload of one block per reader: when every other rank of the node gets a block of the
 * same length, the blocks in node-rank order and nothing else (a table would take a line
 * more of a 128-byte Scatter); otherwise this table, indexed by node rank, then the blocks. */
typedef struct nc_small_span {
    uint32_t off, len; /* from the payload's start */
} nc_small_span;

/* Whether a payload of `bytes` travels through a slot (NODECOLL_MOVE_SLOT, one ring segment). */
int nc_small_fits(const nc_comm *c, size_t bytes);
/* For `ready` expressions: whether my slots for fragment g (its flag; its ring segment too for
 * a payload beyond the flag) may be rewritten. */
int nc_small_free(nc_op *op, nc_node *n, uint64_t g, size_t payload);
/* Once free: takes them (any rank of the node may read); where the payload goes. */
char *nc_small_take(nc_node *n, uint64_t g, size_t payload);
/* Posts my flag of fragment g: `header` is the payload's length or NC_SMALL_IN_ROUND. */
void nc_small_post(nc_node *n, uint64_t g, uint64_t header);
/* Takes my flag of fragment g and posts it as published in the round (once free);
 * `writable`: 0, or my block's length when my receive buffer may be written into by the
 * node's other ranks (Allgather's push: allgather/on_node.c). */
void nc_small_put_in_round(nc_node *n, uint64_t g, uint64_t writable);
/* Takes, fills with `bytes` of `data` and posts my slot of fragment g (once free). */
void nc_small_put(nc_node *n, uint64_t g, const void *data, size_t bytes);
/* Whether node rank `peer` has posted fragment g (no wait recorded); then *s (if not NULL)
 * says where. */
int nc_small_posted(const nc_comm *c, int peer, uint64_t g, nc_small *s);
/* The same for `ready` expressions. */
int nc_small_published(nc_op *op, const nc_comm *c, int peer, uint64_t g, nc_small *s);
/* I am done with every fragment up to g (every rank, at the end of its call). */
static inline void nc_small_done(nc_node *n, uint64_t g) { nc_flag_post(&nc_node_ctl(n, n->rank)->cons, g + 1); }

/* A payload of block i of `v` for every other rank i of my node with a non-empty one (alike,
 * or after the table): its bytes; and, once nc_small_free, taken, filled and posted. */
size_t nc_small_blocks_bytes(const nc_comm *c, const nc_vec *v);
void nc_small_put_blocks(nc_comm *c, uint64_t g, const nc_vec *v, size_t payload);
/* My block in such a payload of node rank `peer`: its bytes at *len. */
const char *nc_small_my_block(const nc_comm *c, const nc_small *s, int peer, size_t *len);

/* ---- building blocks of the algorithms ------------------------------------------------ */

/* Once my move area is claimed: publishes one block (slot or direct by size; data NULL
 * announces only a length); returns whether it went into the slot. */
int nc_move_put(nc_comm *c, uint64_t seq, char *slot, const void *data, size_t bytes);

/* Once my move area is claimed, as `root` of a Scatter(v): publishes block i of `send` for
 * every rank i but me (slot copies compacted) and releases it for the ranks of my node that
 * read it; with every_span, empty spans too and my node's leader reads (across nodes it
 * learns every length and serves the other nodes).  Returns whether it went into the slot. */
int nc_move_publish_blocks(nc_comm *c, uint64_t seq, const nc_vec *send, int root, int every_span);

/* Scatter(v)'s root: its own block into its receive buffer (none when in place). */
void nc_move_keep_own_block(nc_comm *c, const nc_args *a);

/* A step: claim my move area, publish one block for `readers` (node ranks) and release it;
 * direct data is kept until they are done. */
typedef struct nc_move_offer_step {
    int pc;
    int in_slot, nreaders;
    uint64_t seq;
    const void *data;
    size_t bytes;
    const int *readers;
} nc_move_offer_step;
void nc_move_offer_setup(nc_move_offer_step *st, uint64_t seq, const void *data, size_t bytes, const int *readers,
                         int nreaders);
nc_step nc_move_offer_progress(nc_op *op, nc_move_offer_step *st);

/* A step, several nodes: every member publishes its block (possibly empty) to its leader,
 * which copies the blocks into `dst` in node-rank order: at most `room` bytes, or all of
 * them into the data scratch (below) when dst is NULL.  Afterwards `at` holds the bytes
 * collected at the leader (0 elsewhere) and `dst` where they are. */
typedef struct nc_move_collect_step {
    int pc;
    int r;
    uint64_t seq;
    const void *data;
    size_t bytes;
    char *dst;
    size_t room, at;
    nc_move_offer_step offer;
} nc_move_collect_step;
void nc_move_collect_setup(nc_move_collect_step *st, uint64_t seq, const void *data, size_t bytes, char *dst,
                           size_t room);
nc_step nc_move_collect_progress(nc_op *op, nc_move_collect_step *st);

/* Working memory of the running operation, kept with the communicator between calls (a
 * freshly touched page costs more than the copy into it): the operations of a communicator
 * run one at a time (engine.h), so the one running owns it.  An operation takes each kind
 * at most once, in its progress (a plan may run while an earlier operation still uses it),
 * and carves what it needs out of it with nc_carve. */
typedef enum { NC_MOVE_TABLES, NC_MOVE_DATA } nc_move_scratch_kind;
char *nc_move_scratch(nc_comm *c, nc_move_scratch_kind kind, size_t bytes);
/* Rounds a carved piece up so the next one stays aligned for any table entry. */
static inline size_t nc_carved(size_t bytes) { return (bytes + 15) & ~(size_t)15; }
static inline void *nc_carve(char **at, size_t bytes)
{
    void *piece = *at;
    *at += nc_carved(bytes);
    return piece;
}

/* Offsets of every rank's block in the node-sorted layout (node 0's members, node 1's, ...)
 * for block lengths nc_vec_len(v, i), into off[0 .. size]; off[size] is the total. */
void nc_move_sorted_offsets(const nc_comm *c, const nc_vec *v, size_t *off);
/* Byte range of node k's region in that layout. */
size_t nc_move_node_off(const nc_comm *c, const size_t *sorted, int node);
size_t nc_move_node_bytes(const nc_comm *c, const size_t *sorted, int node);

#endif
