/* Hang reports and dead-peer checks (watch.h).
 *
 * Everything a report says is read from the segment: a flag's owner and name from its
 * address (core/segment.h), the owner's pid from its info line, the call it entered last
 * from its entered line; the waiting rank's own call from its counter.  No message crosses
 * between ranks, so a rank can describe a peer that is stuck, descheduled or dead. */
#include "watch.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/fatal.h"
#include "../core/team.h"
#include "check.h"

static nc_comm *comm_of(nc_wait_watch *w) { return (nc_comm *)((char *)w - offsetof(nc_comm, watch.hook)); }

static int comm_rank_of(const nc_comm *c, int node_rank)
{
    return c->node_members[c->node_start[c->node_of[c->rank]] + node_rank];
}

static uint64_t pid_of(const nc_node *n, int node_rank) { return nc_rank_info_read(nc_node_ctl(n, node_rank)).proc.pid; }

/* "MPI_Bcast (call 7)"; "no call yet" before the first. */
static void describe_entered(nc_entered e, char *out, size_t size)
{
    char name[64];
    if (!e.call) {
        snprintf(out, size, "no call yet");
        return;
    }
    nc_call_name(e.coll, name, sizeof name);
    snprintf(out, size, "%s (call %" PRIu64 ")", name, e.call);
}

/* What this rank waits in: its own call, or a node-shared handle's (which is not numbered:
 * the MPI call before it is named instead). */
static void describe_my_call(const nc_comm *c, const nc_flag_owner *o, char *out, size_t size)
{
    char last[96];
    describe_entered(nc_call_entered(&c->node, c->node.rank), last, sizeof last);
    if (!strncmp(o->name, "node-shared", 11)) snprintf(out, size, "a nodecoll_shared call (after %s)", last);
    else snprintf(out, size, "%s", last);
}

/* "rank 1 (node rank 1, pid 124)" for the flag's owner. */
static void describe_owner(const nc_comm *c, const nc_flag_owner *o, char *out, size_t size)
{
    snprintf(out, size, "rank %d (node rank %d, pid %" PRIu64 ")", comm_rank_of(c, o->rank), o->rank,
             pid_of(&c->node, o->rank));
}

/* "its fanin flag is 6, needs 7; rank 1 last entered MPI_Allreduce (call 6)" */
static void describe_flag(const nc_comm *c, const nc_flag_owner *o, const nc_flag *f, uint64_t target, char *out,
                          size_t size)
{
    char index[16] = "", peer_call[96];
    if (o->index >= 0) snprintf(index, sizeof index, " %d", o->index);
    int at = snprintf(out, size, "its %s flag%s is %" PRIu64 ", needs %" PRIu64, o->name, index, nc_flag_read(f), target);
    if (o->rank < 0 || o->rank == c->node.rank || at < 0 || (size_t)at >= size) return;
    describe_entered(nc_call_entered(&c->node, o->rank), peer_call, sizeof peer_call);
    snprintf(out + at, size - (size_t)at, "; rank %d last entered %s", comm_rank_of(c, o->rank), peer_call);
}

static void report(nc_wait_watch *w, const nc_flag *f, uint64_t target, int64_t waited_ns)
{
    nc_comm *c = comm_of(w);
    if (c->watch.reported_call == c->calls) return; /* once per call, whatever it waits for next */
    c->watch.reported_call = c->calls;
    nc_flag_owner o = nc_segment_flag_owner(c->node.base, &c->node.layout, f);
    char call[160], owner[96] = "itself", flag[256];
    describe_my_call(c, &o, call, sizeof call);
    if (o.rank < 0) snprintf(owner, sizeof owner, "a flag outside the node's segment");
    else if (o.rank != c->node.rank) describe_owner(c, &o, owner, sizeof owner);
    describe_flag(c, &o, f, target, flag, sizeof flag);
    fprintf(stderr, "nodecoll: rank %d (pid %" PRIu64 ") has waited %.1f s in %s for %s: %s\n", c->rank,
            pid_of(&c->node, c->node.rank), (double)waited_ns * 1e-9, call, owner, flag);
}

