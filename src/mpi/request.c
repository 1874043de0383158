/* Nonblocking and persistent collectives as MPI requests (request.h). */
#include "request.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_decode.h"
#include "errors.h"
#include "../core/fatal.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* Request objects are kept for reuse, each with its handle for good (see take_request), and
 * indexed by handle in buckets that only ever grow: a completion call finds a handle's object
 * without a lock, and the object's `live` flag says whether it is the user's right now. */
#define NC_REQUEST_BUCKETS 256
static _Atomic(nc_mpi_request *) buckets[NC_REQUEST_BUCKETS];
static _Atomic int live_count; /* lets completion calls skip the lookup when zero */

static int any_live(void) { return atomic_load_explicit(&live_count, memory_order_acquire) != 0; }

static unsigned bucket_of(MPI_Request handle)
{
    uint64_t key = 0;
    memcpy(&key, &handle, sizeof handle < sizeof key ? sizeof handle : sizeof key);
    return (unsigned)((key * 0x9e3779b97f4a7c15ULL) >> 56) % NC_REQUEST_BUCKETS;
}

static nc_mpi_request *find(MPI_Request handle)
{
    if (handle == MPI_REQUEST_NULL) return NULL;
    for (nc_mpi_request *r = atomic_load_explicit(&buckets[bucket_of(handle)], memory_order_acquire); r;
         r = r->index_next)
        if (r->handle == handle) return atomic_load_explicit(&r->live, memory_order_acquire) ? r : NULL;
    return NULL;
}

static void index_request(nc_mpi_request *r)
{
    _Atomic(nc_mpi_request *) *head = &buckets[bucket_of(r->handle)];
    nc_mpi_request *first = atomic_load_explicit(head, memory_order_relaxed);
    do r->index_next = first;
    while (!atomic_compare_exchange_weak_explicit(head, &first, r, memory_order_release, memory_order_relaxed));
}

int nc_mpi_request_is_nodecoll(MPI_Request handle) { return any_live() && find(handle) != NULL; }

static void link_live(nc_mpi_request *r)
{
    atomic_store_explicit(&r->live, 1, memory_order_release);
    nc_engine_count_add(&live_count, 1, memory_order_release);
}

static void unlink_live(nc_mpi_request *r)
{
    if (!nc_engine_flag_swap(&r->live, 0, memory_order_acq_rel)) return;
    nc_engine_count_add(&live_count, -1, memory_order_release);
}

/* Starts the progress thread on the first request when the settings ask for it. */
static void start_progress_thread(const nc_config *cfg)
{
    static _Atomic int started;
    if (!cfg->progress_thread || atomic_exchange_explicit(&started, 1, memory_order_relaxed)) return;
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    nc_engine_progress_thread_start(level == MPI_THREAD_MULTIPLE, (long)cfg->wait_sleep_us);
}

/* Handles are kept for reuse, never freed before MPI_Finalize: MPICH 4.0.2 recycles the
 * object of a freed persistent receive for the application's next persistent collective,
 * which then hangs (a plain MPICH program shows it: Recv_init, Request_free, Bcast_init,
 * Start, Wait).  So each request object keeps its handle, and objects go back to a spare list
 * (a fresh calloc, handle and index entry per nonblocking call cost more than the call). */
static pthread_mutex_t spares_lock = PTHREAD_MUTEX_INITIALIZER;
static nc_mpi_request *spares;

/* Clears a reused object as calloc did, except what every use sets before reading: the
 * operation's state (planned), the part of the call its form does not use and the datatype
 * cursors at the end of the calls (positioned by the datatype engine), and the index link
 * and handle (a lock-free find may be reading them).  (Clearing all 2.7 KiB cost a small
 * nonblocking call about as much as its operation.) */
static void clear_request(nc_mpi_request *r, const nc_mpi_call_form *form)
{
    memset(r, 0, offsetof(nc_mpi_request, op.state));
    memset(&r->args, 0, offsetof(nc_mpi_request, call) - offsetof(nc_mpi_request, args));
    memset(&r->call, 0, form->call_head);
    memset(&r->next_deferred, 0, offsetof(nc_mpi_request, index_next) - offsetof(nc_mpi_request, next_deferred));
}

