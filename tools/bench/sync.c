/*
 * The synchronisation before every timed block: a counting barrier of the benchmark's own,
 * on a line of a shared-memory window, that runs no code of either library.
 *
 * A PMPI_Barrier there made the host MPI's waiting part of nodecoll's figures: when ranks
 * outnumber the cores, MPICH 4.0's barrier spins without giving the core away, ranks leave
 * it milliseconds apart, and the first to leave waited in nodecoll's first call for the
 * last (docs/benchmark.md, "How it measures").  Here a waiting rank polls a while when every
 * rank has a core and yields at once when the ranks outnumber the cores, so the last rank
 * to arrive finds the others ready to run.  Ranks on several machines: each node's ranks
 * meet here, the node leaders meet in a PMPI_Barrier, then the node's ranks are released.
 */
#include "bench.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYNC_SPIN 4000 /* polls before yielding when every rank has a core */

struct sync_line {
    _Alignas(64) _Atomic uint64_t v;
};

struct bench_sync {
    MPI_Comm node, leaders; /* leaders: node ranks 0 when there are several nodes, else NULL */
    MPI_Win win;
    struct sync_line *arrived, *released;
    uint64_t epoch;
    int node_rank, node_size, spin, nodes;
};

struct bench_sync *sync_open(void)
{
    struct bench_sync *s = calloc(1, sizeof *s);
    int world_rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &s->node);
    PMPI_Comm_rank(s->node, &s->node_rank);
    PMPI_Comm_size(s->node, &s->node_size);
    int leader = s->node_rank == 0;
    PMPI_Allreduce(&leader, &s->nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Comm_split(MPI_COMM_WORLD, leader && s->nodes > 1 ? 0 : MPI_UNDEFINED, world_rank,
                    &s->leaders);
    s->spin = s->node_size > (int)sysconf(_SC_NPROCESSORS_ONLN) ? 0 : SYNC_SPIN;
    /* Open MPI hands out window memory 8-byte aligned: a spare line to align within. */
    size_t lines = 3 * sizeof(struct sync_line);
    MPI_Aint bytes = s->node_rank == 0 ? (MPI_Aint)lines : 0;
    void *mine;
    char *base;
    MPI_Aint size;
    int disp;
    PMPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, s->node, &mine, &s->win);
    PMPI_Win_shared_query(s->win, 0, &size, &disp, &base);
    s->arrived = (struct sync_line *)round_up((size_t)base, sizeof(struct sync_line));
    s->released = s->arrived + 1;
    if (s->node_rank == 0) memset(s->arrived, 0, 2 * sizeof(struct sync_line));
    PMPI_Barrier(MPI_COMM_WORLD);
    return s;
}

int sync_oversubscribed(const struct bench_sync *s)
{
    return s->spin == 0;
}

void sync_close(struct bench_sync *s)
{
    if (!s) return;
    PMPI_Win_free(&s->win);
    if (s->leaders != MPI_COMM_NULL) PMPI_Comm_free(&s->leaders);
    PMPI_Comm_free(&s->node);
    free(s);
}

static void wait_for(struct bench_sync *s, _Atomic uint64_t *v, uint64_t target)
{
    for (int i = 0; i < s->spin; i++)
        if (atomic_load_explicit(v, memory_order_acquire) >= target) return;
    while (atomic_load_explicit(v, memory_order_acquire) < target) sched_yield();
}

/* The counter only grows, so a rank that is already one barrier ahead cannot release a rank
 * still waiting for the previous one. */
void sync_wait(struct bench_sync *s)
{
    s->epoch++;
    atomic_fetch_add_explicit(&s->arrived->v, 1, memory_order_acq_rel);
    uint64_t all = s->epoch * (uint64_t)s->node_size;
    if (s->nodes == 1) {
        wait_for(s, &s->arrived->v, all);
        return;
    }
    if (s->node_rank == 0) {
        wait_for(s, &s->arrived->v, all);
        PMPI_Barrier(s->leaders);
        atomic_store_explicit(&s->released->v, s->epoch, memory_order_release);
    } else {
        wait_for(s, &s->released->v, s->epoch);
    }
}
