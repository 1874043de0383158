/* Nonblocking and persistent collectives as MPI requests (request.c).
 *
 * A nodecoll request is an engine operation (coll/engine.h) plus what the adapter needs to
 * deliver its results (staging copies to unpack, layouts to release).  Its MPI_Request
 * handle is a real request of the host MPI: an inactive persistent receive from
 * MPI_PROC_NULL, so that every host call given it sees a valid, inactive request (an empty
 * status at once).  nodecoll replaces the completion calls (Wait, Test and their all / any /
 * some forms, Request_get_status, Request_free, Start, Startall): they look the handle up
 * among the live nodecoll requests and hand everything else to the host, untouched; when no
 * nodecoll request is live they go straight to the host. */
#ifndef NC_MPI_REQUEST_H
#define NC_MPI_REQUEST_H

#include <mpi.h>
#include <stdatomic.h>

#include "datatype.h"
#include "move_call.h"
#include "state.h"
#include "../coll/engine.h"

/* Persistent collectives: MPI-4's MPI_<Coll>_init (MPICH 4), or Open MPI 4.1's MPIX_ forms
 * (mpi-ext.h); found at build time. */
#if defined(NODECOLL_HAVE_MPI_PERSISTENT)
#define NC_PERSISTENT_COLLECTIVES 1
#define NC_INIT_OF(coll, sfx) MPI_##coll##_init##sfx
#define NC_HOST_INIT_OF(coll, sfx) PMPI_##coll##_init##sfx
#elif defined(NODECOLL_HAVE_MPIX_PERSISTENT)
#include <mpi-ext.h>
#define NC_PERSISTENT_COLLECTIVES 1
#define NC_INIT_OF(coll, sfx) MPIX_##coll##_init##sfx
#define NC_HOST_INIT_OF(coll, sfx) PMPIX_##coll##_init##sfx
#endif
/* (sfx: empty, or _c for MPI-4's large-count form) */
#define NC_INIT(coll) NC_INIT_OF(coll, )
#define NC_HOST_INIT(coll) NC_HOST_INIT_OF(coll, )

typedef struct nc_mpi_request nc_mpi_request;

/* Which form of a collective the user called: blocking (request NULL), nonblocking, or
 * persistent (with its info); `large`: MPI-4's large-count form (MPI_<Coll>_c), whose count
 * and displacement arrays hold MPI_Count and MPI_Aint (nc_mpi_count_at) instead of int. */
typedef struct nc_call_form_args {
    MPI_Request *request;
    int persistent;
    MPI_Info info;
    int blocking;
    int large;
} nc_call_form_args;

/* The state for a call of form f, or NULL: the host serves it (a nonblocking call on a
 * communicator not yet set up, or without a request to return: the host reports that). */
static inline nc_mpi_comm *nc_mpi_state_for_form(MPI_Comm comm, nc_coll_id coll, const nc_call_form_args *f)
{
    if (f->blocking) return nc_mpi_state(comm, coll);
    return f->request ? nc_mpi_state_if_set_up(comm, coll) : NULL;
}

/* nc_mpi_enter for a call of form f: only a blocking call waits for the communicator's
 * pending operations. */
static inline int nc_mpi_enter_form(nc_mpi_comm *s, MPI_Comm comm, nc_call_record *call, const nc_call_form_args *f)
{
    return f->blocking ? nc_mpi_enter(s, comm, call) : nc_mpi_enter_nonblocking(s, comm, call);
}

/* An adapter's functions, which every call form runs: inlined into each entry point, where
 * the form is a constant, so that a blocking call takes no branch of the other forms (out of
 * line they cost an 8-byte Allreduce about 5 ns, 5%). */
#define NC_FORM_INLINE static inline __attribute__((always_inline))

/* What an adapter returns when the host must serve the call (MPI error codes are never
 * negative): its entry point then calls the host's own form of it with the user's arguments. */
#define NC_RUN_HOST (-1)

/* Entry points.  A collective's adapter `fn(args..., form)` serves every form of it: it
 * runs the call and returns MPI_SUCCESS or an error code (raised), or returns NC_RUN_HOST.
 * NC_CALL_FORMS(Name, IName, fn, params, args) defines MPI_<Name>, its nonblocking MPI_<IName>
 * (MPI spells Ibarrier, not IBarrier) and its persistent init from the parameter list and the
 * arguments (both parenthesised); each hands NC_RUN_HOST calls to the host's PMPI_ form of
 * itself.  NC_COUNT_FORMS(Name, IName, fn, params_of, args) defines those and, where the host
 * has them, the large-count forms MPI_<Name>_c, MPI_<IName>_c and MPI_<Name>_init_c, from one
 * parameter list written as params_of(N, C, D): N a count, C an element of a count array, D
 * of a displacement array; (int, int, int) for the classic forms, (MPI_Count, MPI_Count,
 * MPI_Aint) for the _c forms.  The adapter takes counts as MPI_Count and arrays as
 * `const void *` (read with nc_mpi_count_at / nc_mpi_displ_at and f->large). */