/* A cleared request object with a handle, or NULL. */
static nc_mpi_request *take_request(const nc_mpi_call_form *form)
{
    int locked = nc_engine_lock(&spares_lock); /* (else one thread at a time is here) */
    nc_mpi_request *r = spares;
    if (r) spares = r->next_spare;
    nc_engine_unlock(&spares_lock, locked);
    if (r) {
        clear_request(r, form);
        return r;
    }
    r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &r->handle) != MPI_SUCCESS) {
        free(r);
        return NULL;
    }
    index_request(r);
    return r;
}

static void give_back_request(nc_mpi_request *r)
{
    int locked = nc_engine_lock(&spares_lock);
    r->next_spare = spares;
    spares = r;
    nc_engine_unlock(&spares_lock, locked);
}

/* Under MPI_THREAD_MULTIPLE other threads may start and progress operations: the engine's
 * queues must take their locks from the first request on. */
static void share_queues_if_threads_may(void)
{
    static _Atomic int known;
    if (atomic_load_explicit(&known, memory_order_acquire)) return;
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) nc_engine_share_queues();
    atomic_store_explicit(&known, 1, memory_order_release);
}

nc_mpi_request *nc_mpi_request_new(nc_mpi_comm *s, MPI_Comm comm, const nc_mpi_call_form *form, int persistent)
{
    nc_mpi_release_freed();
    share_queues_if_threads_may();
    start_progress_thread(&s->coll.cfg);
    nc_mpi_request *r = take_request(form);
    if (!r) return NULL;
    r->s = s;
    nc_mpi_comm_hold(s);
    r->comm = comm;
    r->form = form;
    r->persistent = persistent;
    return r;
}

static void destroy(nc_mpi_request *r)
{
    if (r->form->release) r->form->release(r);
    nc_mpi_comm_drop(r->s);
    give_back_request(r);
}

void nc_mpi_request_discard(nc_mpi_request *r) { destroy(r); }

static void operation_finished(nc_op *op);

void nc_mpi_request_issue(nc_mpi_request *r, size_t bytes, MPI_Request *user)
{
    nc_op_prepare(&r->op, &r->s->coll, &r->args, bytes, 0);
    r->op.owner = r;
    r->op.finished = operation_finished;
    *user = r->handle;
    link_live(r);
    if (!r->persistent) nc_mpi_request_start(r);
}

/* ---- repeated nonblocking calls ------------------------------------------------------- */

void nc_mpi_request_reusable(nc_mpi_request *r, const nc_mpi_reuse_key *key, const nc_call_record *entered)
{
    r->reusable = 1;
    r->key = *key;
    r->entered = *entered;
}

static int same_call(const nc_mpi_reuse_key *a, const nc_mpi_reuse_key *b)
{
    if (a->coll != b->coll || a->root != b->root || a->op != b->op) return 0;
    for (int i = 0; i < 3; i++)
        if (a->part[i].buf != b->part[i].buf || a->part[i].count != b->part[i].count ||
            a->part[i].type != b->part[i].type)
            return 0;
    return 1;
}

/* Takes the request kept for coll on s (exchanged: one taker only, also against the
 * communicator's release; sequentially consistent, see keep). */
static nc_mpi_request *take_kept(nc_mpi_comm *s, nc_coll_id coll) { return atomic_exchange(&s->kept[coll], NULL); }

nc_mpi_request *nc_mpi_request_again(nc_mpi_comm *s, const nc_mpi_reuse_key *key)
{
    if (!atomic_load_explicit(&s->kept[key->coll], memory_order_relaxed)) return NULL; /* (most calls) */
    nc_mpi_request *r = take_kept(s, key->coll);
    if (r && same_call(&r->key, key)) return r;
    if (r) destroy(r); /* (another call now: it is kept in its place once it completes) */
    return NULL;
}

