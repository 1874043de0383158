/* Running operations (engine.h).
 *
 * Each communicator has a queue of the operations started on it, in call order; only its
 * head progresses, so operations on one communicator use the node's counters and slots in
 * the same order on every rank, exactly as blocking calls would.  Communicators with a
 * non-empty queue are on a process-wide list that nc_engine_progress walks.  Whoever
 * progresses a queue holds its communicator's lock (try-lock: a thread that finds it taken
 * leaves that queue to the thread that has it), so under MPI_THREAD_MULTIPLE two completion
 * calls in two threads never run the same operation at once.
 *
 * A blocking call never enters a queue: once its communicator's earlier operations have
 * completed it runs its operation directly (no lock: MPI forbids two threads from calling
 * collectives on one communicator at once), which keeps the common case as cheap as a plain
 * function. */
#include "engine.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "registry.h"
#include "../core/fatal.h"

static _Atomic int outstanding; /* started, not completed nonblocking operations */

/* The optional progress thread (nc_engine_progress_thread_start). */
static _Thread_local int in_progress_thread;
static int progress_thread_calls_host; /* MPI_THREAD_MULTIPLE: it may make host calls */
static _Atomic int progress_thread_on; /* (read without wake_lock when an operation is queued) */
static int progress_thread_stopping;
static long progress_thread_sleep_us;
static pthread_t progress_thread;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static nc_comm *pending; /* communicators whose queue is not empty */

int nc_engine_outstanding(void) { return atomic_load_explicit(&outstanding, memory_order_relaxed); }

/* Whether other threads may start or progress operations (MPI_THREAD_MULTIPLE, the progress
 * thread): only then do queues take their locks and counters locked updates.  Otherwise one
 * thread at a time calls nodecoll (MPI orders the calls of the other thread levels), and a
 * small nonblocking call spent a fifth of its time on locked instructions it did not need. */
_Atomic int nc_engine_sharing;

void nc_engine_share_queues(void) { atomic_store_explicit(&nc_engine_sharing, 1, memory_order_seq_cst); }

static int sharing(void) { return nc_engine_queues_shared(); }

int nc_engine_lock(pthread_mutex_t *m)
{
    int shared = sharing();
    if (shared) pthread_mutex_lock(m);
    return shared;
}

void nc_engine_unlock(pthread_mutex_t *m, int locked)
{
    if (locked) pthread_mutex_unlock(m);
}

void nc_op_init(nc_op *op, nc_comm *c, const nc_algorithm *alg, const nc_args *args, int blocking)
{
    op->c = c;
    op->alg = alg;
    op->args = args;
    op->blocking = blocking;
    op->finished = NULL;
    op->owner = NULL;
    op->next = NULL;
    if (alg->plan) alg->plan(op, op->state);
    nc_op_restart(op);
}

void nc_op_restart(nc_op *op)
{
    *(int *)(void *)op->state = 0; /* (every state begins with its pc) */
    op->err = 0;
    op->wait = (nc_waiting){0};
    atomic_store_explicit(&op->done, 0, memory_order_relaxed);
}

static int try_lock(nc_comm *c)
{
    return !sharing() || !atomic_exchange_explicit(&c->queue_lock, 1, memory_order_acquire);
}
static void unlock(nc_comm *c)
{
    if (sharing()) atomic_store_explicit(&c->queue_lock, 0, memory_order_release);
}
static void lock(nc_comm *c)
{
    while (!try_lock(c)) sched_yield();
}

static void complete(nc_op *op)
{
    op->err = nc_call_result(op->c, op->err); /* (a truncation noted while it ran is its own) */
    if (op->finished) op->finished(op);
    atomic_store_explicit(&op->done, 1, memory_order_release);
}

/* Whether op's last step named a flag that has not reached its value yet: progressing it
 * again could only find the same (as a blocking run waits for it before going on), and a
 * start followed by a wait re-entered a small Allreduce's three nested steps for nothing. */
static int still_waiting(const nc_op *op)
{
    return op->wait.flag && nc_flag_read(op->wait.flag) < op->wait.value;
}

