/* TEMPORARY, until the engine branch's resumable node Bcast step (src/coll/bcast/) lands:
 * the interface of steps.h over the blocking node Bcast of bcast.c, so that the reductions
 * can be written against it.  Delete when merging `engine`. */
#include "steps.h"

void nc_node_bcast_setup(nc_node_bcast_step *st, nc_data *data, size_t my_bytes, int root)
{
    st->pc = 0;
    st->data = data;
    st->my_bytes = st->bytes = my_bytes;
    st->root = root;
    st->announced = 0;
    st->whole.base = NULL;
}

void nc_node_bcast_setup_bytes(nc_node_bcast_step *st, void *buf, size_t bytes, int root)
{
    st->plain = nc_data_bytes(buf);
    nc_node_bcast_setup(st, &st->plain, bytes, root);
}

static nc_step unused_progress(nc_op *op, void *state) { return NC_DONE; }
static const nc_algorithm shm_id = {NC_ALG_SHM, NULL, NULL, unused_progress, 0};
static const nc_algorithm cma_id = {NC_ALG_CMA, NULL, NULL, unused_progress, 0};

nc_step nc_node_bcast_progress(nc_op *op, nc_node_bcast_step *st)
{
    st->alg = nc_node_bcast(op->c, st->data, st->my_bytes, st->root) == NC_ALG_CMA ? &cma_id : &shm_id;
    return NC_DONE;
}