int nc_mpi_request_restart(nc_mpi_request *r, MPI_Request *request)
{
    nc_mpi_release_freed();
    nc_call_record call = r->entered;
    int err = nc_mpi_enter_nonblocking(r->s, r->comm, &call);
    if (err) {
        destroy(r);
        return err;
    }
    *request = r->handle;
    link_live(r);
    nc_mpi_request_start(r);
    nc_stats_count(NC_COLL_REQUESTS, NC_ALG_REPEATED, r->op.bytes);
    return MPI_SUCCESS;
}

/* A completed request that a repetition of its call may restart: kept on its communicator
 * (replacing, and releasing, the one kept before), unless the communicator is going. */
static void keep(nc_mpi_request *r)
{
    nc_mpi_comm *s = r->s;
    nc_mpi_request *old = atomic_exchange(&s->kept[r->key.coll], r);
    if (old) destroy(old);
    /* The communicator's release stores `going`, then takes every kept request; I store r,
     * then load `going`.  All sequentially consistent (a store then a load on another
     * location may otherwise both see the old values, and nobody would release r): either
     * its exchange finds r, or I see `going` and take r back; whichever takes r releases it. */
    if (atomic_load(&s->going) && (old = take_kept(s, r->key.coll))) destroy(old);
}

void nc_mpi_requests_forget(nc_mpi_comm *s)
{
    atomic_store(&s->going, 1);
    for (int coll = 0; coll < NC_COLL_COUNT; coll++) {
        nc_mpi_request *r = take_kept(s, (nc_coll_id)coll);
        if (r) destroy(r);
    }
}

/* Delivers r's results (a completion call, or the engine for a freed request); its MPI
 * error code. */
static int deliver(nc_mpi_request *r)
{
    if (r->delivered) return r->delivered_err;
    int err = r->form->deliver ? r->form->deliver(r) : MPI_SUCCESS;
    if (r->op.err == NC_TRUNCATED) err = MPI_ERR_TRUNCATE;
    else if (r->op.err) err = r->op.err;
    r->delivered = 1;
    r->delivered_err = err;
    return err;
}

/* A request freed while active is released by whoever comes second: the engine completing
 * its operation, or MPI_Request_free.  Whether I am second (the exchange is locked only where
 * another thread may be the first: a small request paid for it at every completion). */
static int second_to_detach(nc_mpi_request *r)
{
    return nc_engine_flag_swap(&r->detached, 1, memory_order_acq_rel);
}

static void release_detached(nc_mpi_request *r)
{
    /* (the engine stores `done` just after `finished` returns) */
    while (!atomic_load_explicit(&r->op.done, memory_order_acquire)) sched_yield();
    deliver(r);
    unlink_live(r);
    destroy(r);
}

/* Freed requests whose operations the engine completed (never released inside its progress):
 * delivered and released by nc_mpi_release_freed, from the application's next call. */
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static nc_mpi_request *deferred;
_Atomic int nc_mpi_freed_completed;

void nc_mpi_release_freed_completed(void)
{
    pthread_mutex_lock(&deferred_lock);
    nc_mpi_request *list = deferred;
    deferred = NULL;
    atomic_store_explicit(&nc_mpi_freed_completed, 0, memory_order_release);
    pthread_mutex_unlock(&deferred_lock);
    while (list) {
        nc_mpi_request *next = list->next_deferred;
        release_detached(list);
        list = next;
    }
}

/* Runs inside the engine's progress, with the operation's communicator locked: a freed
 * request is never released here (that may free the communicator's state under the engine)
 * but by the application's next call into nodecoll. */
static void operation_finished(nc_op *op)
{
    nc_mpi_request *r = op->owner;
    if (!second_to_detach(r)) return;
    pthread_mutex_lock(&deferred_lock);
    r->next_deferred = deferred;
    deferred = r;
    atomic_fetch_add_explicit(&nc_mpi_freed_completed, 1, memory_order_release);
    pthread_mutex_unlock(&deferred_lock);
}