#define NC_UNPAREN(...) __VA_ARGS__
#define NC_FORMS_OF(persistent_form, Name, IName, sfx, large, fn, params, args)                                      \
    __attribute__((visibility("default"))) int MPI_##Name##sfx(NC_UNPAREN params)                                     \
    {                                                                                                                 \
        static const nc_call_form_args form = {NULL, 0, MPI_INFO_NULL, 1, large};                                     \
        int err = fn(NC_UNPAREN args, &form);                                                                         \
        return err != NC_RUN_HOST ? err : PMPI_##Name##sfx(NC_UNPAREN args);                                          \
    }                                                                                                                 \
    __attribute__((visibility("default"))) int MPI_##IName##sfx(NC_UNPAREN params, MPI_Request *request)              \
    {                                                                                                                 \
        int err = fn(NC_UNPAREN args, &(nc_call_form_args){request, 0, MPI_INFO_NULL, 0, large});                    \
        return err != NC_RUN_HOST ? err : PMPI_##IName##sfx(NC_UNPAREN args, request);                               \
    }                                                                                                                 \
    persistent_form(Name, sfx, large, fn, params, args)
#ifdef NC_PERSISTENT_COLLECTIVES
#define NC_PERSISTENT_FORM(Name, sfx, large, fn, params, args)                                                       \
    __attribute__((visibility("default"))) int NC_INIT_OF(Name, sfx)(NC_UNPAREN params, MPI_Info info,                \
                                                                  MPI_Request *request)                              \
    {                                                                                                                 \
        int err = fn(NC_UNPAREN args, &(nc_call_form_args){request, 1, info, 0, large});                              \
        return err != NC_RUN_HOST ? err : NC_HOST_INIT_OF(Name, sfx)(NC_UNPAREN args, info, request);                 \
    }
#else
#define NC_PERSISTENT_FORM(Name, sfx, large, fn, params, args)
#endif
#define NC_NO_PERSISTENT_FORM(Name, sfx, large, fn, params, args)
/* The neighbourhood collectives' persistent forms, which a host may lack while it has the
 * others (found at build time apart): NC_NEIGHBOR_COUNT_FORMS makes them where it has them. */
#if defined(NC_PERSISTENT_COLLECTIVES) && defined(NODECOLL_HAVE_NEIGHBOR_PERSISTENT)
#define NC_NEIGHBOR_PERSISTENT_COLLECTIVES 1
#define NC_NEIGHBOR_PERSISTENT_FORM NC_PERSISTENT_FORM
#else
#define NC_NEIGHBOR_PERSISTENT_FORM NC_NO_PERSISTENT_FORM
#endif
#define NC_CALL_FORMS(Name, IName, fn, params, args) NC_FORMS_OF(NC_PERSISTENT_FORM, Name, IName, , 0, fn, params, args)
#define NC_COUNT_FORMS(Name, IName, fn, params_of, args) \
    NC_COUNT_FORMS_OF(NC_PERSISTENT_FORM, Name, IName, fn, params_of, args)
#define NC_NEIGHBOR_COUNT_FORMS(Name, IName, fn, params_of, args) \
    NC_COUNT_FORMS_OF(NC_NEIGHBOR_PERSISTENT_FORM, Name, IName, fn, params_of, args)
/* (persistent_form: the macro that makes the persistent entry points, or nothing) */
#define NC_COUNT_FORMS_OF(persistent_form, Name, IName, fn, params_of, args)                                         \
    NC_FORMS_OF(persistent_form, Name, IName, , 0, fn, params_of(int, int, int), args)                                \
    NC_LARGE_COUNT_FORMS(persistent_form, Name, IName, fn, params_of, args)
/* MPI-4's large-count forms, where the host has them (MPICH 4; not Open MPI 4.1): found at
 * build time.  Every _c function has the persistent form too (MPI-4 has both or neither). */
#ifdef NODECOLL_HAVE_MPI_LARGE_COUNT
#define NC_LARGE_COUNT_FORMS(persistent_form, Name, IName, fn, params_of, args)                                      \
    NC_FORMS_OF(persistent_form, Name, IName, _c, 1, fn, params_of(MPI_Count, MPI_Count, MPI_Aint), args)
