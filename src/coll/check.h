/* Every call on an accelerated communicator is numbered, and each rank records the call it
 * entered in its control page (read by hang reports).  With NODECOLL_CHECK the ranks also
 * compare their accounts of the call before anything moves: the same collective, root, op
 * and total type-signature length, in the same order (the call number). */
#ifndef NC_CHECK_H
#define NC_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

/* What a rank knows of a call.  Fields a call does not have are NC_CALL_NONE; a length the
 * rank cannot know (a v-form's total off the root) is NC_CALL_ANY_BYTES, which agrees with
 * any length. */
#define NC_CALL_NONE (-1)
#define NC_CALL_USER_OP 1000 /* op: a user-defined operation (ops are compared by kind) */
#define NC_CALL_ANY_BYTES UINT64_MAX
typedef struct nc_call_record {
    int32_t coll;   /* nc_coll_id */
    int32_t root;   /* comm rank */
    int32_t op;     /* nc_op_id, NC_CALL_USER_OP */
    int32_t host;   /* nc_alg_id: NC_ALG_COUNT when nodecoll runs the call, else why the host does */
    uint64_t bytes; /* total type-signature length of the whole call */
    uint64_t call;  /* call number on the communicator (set by nc_call_enter) */
} nc_call_record;

/* Numbers the call and records it as the one this rank has entered. */
void nc_call_enter(nc_comm *c, nc_call_record *rec);

/* The call a node rank entered last (call 0: none yet), read from its `entered` line, whose
 * aux[0] holds number and collective in one word (call * NC_ENTERED_COLLS + coll) so that a
 * reader never pairs one call's number with another's collective. */
#define NC_ENTERED_COLLS 256
typedef struct nc_entered {
    uint64_t call;
    nc_coll_id coll;
} nc_entered;
nc_entered nc_call_entered(const nc_node *n, int node_rank);

/* "MPI_Reduce_scatter_block" for NC_COLL_REDUCE_SCATTER_BLOCK. */
void nc_call_name(nc_coll_id coll, char *out, size_t size);

/* Whether two ranks' accounts describe the same call. */
int nc_call_records_agree(const nc_call_record *a, const nc_call_record *b);

/* Compares my record with every rank's (through the node segment, and across nodes through
 * the leaders).  0: every rank agrees; 1: some rank disagrees with comm rank 0, whose record
 * is then in *reference (every rank learns both); or the bridge's error code.  Collective. */
int nc_call_check(nc_comm *c, const nc_call_record *mine, nc_call_record *reference);

#endif
