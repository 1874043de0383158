/* MPI entry points of the data-movement collectives: Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v,w).  Each turns its arguments into byte blocks (nc_vec) and runs the algorithm
 * of src/coll, or hands the call unchanged to the host MPI: when the registry says so (the
 * same on every rank), or when this rank's arguments are invalid (the host then
 * reports its own error class).
 *
 * Datatypes: predefined types whose elements lie back to back are used in place.  So are
 * derived receive vectors on one node (counted "typed"): each block is an nc_data the
 * algorithms read into through the datatype engine's cursor.  Any other committed type is
 * packed into a staging copy by the engine (counted "packed"), never sent to the host alone:
 * MPI lets one rank describe its data with a derived type while its peers use a predefined
 * one, and a per-rank choice of path would leave the peers waiting in ours. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "dtype_decode.h"
#include "state.h"
#include "../core/fatal.h"
#include "../coll/registry.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* One vector argument as MPI describes it, and its byte form for the algorithms. */
typedef struct move_vec {
    char *user;
    const int *counts, *displs;  /* vector forms; else NULL: `count` each, blocks back to back */
    int count, n;                /* n: blocks, set from the communicator once it is known */
    int vector;                  /* counts and displs (and types, for Alltoallw) are required */
    MPI_Datatype type;
    const MPI_Datatype *types;   /* Alltoallw: a type per block, displacements in bytes */
    nc_vec v;
    size_t *table;               /* lens[n] then offs[n] (vec_tables) */
    int64_t *signed_offs;        /* n, while it is opened */
    char *staging;               /* packed copy when some block's type is not dense, */
    nc_dt_cursor *cursors;       /* or: every block in place through the engine (v.blocks) */
} move_vec;

static int count_of(const move_vec *m, int i) { return m->counts ? m->counts[i] : m->count; }
static MPI_Datatype type_of(const move_vec *m, int i) { return m->types ? m->types[i] : m->type; }

/* base + off as an address (base may be MPI_BOTTOM, a null pointer, with absolute offsets). */
static char *address_at(const char *base, int64_t off) { return (char *)((uintptr_t)base + (uintptr_t)off); }

/* Where block i starts in the user buffer, in bytes from m->user (may be negative). */
static int64_t user_offset(const move_vec *m, int i, MPI_Aint extent)
{
    if (m->types) return m->displs[i];
    return (m->displs ? (int64_t)m->displs[i] : (int64_t)i * m->count) * (int64_t)extent;
}

static void pack_blocks(move_vec *m, MPI_Comm comm, int unpack)
{
    for (int i = 0; i < m->n; i++) {
        size_t len = m->v.lens[i];
        if (!len) continue;
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(type_of(m, i), &lb, &extent);
        char *packed = m->v.base + m->v.offs[i];
        nc_buffer block = {packed, len, address_at(m->user, user_offset(m, i, extent)), count_of(m, i), type_of(m, i), packed};
        int err = nc_buffer_transfer(&block, comm, unpack);
        if (err != MPI_SUCCESS) nc_fatal("%s of a committed datatype failed (error %d)", unpack ? "unpacking" : "packing", err);
    }
}

/* Alltoallw: Open MPI rejects MPI_DATATYPE_NULL (MPI_ERR_TYPE) even for a block of zero
 * elements, MPICH 4.0 never looks at such a block's type; a rank judges as its host does. */
#if defined(OPEN_MPI)
#define NC_HOST_JUDGES_EMPTY_BLOCK_TYPES 1
#else
#define NC_HOST_JUDGES_EMPTY_BLOCK_TYPES 0
#endif

/* An Alltoallw block of zero elements, whose datatype its host may never read. */
static int empty_typed_block(const move_vec *m, int i) { return m->types && !count_of(m, i); }

/* Fills lens and signed offsets; 1 if a count or type is invalid.  *dense: every non-empty
 * block can be read in place. */
static int describe_blocks(move_vec *m, int64_t *offs, int *dense)
{
    size_t *lens = m->table;
    int size = 0, type_dense = 1;
    MPI_Aint lb, extent = 0;
    *dense = 1;
    for (int i = 0; i < m->n; i++) {
        if (count_of(m, i) < 0) return 1;
        if (empty_typed_block(m, i) && !NC_HOST_JUDGES_EMPTY_BLOCK_TYPES) {
            lens[i] = 0;
            offs[i] = 0;
            continue;
        }
        if (i == 0 || m->types) {
            if (nc_datatype_describe(type_of(m, i), &size, &type_dense)) return 1;
            PMPI_Type_get_extent(type_of(m, i), &lb, &extent);
        }
        lens[i] = (size_t)count_of(m, i) * (size_t)size;
        offs[i] = user_offset(m, i, extent);
        if (lens[i]) *dense &= type_dense;
    }
    return 0;
}

