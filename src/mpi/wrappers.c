/* The MPI entry points nodecoll replaces.  Each one either runs the accelerated algorithm
 * or hands the call, unchanged, to the host MPI's PMPI entry point — in particular every
 * call whose arguments are wrong, so the host reports them with its own error class. */
#include <stdio.h>

#include "nodecoll.h"
#include "datatype.h"
#include "state.h"

#define NC_EXPORT __attribute__((visibility("default")))

NC_EXPORT int MPI_Barrier(MPI_Comm comm)
{
    nc_mpi_comm *s = nc_mpi_state(comm, NC_COLL_BARRIER);
    if (!s) return PMPI_Barrier(comm);
    nc_call_record call = {NC_COLL_BARRIER, NC_CALL_NONE, NC_CALL_NONE, NC_ALG_COUNT, 0, 0};
    int err = nc_mpi_enter(s, comm, &call);
    return err ? err : nc_mpi_raise(comm, nc_barrier(&s->coll));
}

NC_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    nc_mpi_comm *s = nc_mpi_state(comm, NC_COLL_BCAST);
    if (!s) return PMPI_Bcast(buf, count, type, root, comm);
    nc_buffer b = {0};
    nc_data l = {0};
    nc_dt_cursor cursor;
    int is_root = s->coll.rank == root;
    int bad = root < 0 || root >= s->coll.size || buf == MPI_IN_PLACE ||
              nc_buffer_open_data(&b, &l, &cursor, buf, count, type, comm, is_root);
    nc_call_record call = {NC_COLL_BCAST, root, NC_CALL_NONE, bad ? NC_ALG_PMPI_ARGS : NC_ALG_COUNT,
                           bad ? NC_CALL_ANY_BYTES : b.bytes, 0};
    int err = nc_mpi_enter(s, comm, &call);
    if (err || bad) {
        nc_data_release(&l);
        nc_buffer_close(&b, comm, 0);
        if (err) return err;
        nc_mpi_fallback(NC_COLL_BCAST, NC_ALG_PMPI_ARGS);
        return PMPI_Bcast(buf, count, type, root, comm);
    }
    if (b.staging || !nc_data_is_bytes(&l))
        nc_stats_count(NC_COLL_BCAST, b.staging ? NC_ALG_PACKED : NC_ALG_TYPED, b.bytes);
    err = nc_bcast(&s->coll, &l, b.bytes, root);
    nc_data_release(&l);
    int unpack_err = nc_buffer_close(&b, comm, !is_root);
    return nc_mpi_raise(comm, err ? err : unpack_err);
}

NC_EXPORT int MPI_Type_commit(MPI_Datatype *type)
{
    int err = PMPI_Type_commit(type);
    if (err == MPI_SUCCESS) nc_datatype_mark_committed(*type);
    return err;
}

NC_EXPORT int MPI_Finalize(void)
{
    if (nc_config_get()->stats) {
        int rank = -1;
        char prefix[32];
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        snprintf(prefix, sizeof prefix, "nodecoll[%d]: ", rank);
        nodecoll_stat_print(stderr, prefix);
    }
    nc_mpi_release_all();
    nc_datatype_release_keyval();
    return PMPI_Finalize();
}