/* Progresses c's queue from its head until an operation would wait (c locked); the number
 * of operations completed. */
static int progress_queue(nc_comm *c)
{
    int completed = 0;
    for (nc_op *op; (op = c->queue_head);) {
        if (still_waiting(op) || op->alg->progress(op, op->state) == NC_PENDING) break;
        c->queue_head = op->next;
        if (!c->queue_head) c->queue_tail = NULL;
        nc_engine_count_add(&c->queued, -1, memory_order_release);
        if (!op->blocking) nc_engine_count_add(&outstanding, -1, memory_order_relaxed);
        complete(op);
        completed++;
    }
    return completed;
}

static void list_pending(nc_comm *c)
{
    int locked = nc_engine_lock(&pending_lock);
    c->next_pending = pending;
    pending = c;
    nc_engine_unlock(&pending_lock, locked);
}

/* Appends op to its communicator's queue (the communicator joins the pending list when its
 * queue was empty; it leaves it in nc_engine_progress once empty again). */
static void enqueue(nc_op *op)
{
    nc_comm *c = op->c;
    lock(c);
    int was_idle = !c->queue_head && !c->listed;
    if (c->queue_tail) c->queue_tail->next = op;
    else c->queue_head = op;
    c->queue_tail = op;
    op->next = NULL;
    nc_engine_count_add(&c->queued, 1, memory_order_relaxed);
    if (!op->blocking && !nc_engine_count_add(&outstanding, 1, memory_order_release) && atomic_load_explicit(&progress_thread_on, memory_order_relaxed)) {
        pthread_mutex_lock(&wake_lock);
        pthread_cond_signal(&wake);
        pthread_mutex_unlock(&wake_lock);
    }
    if (was_idle) {
        c->listed = 1;
        list_pending(c);
    }
    progress_queue(c);
    unlock(c);
}

int nc_engine_may_call_host(void) { return !in_progress_thread || progress_thread_calls_host; }

int nc_host_allowed(nc_op *op)
{
    if (nc_engine_may_call_host()) return 1;
    op->wait = (nc_waiting){0}; /* (left to the application's threads) */
    return 0;
}

int nc_bridge_done(nc_op *op, nc_bridge_req *r)
{
    int err = 0;
    if (r->impl && (!nc_engine_may_call_host() || !op->c->bridge.test(op->c->bridge.ctx, r, &err))) {
        op->wait = (nc_waiting){NULL, 0, r, 0};
        return 0;
    }
    if (err && !op->err) op->err = err;
    return 1;
}

int nc_engine_progress(void)
{
    /* (queues hold nonblocking operations only; acquire: whoever queued one had shared the
     * queues first, if it was to share them) */
    if (!atomic_load_explicit(&outstanding, memory_order_acquire)) return 0;
    int shared = sharing();
    if (shared && pthread_mutex_trylock(&pending_lock)) return 0; /* another thread is at it */
    int completed = 0;
    for (nc_comm **at = &pending, *c; (c = *at);) {
        if (try_lock(c)) {
            completed += progress_queue(c);
            if (!c->queue_head) { /* leaves the list */
                c->listed = 0;
                *at = c->next_pending;
                unlock(c);
                continue;
            }
            unlock(c);
        }
        at = &c->next_pending;
    }
    if (shared) pthread_mutex_unlock(&pending_lock);
    return completed;
}

/* The host's progress, which a rank waiting in nodecoll must keep driving: a peer may need
 * this rank's pending host transfer (a large MPI_Isend, a collective the host serves) before
 * it joins what this rank waits for. */
static void (*host_poke)(void);

void nc_engine_set_host_poke(void (*poke)(void)) { host_poke = poke; }

void nc_engine_poke_host(void)
{
    if (host_poke && nc_engine_may_call_host()) host_poke();
}

/* While a wait yields: the process's other operations, and the host's. */
static void while_waiting(void *unused)
{
    (void)unused;
    if (nc_engine_outstanding()) nc_engine_progress();
    nc_engine_poke_host();
}

/* Waits (spin, yield, sleep as c's node policy says) for the flag w names; while it waits,
 * the other outstanding operations of the process progress. */
