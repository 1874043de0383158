/* The library's identity, and what it runs with on a communicator (nodecoll.h). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "nodecoll.h"
#include "state.h"
#include "../coll/registry.h"
#include "../core/hier.h"

#define NC_EXPORT __attribute__((visibility("default")))
#define NC_STR2(x) #x
#define NC_STR(x) NC_STR2(x)

NC_EXPORT const char *nodecoll_version(void)
{
    return NC_STR(NODECOLL_VERSION_MAJOR) "." NC_STR(NODECOLL_VERSION_MINOR) "." NC_STR(NODECOLL_VERSION_PATCH);
}

NC_EXPORT const char *nodecoll_mpi_library(void)
{
#if defined(OMPI_MAJOR_VERSION)
    return "Open MPI " NC_STR(OMPI_MAJOR_VERSION) "." NC_STR(OMPI_MINOR_VERSION) "." NC_STR(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
    return "MPICH " MPICH_VERSION;
#else
    return "unknown MPI";
#endif
}

/* The tuning rules' parameter a per-call setting stands for in a call of `coll` (-1: none). */
static int ruled_param(const nc_setting_info *setting, nc_coll_id coll)
{
    static const struct {
        const char *setting;
        nc_coll_id coll; /* NC_COLL_REDUCE: any reduction */
        nc_tune_param param;
    } per_call[] = {
        {"NODECOLL_BARRIER_FANIN", NC_COLL_BARRIER, NC_TUNE_RADIX},
        {"NODECOLL_BARRIER_FANOUT", NC_COLL_BARRIER, NC_TUNE_RADIX},
        {"NODECOLL_BCAST_RADIX", NC_COLL_BCAST, NC_TUNE_RADIX},
        {"NODECOLL_CMA_CHUNK", NC_COLL_BCAST, NC_TUNE_CHUNK},
        {"NODECOLL_REDUCE_FANIN", NC_COLL_REDUCE, NC_TUNE_RADIX},
        {"NODECOLL_REDUCE_CHUNK", NC_COLL_REDUCE, NC_TUNE_CHUNK},
    };
    int reduction = coll == NC_COLL_REDUCE || coll == NC_COLL_ALLREDUCE || coll == NC_COLL_REDUCE_SCATTER ||
                    coll == NC_COLL_REDUCE_SCATTER_BLOCK;
    for (size_t i = 0; i < sizeof per_call / sizeof per_call[0]; i++)
        if (!strcmp(per_call[i].setting, setting->env_name) &&
            (per_call[i].coll == coll || (reduction && per_call[i].coll == NC_COLL_REDUCE)))
            return (int)per_call[i].param;
    return -1;
}

static nc_coll_id coll_named(const char *name)
{
    int id = 0;
    while (id < NC_COLL_COUNT && strcmp(nc_coll_name((nc_coll_id)id), name)) id++;
    return (nc_coll_id)id;
}

/* comm's state if nodecoll serves it (set up, not handed to the host). */
static const nc_comm *served(MPI_Comm comm)
{
    if (!nc_mpi_is_set_up(comm)) return NULL;
    nc_alg_id why;
    const nc_mpi_comm *s = nc_mpi_lookup(comm, &why);
    return s && s->fallback == NC_ALG_COUNT ? &s->coll : NULL;
}

NC_EXPORT int nodecoll_comm_setting(MPI_Comm comm, const char *name, const char *collective, MPI_Aint bytes,
                                    char *value, int len)
{
    const nc_comm *c = served(comm);
    if (!c) return MPI_ERR_COMM;
    const nc_setting_info *setting = name ? nc_setting_named(name) : NULL;
    nc_coll_id coll = collective ? coll_named(collective) : NC_COLL_COUNT;
    if (!setting || (collective && coll == NC_COLL_COUNT) || !value || len < 1 || bytes < 0) return MPI_ERR_ARG;
    int64_t v = nc_config_value(&c->cfg, setting);
    int param = collective ? ruled_param(setting, coll) : -1;
    if (param >= 0) v = nc_registry_param(c, coll, (size_t)bytes, (nc_tune_param)param, v);
    nc_setting_format(setting, v, value, (size_t)len);
    return MPI_SUCCESS;
}

NC_EXPORT int nodecoll_comm_groups(MPI_Comm comm, char *groups, int len)
{
    const nc_comm *c = served(comm);
    if (!c) return MPI_ERR_COMM;
    if (!groups || len < 1) return MPI_ERR_ARG;
    const nc_hier *h = c->node.hier;
    int at = snprintf(groups, (size_t)len, "%s", h ? "" : "flat");
    for (int l = 1; h && l <= h->depth && at < len; l++)
        at += snprintf(groups + at, (size_t)(len - at), "%s%s:%d", l > 1 ? " " : "",
                       nc_topo_level_names[h->level[l - 1]], h->ngroups[l]);
    return MPI_SUCCESS;
}
