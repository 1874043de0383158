/* MPI_Barrier must not let any rank out before every rank has entered.  Ranks share a
 * counter in a node-shared window; each bumps it before the barrier (after a random delay)
 * and, after barrier k, must see at least k * size arrivals. */
#include <stdatomic.h>
#include <time.h>

#include "common.h"

static void random_delay(uint64_t *rng)
{
    if (t_rand(rng) % 4) return;
    struct timespec ts = {0, (long)(t_rand(rng) % 20000)};
    nanosleep(&ts, NULL);
}

static int out_of_time(MPI_Comm comm, double start)
{
    double elapsed = MPI_Wtime() - start, longest;
    PMPI_Allreduce(&elapsed, &longest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return longest > 1.5;
}

static void check_barrier(MPI_Comm comm, const char *name, int rounds)
{
    MPI_Comm shared;
    int rank, size, shared_size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &shared_size);
    if (shared_size != size) { /* the ranks span machines: the counter cannot be shared */
        PMPI_Comm_free(&shared);
        return;
    }
    _Atomic uint64_t *counter;
    MPI_Win win;
    MPI_Aint bytes = rank == 0 ? (MPI_Aint)sizeof *counter : 0;
    MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, shared, &counter, &win);
    if (rank) {
        MPI_Aint sz;
        int disp;
        MPI_Win_shared_query(win, 0, &sz, &disp, &counter);
    } else {
        atomic_store(counter, 0);
    }
    PMPI_Barrier(comm);
    uint64_t rng = 77 + (uint64_t)rank;
    uint64_t before = nodecoll_stat_calls("barrier", "pmpi:*");
    double start = MPI_Wtime();
    for (int k = 1; k <= rounds; k++) {
        /* Inter-node steps run on the host MPI, which can take milliseconds per step when
         * oversubscribed: stop after a time budget (decided together, every 50 rounds). */
        if (k % 50 == 0 && out_of_time(comm, start)) break;
        random_delay(&rng);
        atomic_fetch_add(counter, 1);
        MPI_Barrier(comm);
        uint64_t seen = atomic_load(counter);
        if (seen < (uint64_t)k * (uint64_t)size) {
            t_fail("%s: left barrier %d having seen only %llu of %llu arrivals", name, k,
                   (unsigned long long)seen, (unsigned long long)k * size);
            break;
        }
    }
    if (size > 1) T_CHECK(nodecoll_stat_calls("barrier", "pmpi:*") == before, "%s: barrier fell back", name);
    PMPI_Barrier(comm);
    MPI_Win_free(&win);
    PMPI_Comm_free(&shared);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    int rounds = t_scale(3000);
    check_barrier(MPI_COMM_WORLD, "world", rounds);
    MPI_Comm odd;
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_size - t_rank, &odd);
    check_barrier(odd, "split", rounds / 2);
    MPI_Comm_free(&odd);
    return t_finish("barrier");
}
