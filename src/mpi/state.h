/* Per-communicator state, created lazily inside the first accelerated collective on a
 * communicator and cached on it with an attribute. */
#ifndef NC_MPI_STATE_H
#define NC_MPI_STATE_H

#include <mpi.h>
#include <stdatomic.h>

#include "../coll/check.h"
#include "../core/hot_tls.h"
#include "../coll/comm.h"

typedef struct nc_mpi_comm {
    nc_comm coll;
    nc_alg_id fallback;   /* NC_ALG_COUNT when accelerated, else why the host MPI runs it */
    MPI_Comm comm;        /* the user's communicator (for clean-up at MPI_Finalize) */
    MPI_Comm node_comm, bridge_comm;
    MPI_Comm private_comm; /* the user's group for nodecoll's own messages across nodes (never
                            * the user's communicator, where a wildcard receive could take them);
                            * MPI_COMM_NULL on one node, which sends none */
    int private_node;     /* a one-rank node: its "segment" is private memory, not shared */
    char *scratch;        /* reused by calls on this communicator (MPI orders them), so a */
    size_t scratch_bytes; /* large one does not fault fresh pages in every time */
    size_t *counts;       /* one per rank, reused likewise (nc_mpi_counts) */
    _Atomic int holds;    /* 1 while the communicator lives, plus one per nodecoll request on it */
    /* Per collective, the last completed nonblocking request whose call can be planned once
     * for its repetitions (request.c, nc_mpi_request_again); `going` once the communicator
     * is freed, when none may be kept any more. */
    struct nc_mpi_request *_Atomic kept[NC_COLL_COUNT];
    _Atomic int going;
    struct nc_mpi_comm *prev, *next;
} nc_mpi_comm;

/* A request on s keeps its state alive after the communicator is freed (MPI lets pending
 * operations complete, and persistent requests outlive it until freed). */
/* This process's tuning rules (read at the first use, from NODECOLL_TUNE_FILE or the
 * default location; none if the file cannot be used, with a message saying why). */
const nc_tune_rules *nc_mpi_tune_rules(void);

void nc_mpi_comm_hold(nc_mpi_comm *s);
void nc_mpi_comm_drop(nc_mpi_comm *s);

/* What nc_reduction.host points to: the call's own op and datatype, for inter-node steps
 * through the host MPI (user-defined ops included). */
typedef struct nc_host_op {
    MPI_Op op;
    MPI_Datatype type;
} nc_host_op;

/* The accelerated state of comm, or NULL when this call must go to the host MPI (the reason
 * is counted for `coll`).  Collective on first use. */
nc_mpi_comm *nc_mpi_state_lookup(MPI_Comm comm, nc_coll_id coll);
/* The thread's last accelerated communicator (a freed communicator's state bumps the
 * generation, which invalidates it): every call asks, usually about the same one. */
typedef struct nc_mpi_recent {
    MPI_Comm comm;
    nc_mpi_comm *state;
    uint64_t generation;
} nc_mpi_recent;
extern NC_HOT_TLS nc_mpi_recent nc_mpi_last_state;
extern _Atomic uint64_t nc_mpi_state_generation;
static inline nc_mpi_comm *nc_mpi_recent_state(MPI_Comm comm)
{
    const nc_mpi_recent *r = &nc_mpi_last_state;
    if (r->state && r->comm == comm &&
        r->generation == atomic_load_explicit(&nc_mpi_state_generation, memory_order_acquire))
        return r->state;
    return NULL;
}
static inline nc_mpi_comm *nc_mpi_state(MPI_Comm comm, nc_coll_id coll)
{
    nc_mpi_comm *s = nc_mpi_recent_state(comm);
    return s ? s : nc_mpi_state_lookup(comm, coll);
}
/* The same without counting: NULL and the reason in *why. */
nc_mpi_comm *nc_mpi_lookup(MPI_Comm comm, nc_alg_id *why);
/* At least `bytes` of s->scratch (grown as needed, freed with the communicator's state). */
char *nc_mpi_scratch(nc_mpi_comm *s, size_t bytes);
/* An array of one size_t per rank of the communicator, kept with its state. */
size_t *nc_mpi_counts(nc_mpi_comm *s);

/* "Every rank is a node of its own": an nc_comm over a duplicate of comm whose bridge is the
 * whole communicator, for node-shared handles on a communicator nodecoll does not accelerate
 * (each rank then has a copy of its own, moved by the host MPI).  Collective. */
