/* The engine: every collective algorithm is a registered object, and every call form
 * (blocking, nonblocking, persistent) runs the same objects.
 *
 *   applies   when the algorithm can run (its hard requirements; the registry's order and
 *             thresholds say when it should)
 *   plan      everything that depends neither on the data nor on the sequence numbers of the
 *             node (trees, slices, span sizes): once for a persistent request
 *   progress  runs until it would wait for a peer, then returns NC_PENDING with what it waits
 *             for in op->wait; NC_DONE at the end.  It resumes where it stopped: progress
 *             functions are written with NC_BEGIN / NC_AWAIT / NC_END (below), and every
 *             local value that must survive a wait lives in the op's state.
 *
 * Operations on one communicator run in call order: an operation starts to progress only
 * when every earlier one on its communicator has completed on this rank, so the node's
 * sequence counters, ring slots and published words are used exactly as by blocking calls
 * made in the same order, on every rank.  Operations on different communicators progress
 * independently.  A blocking call is an operation on the caller's stack run to completion;
 * while it waits it also progresses the process's other outstanding operations. */
#ifndef NC_ENGINE_H
#define NC_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"

typedef enum { NC_DONE = 0, NC_PENDING = 1 } nc_step;

/* What a pending operation waits for: a flag of its node to reach a value, or the host
 * requests of a bridge step (tested through the bridge). */
typedef struct nc_waiting {
    const nc_flag *flag;
    uint64_t value;
    nc_bridge_req *host;
    int patient; /* for a peer to release a small message's slot: polled less often (wait_reuse_gap) */
} nc_waiting;

/* The arguments of a call as the algorithms see them (the adapter turns MPI's into these). */
typedef struct nc_args {
    nc_coll_id coll;
    int root; /* comm rank; -1 for unrooted collectives */
    int heap_agreed; /* a node step's: the buffers its single-copy algorithm reaches lie in the
                      * ranks' shared heaps, as every rank of the node knows (a node without
                      * CMA then still runs single copy: nc_single_copy) */
    union {
        struct { nc_data *data; size_t bytes; } bcast; /* the root's data, or where it goes */
        struct { /* Reduce, Allreduce (root -1), Reduce_scatter(_block), Scan, Exscan */
            const void *send;
            void *recv;              /* send == recv: in place (Reduce_scatter: the whole input
                                      * is in recv, my block's result goes to its start) */
            size_t count;            /* elements (Reduce_scatter: the whole input) */
            const size_t *counts;    /* Reduce_scatter: elements per rank */
            const nc_reduction *red;
        } reduce;
        struct { /* Gather(v), Scatter(v), Allgather(v), Alltoall(v,w) (coll names the MPI
                  * call for the counters); what a rank receives lands in its own layout
                  * (nc_vec.blocks, Scatter's nc_data) */
            const void *send;        /* Gather, Allgather: my block, or NC_IN_PLACE */
            size_t send_bytes;
            nc_data *recv;           /* Scatter: my block's layout (NULL: in place) */
            size_t recv_bytes;
            const nc_vec *send_vec;  /* Scatter's root, Alltoall (NULL: in place) */
            const nc_vec *recv_vec;  /* Gather's root, Allgather, Alltoall */
        } move;
    };
} nc_args;

typedef struct nc_op nc_op;

/* Whether a single-copy node algorithm reaches every buffer of the call: CMA works on the node,
 * or the call's buffers are in the shared heaps (core/heap.h). */
static inline int nc_single_copy(const nc_comm *c, const nc_args *a) { return c->node.cma || a->heap_agreed; }
/* A node of shared heaps without CMA: single copy only where the heaps hold the buffers. */
static inline int nc_heap_only(const nc_comm *c) { return !c->node.cma && c->node.heap; }

/* An algorithm's functions get the operation and a state of its own: op->state when it runs
 * a call, or a part of another algorithm's state when that one runs it as a step (a node's
 * Bcast inside an Allreduce); its arguments are then in that state too. */
typedef struct nc_algorithm {
    nc_alg_id id;                                     /* its name in the counters */
    int (*applies)(const nc_comm *c, const nc_args *a);
    void (*plan)(nc_op *op, void *state);             /* may be NULL */
    nc_step (*progress)(nc_op *op, void *state);
    int composed; /* runs other algorithms as steps, which count themselves */
} nc_algorithm;

/* Room for an algorithm's own state (each checks that its state fits, NC_STATE_FITS).  A
 * state begins with `int pc`: where its progress resumes (0: at the start). */
#define NC_OP_STATE_BYTES 1024

