/* The MPI entry points nodecoll replaces.  Each one either runs the accelerated algorithm
 * or hands the call, unchanged, to the host MPI's PMPI entry point — in particular every
 * call whose arguments are wrong, so the host reports them with its own error class. */
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "nodecoll.h"
#include "datatype.h"
#include "request.h"
#include "state.h"

#define NC_EXPORT __attribute__((visibility("default")))

static const nc_mpi_call_form no_delivery = {NULL, NULL, NULL, 0};

NC_FORM_INLINE int barrier_call(MPI_Comm comm, const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, NC_COLL_BARRIER, f);
    if (!s) return NC_RUN_HOST;
    nc_call_record call = {NC_COLL_BARRIER, NC_CALL_NONE, NC_CALL_NONE, NC_ALG_COUNT, 0, 0};
    int err = nc_mpi_enter_form(s, comm, &call, f);
    if (err) return err;
    if (f->blocking) return nc_mpi_raise(comm, nc_barrier(&s->coll));
    nc_mpi_request *r = nc_mpi_request_new(s, comm, &no_delivery, f->persistent);
    if (!r) return NC_RUN_HOST;
    r->args = (nc_args){.coll = NC_COLL_BARRIER, .root = -1};
    nc_mpi_request_issue(r, 0, f->request);
    return MPI_SUCCESS;
}

NC_CALL_FORMS(Barrier, Ibarrier, barrier_call, (MPI_Comm comm), (comm))

/* ---- Bcast: the same steps for every call form ---------------------------------------- */

/* 0, or 1 when the host must judge the arguments.  (Inlined: with six entry points GCC
 * stopped inlining it, which cost an 8-byte Bcast 1-2 ns.) */
NC_FORM_INLINE int bcast_open(nc_mpi_bcast_call *b, nc_mpi_comm *s, void *buf, MPI_Count count, MPI_Datatype type,
                              int root, MPI_Comm comm)
{
    /* (not the cursor: about 1 KiB that the datatype engine positions before any use;
     * clearing it cost 0.03 us per 8-byte Bcast) */
    b->buffer = (nc_buffer){0};
    b->data = (nc_data){0};
    b->is_root = s->coll.rank == root;
    return root < 0 || root >= s->coll.size || buf == MPI_IN_PLACE ||
           nc_buffer_open_data(&b->buffer, &b->data, &b->cursor, buf, count, type, comm, 0);
}

static void bcast_begin(nc_mpi_bcast_call *b, MPI_Comm comm)
{
    if (b->buffer.staging || !nc_data_is_bytes(&b->data))
        nc_stats_count(NC_COLL_BCAST, b->buffer.staging ? NC_ALG_PACKED : NC_ALG_TYPED, b->buffer.bytes);
    if (b->is_root && b->buffer.staging) nc_buffer_transfer(&b->buffer, comm, 0);
}

static int bcast_deliver(nc_mpi_bcast_call *b, MPI_Comm comm)
{
    return !b->is_root && b->buffer.staging ? nc_buffer_transfer(&b->buffer, comm, 1) : MPI_SUCCESS;
}

static void bcast_release(nc_mpi_bcast_call *b, MPI_Comm comm)
{
    nc_data_release(&b->data);
    nc_buffer_close(&b->buffer, comm, 0);
}

/* A request's packing uses MPI_COMM_SELF (the user's communicator may be freed while the
 * request lives; packing on one machine does not depend on it), and holds a derived
 * datatype (MPI lets the user free the type while the operation is pending). */
static void bcast_request_begin(nc_mpi_request *r) { bcast_begin(&r->call.bcast, MPI_COMM_SELF); }
static int bcast_request_deliver(nc_mpi_request *r) { return bcast_deliver(&r->call.bcast, MPI_COMM_SELF); }
static void bcast_request_release(nc_mpi_request *r)
{
    bcast_release(&r->call.bcast, MPI_COMM_SELF);
    nc_mpi_release_type(&r->call.bcast.held_type);
}
static const nc_mpi_call_form bcast_form = {bcast_request_begin, bcast_request_deliver, bcast_request_release,
                                              offsetof(nc_mpi_bcast_call, cursor)};