/* A receive vector on one node whose every block the engine describes: the blocks become
 * nc_data read into in place; 0 if some block's type is not described (stage it instead). */
static int open_in_place(move_vec *m, const int64_t *offs)
{
    const nc_config *cfg = nc_config_get();
    if (!cfg->dtype_engine) return 0;
    size_t n = (size_t)(m->n > 0 ? m->n : 1);
    nc_data *blocks = nc_alloc_or_die(sizeof *blocks * n);
    nc_dt_cursor *cursors = nc_alloc_or_die(sizeof *cursors * n);
    const nc_dtype *type = NULL;
    int size, dense = 1;
    for (int i = 0; i < m->n; i++) {
        if (empty_typed_block(m, i)) { /* (its type may be anything: nothing is read with it) */
            blocks[i] = nc_data_bytes(m->user);
            continue;
        }
        if (i == 0 || m->types) { /* (valid: describe_blocks checked it) */
            nc_datatype_describe(type_of(m, i), &size, &dense);
            type = dense ? NULL : nc_mpi_dtype(type_of(m, i));
            if (!dense && !type) {
                free(blocks);
                free(cursors);
                return 0;
            }
        }
        char *base = address_at(m->user, offs[i]);
        blocks[i] = type ? nc_data_typed(base, type, (size_t)count_of(m, i), (size_t)cfg->dtype_iov_min_run, &cursors[i])
                         : nc_data_bytes(base);
    }
    m->cursors = cursors;
    m->v = (nc_vec){.lens = m->table, .offs = m->table + n, .blocks = blocks};
    return 1;
}

/* 0 on success, 1: invalid arguments (leave the call to the host MPI).  `fill`: the data
 * is input (pack it now when staged); an output-only derived vector is used in place. */
static int vec_open(move_vec *m, MPI_Comm comm, int fill)
{
    if (m->vector && (!m->counts || !m->displs || (m->vector == 2 && !m->types))) return 1;
    size_t n = (size_t)(m->n > 0 ? m->n : 1);
    int64_t *signed_offs = m->signed_offs;
    int dense;
    if (describe_blocks(m, signed_offs, &dense)) return 1;
    size_t *lens = m->table, *offs = m->table + n, total = 0;
    int64_t lowest = INT64_MAX;
    for (int i = 0; i < m->n; i++) {
        total += lens[i];
        if (lens[i] && signed_offs[i] < lowest) lowest = signed_offs[i];
    }
    if (total && !m->user && dense) return 1; /* (MPI_BOTTOM with a derived type's absolute addresses is valid) */
    if (!dense && !fill && open_in_place(m, signed_offs)) return 0;
    if (dense) { /* base at the lowest non-empty block, so offsets are never negative */
        if (!total) lowest = 0;
        for (int i = 0; i < m->n; i++) offs[i] = lens[i] ? (size_t)(signed_offs[i] - lowest) : 0;
        m->v = (nc_vec){address_at(m->user, lowest), lens, offs, NULL};
    } else {
        size_t at = 0;
        for (int i = 0; i < m->n; i++, at += lens[i - 1]) offs[i] = at;
        m->staging = nc_alloc_or_die(total);
        m->v = (nc_vec){m->staging, lens, offs, NULL};
        if (fill) pack_blocks(m, comm, 0);
    }
    return 0;
}

static void vec_close(move_vec *m, MPI_Comm comm, int drain)
{
    if (m->staging) {
        if (drain) pack_blocks(m, comm, 1);
        free(m->staging);
    }
    for (int i = 0; m->v.blocks && i < m->n; i++) nc_data_release(&m->v.blocks[i]);
    free(m->v.blocks);
    free(m->cursors);
    m->staging = NULL;
    m->v.blocks = NULL;
    m->cursors = NULL;
}

/* The tables of a call's vectors (`second` may be NULL), from the communicator's scratch
 * instead of fresh memory per call: blocking calls on a communicator never overlap (MPI
 * orders them), and the algorithms keep scratch of their own.  Lengths and offsets of each
 * vector, then the signed offsets one vector at a time uses while it is opened. */