static void check(nc_wait_watch *w, const nc_flag *f, uint64_t target, int64_t waited_ns)
{
    nc_comm *c = comm_of(w);
    nc_flag_owner o = nc_segment_flag_owner(c->node.base, &c->node.layout, f);
    if (o.rank < 0 || o.rank == c->node.rank || !c->watch.watchable[o.rank]) return;
    nc_rank_info peer = nc_rank_info_read(nc_node_ctl(&c->node, o.rank));
    const char *why = "";
    if (nc_proc_look(&peer.proc, &why) != NC_PROC_DEAD) return;
    char call[160], owner[96], flag[256];
    describe_my_call(c, &o, call, sizeof call);
    describe_owner(c, &o, owner, sizeof owner);
    describe_flag(c, &o, f, target, flag, sizeof flag);
    fprintf(stderr, "nodecoll: %s has died (%s) while rank %d (pid %" PRIu64 ") waited %.1f s for it in %s: %s; aborting the job\n",
            owner, why, c->rank, pid_of(&c->node, c->node.rank), (double)waited_ns * 1e-9, call, flag);
    if (c->watch.abort_job) c->watch.abort_job();
    nc_fatal("could not abort the job after rank %d died", comm_rank_of(c, o.rank));
}

_Noreturn void nc_single_copy_failed(nc_comm *c, int peer, const char *what, int err)
{
    nc_rank_info info = nc_rank_info_read(nc_node_ctl(&c->node, peer));
    const char *why = "";
    /* ESRCH: the peer's memory is gone, so it is exiting; /proc may show it alive for a
     * moment more (its threads die one by one). */
    for (int tries = 0; err == ESRCH && tries < 200 && nc_proc_look(&info.proc, &why) != NC_PROC_DEAD; tries++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    if (err == ESRCH && c->watch.abort_job && nc_proc_look(&info.proc, &why) == NC_PROC_DEAD) {
        nc_flag_owner o = {.rank = peer, .name = "", .index = -1};
        char call[160], owner[96];
        describe_my_call(c, &o, call, sizeof call);
        describe_owner(c, &o, owner, sizeof owner);
        fprintf(stderr, "nodecoll: %s has died (%s) while rank %d (pid %" PRIu64 ") made a single-copy %s it in %s; aborting the job\n",
                owner, why, c->rank, pid_of(&c->node, c->node.rank), what, call);
        c->watch.abort_job();
    }
    if (err == NC_NO_SINGLE_COPY)
        nc_fatal("single-copy %s node rank %d: the buffer is outside its shared heap and CMA is off", what, peer);
    nc_fatal("single-copy %s node rank %d failed (errno %d) after a successful probe", what, peer, err);
}

void nc_node_single_copy_or_die(nc_comm *c, int peer, char *remote, char *local, size_t len, int write)
{
    int err = nc_par_single_copy(write, &c->node.peers[peer], remote, local, len);
    if (err) nc_single_copy_failed(c, peer, write ? "write to" : "read from", err);
}

/* Which peers this process can judge: each was alive when it published its info line, so a
 * peer its /proc does not show as itself now (another pid namespace, hidepid) is never
 * judged at all. */
static int find_watchable(nc_comm *c)
{
    nc_node *n = &c->node;
    nc_proc_id self = nc_rank_info_read(nc_node_ctl(n, n->rank)).proc;
    int any = 0;
    c->watch.watchable = nc_calloc_or_die((size_t)n->size, 1);
    for (int r = 0; r < n->size; r++) {
        nc_rank_info peer = nc_rank_info_read(nc_node_ctl(n, r));
        c->watch.watchable[r] = r != n->rank && nc_proc_watchable(&self, &peer.proc);
        any |= c->watch.watchable[r];
    }
    return any;
}

void nc_watch_start(nc_comm *c, void (*abort_job)(void))
{
    nc_watch *w = &c->watch;
    w->hook = (nc_wait_watch){.report_ns = c->cfg.wait_report * INT64_C(1000000000), .report = report,
                              .check = check};
    w->reported_call = UINT64_MAX;
    w->abort_job = abort_job;
    if (c->cfg.peer_check && find_watchable(c)) w->hook.check_ns = NC_PEER_CHECK_MS * INT64_C(1000000);
    if (w->hook.report_ns || w->hook.check_ns) c->node.wait.watch = &w->hook;
}

void nc_watch_stop(nc_comm *c)
{
    c->node.wait.watch = NULL;
    free(c->watch.watchable);
    c->watch.watchable = NULL;
}
