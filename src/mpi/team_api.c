/* nodecoll_team_*: the thread-team forms of the collectives (include/nodecoll.h).  Thread 0
 * runs the ordinary MPI_* entry point with the team attached to it; the other threads work
 * for it inside nc_team_serve until it is done. */
#include <stdlib.h>
#include <unistd.h>

#include "nodecoll.h"
#include "state.h"
#include "../core/config.h"
#include "../core/team.h"

#define NC_EXPORT __attribute__((visibility("default")))

struct nodecoll_team_s {
    nc_team core;
};

NC_EXPORT int nodecoll_team_create(int threads, nodecoll_team *team)
{
    if (!team || threads < 1 || threads > NC_TEAM_MAX) return nc_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG);
    const nc_config *cfg = nc_config_get();
    nodecoll_team t = aligned_alloc(NC_FLAG_BYTES, (sizeof *t + NC_FLAG_BYTES - 1) / NC_FLAG_BYTES * NC_FLAG_BYTES);
    if (!t) return nc_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    uint64_t mask[NC_CPU_WORDS];
    long cores = nc_cpu_mask(mask) ? nc_cpu_count(mask) : sysconf(_SC_NPROCESSORS_ONLN);
    nc_wait_policy wait = nc_wait_policy_make(cfg->wait_spin, cfg->wait_yields, cfg->wait_sleep_us, cores > 0 && threads > cores);
    wait.spinners = threads; /* the team's threads are meant to have a core each */
    nc_team_init(&t->core, threads, (size_t)cfg->team_part_min, wait);
    *team = t;
    return MPI_SUCCESS;
}

NC_EXPORT int nodecoll_team_free(nodecoll_team *team)
{
    if (!team || !*team) return nc_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG);
    free(*team);
    *team = NULL;
    return MPI_SUCCESS;
}

/* 1 if the caller is finished (a helper thread whose collective is over, or bad input):
 * *result is what it returns.  0 for thread 0, which now leads the team. */
static int join(nodecoll_team team, int thread, MPI_Comm comm, int *result)
{
    if (!team || thread < 0 || thread >= team->core.threads) {
        *result = nc_mpi_raise(comm, MPI_ERR_ARG);
        return 1;
    }
    if (thread) {
        *result = nc_team_serve(&team->core, thread);
        return 1;
    }
    nc_team_start(&team->core);
    return 0;
}

static int lead(nodecoll_team team, int result)
{
    nc_team_stop(&team->core, result);
    return result;
}

NC_EXPORT int nodecoll_team_bcast(nodecoll_team team, int thread, void *buf, int count, MPI_Datatype type, int root,
                                  MPI_Comm comm)
{
    int result;
    if (join(team, thread, comm, &result)) return result;
    return lead(team, MPI_Bcast(buf, count, type, root, comm));
}

NC_EXPORT int nodecoll_team_allreduce(nodecoll_team team, int thread, const void *sendbuf, void *recvbuf, int count,
                                      MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int result;
    if (join(team, thread, comm, &result)) return result;
    return lead(team, MPI_Allreduce(sendbuf, recvbuf, count, type, op, comm));
}

NC_EXPORT int nodecoll_team_allgather(nodecoll_team team, int thread, const void *sendbuf, int sendcount,
                                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                      MPI_Comm comm)
{
    int result;
    if (join(team, thread, comm, &result)) return result;
    return lead(team, MPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));
}

NC_EXPORT int nodecoll_team_alltoallv(nodecoll_team team, int thread, const void *sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                      const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                                      MPI_Comm comm)
{
    int result;
    if (join(team, thread, comm, &result)) return result;
    return lead(team, MPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                    comm));
}