static void vec_tables(nc_mpi_comm *s, move_vec *first, move_vec *second)
{
    size_t n = (size_t)s->coll.size;
    size_t *tables = (size_t *)(void *)nc_mpi_scratch(s, sizeof(size_t) * 5 * n);
    first->table = tables;
    first->signed_offs = (int64_t *)(void *)(tables + 4 * n);
    if (!second) return;
    second->table = tables + 2 * n;
    second->signed_offs = first->signed_offs;
}

/* A vector argument of `count` elements of `type` per block, back to back. */
static move_vec vec_uniform(const void *buf, int count, MPI_Datatype type)
{
    return (move_vec){.user = (char *)buf, .count = count, .type = type};
}

/* A vector argument of the v-forms: counts and displacements per block. */
static move_vec vec_varying(const void *buf, const int *counts, const int *displs, MPI_Datatype type)
{
    return (move_vec){.user = (char *)buf, .counts = counts, .displs = displs, .type = type, .vector = 1};
}

/* Alltoallw's: a datatype per block, displacements in bytes. */
static move_vec vec_typed(const void *buf, const int *counts, const int *displs, const MPI_Datatype *types)
{
    return (move_vec){.user = (char *)buf, .counts = counts, .displs = displs, .types = types, .vector = 2};
}

enum { RUN_NODECOLL = 0, RUN_HOST = -1 }; /* (else: an error, already raised) */

/* NC_ALG_COUNT when the registry accelerates `coll` here (the same on every rank), else why not. */
static nc_alg_id table_verdict(nc_mpi_comm *s, nc_coll_id coll) { return nc_registry_host_reason(&s->coll, coll); }

/* Enters the call (state.h) with the reason, if any, it goes to the host MPI. */
static int enter_move(nc_mpi_comm *s, MPI_Comm comm, nc_coll_id coll, int root, nc_alg_id host, uint64_t bytes)
{
    nc_call_record call = {coll, root, NC_CALL_NONE, host, host == NC_ALG_COUNT ? bytes : NC_CALL_ANY_BYTES, 0};
    int err = nc_mpi_enter(s, comm, &call);
    if (err) return err;
    if (host == NC_ALG_COUNT) return RUN_NODECOLL;
    nc_mpi_fallback(coll, host);
    return RUN_HOST;
}

/* Whether the call's length is compared (NODECOLL_CHECK) and known (its arguments were valid). */
static int checked(const nc_mpi_comm *s, nc_alg_id host) { return s->coll.cfg.check && host == NC_ALG_COUNT; }

/* The bytes of every block of an opened vector. */
static uint64_t vec_total(const move_vec *m)
{
    uint64_t total = 0;
    for (int i = 0; i < m->n; i++) total += m->v.lens[i];
    return total;
}

static void count_datatypes(nc_coll_id coll, int staged, int typed, size_t bytes)
{
    if (staged) nc_stats_count(coll, NC_ALG_PACKED, bytes);
    else if (typed) nc_stats_count(coll, NC_ALG_TYPED, bytes);
}

/* ---- Gather(v), Scatter(v) -------------------------------------------------------------
 * `one` is the single buffer of every rank (send of Gather, receive of Scatter), `all` the
 * root's vector.  -1: the host MPI runs the call. */

/* Scatter's single buffer is output: a derived type is received into in place (nc_data);
 * Gather's is input and packed when derived. */
static int open_one(nc_buffer *b, nc_data *one, nc_dt_cursor *cursor, int scatter, const void *buf, int count,
                    MPI_Datatype type, MPI_Comm comm)
{
    if (scatter) return nc_buffer_open_data(b, one, cursor, (void *)buf, count, type, comm, 0);
    return nc_buffer_open(b, (void *)buf, count, type, comm, 1);
}