void nc_mpi_request_start(nc_mpi_request *r)
{
    if (r->form->begin) r->form->begin(r);
    nc_op_restart(&r->op);
    nc_op_count(&r->op);
    atomic_store_explicit(&r->detached, 0, memory_order_relaxed);
    r->delivered = 0;
    r->active = 1;
    nc_op_start(&r->op);
}

/* ---- completion ------------------------------------------------------------------------ */

static void empty_status(MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE) return;
    MPI_Request inactive = MPI_REQUEST_NULL;
    PMPI_Wait(&inactive, status); /* the host's own empty status */
}

/* r's operation is done: deliver, fill the status, and retire the request (a persistent one
 * becomes inactive, any other is freed and the user's handle nulled).  Its MPI error code,
 * raised on its communicator. */
static int retire(nc_mpi_request *r, MPI_Request *user, MPI_Status *status)
{
    int err = deliver(r);
    MPI_Comm comm = r->comm;
    empty_status(status);
    r->active = 0;
    if (!r->persistent) {
        unlink_live(r);
        if (r->reusable && !err) keep(r);
        else destroy(r);
        *user = MPI_REQUEST_NULL;
    }
    nc_mpi_release_freed(); /* (earlier operations, freed by the user, completed before r's) */
    return err ? nc_mpi_raise(comm, err) : MPI_SUCCESS;
}

/* A test that finds its operation unfinished drives the host too, as the host's own test
 * would: a peer may need this rank's pending host transfer before it can join. */
static int done(nc_mpi_request *r)
{
    if (nc_op_test(&r->op)) return 1;
    nc_engine_poke_host();
    return 0;
}

void nc_mpi_idle(void)
{
    nc_mpi_release_freed();
    if (!nc_engine_progress()) sched_yield();
}

/* An active nodecoll request behind handle h, else NULL (host requests, inactive ones). */
static nc_mpi_request *active_request(MPI_Request h)
{
    nc_mpi_request *r = find(h);
    return r && r->active ? r : NULL;
}

void nc_mpi_idle_once(void)
{
    nc_engine_progress();
    nc_mpi_release_freed();
}

/* Before a host test: nodecoll's operations progress in every completion call, as the
 * host's own would. */
static void progress_pending(void)
{
    if (nc_engine_outstanding()) nc_engine_progress();
    nc_mpi_release_freed();
}

NC_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    nc_mpi_request *r = any_live() ? active_request(*request) : NULL;
    if (r) {
        nc_op_wait(&r->op);
        return retire(r, request, status);
    }
    return nc_mpi_wait_host(request, status);
}

int nc_mpi_wait_host(MPI_Request *request, MPI_Status *status)
{
    if (nc_mpi_host_may_block()) return PMPI_Wait(request, status);
    for (;;) {
        int flag = 0, err = PMPI_Test(request, &flag, status);
        if (err != MPI_SUCCESS || flag) return err;
        nc_mpi_idle();
    }
}

NC_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    progress_pending();
    nc_mpi_request *r = any_live() ? active_request(*request) : NULL;
    if (!r) return PMPI_Test(request, flag, status);
    *flag = done(r);
    return *flag ? retire(r, request, status) : MPI_SUCCESS;
}

NC_EXPORT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    progress_pending();
    nc_mpi_request *r = any_live() ? active_request(request) : NULL;
    if (!r) return PMPI_Request_get_status(request, flag, status);
    *flag = done(r);
    if (!*flag) return MPI_SUCCESS;
    empty_status(status);
    int err = deliver(r); /* (complete means the data is there) */
    return err ? nc_mpi_raise(r->comm, err) : MPI_SUCCESS;
}

NC_EXPORT int MPI_Request_free(MPI_Request *request)
{
    nc_mpi_request *r = any_live() ? find(*request) : NULL;
    if (!r) return PMPI_Request_free(request);
    *request = MPI_REQUEST_NULL;
    if (!r->active) {
        unlink_live(r);
        destroy(r);
    } else if (second_to_detach(r)) {
        release_detached(r); /* its operation had completed already */
    }
    return MPI_SUCCESS;
}

