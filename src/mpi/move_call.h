/* A data-movement call (Gather(v), Scatter(v), Allgather(v), Alltoall(v,w); wrap_move.c) as
 * its operation reads it: on the caller's stack for a blocking call, in its request
 * (request.h) for a nonblocking or persistent one. */
#ifndef NC_MPI_MOVE_CALL_H
#define NC_MPI_MOVE_CALL_H

#include <mpi.h>
#include <stdint.h>

#include "datatype.h"
#include "../coll/comm.h"

/* One vector argument as MPI describes it, and its byte form for the algorithms. */
#define NC_MOVE_KEPT_INLINE 256 /* bytes: the uniform forms' tables up to 10 blocks */

typedef struct nc_move_vec {
    char *user;
    const void *counts, *displs; /* vector forms (int, or MPI_Count and MPI_Aint if `wide`: the
                                  * _c forms); else NULL: `count` each, blocks back to back */
    MPI_Count count;
    int n;                       /* blocks, set from the communicator once it is known (its
                                  * size, or a neighbourhood collective's in- or out-degree) */
    int vector;                  /* counts and displs (and types, for Alltoallw) are required */
    int wide;
    int aint_displs;             /* displacements are MPI_Aint even when not `wide` (Neighbor_alltoallw) */
    MPI_Datatype type;
    const MPI_Datatype *types;   /* (Neighbor_)Alltoallw: a type per block, displacements in bytes */
    /* Once opened: */
    int opened, input;           /* input: its data is sent (packed at each start when staged) */
    nc_vec v;
    size_t *table;               /* lens[n] then offs[n] */
    int64_t *signed_offs;        /* n, while it is opened */
    char *staging;               /* packed copy when some block's type is not dense, */
    nc_dt_cursor *cursors;       /* or: every block in place through the engine (v.blocks) */
    /* A request's own memory (NULL for a blocking call, whose tables are the communicator's
     * scratch): the tables, copies of counts, displacements and types, the types it holds. */
    char *owned;                 /* (the call's kept_inline for small tables: not freed) */
    int owned_inline;
    MPI_Datatype *held;          /* per block (Alltoallw) or [0]: a held duplicate, or MPI_DATATYPE_NULL */
} nc_move_vec;

/* The MPI arguments of a call: `one` is the single buffer (Gather's and (Neighbor_)Allgather's
 * send buffer, Scatter's receive buffer; Alltoall has none), `send` and `recv` the vectors
 * (Scatter's root's send vector, Gather's root's receive vector, both of Alltoall; a
 * neighbourhood collective's have a block per edge). */
typedef struct nc_move_args {
    nc_coll_id coll;
    int root;                    /* NC_CALL_NONE for the unrooted */
    const void *one;
    MPI_Count one_count;
    MPI_Datatype one_type;
    nc_move_vec send, recv;
} nc_move_args;

typedef struct nc_mpi_move_call {
    nc_move_args a;
    int request;                 /* owns its memory and holds its datatypes until released */
    int in_place, is_root, one_output;
    nc_buffer one;
    nc_data one_data;            /* Scatter's receive buffer as the algorithms write it */
    MPI_Datatype held_one_type;  /* a request's duplicate of a derived `one` type, or MPI_DATATYPE_NULL */
    nc_dt_cursor cursor;         /* (last: about 1 KiB the datatype engine positions before any use) */
    /* A request's small vector tables (send, receive), uncleared: a malloc and free each cost
     * an 8-byte nonblocking call a tenth of its time. */
    _Alignas(8) char kept_inline[2][NC_MOVE_KEPT_INLINE];
} nc_mpi_move_call;

#endif