void nc_mpi_solo_comm(MPI_Comm comm, nc_comm *c, MPI_Comm *bridge_comm);
void nc_mpi_solo_comm_free(nc_comm *c, MPI_Comm *bridge_comm);

/* Everything one reduction call needs, filled on the caller's stack by
 * nc_mpi_describe_reduction or nc_mpi_host_reduction (red points into it). */
/* A user op made through a Fortran binding (src/mpi/fortran.c) whose function takes the
 * Fortran handle of its datatype: the binding's way of making another such op. */
typedef int nc_mpi_op_maker(MPI_User_function *fn, int commute, MPI_Op *op);
/* A user function of MPI-4's MPI_Op_create_c: its count is an MPI_Count. */
typedef void nc_user_function_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *type);
typedef struct nc_user_call {
    MPI_User_function *fn;     /* MPI_Op_create's, or NULL: */
    nc_user_function_c *fn_c;  /* MPI_Op_create_c's */
    MPI_Datatype type;
    size_t extent;
    nc_mpi_op_maker *fortran; /* NULL: a C function */
} nc_user_call;
/* Records a user op (the host made it) so that reductions with it run on nodecoll:
 * MPI_Op_create's record, and a Fortran binding's (fortran: its maker, else NULL). */
void nc_mpi_record_user_op(MPI_Op op, MPI_User_function *fn, int commute, nc_mpi_op_maker *fortran);
typedef struct nc_mpi_reduction {
    nc_reduction red;
    nc_host_op host;
    nc_user_call user;
    const nc_dtype *gaps; /* non-NULL: a user op on a type with gaps; elements are whole
                             extents, so user buffers are used through copies (nc_dt_copy) */
} nc_mpi_reduction;
/* 0 when nodecoll reduces op on type itself (kernels, or the user's function on a predefined
 * type); 1 when only the host MPI can.  `cfg`: the communicator's settings, which every rank
 * shares, so every rank decides alike. */
int nc_mpi_describe_reduction(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, const nc_config *cfg);
/* Any op on any datatype whose elements are `extent` bytes apart, through the host's
 * MPI_Reduce_local (slower: for what nc_mpi_describe_reduction declines). */
void nc_mpi_host_reduction(nc_mpi_reduction *rc, MPI_Datatype type, MPI_Op op, size_t extent, int commutative);

/* Every call on an accelerated communicator, before anything moves and whichever MPI runs
 * it (call->host): numbers and records it and, with NODECOLL_CHECK, compares it with every
 * other rank's.  MPI_SUCCESS, or an error already raised on comm (the call must then do
 * nothing more).  Collective when NODECOLL_CHECK is on. */
int nc_mpi_enter(nc_mpi_comm *s, MPI_Comm comm, nc_call_record *call);
/* The same for a nonblocking or persistent call: it does not wait for the communicator's
 * pending operations (unless NODECOLL_CHECK is on, which makes issuing it synchronising). */
int nc_mpi_enter_nonblocking(nc_mpi_comm *s, MPI_Comm comm, nc_call_record *call);
/* The state of comm if a blocking collective has set it up, else NULL (the reason counted
 * for `coll`): setting up is collective, which a nonblocking call must not be. */
nc_mpi_comm *nc_mpi_state_if_set_up(MPI_Comm comm, nc_coll_id coll);
/* Whether a collective has set comm up (local; counts nothing). */
int nc_mpi_is_set_up(MPI_Comm comm);

/* Counts a fallback for a call whose arguments we leave to the host MPI to judge. */
void nc_mpi_fallback(nc_coll_id coll, nc_alg_id reason);

/* Reports an error of ours through comm's error handler, as the host MPI would. */
int nc_mpi_raise(MPI_Comm comm, int err);

/* The shared heap (heap.c), at setup: this process's heap and socket for its info line;
 * then, once every rank of the node has published its line, the peers' heaps mapped (the
 * node's `heap` says whether each rank maps every other's); dropped with the state. */
void nc_mpi_heap_describe(const nc_comm *c, nc_rank_info *me);
void nc_mpi_share_heaps(nc_mpi_comm *s);
void nc_mpi_drop_heaps(nc_mpi_comm *s);

/* Frees every communicator's state; called at MPI_Finalize. */
void nc_mpi_release_all(void);
/* A duplicate of MPI_COMM_SELF for nodecoll's own use (errors return); MPI_COMM_NULL if it
 * could not be made. */
MPI_Comm nc_mpi_own_self(void);

#endif