static int start_one(MPI_Request *request)
{
    nc_mpi_request *r = any_live() ? find(*request) : NULL;
    if (!r || !r->persistent || r->active) return PMPI_Start(request); /* (the host judges misuse) */
    nc_mpi_request_start(r);
    return MPI_SUCCESS;
}

NC_EXPORT int MPI_Start(MPI_Request *request) { return start_one(request); }

NC_EXPORT int MPI_Startall(int count, MPI_Request requests[])
{
    if (!any_live() || count <= 0) return PMPI_Startall(count, requests);
    for (int i = 0; i < count; i++) {
        int err = start_one(&requests[i]);
        if (err != MPI_SUCCESS) return err;
    }
    return MPI_SUCCESS;
}

/* ---- arrays mixing nodecoll and host requests -------------------------------------------
 * The host sees a copy of the array in which the active nodecoll requests are
 * MPI_REQUEST_NULL; what it does to its entries is copied back. */
typedef struct mixed {
    int count;
    nc_mpi_request **ours; /* per entry: an active nodecoll request, or NULL */
    MPI_Request *host;     /* the host's view */
    int active_ours;
} mixed;

static int mixed_open(mixed *m, int count, const MPI_Request *requests)
{
    m->count = count;
    m->active_ours = 0;
    m->ours = calloc((size_t)count, sizeof *m->ours);
    m->host = malloc((size_t)count * sizeof *m->host);
    if (!m->ours || !m->host) nc_fatal("out of memory for %d requests", count);
    for (int i = 0; i < count; i++) {
        m->ours[i] = active_request(requests[i]);
        m->host[i] = m->ours[i] ? MPI_REQUEST_NULL : requests[i];
        m->active_ours += m->ours[i] != NULL;
    }
    return m->active_ours;
}

static void mixed_close(mixed *m)
{
    free(m->ours);
    free(m->host);
}

static void copy_back_host(const mixed *m, MPI_Request *requests)
{
    for (int i = 0; i < m->count; i++)
        if (!m->ours[i]) requests[i] = m->host[i];
}

static MPI_Status *status_at(MPI_Status *statuses, int i)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Retires every done nodecoll request of m; the number retired; *err: an error of one of
 * them.  With `indices` (the some-forms), their indices are appended there and their
 * statuses fill `statuses` in the same order; else each status is at its request's index. */
static int retire_done(mixed *m, MPI_Request *requests, MPI_Status *statuses, int *indices, int *err)
{
    int retired = 0;
    for (int i = 0; i < m->count; i++) {
        if (!m->ours[i] || !done(m->ours[i])) continue;
        MPI_Status *status = status_at(statuses, indices ? retired : i);
        int e = retire(m->ours[i], &requests[i], status);
        if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = e;
        if (e != MPI_SUCCESS) *err = e;
        m->ours[i] = NULL;
        m->host[i] = requests[i]; /* (a persistent one is now inactive; else null) */
        m->active_ours--;
        if (indices) indices[retired] = i;
        retired++;
    }
    return retired;
}

static int all_ours_done(const mixed *m)
{
    for (int i = 0; i < m->count; i++)
        if (m->ours[i] && !done(m->ours[i])) return 0;
    return 1;
}


NC_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    mixed m;
    if ((!any_live() && nc_mpi_host_may_block()) || count <= 0) return PMPI_Waitall(count, requests, statuses);
    if (!mixed_open(&m, count, requests) && nc_mpi_host_may_block()) {
        mixed_close(&m);
        return PMPI_Waitall(count, requests, statuses);
    }
    /* The host completes its entries all at once, writing every status (ours empty); ours
     * are retired last, so their statuses stand. */
    int err = MPI_SUCCESS, host_done = 0, host_err = MPI_SUCCESS;
    while (!host_done || !all_ours_done(&m)) {
        if (!host_done) {
            host_err = PMPI_Testall(count, m.host, &host_done, statuses);
            if (host_done) copy_back_host(&m, requests);
        }
        if (!host_done || !all_ours_done(&m)) nc_mpi_idle();
    }
    retire_done(&m, requests, statuses, NULL, &err);
    mixed_close(&m);
    return err != MPI_SUCCESS ? err : host_err;
}