static void wait_for_flag(const nc_comm *c, const nc_waiting *w)
{
    nc_wait_policy policy = c->node.wait;
    policy.idle = while_waiting;
    /* A rank that waits for a slot runs ahead of its peers, and each poll takes the line a
     * peer posts its progress to: that peer's next post must fetch it back first, and its
     * later stores queue behind that one (docs/design.md, "Waiting"). */
    if (w->patient) policy.gap = (int)c->cfg.wait_reuse_gap;
    nc_wait_ge(w->flag, w->value, &policy);
}

/* The same for whatever w names.  Host requests are left to their operation's own progress,
 * which tests them (MPI forbids testing one request in two threads at once, and progress
 * runs under the queue's lock or by the operation's only owner). */
static void wait_for(const nc_comm *c, const nc_waiting *w)
{
    if (w->host) {
        nc_engine_progress();
        sched_yield();
        return;
    }
    wait_for_flag(c, w);
}

/* (Another thread may start operations while this one waits: its waits progress them.) */
void nc_op_wait_here(nc_op *op)
{
    if (op->wait.host) {
        sched_yield(); /* (the host step is tested again where it is awaited) */
        return;
    }
    wait_for_flag(op->c, &op->wait);
}

/* A blocking call never enters a queue: it lets its communicator's earlier operations
 * complete, then runs in its caller's thread.  So a blocking operation is never progressed
 * by nc_engine_progress, where waiting in place or in a host call would hold the engine's
 * list (another thread starting an operation would wait for it: a deadlock when that thread
 * is a peer, as in test_engine). */
int nc_op_run(nc_op *op)
{
    nc_comm *c = op->c;
    nc_comm_drain(c);
    while (op->alg->progress(op, op->state) == NC_PENDING) wait_for(c, &op->wait);
    op->err = nc_call_result(c, op->err);
    if (op->finished) op->finished(op); /* (nobody tests a blocking call's `done`) */
    return op->err;
}

/* How long a start over the bound may go without any operation completing. */
#define NC_START_STALL_NS 1000000

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Over the bound a start first progresses to bring the count down, but gives up when the
 * oldest operation stops moving: it may be waiting for peers that have not started it yet
 * and will not before this rank goes on (a valid program), so waiting for it could hang.
 * "Stops moving" is a time, not a count of yields: where ranks outnumber the cores a yield
 * can last a time slice (a count of 1000 made one MPI_Ibarrier take 3 s at 3 ranks on 2). */
void nc_op_start(nc_op *op)
{
    nc_comm *c = op->c;
    int64_t moved = 0;
    while (atomic_load_explicit(&c->queued, memory_order_acquire) >= (int)c->cfg.pending_max) {
        int64_t now = now_ns();
        if (nc_engine_progress() || !moved) moved = now;
        else if (now - moved > NC_START_STALL_NS) break;
        else sched_yield();
    }
    enqueue(op);
}

/* Its own communicator first, without the engine's list lock (usually what completes it;
 * its communicator stays listed, so the next start there need not list it again), then
 * everything else: op may wait for a peer that waits for another operation of ours. */
int nc_op_test(nc_op *op)
{
    if (atomic_load_explicit(&op->done, memory_order_acquire)) return 1;
    nc_comm *c = op->c;
    if (try_lock(c)) {
        progress_queue(c);
        unlock(c);
        if (atomic_load_explicit(&op->done, memory_order_acquire)) return 1;
        /* (nothing outstanding elsewhere: no other queue to walk) */
        if (atomic_load_explicit(&outstanding, memory_order_relaxed) ==
            atomic_load_explicit(&c->queued, memory_order_relaxed))
            return 0;
    }
    nc_engine_progress();
    return atomic_load_explicit(&op->done, memory_order_acquire);
}

void nc_op_wait(nc_op *op)
{
    while (!nc_op_test(op)) {
        /* The head of op's queue waits for something: wait for that (progressing the
         * others meanwhile); if another thread holds the queue, let it work. */
        nc_comm *c = op->c;
        nc_waiting w = {0};
        if (try_lock(c)) {
            if (c->queue_head) w = c->queue_head->wait;
            unlock(c);
        }
        if (!w.flag) { /* (a host step: the queue's progress tests it) */
            sched_yield();
            continue;
        }
        wait_for(c, &w);
    }
}