static int rooted_common(nc_coll_id coll, int scatter, const void *one_buf, int one_count, MPI_Datatype one_type,
                         move_vec *all, int root, MPI_Comm comm)
{
    nc_mpi_comm *s = nc_mpi_state(comm, coll);
    if (!s) return RUN_HOST;
    int is_root = s->coll.rank == root, in_place = one_buf == MPI_IN_PLACE;
    all->n = s->coll.size; /* (the root's vector alone is significant) */
    nc_buffer b = {0};
    nc_data one = {0};
    nc_dt_cursor cursor;
    nc_alg_id host = table_verdict(s, coll);
    if (host == NC_ALG_COUNT && is_root) vec_tables(s, all, NULL);
    if (host == NC_ALG_COUNT && (root < 0 || root >= s->coll.size || (in_place && !is_root))) host = NC_ALG_PMPI_ARGS;
    if (host == NC_ALG_COUNT && !in_place && open_one(&b, &one, &cursor, scatter, one_buf, one_count, one_type, comm))
        host = NC_ALG_PMPI_ARGS;
    /* In place, the root's own block of Gather is input: stage it (packed with the rest). */
    if (host == NC_ALG_COUNT && is_root && vec_open(all, comm, scatter || in_place)) host = NC_ALG_PMPI_ARGS;
    /* The whole call's length: the root's vector, or every block as long as mine (not the v-forms'). */
    uint64_t bytes = !checked(s, host) ? 0 : is_root ? vec_total(all) : all->vector ? NC_CALL_ANY_BYTES
                                                                                   : (uint64_t)s->coll.size * b.bytes;
    int err = enter_move(s, comm, coll, root, host, bytes), ran = err == RUN_NODECOLL;
    if (ran) {
        count_datatypes(coll, b.staging || all->staging, one.type || all->v.blocks, b.bytes);
        const nc_vec *v = is_root ? &all->v : NULL;
        err = scatter ? nc_scatterv(&s->coll, coll, v, in_place ? NULL : &one, b.bytes, root)
                      : nc_gatherv(&s->coll, coll, in_place ? NC_IN_PLACE : b.bytes_at, b.bytes, v, root);
        err = nc_mpi_raise(comm, err);
    }
    /* What arrived is delivered even when some did not fit (MPI_ERR_TRUNCATE). */
    vec_close(all, comm, ran && !scatter);
    nc_data_release(&one);
    int close_err = nc_buffer_close(&b, comm, ran && scatter);
    return err ? err : nc_mpi_raise(comm, close_err);
}

NC_EXPORT int MPI_Gather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm)
{
    move_vec rv = vec_uniform(recvbuf, rcount, rtype);
    int err = rooted_common(NC_COLL_GATHER, 0, sendbuf, scount, stype, &rv, root, comm);
    return err >= 0 ? err : PMPI_Gather(sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

NC_EXPORT int MPI_Gatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
                          const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    move_vec rv = vec_varying(recvbuf, rcounts, displs, rtype);
    int err = rooted_common(NC_COLL_GATHERV, 0, sendbuf, scount, stype, &rv, root, comm);
    return err >= 0 ? err : PMPI_Gatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, root, comm);
}

NC_EXPORT int MPI_Scatter(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                          MPI_Datatype rtype, int root, MPI_Comm comm)
{
    move_vec sv = vec_uniform(sendbuf, scount, stype);
    int err = rooted_common(NC_COLL_SCATTER, 1, recvbuf, rcount, rtype, &sv, root, comm);
    return err >= 0 ? err : PMPI_Scatter(sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

NC_EXPORT int MPI_Scatterv(const void *sendbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                           void *recvbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    move_vec sv = vec_varying(sendbuf, scounts, displs, stype);
    int err = rooted_common(NC_COLL_SCATTERV, 1, recvbuf, rcount, rtype, &sv, root, comm);
    return err >= 0 ? err : PMPI_Scatterv(sendbuf, scounts, displs, stype, recvbuf, rcount, rtype, root, comm);
}
/* ---- Allgather(v) ------------------------------------------------------------------------ */

static int allgather_common(nc_coll_id coll, const void *sendbuf, int scount, MPI_Datatype stype, move_vec *recv,
                            MPI_Comm comm)
{
    nc_mpi_comm *s = nc_mpi_state(comm, coll);
    if (!s) return RUN_HOST;
    int in_place = sendbuf == MPI_IN_PLACE;
    nc_buffer b = {0};
    recv->n = s->coll.size;
    nc_alg_id host = table_verdict(s, coll);
    if (host == NC_ALG_COUNT) vec_tables(s, recv, NULL);
    if (host == NC_ALG_COUNT && !in_place && nc_buffer_open(&b, (void *)sendbuf, scount, stype, comm, 1))
        host = NC_ALG_PMPI_ARGS;
    /* In place, my own block is input: pack it too (the whole vector, when staged). */
    if (host == NC_ALG_COUNT && vec_open(recv, comm, in_place)) host = NC_ALG_PMPI_ARGS;
    int err = enter_move(s, comm, coll, NC_CALL_NONE, host, checked(s, host) ? vec_total(recv) : 0);
    int ran = err == RUN_NODECOLL;
    if (ran) {
        count_datatypes(coll, b.staging || recv->staging, recv->v.blocks != NULL, b.bytes);
        err = nc_mpi_raise(comm, nc_allgatherv(&s->coll, coll, in_place ? NC_IN_PLACE : b.bytes_at, b.bytes, &recv->v));
    }
    vec_close(recv, comm, ran);
    nc_buffer_close(&b, comm, 0);
    return err;
}

NC_EXPORT int MPI_Allgather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                            MPI_Datatype rtype, MPI_Comm comm)
{
    move_vec rv = vec_uniform(recvbuf, rcount, rtype);
    int err = allgather_common(NC_COLL_ALLGATHER, sendbuf, scount, stype, &rv, comm);
    return err >= 0 ? err : PMPI_Allgather(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
}

NC_EXPORT int MPI_Allgatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
                             const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    move_vec rv = vec_varying(recvbuf, rcounts, displs, rtype);
    int err = allgather_common(NC_COLL_ALLGATHERV, sendbuf, scount, stype, &rv, comm);
    return err >= 0 ? err : PMPI_Allgatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm);
}