#else
#define NC_LARGE_COUNT_FORMS(persistent_form, Name, IName, fn, params_of, args)
#endif
/* The adapter's view of the same parameters (NC_EXPAND: expanded once more, after params_of). */
#define NC_EXPAND(...) __VA_ARGS__
#define NC_ADAPTER_PARAMS(params_of) NC_EXPAND(NC_UNPAREN params_of(MPI_Count, void, void))

/* A collective's adapter: what runs at each start (before the operation is queued: pack
 * what is sent) and at each completion (deliver: unpack; returns an MPI error code or 0),
 * and what frees its resources when the request goes (may be NULL). */
typedef struct nc_mpi_call_form {
    void (*begin)(nc_mpi_request *r);
    int (*deliver)(nc_mpi_request *r);
    void (*release)(nc_mpi_request *r);
    size_t call_head; /* bytes of the request's `call` a reused request has cleared (its
                       * datatype cursor, positioned before any use, excepted) */
} nc_mpi_call_form;

/* Per collective: where its buffers' descriptions live while the operation runs. */
typedef struct nc_mpi_bcast_call {
    nc_buffer buffer;
    nc_data data;
    int is_root;
    MPI_Datatype held_type; /* a derived type the request holds (nc_mpi_hold_type), or MPI_DATATYPE_NULL */
    nc_dt_cursor cursor;    /* (last: about 1 KiB the datatype engine positions before any use) */
} nc_mpi_bcast_call;

/* A reduction (Reduce, Allreduce, Reduce_scatter(_block), Scan, Exscan).  A blocking call
 * keeps it on the stack and borrows the communicator's memory (MPI orders blocking calls); a
 * request owns everything its operation reads until it completes, since several may be
 * pending on one communicator: `counts`, `copies`, and the handles it holds. */
typedef struct nc_mpi_reduce_call {
    nc_mpi_reduction rc;
    const void *user_in; /* the user's input (MPI_IN_PLACE resolved) */
    void *user_out;      /* where the user's result goes here; NULL: nowhere */
    const void *in;      /* what the algorithm reads and writes: the user's buffers, or */
    void *out;           /* layout copies (a user op on a type with gaps) */
    size_t count;        /* elements of the input (Reduce_scatter: the whole vector) */
    size_t out_count;    /* elements of the result here */
    size_t *counts;      /* Reduce_scatter: elements per rank */
    char *copies;        /* the layout copies, or NULL */
    MPI_Datatype held_type; /* a derived type the request holds (nc_mpi_hold_type), or MPI_DATATYPE_NULL */
    MPI_Op held_op;      /* a request's own handle of a user op for the host's steps, or MPI_OP_NULL */
} nc_mpi_reduce_call;

/* Holds a derived datatype for a request, which may outlive the user's MPI_Type_free of it
 * (the host's free then waits for the last release, as the host does for its own pending
 * operations): the same handle, or MPI_DATATYPE_NULL for a predefined or invalid type
 * (nothing to hold).  Released with nc_mpi_release_type. */
MPI_Datatype nc_mpi_hold_type(MPI_Datatype type);
void nc_mpi_release_type(MPI_Datatype *held);
/* MPI_Type_free of a held type: marks it (the last release frees it), sets *type to
 * MPI_DATATYPE_NULL and returns 1; 0 when the host must free it now. */
int nc_mpi_type_free_deferred(MPI_Datatype *type);

/* A nonblocking call as its repetition must match it for its request's plan to serve again:
 * buffers, count, predefined datatype and op, root (unused fields zero). */
typedef struct nc_mpi_reuse_part {
    const void *buf;
    MPI_Count count;
    MPI_Datatype type;
} nc_mpi_reuse_part;
typedef struct nc_mpi_reuse_key {
    nc_coll_id coll;
    int root;
    MPI_Op op;
    nc_mpi_reuse_part part[3]; /* the call's buffers as its collective names them */
} nc_mpi_reuse_key;