/* Takes c off the pending list if it is there (its queue is empty). */
static void unlist(nc_comm *c)
{
    int locked = nc_engine_lock(&pending_lock);
    for (nc_comm **at = &pending; *at; at = &(*at)->next_pending)
        if (*at == c) {
            *at = c->next_pending;
            c->listed = 0;
            break;
        }
    nc_engine_unlock(&pending_lock, locked);
}

void nc_comm_drain_queue(nc_comm *c)
{
    while (atomic_load_explicit(&c->queued, memory_order_acquire)) {
        nc_engine_progress();
        sched_yield();
    }
    unlist(c); /* (so that a communicator freed next is not left on the list) */
}

void nc_op_prepare(nc_op *op, nc_comm *c, const nc_args *args, size_t bytes, int blocking)
{
    lock(c); /* (selecting and planning write what the queue's progress also writes) */
    nc_op_init(op, c, nc_registry_select(c, args, bytes), args, blocking);
    unlock(c);
    op->bytes = bytes;
}

void nc_op_count(const nc_op *op)
{
    if (!op->alg->composed) nc_stats_count(op->args->coll, op->alg->id, op->bytes);
}

/* (Only what a blocking run reads is set: the rest of nc_op_init's work showed in 8-byte
 * calls.) */
int nc_collective(nc_comm *c, const nc_args *args, size_t bytes)
{
    /* First: the registry's kept choice and the node's tree cache, which selecting and
     * planning write, are also written by whoever progresses this communicator's queued
     * operations (TSan, test_engine.grouped). */
    nc_comm_drain(c);
    nc_op op;
    op.c = c;
    op.alg = nc_registry_select(c, args, bytes);
    op.args = args;
    op.bytes = bytes;
    op.blocking = 1;
    op.finished = NULL;
    op.err = 0;
    op.wait = (nc_waiting){0};
    *(int *)(void *)op.state = 0;
    nc_op_count(&op);
    if (op.alg->plan) op.alg->plan(&op, op.state);
    return nc_op_run(&op);
}

/* ---- the progress thread ---------------------------------------------------------------
 * Sleeps on a condition while nothing is outstanding; otherwise progresses, yielding after a
 * pass that completed nothing and sleeping once yielding has not helped for a while. */
static void *progress_main(void *unused)
{
    (void)unused;
    in_progress_thread = 1;
    int idle_passes = 0;
    for (;;) {
        pthread_mutex_lock(&wake_lock);
        while (!nc_engine_outstanding() && !progress_thread_stopping) pthread_cond_wait(&wake, &wake_lock);
        int stopping = progress_thread_stopping;
        pthread_mutex_unlock(&wake_lock);
        if (stopping) return NULL;
        if (nc_engine_progress()) idle_passes = 0;
        else if (++idle_passes < 64) sched_yield();
        else {
            struct timespec pause = {0, progress_thread_sleep_us * 1000};
            nanosleep(&pause, NULL);
        }
    }
}

void nc_engine_progress_thread_start(int may_call_host, long sleep_us)
{
    nc_engine_share_queues();
    pthread_mutex_lock(&wake_lock);
    if (!atomic_load_explicit(&progress_thread_on, memory_order_relaxed)) {
        progress_thread_calls_host = may_call_host;
        progress_thread_sleep_us = sleep_us;
        progress_thread_stopping = 0;
        atomic_store_explicit(&progress_thread_on, !pthread_create(&progress_thread, NULL, progress_main, NULL),
                              memory_order_relaxed);
    }
    pthread_mutex_unlock(&wake_lock);
}

void nc_engine_progress_thread_stop(void)
{
    pthread_mutex_lock(&wake_lock);
    int on = atomic_load_explicit(&progress_thread_on, memory_order_relaxed);
    progress_thread_stopping = 1;
    atomic_store_explicit(&progress_thread_on, 0, memory_order_relaxed);
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&wake_lock);
    if (on) pthread_join(progress_thread, NULL);
}
