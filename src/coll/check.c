/* Call numbering and NODECOLL_CHECK (check.h).
 *
 * On a node every rank posts its record in check[call % 2] of its control page and reads
 * every other rank's: one step, after which each rank knows whether its node agrees.  Two
 * slots suffice: a rank can post call k+1's record before a slower rank has read its record
 * of call k, but not call k+2's, which needs that slower rank's record of k+1 first.
 * Across nodes the leaders allgather one summary per node (their own record, which is
 * also comm rank 0's on node 0, and whether their node agreed with it), and post the verdict
 * with comm rank 0's record in their `verdict` line, which their members wait for. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/fatal.h"

_Static_assert(NC_COLL_COUNT <= NC_ENTERED_COLLS, "a collective id must fit the entered line's low bits");

void nc_call_enter(nc_comm *c, nc_call_record *rec)
{
    rec->call = ++c->calls;
    nc_flag *entered = &nc_node_ctl(&c->node, c->node.rank)->entered;
    atomic_store_explicit(&entered->aux[0], rec->call * NC_ENTERED_COLLS + (uint64_t)rec->coll, memory_order_relaxed);
    nc_flag_post(entered, rec->call);
}

nc_entered nc_call_entered(const nc_node *n, int node_rank)
{
    uint64_t word = atomic_load_explicit(&nc_node_ctl(n, node_rank)->entered.aux[0], memory_order_relaxed);
    return (nc_entered){word / NC_ENTERED_COLLS, (nc_coll_id)(word % NC_ENTERED_COLLS)};
}

void nc_call_name(nc_coll_id coll, char *out, size_t size)
{
    const char *name = nc_coll_name(coll);
    snprintf(out, size, "MPI_%c%s", name[0] - 'a' + 'A', name + 1);
}

int nc_call_records_agree(const nc_call_record *a, const nc_call_record *b)
{
    return a->coll == b->coll && a->root == b->root && a->op == b->op && a->host == b->host &&
           a->call == b->call &&
           (a->bytes == b->bytes || a->bytes == NC_CALL_ANY_BYTES || b->bytes == NC_CALL_ANY_BYTES);
}

static void post_record(nc_flag *f, const void *rec, size_t bytes, uint64_t call)
{
    memcpy(f->data, rec, bytes);
    nc_flag_post(f, call);
}

static void read_record(const nc_flag *f, void *rec, size_t bytes, uint64_t call, const nc_wait_policy *w)
{
    nc_wait_ge(f, call, w);
    memcpy(rec, (const void *)f->data, bytes);
}

/* Node step: whether every rank of my node agrees with node rank 0; `leader` gets its record. */
static int node_agrees(nc_comm *c, const nc_call_record *mine, nc_call_record *leader)
{
    nc_node *n = &c->node;
    int slot = (int)(mine->call % 2), agree = 1;
    post_record(&nc_node_ctl(n, n->rank)->check[slot], mine, sizeof *mine, mine->call);
    for (int r = 0; r < n->size; r++) {
        nc_call_record theirs;
        if (r == n->rank) theirs = *mine;
        else read_record(&nc_node_ctl(n, r)->check[slot], &theirs, sizeof theirs, mine->call, &n->wait);
        if (r == 0) *leader = theirs;
        else agree &= nc_call_records_agree(leader, &theirs);
    }
    return agree;
}

typedef struct node_summary {
    nc_call_record leader;
    int64_t agrees;
} node_summary;

typedef struct verdict {
    int64_t agree;
    nc_call_record reference;
} verdict;

/* Leaders: every node's summary against node 0's leader, which is comm rank 0. */
static int bridge_verdict(nc_comm *c, const node_summary *mine, verdict *v)
{
    node_summary *all = nc_alloc_or_die(sizeof *all * (size_t)c->bridge.size);
    int err = c->bridge.allgather(c->bridge.ctx, mine, all, sizeof *mine, NULL);
    v->agree = !err;
    v->reference = err ? mine->leader : all[0].leader; /* (no rank blames itself for a failed bridge) */
    for (int k = 0; !err && k < c->bridge.size; k++)
        v->agree &= all[k].agrees && nc_call_records_agree(&all[0].leader, &all[k].leader);
    free(all);
    return err;
}

int nc_call_check(nc_comm *c, const nc_call_record *mine, nc_call_record *reference)
{
    nc_node *n = &c->node;
    verdict v = {0};
    int err = 0;
    v.agree = node_agrees(c, mine, &v.reference);
    if (nc_comm_multinode(c)) {
        nc_flag *posted = &nc_node_ctl(n, 0)->verdict;
        if (nc_comm_is_leader(c)) {
            node_summary s = {*mine, v.agree};
            err = bridge_verdict(c, &s, &v);
            /* (a bridge failure is posted as disagreement: the members must not wait forever) */
            post_record(posted, &v, sizeof v, mine->call);
        } else {
            read_record(posted, &v, sizeof v, mine->call, &n->wait);
        }
    }
    *reference = v.reference;
    return err ? err : !v.agree;
}