struct nc_mpi_request {
    nc_op op;
    nc_args args;
    const nc_mpi_call_form *form;
    /* A nonblocking call whose plan its repetitions can reuse (nc_mpi_request_reusable): its
     * key, and the record its entry checked, which a repetition enters again. */
    int reusable;
    nc_mpi_reuse_key key;
    nc_call_record entered;
    nc_mpi_comm *s;
    MPI_Comm comm;
    int persistent;
    int active;         /* started, not yet completed by a completion call */
    _Atomic int detached; /* freed while active: released when the operation completes */
    int delivered, delivered_err; /* results delivered (and how) since the last start */
    union {
        nc_mpi_bcast_call bcast;
        nc_mpi_reduce_call reduce;
        nc_mpi_move_call move;
    } call;
    nc_mpi_request *next_deferred;
    nc_mpi_request *next_spare;
    /* Kept when the object is reused (request.c): */
    nc_mpi_request *index_next; /* the next object of its handle's bucket */
    MPI_Request handle;         /* the user's: an inactive host persistent request */
    _Atomic int live;           /* handed to the user and not yet freed */
};

/* A fresh request for a call on s (comm), with `form` (a nonblocking call's or persistent
 * init's); NULL when none can be made (the call then goes to the host). */
nc_mpi_request *nc_mpi_request_new(nc_mpi_comm *s, MPI_Comm comm, const nc_mpi_call_form *form, int persistent);
/* A nonblocking call that repeats the one `key` describes, on s: the request that served
 * that call, kept since it completed with its plan and the buffers' descriptions, or NULL.
 * The caller then restarts it (nc_mpi_request_restart) instead of describing and planning
 * the call afresh: a nonblocking call costs about what a persistent start does.  Only calls
 * whose description depends on nothing but the key are kept: predefined datatypes and ops,
 * contiguous data, no staging copy, no memory of the request's own. */
nc_mpi_request *nc_mpi_request_again(nc_mpi_comm *s, const nc_mpi_reuse_key *key);
/* Marks r (issued next) as one whose plan a repetition of `key`, entered as `entered`, may use. */
void nc_mpi_request_reusable(nc_mpi_request *r, const nc_mpi_reuse_key *key, const nc_call_record *entered);
/* Enters r's call again on its communicator and starts it for the user's *request: its error
 * code (raised), or MPI_SUCCESS. */
int nc_mpi_request_restart(nc_mpi_request *r, MPI_Request *request);
/* A nonblocking call of form f that repeats the call kept on s for its key: restarted (1, its
 * error code in *err), else 0 (describe and issue it as usual). */
static inline int nc_mpi_restart_repeated(nc_mpi_comm *s, const nc_call_form_args *f, const nc_mpi_reuse_key *key,
                                          int *err)
{
    if (f->blocking || f->persistent) return 0;
    nc_mpi_request *r = nc_mpi_request_again(s, key);
    if (!r) return 0;
    *err = nc_mpi_request_restart(r, f->request);
    return 1;
}
/* The communicator of s goes: the requests kept on it are released. */
void nc_mpi_requests_forget(nc_mpi_comm *s);
/* Whether handle is one of nodecoll's live requests (else the host's, or none). */
int nc_mpi_request_is_nodecoll(MPI_Request handle);
/* Gives back a request that was never started (the call went to the host after all). */
void nc_mpi_request_discard(nc_mpi_request *r);
/* Starts r: begin, then queue the operation (MPI_Start). */
void nc_mpi_request_start(nc_mpi_request *r);
/* Hands r, whose args are set, to the user: prepares its operation (`bytes` as the registry
 * counts them) and starts it unless it is persistent. */
void nc_mpi_request_issue(nc_mpi_request *r, size_t bytes, MPI_Request *user);

/* Whether a host call may block: nothing of nodecoll's needs progress meanwhile (a peer may
 * be waiting for our part of an operation while we wait in the host for it). */
static inline int nc_mpi_host_may_block(void) { return !nc_engine_outstanding(); }

/* Waits for a host request, progressing nodecoll's operations meanwhile when there are any
 * (else the host's MPI_Wait). */
int nc_mpi_wait_host(MPI_Request *request, MPI_Status *status);
/* Between two tests while waiting: progresses nodecoll's operations, or lets another
 * process run when none moved. */
void nc_mpi_idle(void);
/* Delivers and releases the requests freed while active (MPI_Request_free) whose operations
 * have completed since: each completion call, each blocking call once its communicator's
 * earlier operations have completed, and MPI_Finalize, so that a freed operation's results
 * are in place before any call the user could order after it returns. */
extern _Atomic int nc_mpi_freed_completed; /* how many such requests wait (request.c) */
void nc_mpi_release_freed_completed(void);
static inline void nc_mpi_release_freed(void)
{
    if (atomic_load_explicit(&nc_mpi_freed_completed, memory_order_acquire)) nc_mpi_release_freed_completed();
}
/* One progress pass, no yield (polling calls). */
void nc_mpi_idle_once(void);

#endif
