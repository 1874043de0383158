/* The host MPI as a registered data-movement algorithm: the registry's last row for each
 * data-movement collective, chosen where single copy does not work on every node of the
 * communicator (counted "pmpi:no-cma").  The adapter, which holds the MPI arguments, asks
 * the registry before it enters a call (nc_registry_host_reason) and calls the host itself,
 * so this algorithm never progresses.  Also here: the requirements the other data-movement
 * algorithms share. */
#include "algorithms.h"

#include "../core/fatal.h"

int nc_move_anywhere(const nc_comm *c, const nc_args *a) { return c->single_copy_everywhere; }

int nc_move_on_one_node(const nc_comm *c, const nc_args *a) { return nc_move_anywhere(c, a) && !nc_comm_multinode(c); }

int nc_move_across_nodes(const nc_comm *c, const nc_args *a) { return nc_move_anywhere(c, a) && nc_comm_multinode(c); }

static int always(const nc_comm *c, const nc_args *a) { return 1; }

static nc_step progress(nc_op *op, void *state)
{
    nc_fatal("%s reached nodecoll although the host MPI runs it", nc_coll_name(op->args->coll));
    return NC_DONE;
}

const nc_algorithm nc_move_host = {NC_ALG_PMPI_NO_CMA, always, NULL, progress, 0};
