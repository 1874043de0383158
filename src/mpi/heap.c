/* The shared heap in the adapter (core/heap.h; docs/design.md, "The shared heap"): which
 * node peers' heaps a communicator's ranks map, passed between them when it is set up, and
 * MPI_Alloc_mem / MPI_Free_mem from the heap. */
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../core/config.h"
#include "../core/fatal.h"
#include "../core/heap.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* Peers that send their heap to one socket between two barriers: the kernel queues ten
 * datagrams per socket (net.unix.max_dgram_qlen) and a send that finds the queue full fails,
 * so this leaves room for a second thread's setup at the same time. */
#define OFFER_WINDOW 4

static int all_ranks(int value, MPI_Op op, MPI_Comm comm)
{
    int result = 0;
    PMPI_Allreduce(&value, &result, 1, MPI_INT, op, comm);
    return result;
}

void nc_mpi_heap_describe(const nc_comm *c, nc_rank_info *me)
{
    if (c->cfg.heap == NC_HEAP_OFF) return;
    const nc_heap_arena *mine = nc_heap_mine((int)c->cfg.heap);
    me->heap_id = mine ? mine->id : 0;
    me->heap_link = nc_heap_link();
    static _Atomic int told;
    if (c->cfg.heap == NC_HEAP_ON && c->cfg.verbose >= 1 && !nc_heap_interposed() && !atomic_exchange(&told, 1))
        fprintf(stderr, "nodecoll: NODECOLL_HEAP=on, but libnodecoll-heap.so is not preloaded%s: only MPI_Alloc_mem "
                        "uses the shared heap in process %d\n",
                mine ? "" : " or has no heap", (int)getpid());
}

/* Every rank sends its heap to the peers that asked for it, a window of them at a time,
 * each between two barriers, then maps what its own socket received. */
static void pass_heaps(nc_mpi_comm *s, const nc_rank_info *info, const int *need)
{
    nc_node *n = &s->coll.node;
    const nc_heap_arena *mine = nc_heap_own;
    int *wanted = nc_calloc_or_die((size_t)n->size, sizeof *wanted);
    PMPI_Alltoall(need, 1, MPI_INT, wanted, 1, MPI_INT, s->node_comm);
    for (int first = 1; first < n->size; first += OFFER_WINDOW) {
        for (int k = first; k < first + OFFER_WINDOW && k < n->size; k++) {
            int to = (n->rank + k) % n->size;
            if (wanted[to] && mine) nc_heap_offer(info[to].heap_link, mine);
        }
        PMPI_Barrier(s->node_comm);
        nc_heap_take_offers();
    }
    free(wanted);
}

void nc_mpi_share_heaps(nc_mpi_comm *s)
{
    nc_comm *c = &s->coll;
    nc_node *n = &c->node;
    if (c->cfg.heap == NC_HEAP_OFF) return;
    nc_rank_info *info = nc_alloc_or_die(sizeof *info * (size_t)n->size);
    int *need = nc_calloc_or_die((size_t)n->size, sizeof *need), missing = 0;
    for (int r = 0; r < n->size; r++) info[r] = nc_rank_info_read(nc_node_ctl(n, r));
    for (int r = 0; r < n->size; r++) {
        if (r == n->rank || !info[r].heap_id) continue;
        n->peers[r].heap = nc_heap_view_get(info[r].heap_id);
        need[r] = !n->peers[r].heap && info[n->rank].heap_link;
        missing |= need[r];
    }
    if (all_ranks(missing, MPI_MAX, s->node_comm)) {
        pass_heaps(s, info, need);
        for (int r = 0; r < n->size; r++)
            if (need[r]) n->peers[r].heap = nc_heap_view_get(info[r].heap_id);
    }
    int complete = nc_heap_own != NULL;
    for (int r = 0; r < n->size; r++) complete &= r == n->rank || n->peers[r].heap != NULL;
    n->heap = all_ranks(complete, MPI_MIN, s->node_comm);
    free(need);
    free(info);
}

void nc_mpi_drop_heaps(nc_mpi_comm *s)
{
    nc_node *n = &s->coll.node;
    for (int r = 0; n->peers && r < n->size; r++) {
        nc_heap_view_put((nc_heap_view *)(uintptr_t)n->peers[r].heap);
        n->peers[r].heap = NULL;
    }
}

/* ---- MPI_Alloc_mem / MPI_Free_mem ----------------------------------------------------------------- */

/* The heap's blocks take no hints: MPI lets an implementation ignore the info argument. */
NC_EXPORT int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    const nc_config *cfg = nc_config_get();
    if (cfg->enable && size >= cfg->heap_min && baseptr && nc_heap_mine((int)cfg->heap)) {
        void *p = nc_heap_alloc((size_t)size);
        if (p) {
            *(void **)baseptr = p;
            return MPI_SUCCESS;
        }
    }
    return PMPI_Alloc_mem(size, info, baseptr);
}

NC_EXPORT int MPI_Free_mem(void *base) { return nc_heap_release(base) ? MPI_SUCCESS : PMPI_Free_mem(base); }
