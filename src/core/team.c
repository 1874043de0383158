#include "team.h"

#include "hot_tls.h"

#include <string.h>

static NC_HOT_TLS nc_team *leading;

void nc_team_init(nc_team *t, int threads, size_t part_min, nc_wait_policy wait)
{
    memset(t, 0, sizeof *t);
    t->threads = threads < 1 ? 1 : threads > NC_TEAM_MAX ? NC_TEAM_MAX : threads;
    t->part_min = part_min ? part_min : 1;
    t->wait = wait;
}

/* Thread i's share [*first, *first + *len) of a job, cut on grain boundaries. */
static void share(const nc_job *j, int i, size_t *first, size_t *len)
{
    size_t units = j->bytes / j->grain, per = units / (size_t)j->parts, extra = units % (size_t)j->parts;
    size_t lo = (size_t)i * per + ((size_t)i < extra ? (size_t)i : extra);
    size_t n = per + ((size_t)i < extra);
    *first = lo * j->grain;
    *len = n * j->grain;
    if (i == j->parts - 1) *len = j->bytes - *first; /* the tail that is not a whole grain */
}

static void run_share(nc_team *t, const nc_job *j, int i)
{
    size_t first, len;
    share(j, i, &first, &len);
    if (!len) return;
    int err = 0;
    switch (j->kind) {
    case NC_JOB_COPY: memcpy(j->dst + first, j->src + first, len); break;
    case NC_JOB_PEER_READ: err = nc_peer_read(j->peer, j->src + first, j->dst + first, len); break;
    case NC_JOB_PEER_WRITE: err = nc_peer_write(j->peer, j->dst + first, j->src + first, len); break;
    case NC_JOB_REDUCE: j->op.fn(j->src + first, j->dst + first, len / j->grain, j->op.ctx); break;
    case NC_JOB_REDUCE_INTO: j->op.into(j->src + first, j->upper + first, j->dst + first, len / j->grain); break;
    case NC_JOB_EACH:
        for (size_t k = first; k < first + len; k++) j->each(j->ctx, k);
        break;
    case NC_JOB_EXIT: break;
    }
    if (err) {
        int none = 0;
        atomic_compare_exchange_strong(&t->error, &none, err);
    }
}

void nc_team_start(nc_team *t)
{
    atomic_store(&t->error, 0);
    leading = t->threads > 1 ? t : NULL;
}

/* Every helper acknowledges every job (those outside its parts at once), and the job and
 * result are rewritten only when all have acknowledged the previous one: nobody can read a
 * half-replaced job. */
static void post(nc_team *t, const nc_job *j, int result)
{
    for (int i = 1; i < t->threads; i++) nc_wait_ge(&t->done[i], t->jobs, &t->wait);
    t->job = *j;
    t->result = result;
    nc_flag_post(&t->posted, ++t->jobs);
}

void nc_team_stop(nc_team *t, int result)
{
    leading = NULL;
    if (t->threads > 1) post(t, &(nc_job){.kind = NC_JOB_EXIT, .parts = t->threads, .grain = 1}, result);
    else t->result = result;
}

int nc_team_serve(nc_team *t, int thread)
{
    /* A helper's own acknowledgements count the jobs it has seen, across calls. */
    for (uint64_t seen = nc_flag_read(&t->done[thread]);;) {
        nc_wait_ge(&t->posted, ++seen, &t->wait);
        const nc_job *j = &t->job;
        if (j->kind == NC_JOB_EXIT) {
            int result = t->result;
            nc_flag_post(&t->done[thread], seen);
            return result;
        }
        if (thread < j->parts) run_share(t, j, thread);
        nc_flag_post(&t->done[thread], seen);
    }
}

/* Runs j over as many threads as its size warrants (never more than it has grains): the
 * leader takes share 0, as a plain thread (no job started inside a job). */
static int run_job(nc_job j, size_t bytes)
{
    nc_team *t = leading;
    size_t parts = t ? bytes / t->part_min : 1, units = j.bytes / j.grain;
    if (parts > units) parts = units;
    j.parts = parts < 2 ? 1 : parts > (size_t)t->threads ? t->threads : (int)parts;
    if (j.parts == 1) {
        nc_team solo = {.job = j};
        atomic_init(&solo.error, 0);
        leading = NULL;
        run_share(&solo, &j, 0);
        leading = t;
        return atomic_load(&solo.error);
    }
    post(t, &j, 0);
    leading = NULL;
    run_share(t, &j, 0);
    leading = t;
    for (int i = 1; i < j.parts; i++) nc_wait_ge(&t->done[i], t->jobs, &t->wait);
    return atomic_load(&t->error);
}

void nc_par_copy(void *dst, const void *src, size_t bytes)
{
    if (!bytes) return; /* (an empty block's buffer may be NULL) */
    if (!leading) {
        memcpy(dst, src, bytes);
        return;
    }
    run_job((nc_job){.kind = NC_JOB_COPY, .dst = dst, .src = src, .bytes = bytes, .grain = 64}, bytes);
}

int nc_par_single_copy(int write, const nc_peer *peer, void *remote, void *local, size_t bytes)
{
    char *mapped = nc_peer_mapped(peer, remote, bytes);
    if (mapped) { /* the peer's heap: a copy like any other */
        nc_peer_counted(1, bytes);
        nc_par_copy(write ? mapped : local, write ? local : mapped, bytes);
        return 0;
    }
    if (!leading) return write ? nc_peer_write(peer, remote, local, bytes) : nc_peer_read(peer, remote, local, bytes);
    nc_job j = {.kind = write ? NC_JOB_PEER_WRITE : NC_JOB_PEER_READ, .peer = peer, .bytes = bytes, .grain = 4096,
                .dst = write ? remote : local, .src = write ? local : remote};
    return run_job(j, bytes);
}

/* out = lower op upper, or (upper NULL) out = lower op out, shared among the team. */
static void par_reduce(const nc_reduction *op, const void *lower, const void *upper, void *out, size_t count)
{
    if (!leading) {
        if (upper) op->into(lower, upper, out, count);
        else op->fn(lower, out, count, op->ctx);
        return;
    }
    size_t bytes = count * op->elem_size;
    run_job((nc_job){.kind = upper ? NC_JOB_REDUCE_INTO : NC_JOB_REDUCE, .dst = out, .src = lower, .upper = upper,
                     .bytes = bytes, .grain = op->elem_size, .op = *op}, bytes);
}

void nc_par_reduce(const nc_reduction *op, const void *in, void *inout, size_t count)
{
    par_reduce(op, in, NULL, inout, count);
}

void nc_par_reduce_into(const nc_reduction *op, const void *lower, const void *upper, void *out, size_t count)
{
    par_reduce(op, lower, upper, out, count);
}

void nc_par_each(void (*fn)(void *ctx, size_t item), void *ctx, size_t items, size_t bytes)
{
    if (!leading || items == 1) { /* (one item: its own copies may still be shared) */
        for (size_t k = 0; k < items; k++) fn(ctx, k);
        return;
    }
    run_job((nc_job){.kind = NC_JOB_EACH, .each = fn, .ctx = ctx, .bytes = items, .grain = 1}, bytes);
}
