/* The shared-memory segment of one node communicator.
 *
 *   +-------------+---------------------------------------+-----------------------------
 *   | header page | rank 0: control page | ring | move area | rank 1: control page | ...
 *   +-------------+---------------------------------------+-----------------------------
 *
 * A rank's control page holds its flags (one 128-byte line pair each, small fragments
 * inline); its ring holds `nseg` pipeline segments of `seg_size` bytes; its move area holds
 * what it publishes to the data-movement collectives (a table of spans, small payloads).  Each rank writes only its own control page and
 * ring, reserves (fallocate) and first-touches them itself so the pages live on its NUMA
 * node, and reads everybody's. */
#ifndef NC_SEGMENT_H
#define NC_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "alive.h"
#include "topo.h"
#include "wait.h"

#define NC_SEGMENT_NAME_MAX 64
/* Small messages travel inside flags: a few of them so a slot is reused only every few calls. */
#define NC_INLINE_SLOTS 64
#define NC_INLINE_MAX (sizeof(((nc_flag *)0)->data))

/* Node-shared results (src/coll/shared.c): the flags of one handle live in every rank's
 * control page, so the handle's own region holds nothing but the result (its size does not
 * grow with the ranks of the node).  A communicator has NC_SHARED_SLOTS such sets. */
#define NC_SHARED_SLOTS 16
typedef struct nc_shared_flags {
    nc_flag state; /* 2k: arrived at call k (result k-1 released); 2k+1: released result k */
    nc_flag ready; /* k: result k is complete (posted by its writer or the node leader) */
    nc_flag chain; /* Allreduce: progress of this rank's fold through the result */
} nc_shared_flags;

typedef struct nc_rank_ctl {
    nc_flag fanin;  /* fan-in signals: the sync sequence this rank has reached */
    nc_flag fanout; /* fan-out releases this rank has passed on to its children */
    nc_flag dissem; /* dissemination barrier progress: seq * 64 + step */
    nc_flag pub;    /* pipeline fragments published (aux[0]: user buffer for single-copy reads) */
    nc_flag cons;   /* pipeline fragments this rank is done with */
    nc_flag ready;  /* receive buffer of the call starting at fragment seq-1 is at aux[0] */
    nc_flag push;   /* fragments this rank has written into its children's buffers */
    nc_flag info;   /* written once at setup: nc_rank_info (pid, liveness, single-copy probe) */
    nc_flag inline_frags[NC_INLINE_SLOTS]; /* fragments small enough to ride in the flag */
    nc_flag move_pub;  /* data-movement round published (aux: buffer, flags, bytes; see coll/move.h) */
    nc_flag move_done; /* data-movement round whose reads this rank has finished */
    nc_shared_flags shared[NC_SHARED_SLOTS]; /* one set per live node-shared handle */
    nc_flag entered;  /* the call this rank entered last: seq its number, aux[0] number and collective (coll/check.h) */
    nc_flag check[2]; /* NODECOLL_CHECK: my account of call seq (slot seq % 2), in data */
    nc_flag verdict;  /* NODECOLL_CHECK across nodes, a leader's: call seq's verdict, in data */
} nc_rank_ctl;

/* What a rank writes into its `info` line once at setup, before the agreement that follows
 * mapping (which every reader passes before reading it). */
typedef struct nc_rank_info {
    nc_proc_id proc;     /* pid, and who it is to /proc: for peers' liveness checks */
    uint64_t probe_addr; /* a word of my memory and its value: the single-copy test */
    uint64_t probe_word;
    nc_topo_loc loc;     /* where I sit on the node's topology (NODECOLL_TOPO_LEVELS) */
    uint64_t heap_id;    /* my shared heap (core/heap.h), 0: none */
    uint64_t heap_link;  /* my socket for peers' heaps, 0: none */
} nc_rank_info;

static inline void nc_rank_info_publish(nc_rank_ctl *ctl, const nc_rank_info *info)
{
    _Static_assert(sizeof(nc_rank_info) <= sizeof ctl->info.data, "nc_rank_info must fit its line");
    memcpy(ctl->info.data, info, sizeof *info);
}

static inline nc_rank_info nc_rank_info_read(const nc_rank_ctl *ctl)
{
    nc_rank_info info;
    memcpy(&info, (const void *)ctl->info.data, sizeof info);
    return info;
}

typedef struct nc_layout {
    int nranks;
    int nseg;
    size_t seg_size;    /* multiple of the page size */
    size_t ctl_bytes;   /* control page(s) of one rank */
    size_t move_bytes;  /* move area of one rank (multiple of the page size) */
    size_t rank_stride; /* control + ring + move area of one rank */
    size_t header_bytes;
    size_t total;
} nc_layout;

nc_layout nc_layout_make(int nranks, size_t seg_size, int nseg, size_t move_bytes);

/* Creates a new uniquely named segment (not yet reserved or touched) and maps it. */
int nc_segment_create(const nc_layout *l, char name[NC_SEGMENT_NAME_MAX], int *fd, void **base);
/* Maps an existing segment; fails if its header does not match the layout. */
int nc_segment_attach(const char *name, const nc_layout *l, int *fd, void **base);
/* Reserves and first-touches this rank's part of the segment; returns 0 or an errno. */
int nc_segment_claim(int fd, void *base, const nc_layout *l, int rank);
void nc_segment_unlink(const char *name);
void nc_segment_unmap(void *base, const nc_layout *l);
/* Removes names left in /dev/shm by jobs whose creating process no longer exists. */
void nc_segment_sweep_stale(void);

static inline nc_rank_ctl *nc_segment_ctl(void *base, const nc_layout *l, int rank)
{
    return (nc_rank_ctl *)((char *)base + l->header_bytes + (size_t)rank * l->rank_stride);
}

static inline char *nc_segment_ring(void *base, const nc_layout *l, int rank, uint64_t frag)
{
    return (char *)nc_segment_ctl(base, l, rank) + l->ctl_bytes +
           (size_t)(frag % (uint64_t)l->nseg) * l->seg_size;
}

static inline char *nc_segment_move_area(void *base, const nc_layout *l, int rank)
{
    return (char *)nc_segment_ctl(base, l, rank) + l->ctl_bytes + (size_t)l->nseg * l->seg_size;
}

/* A flag of the segment by owner and name: which rank's control page holds it, its field
 * there ("fanin", "inline fragment", ...) and its index in an array of flags (-1: a single
 * flag).  rank is -1 when f is no flag of the segment. */
typedef struct nc_flag_owner {
    int rank;
    const char *name;
    int index;
} nc_flag_owner;
nc_flag_owner nc_segment_flag_owner(void *base, const nc_layout *l, const nc_flag *f);

/* Bytes of shared memory this process has mapped for segments and regions (for NODECOLL_SHM_CAP). */
size_t nc_segment_mapped_bytes(void);

/* A region: one page of header, then `bytes` of data shared by the ranks of a node (a
 * node-shared result).  Same naming, stale sweep and accounting as segments.  The creator
 * reserves the whole region (fallocate), so a full /dev/shm fails here, not with SIGBUS. */
size_t nc_region_header_bytes(void);
size_t nc_region_total(size_t bytes);
int nc_region_create(size_t bytes, char name[NC_SEGMENT_NAME_MAX], void **base);
int nc_region_attach(const char *name, size_t bytes, void **base);
void nc_region_unmap(void *base, size_t bytes);
static inline char *nc_region_data(void *base) { return (char *)base + nc_region_header_bytes(); }

#endif