/* (MPI_Bcast_c's count is an MPI_Count; the int form's is widened) */
NC_FORM_INLINE int bcast_call(void *buf, MPI_Count count, MPI_Datatype type, int root, MPI_Comm comm,
                              const nc_call_form_args *f)
{
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, NC_COLL_BCAST, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reuse_key key = {NC_COLL_BCAST, root, MPI_OP_NULL, {{buf, count, type}}};
    int err;
    if (nc_mpi_restart_repeated(s, f, &key, &err)) return err;
    nc_mpi_request *r = f->blocking ? NULL : nc_mpi_request_new(s, comm, &bcast_form, f->persistent);
    if (!f->blocking && !r) return NC_RUN_HOST;
    nc_mpi_bcast_call stack_call, *b = r ? &r->call.bcast : &stack_call;
    MPI_Datatype held = r ? nc_mpi_hold_type(type) : MPI_DATATYPE_NULL;
    int bad = bcast_open(b, s, buf, count, held != MPI_DATATYPE_NULL ? held : type, root, comm);
    b->held_type = held;
    nc_call_record call = {NC_COLL_BCAST, root, NC_CALL_NONE, bad ? NC_ALG_PMPI_ARGS : NC_ALG_COUNT,
                           bad ? NC_CALL_ANY_BYTES : b->buffer.bytes, 0};
    err = nc_mpi_enter_form(s, comm, &call, f);
    if (err || bad) {
        if (r) nc_mpi_request_discard(r);
        else bcast_release(b, comm);
        if (err) return err;
        nc_mpi_fallback(NC_COLL_BCAST, NC_ALG_PMPI_ARGS);
        return NC_RUN_HOST;
    }
    if (r) {
        r->args = (nc_args){.coll = NC_COLL_BCAST, .root = root, .bcast = {&b->data, b->buffer.bytes}};
        if (!f->persistent && held == MPI_DATATYPE_NULL && !b->buffer.staging && nc_data_is_bytes(&b->data))
            nc_mpi_request_reusable(r, &key, &call);
        nc_mpi_request_issue(r, b->buffer.bytes, f->request);
        return MPI_SUCCESS;
    }
    bcast_begin(b, comm);
    err = nc_bcast(&s->coll, &b->data, b->buffer.bytes, root);
    int deliver_err = bcast_deliver(b, comm);
    bcast_release(b, comm);
    return nc_mpi_raise(comm, err ? err : deliver_err);
}

#define NC_BCAST_PARAMS(N, C, D) (void *buf, N count, MPI_Datatype type, int root, MPI_Comm comm)
NC_COUNT_FORMS(Bcast, Ibcast, bcast_call, NC_BCAST_PARAMS, (buf, count, type, root, comm))

NC_EXPORT int MPI_Type_free(MPI_Datatype *type)
{
    return nc_mpi_type_free_deferred(type) ? MPI_SUCCESS : PMPI_Type_free(type);
}

NC_EXPORT int MPI_Type_commit(MPI_Datatype *type)
{
    int err = PMPI_Type_commit(type);
    if (err == MPI_SUCCESS) nc_datatype_mark_committed(*type);
    return err;
}

/* With NODECOLL_SETUP_WORLD=1, MPI_COMM_WORLD is set up where every rank is anyway: a program
 * whose first collectives on it are nonblocking or persistent is served from the start.  Off
 * by default, and then the settings are not even read here (a program may still set them
 * before its first collective): set-up is collective, and a rank that starts without this
 * call (a Fortran rank, whose binding calls PMPI_Init; an executable of an MPMD job without
 * nodecoll) would leave the others waiting in MPI_Init. */
static int set_up_world(int err)
{
    const char *asked = getenv("NODECOLL_SETUP_WORLD");
    int64_t on = 0;
    char why_not[200];
    if (err != MPI_SUCCESS || !asked || !*asked ||
        nc_setting_parse(nc_setting_named("setup_world"), asked, &on, why_not, sizeof why_not) || !on)
        return err;
    nc_alg_id why;
    (void)nc_mpi_lookup(MPI_COMM_WORLD, &why);
    return err;
}

NC_EXPORT int MPI_Init(int *argc, char ***argv) { return set_up_world(PMPI_Init(argc, argv)); }

NC_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return set_up_world(PMPI_Init_thread(argc, argv, required, provided));
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
    nc_engine_progress_thread_stop();
    nc_mpi_release_all(); /* (drains every communicator: the operations of freed requests complete) */
    nc_mpi_release_freed(); /* (and deliver, as they would at the application's next call) */
    nc_datatype_release_keyval();
    return PMPI_Finalize();
}
