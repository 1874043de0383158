/* The one place every call on an accelerated communicator passes before anything moves,
 * whether nodecoll or the host MPI will run it: the call is numbered and recorded for hang
 * reports, and with NODECOLL_CHECK every rank's account of it is compared (coll/check.h). */
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "request.h"
#include "state.h"
#include "../coll/engine.h"

/* "MPI_Reduce(root 0, MPI_SUM, 4096 B)", with the host MPI's part when nodecoll hands the call on. */
static void describe_call(const nc_call_record *r, char *out, size_t size)
{
    char name[64];
    int at;
    nc_call_name((nc_coll_id)r->coll, name, sizeof name);
    at = snprintf(out, size, "%s(", name);
    const char *sep = "";
    if (r->root != NC_CALL_NONE) at += snprintf(out + at, size - (size_t)at, "root %d", r->root), sep = ", ";
    if (r->op == NC_CALL_USER_OP) at += snprintf(out + at, size - (size_t)at, "%sa user op", sep), sep = ", ";
    else if (r->op != NC_CALL_NONE)
        at += snprintf(out + at, size - (size_t)at, "%sMPI_%s", sep, nc_op_name((nc_op_id)r->op)), sep = ", ";
    if (r->bytes != NC_CALL_ANY_BYTES && r->coll != NC_COLL_BARRIER)
        at += snprintf(out + at, size - (size_t)at, "%s%llu B", sep, (unsigned long long)r->bytes);
    at += snprintf(out + at, size - (size_t)at, ")");
    if (r->host != NC_ALG_COUNT) snprintf(out + at, size - (size_t)at, " [to the host MPI: %s]", nc_alg_name((nc_alg_id)r->host));
}

static void comm_label(MPI_Comm comm, int size, char *out, size_t len)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int name_len = 0;
    PMPI_Comm_get_name(comm, name, &name_len);
    if (name_len) snprintf(out, len, "%s", name);
    else snprintf(out, len, "an unnamed communicator of %d ranks", size);
}

static int report_mismatch(nc_mpi_comm *s, MPI_Comm comm, const nc_call_record *mine, const nc_call_record *reference)
{
    if (!nc_call_records_agree(mine, reference)) {
        char me[256], them[256], where[MPI_MAX_OBJECT_NAME + 64];
        describe_call(mine, me, sizeof me);
        describe_call(reference, them, sizeof them);
        comm_label(comm, s->coll.size, where, sizeof where);
        fprintf(stderr, "nodecoll: call %llu on %s: rank %d entered %s while rank 0 entered %s\n",
                (unsigned long long)mine->call, where, s->coll.rank, me, them);
    }
    return nc_mpi_error(comm, NC_ERR_CALL_MISMATCH);
}

int nc_mpi_enter(nc_mpi_comm *s, MPI_Comm comm, nc_call_record *call)
{
    /* A blocking call runs after the communicator's pending operations, whatever path it
     * takes (they hold the node's numbers, slots and bridge in call order). */
    nc_comm_drain(&s->coll);
    nc_mpi_release_freed(); /* (the results of those the user freed are due now) */
    return nc_mpi_enter_nonblocking(s, comm, call);
}

int nc_mpi_enter_nonblocking(nc_mpi_comm *s, MPI_Comm comm, nc_call_record *call)
{
    /* The check's own exchange must not overtake a pending operation's bridge step. */
    if (s->coll.cfg.check) nc_comm_drain(&s->coll);
    nc_call_enter(&s->coll, call);
    if (!s->coll.cfg.check) return MPI_SUCCESS;
    nc_call_record reference;
    int verdict = nc_call_check(&s->coll, call, &reference);
    if (verdict == 1) return report_mismatch(s, comm, call, &reference);
    return verdict ? nc_mpi_raise(comm, verdict) : MPI_SUCCESS;
}