struct nc_op {
    nc_comm *c;
    const nc_algorithm *alg;
    const nc_args *args; /* the caller's (a nonblocking call's live until it completes) */
    size_t bytes;        /* as the registry and the counters count the call */
    int err;             /* the bridge's error code, or NC_TRUNCATED */
    int blocking;        /* a blocking call: bridge steps may use the host's blocking calls */
    nc_waiting wait;
    nc_bridge_req *bridge_req; /* the request argument of the bridge step being started */
    _Atomic int done;
    nc_op *next;         /* the communicator's queue */
    void (*finished)(nc_op *op); /* called once when the operation completes (may be NULL) */
    void *owner;         /* the adapter's, for `finished` */
    _Alignas(16) unsigned char state[NC_OP_STATE_BYTES];
};

#define NC_OP_STATE(op, type) ((type *)(void *)(op)->state)
#define NC_STATE_FITS(type) _Static_assert(sizeof(type) <= NC_OP_STATE_BYTES, #type " does not fit an op's state")

/* Resumable functions: progress(op) of an algorithm, and the steps algorithms share (a node
 * Bcast inside an Allreduce...), each with a state `st` whose first member is `int pc`.
 * They are a switch on st->pc; NC_AWAIT evaluates `ready` (which, when false, has recorded
 * in op->wait what op waits for) each time the function resumes there.  Every value that
 * must survive an NC_AWAIT lives in st (-Wjump-misses-init reports a local that does not).
 * One NC_AWAIT per source line. */
#define NC_BEGIN(st)      \
    switch ((st)->pc) {   \
    case 0:
#define NC_AWAIT(st, ready) NC_AWAIT_AT(st, __LINE__, ready)
/* (A resume point of its own number: a macro that awaits twice on one line.) */
#define NC_AWAIT_AT(st, point, ready)                      \
    do {                                                   \
        (st)->pc = (point);                                \
        __attribute__((fallthrough));                      \
    case (point):                                          \
        while (!(ready)) {                                 \
            if (!nc_op_waits_here(op)) return NC_PENDING;  \
            nc_op_wait_here(op);                           \
        }                                                  \
    } while (0)
#define NC_END(st)          \
    }                       \
    (st)->pc = -1;          \
    return NC_DONE

int nc_engine_outstanding(void);

/* A blocking call with nothing else in the process to progress waits where it stands (in
 * NC_AWAIT, as a plain blocking algorithm would), and so costs no more than one. */
static inline int nc_op_waits_here(const nc_op *op) { return op->blocking && !nc_engine_outstanding(); }
/* Waits (spin, yield, sleep: the node's policy) for what op->wait names. */
void nc_op_wait_here(nc_op *op);

/* For `ready` expressions: whether f >= value, else record it as what op waits for. */
static inline int nc_flag_reached(nc_op *op, const nc_flag *f, uint64_t value)
{
    if (nc_flag_read(f) >= value) return 1;
    op->wait = (nc_waiting){f, value, NULL, 0};
    return 0;
}

/* Whether this thread may call the host MPI: not the progress thread unless the host runs
 * MPI_THREAD_MULTIPLE.  For `ready` expressions: nc_host_allowed (op then waits for one of
 * the application's threads to progress it). */
int nc_engine_may_call_host(void);
/* What drives the host's own progress (the adapter's; called while a wait yields, where this
 * thread may call the host). */
void nc_engine_set_host_poke(void (*poke)(void));
/* Drives the host's progress once, where this thread may call the host. */
void nc_engine_poke_host(void);
int nc_host_allowed(nc_op *op);

/* For `ready` expressions: whether the bridge step r has completed (its error, if any, then
 * becomes op's), else record it as what op waits for. */
int nc_bridge_done(nc_op *op, nc_bridge_req *r);

/* A step through the host MPI, in a resumable function with state st: `step` is a bridge
 * call whose request argument is written op->bridge_req.  The host's blocking call for a
 * blocking call, its nonblocking one (started with request `breq`, in st, and awaited) for
 * a nonblocking or persistent one: the form must be the same on every rank, because the
 * host never matches a blocking collective with a nonblocking one, and the call's form is
 * (MPI requires it) while what else a rank has outstanding is not.  Sets op->err on failure. */
#define NC_BRIDGE_STEP(op, st, breq, step)                                                         \
    do {                                                                                          \
        NC_AWAIT_AT(st, __LINE__ + 1000000, nc_host_allowed(op)); /* (no source has that many lines) */ \
        (op)->bridge_req = (op)->blocking ? NULL : (breq);                                        \
        nc_op_fail((op), (step));                                                                 \
        if ((op)->bridge_req) NC_AWAIT(st, nc_bridge_done((op), (breq)));                         \
    } while (0)

