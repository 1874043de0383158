/* Resumable steps that algorithms run inside their own progress (engine.h): a step has a
 * state of its own, embedded in the caller's state, set up with its arguments and then
 * awaited with NC_AWAIT_STEP.  In the blocking fast path a step waits where it stands and
 * returns NC_DONE at once, so it costs what a plain function call would. */
#ifndef NC_STEPS_H
#define NC_STEPS_H

#include "data.h"
#include "engine.h"

/* Awaits a step: `step` is a call returning nc_step (one per source line, as NC_AWAIT). */
#define NC_AWAIT_STEP(st, step) NC_AWAIT(st, (step) == NC_DONE)

/* Room for the state of the node algorithm a step runs (each checks that its state fits,
 * NC_STEP_STATE_FITS). */
#define NC_STEP_STATE_BYTES 320
#define NC_STEP_STATE_FITS(type) \
    _Static_assert(sizeof(type) <= NC_STEP_STATE_BYTES, #type " does not fit a step's state")

/* ---- Bcast over the node ----------------------------------------------------------------
 * Node rank `root` broadcasts its bytes to every rank of the node, through the node Bcast
 * algorithm the registry chooses for the byte count (the root announces it when the
 * NODECOLL_BCAST_CHECK setting is on; a rank whose arguments hold fewer bytes takes part
 * in full and keeps what fits: a truncation, as the host reports). */
typedef struct nc_node_bcast_step {
    int pc;
    int root_in_heap; /* (announced) the root's buffer lies in its shared heap */
    nc_data *data;
    nc_data plain; /* `data` when set up with a plain buffer */
    size_t my_bytes, bytes;
    int root;
    const nc_algorithm *alg; /* the node algorithm (its id: for the caller's counters) */
    nc_data whole;           /* a truncated rank's full copy */
    _Alignas(16) unsigned char alg_state[NC_STEP_STATE_BYTES];
} nc_node_bcast_step;

void nc_node_bcast_setup(nc_node_bcast_step *st, nc_data *data, size_t my_bytes, int root);
void nc_node_bcast_setup_bytes(nc_node_bcast_step *st, void *buf, size_t bytes, int root);
nc_step nc_node_bcast_progress(nc_op *op, nc_node_bcast_step *st);

#endif