/* ---- Alltoall(v,w) ------------------------------------------------------------------------ */

static int alltoall_common(nc_coll_id coll, move_vec *send, move_vec *recv, MPI_Comm comm)
{
    nc_mpi_comm *s = nc_mpi_state(comm, coll);
    if (!s) return RUN_HOST;
    int in_place = send->user == MPI_IN_PLACE; /* (then the send arguments are not significant) */
    send->n = recv->n = s->coll.size;
    nc_alg_id host = table_verdict(s, coll);
    if (host == NC_ALG_COUNT) vec_tables(s, recv, send);
    if (host == NC_ALG_COUNT && ((!in_place && vec_open(send, comm, 1)) || vec_open(recv, comm, in_place)))
        host = NC_ALG_PMPI_ARGS;
    uint64_t bytes = !checked(s, host) ? 0 : recv->vector ? NC_CALL_ANY_BYTES : vec_total(in_place ? recv : send);
    int err = enter_move(s, comm, coll, NC_CALL_NONE, host, bytes), ran = err == RUN_NODECOLL;
    if (ran) {
        count_datatypes(coll, send->staging || recv->staging, recv->v.blocks != NULL, 0);
        err = nc_mpi_raise(comm, nc_alltoallv(&s->coll, coll, in_place ? NULL : &send->v, &recv->v));
    }
    vec_close(send, comm, 0);
    vec_close(recv, comm, ran);
    return err;
}

NC_EXPORT int MPI_Alltoall(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                           MPI_Datatype rtype, MPI_Comm comm)
{
    move_vec sv = vec_uniform(sendbuf, scount, stype), rv = vec_uniform(recvbuf, rcount, rtype);
    int err = alltoall_common(NC_COLL_ALLTOALL, &sv, &rv, comm);
    return err >= 0 ? err : PMPI_Alltoall(sendbuf, scount, stype, recvbuf, rcount, rtype, comm);
}

NC_EXPORT int MPI_Alltoallv(const void *sendbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                            void *recvbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    move_vec sv = vec_varying(sendbuf, scounts, sdispls, stype), rv = vec_varying(recvbuf, rcounts, rdispls, rtype);
    int err = alltoall_common(NC_COLL_ALLTOALLV, &sv, &rv, comm);
    return err >= 0 ? err : PMPI_Alltoallv(sendbuf, scounts, sdispls, stype, recvbuf, rcounts, rdispls, rtype, comm);
}

NC_EXPORT int MPI_Alltoallw(const void *sendbuf, const int scounts[], const int sdispls[], const MPI_Datatype stypes[],
                            void *recvbuf, const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[],
                            MPI_Comm comm)
{
    move_vec sv = vec_typed(sendbuf, scounts, sdispls, stypes), rv = vec_typed(recvbuf, rcounts, rdispls, rtypes);
    int err = alltoall_common(NC_COLL_ALLTOALLW, &sv, &rv, comm);
    return err >= 0 ? err : PMPI_Alltoallw(sendbuf, scounts, sdispls, stypes, recvbuf, rcounts, rdispls, rtypes, comm);
}