/* Notes err (non-zero) as op's error unless it has one. */
static inline void nc_op_fail(nc_op *op, int err)
{
    if (err && !op->err) op->err = err;
}

/* ---- running operations ------------------------------------------------------------ */

/* Prepares op to run `alg` on comm with `args` (plans it). */
void nc_op_init(nc_op *op, nc_comm *c, const nc_algorithm *alg, const nc_args *args, int blocking);
/* A persistent operation's next start: progress from the beginning, with the same plan. */
void nc_op_restart(nc_op *op);

/* Prepares op for the call args describe on c, moving `bytes`: the registry's algorithm,
 * planned (a persistent request's plan serves every start). */
void nc_op_prepare(nc_op *op, nc_comm *c, const nc_args *args, size_t bytes, int blocking);
/* Counts a start of op in the statistics (composed algorithms' steps count themselves). */
void nc_op_count(const nc_op *op);

/* Blocking call of the collective args describe on c, moving `bytes` (for the registry and
 * the counters): the registry's algorithm, counted, run to completion.  0, a bridge error
 * or NC_TRUNCATED. */
int nc_collective(nc_comm *c, const nc_args *args, size_t bytes);

/* Blocking: runs op to completion (after every earlier operation of its communicator);
 * returns its error (0, a bridge error, NC_TRUNCATED). */
int nc_op_run(nc_op *op);
/* Nonblocking: queues op behind its communicator's earlier operations and progresses it as
 * far as it goes without waiting. */
void nc_op_start(nc_op *op);
/* Progresses op's communicator (and so op) without waiting; 1 once op is done. */
int nc_op_test(nc_op *op);
/* Waits for op, progressing every outstanding operation meanwhile. */
void nc_op_wait(nc_op *op);

/* Progresses every outstanding operation of the process, without waiting; the number of
 * operations that completed. */
int nc_engine_progress(void);
/* Other threads may start or progress operations from now on (MPI_THREAD_MULTIPLE, or the
 * progress thread): the queues take their locks.  Before that, one thread at a time uses
 * the engine; called before any other thread may. */
void nc_engine_share_queues(void);
/* Whether they are (a hand-over between the engine and the application may then be
 * concurrent). */
extern _Atomic int nc_engine_sharing;
static inline int nc_engine_queues_shared(void) { return atomic_load_explicit(&nc_engine_sharing, memory_order_relaxed); }
/* Locks m only where threads share the engine; the result goes to nc_engine_unlock. */
int nc_engine_lock(pthread_mutex_t *m);
void nc_engine_unlock(pthread_mutex_t *m, int locked);
/* Adds `by` to a counter the engine's users share (locked only where threads share the
 * engine: each locked instruction cost a small nonblocking call a few ns); its value before. */
static inline int nc_engine_count_add(_Atomic int *counter, int by, memory_order order)
{
    if (nc_engine_queues_shared()) return atomic_fetch_add_explicit(counter, by, order);
    int before = atomic_load_explicit(counter, memory_order_relaxed);
    atomic_store_explicit(counter, before + by, order == memory_order_acq_rel ? memory_order_release : order);
    return before;
}
/* Sets a flag to `value`; its value before (locked only where threads share the engine). */
static inline int nc_engine_flag_swap(_Atomic int *flag, int value, memory_order order)
{
    if (nc_engine_queues_shared()) return atomic_exchange_explicit(flag, value, order);
    int before = atomic_load_explicit(flag, memory_order_relaxed);
    atomic_store_explicit(flag, value, order == memory_order_acq_rel ? memory_order_release : order);
    return before;
}
/* (nc_engine_outstanding, above: nonblocking operations started and not yet completed in
 * the whole process; a relaxed load.) */

/* The optional progress thread (NODECOLL_PROGRESS_THREAD): progresses outstanding operations
 * while the application computes; host calls only if `may_call_host` (MPI_THREAD_MULTIPLE),
 * else those steps wait for the application's next MPI call.  Idempotent. */
void nc_engine_progress_thread_start(int may_call_host, long sleep_us);
void nc_engine_progress_thread_stop(void);

/* Every operation of comm completed on this rank, and comm off the engine's lists (before a
 * node-shared call, or freeing it).  Inline: every blocking call passes here, nearly always
 * with nothing to do. */
void nc_comm_drain_queue(nc_comm *c);
static inline void nc_comm_drain(nc_comm *c)
{
    if (atomic_load_explicit(&c->queued, memory_order_acquire) || atomic_load_explicit(&c->listed, memory_order_relaxed))
        nc_comm_drain_queue(c);
}

#endif