NC_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    mixed m;
    progress_pending();
    if (!any_live() || count <= 0) return PMPI_Testall(count, requests, flag, statuses);
    if (!mixed_open(&m, count, requests)) {
        mixed_close(&m);
        return PMPI_Testall(count, requests, flag, statuses);
    }
    /* Nothing may complete unless everything does: test ours first, then let the host
     * complete its entries (all or none). */
    int err = MPI_SUCCESS;
    *flag = 0;
    if (all_ours_done(&m)) err = PMPI_Testall(count, m.host, flag, statuses);
    if (*flag) {
        copy_back_host(&m, requests);
        int ours_err = MPI_SUCCESS;
        retire_done(&m, requests, statuses, NULL, &ours_err);
        if (ours_err != MPI_SUCCESS) err = ours_err;
    }
    mixed_close(&m);
    return err;
}

/* One pass of Waitany/Testany: 1 when it has an answer in *index. */
static int any_pass(mixed *m, MPI_Request *requests, int *index, MPI_Status *status, int *err)
{
    for (int i = 0; i < m->count; i++)
        if (m->ours[i] && done(m->ours[i])) {
            *index = i;
            *err = retire(m->ours[i], &requests[i], status);
            return 1;
        }
    int flag = 0;
    *err = PMPI_Testany(m->count, m->host, index, &flag, status);
    if (*err != MPI_SUCCESS) return 1;
    if (flag && *index != MPI_UNDEFINED) {
        requests[*index] = m->host[*index];
        return 1;
    }
    return flag && !m->active_ours; /* nothing active at all: MPI_UNDEFINED */
}

NC_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    mixed m;
    if ((!any_live() && nc_mpi_host_may_block()) || count <= 0) return PMPI_Waitany(count, requests, index, status);
    if (!mixed_open(&m, count, requests) && nc_mpi_host_may_block()) {
        mixed_close(&m);
        return PMPI_Waitany(count, requests, index, status);
    }
    int err = MPI_SUCCESS;
    while (!any_pass(&m, requests, index, status, &err)) nc_mpi_idle();
    mixed_close(&m);
    return err;
}

NC_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    mixed m;
    progress_pending();
    if (!any_live() || count <= 0) return PMPI_Testany(count, requests, index, flag, status);
    if (!mixed_open(&m, count, requests)) {
        mixed_close(&m);
        return PMPI_Testany(count, requests, index, flag, status);
    }
    int err = MPI_SUCCESS;
    *flag = any_pass(&m, requests, index, status, &err);
    if (!*flag) *index = MPI_UNDEFINED;
    mixed_close(&m);
    return err;
}

/* One pass of Waitsome/Testsome: ours first, then the host's; 1 when it has an answer. */
static int some_pass(mixed *m, MPI_Request *requests, int *outcount, int *indices, MPI_Status *statuses, int *err)
{
    int ours = retire_done(m, requests, statuses, indices, err);
    int host_count = 0;
    MPI_Status *host_statuses = statuses == MPI_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : statuses + ours;
    int e = PMPI_Testsome(m->count, m->host, &host_count, indices + ours, host_statuses);
    if (e != MPI_SUCCESS && *err == MPI_SUCCESS) *err = e;
    if (host_count == MPI_UNDEFINED) {
        *outcount = ours ? ours : m->active_ours ? 0 : MPI_UNDEFINED;
    } else {
        for (int k = 0; k < host_count; k++) requests[indices[ours + k]] = m->host[indices[ours + k]];
        *outcount = ours + host_count;
    }
    return *outcount != 0;
}

