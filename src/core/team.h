/* Thread teams (Luo et al.'s endpoints, shaped for MPI+OpenMP codes): while one thread of a
 * rank runs a collective, the other threads of its team wait here and take shares of the
 * large copies, single-copy reads and reductions the algorithm makes.
 *
 * The algorithms do not know about teams: they call nc_par_copy / nc_par_single_copy / nc_par_reduce,
 * which split the work when the calling thread leads a team (a thread-local set for the
 * duration of the call) and the piece is large enough, and otherwise do it inline. */
#ifndef NC_TEAM_H
#define NC_TEAM_H

#include <stddef.h>
#include <sys/types.h>

#include "ops.h"
#include "single_copy.h"
#include "wait.h"

#define NC_TEAM_MAX 64

typedef enum { NC_JOB_COPY, NC_JOB_PEER_READ, NC_JOB_PEER_WRITE, NC_JOB_REDUCE, NC_JOB_REDUCE_INTO, NC_JOB_EACH, NC_JOB_EXIT } nc_job_kind;

typedef struct nc_job {
    nc_job_kind kind;
    int parts;           /* threads 0..parts-1 take a share; the others sit this one out */
    char *dst;
    const char *src;
    const char *upper;   /* NC_JOB_REDUCE_INTO: dst = src op upper */
    size_t bytes;        /* total; shares are cut on `grain` boundaries */
    size_t grain;        /* element size for reductions, 64 (a cache line) otherwise */
    const nc_peer *peer; /* of a single-copy job */
    nc_reduction op;
    void (*each)(void *ctx, size_t item); /* NC_JOB_EACH: `bytes` items, grain 1 */
    void *ctx;
} nc_job;

typedef struct nc_team {
    int threads;
    size_t part_min;          /* smallest share worth handing to another thread */
    nc_wait_policy wait;
    nc_job job;               /* written by the leader before it posts `posted` */
    nc_flag posted;           /* job number */
    nc_flag done[NC_TEAM_MAX];/* per thread: the last job number finished */
    _Atomic int error;        /* first errno of a failed single-copy share */
    int result;               /* the collective's return code, for every thread */
    uint64_t jobs;
} nc_team;

void nc_team_init(nc_team *t, int threads, size_t part_min, nc_wait_policy wait);

/* Leader side: make this thread's parallel primitives use the team until nc_team_stop. */
void nc_team_start(nc_team *t);
/* Ends the collective: the helpers return from nc_team_serve with `result`. */
void nc_team_stop(nc_team *t, int result);
/* Helper side: works on the leader's jobs until it stops; returns its result. */
int nc_team_serve(nc_team *t, int thread);

/* The parallel primitives.  The single-copy one returns 0 or the first errno. */
void nc_par_copy(void *dst, const void *src, size_t bytes);
int nc_par_single_copy(int write, const nc_peer *peer, void *remote, void *local, size_t bytes);
void nc_par_reduce(const nc_reduction *op, const void *in, void *inout, size_t count);
/* out = lower op upper with op->into (which must be set), out overlapping neither. */
void nc_par_reduce_into(const nc_reduction *op, const void *lower, const void *upper, void *out, size_t count);
/* fn(ctx, 0 .. items-1), the items divided into consecutive groups among the team's threads
 * (Luo et al.'s "Group": each thread serves its own peers); `bytes` is the work they move. */
void nc_par_each(void (*fn)(void *ctx, size_t item), void *ctx, size_t items, size_t bytes);

#endif