NC_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    mixed m;
    if ((!any_live() && nc_mpi_host_may_block()) || incount <= 0) return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    if (!mixed_open(&m, incount, requests) && nc_mpi_host_may_block()) {
        mixed_close(&m);
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    int err = MPI_SUCCESS;
    while (!some_pass(&m, requests, outcount, indices, statuses, &err)) nc_mpi_idle();
    mixed_close(&m);
    return err;
}

NC_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    mixed m;
    progress_pending();
    if (!any_live() || incount <= 0) return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    if (!mixed_open(&m, incount, requests)) {
        mixed_close(&m);
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    }
    int err = MPI_SUCCESS;
    some_pass(&m, requests, outcount, indices, statuses, &err);
    mixed_close(&m);
    return err;
}

/* Derived types a request uses: MPI lets the user free one while the operation is pending
 * (and after a persistent init), and the host keeps such a type alive, under the same
 * handle, for as long as the operation needs it; a user op's function is given that handle
 * and may compare or query it.  nodecoll does the same: MPI_Type_free of a held type only
 * marks it, and the last release frees it.  (A duplicate would be another handle.)  A type
 * committed behind nodecoll's back is the exception: MPICH's mpi_f08 binding makes one for an
 * array section and frees it through PMPI_Type_free as soon as the call returns, so the
 * request holds its own duplicate of it (a user op sees a handle the program never had anyway). */
typedef struct held_type {
    MPI_Datatype type;
    int holds, freed;
    struct held_type *next;
} held_type;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static held_type *held_types;
static _Atomic int holds_total; /* (MPI_Type_free looks only when some are held) */

static held_type **find_held(MPI_Datatype type)
{
    held_type **at = &held_types;
    while (*at && (*at)->type != type) at = &(*at)->next;
    return at;
}

MPI_Datatype nc_mpi_hold_type(MPI_Datatype type)
{
    int integers, addresses, types, combiner;
    if (type == MPI_DATATYPE_NULL || nc_datatype_known_predefined(type) || PMPI_Type_get_envelope(type, &integers, &addresses, &types, &combiner) != MPI_SUCCESS ||
        combiner == MPI_COMBINER_NAMED)
        return MPI_DATATYPE_NULL;
    /* whoever committed it behind nodecoll's back frees it right after the call */
    int own = !nc_mpi_combiner_predefined(combiner) && nc_datatype_committed_elsewhere(type);
    if (own && (PMPI_Type_dup(type, &type) != MPI_SUCCESS || PMPI_Type_commit(&type) != MPI_SUCCESS))
        nc_fatal("duplicating a datatype for a request failed");
    pthread_mutex_lock(&held_lock);
    held_type **at = find_held(type);
    if (!*at && (*at = calloc(1, sizeof **at))) *(*at) = (held_type){.type = type, .freed = own};
    if (*at) {
        (*at)->holds++;
        atomic_fetch_add_explicit(&holds_total, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&held_lock);
    return *at ? type : MPI_DATATYPE_NULL;
}

void nc_mpi_release_type(MPI_Datatype *held)
{
    if (*held == MPI_DATATYPE_NULL) return;
    pthread_mutex_lock(&held_lock);
    held_type **at = find_held(*held), *h = *at;
    if (h && --h->holds == 0) {
        *at = h->next;
        if (h->freed) PMPI_Type_free(&h->type);
        free(h);
    }
    if (h) atomic_fetch_sub_explicit(&holds_total, 1, memory_order_relaxed);
    pthread_mutex_unlock(&held_lock);
    *held = MPI_DATATYPE_NULL;
}

int nc_mpi_type_free_deferred(MPI_Datatype *type)
{
    if (!atomic_load_explicit(&holds_total, memory_order_relaxed) || !type) return 0;
    pthread_mutex_lock(&held_lock);
    held_type *h = *find_held(*type);
    int marked = h && !h->freed;
    if (marked) {
        h->freed = 1;
        *type = MPI_DATATYPE_NULL;
    }
    pthread_mutex_unlock(&held_lock);
    return marked;
}
