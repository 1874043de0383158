/* MPI entry points of the data-movement collectives: Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v,w) and the neighbourhood collectives Neighbor_allgather(v) and
 * Neighbor_alltoall(v,w), each in its blocking, nonblocking and persistent form.  One adapter serves
 * the three forms of every call (move_call): it turns the arguments into byte blocks
 * (nc_vec) and runs the algorithm of src/coll, or hands the call unchanged to the host's
 * form of it: when the registry says so (the same on every rank), or when this rank's
 * arguments are invalid (the host then reports its own error class).
 *
 * Datatypes: predefined types whose elements lie back to back are used in place.  So are
 * derived receive vectors on one node (counted "typed"): each block is an nc_data the
 * algorithms read into through the datatype engine's cursor.  Any other committed type is
 * packed into a staging copy by the engine (counted "packed"), never sent to the host alone:
 * MPI lets one rank describe its data with a derived type while its peers use a predefined
 * one, and a per-rank choice of path would leave the peers waiting in ours.
 *
 * A blocking call keeps its description on the stack and its vectors' tables in the
 * communicator's scratch (MPI orders blocking calls on a communicator).  A request owns all
 * its operation reads until it is freed, because several may be pending on one
 * communicator and MPI lets the user free datatypes right after the call: the tables, copies
 * of counts, displacements and Alltoallw's type arrays, duplicates of its derived types, and
 * its staging copies.  The same open, begin (pack what is sent), deliver (unpack what was
 * received) and release steps serve both; a persistent request opens once and begins at
 * every start. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "dtype_decode.h"
#include "request.h"
#include "state.h"
#include "../core/fatal.h"
#include "../coll/registry.h"

static MPI_Count count_of(const nc_move_vec *m, int i)
{
    return m->counts ? nc_mpi_count_at(m->counts, m->wide, i) : m->count;
}
static MPI_Datatype type_of(const nc_move_vec *m, int i) { return m->types ? m->types[i] : m->type; }
/* Whether m's displacements are MPI_Aint (the _c forms', and Neighbor_alltoallw's in both). */
static int displs_wide(const nc_move_vec *m) { return m->wide || m->aint_displs; }

/* base + off as an address (base may be MPI_BOTTOM, a null pointer, with absolute offsets). */
/* No mapping starts below this address (Linux's vm.mmap_min_addr is a page or more). */
#define NC_FIRST_MAPPABLE 4096

static char *address_at(const char *base, int64_t off) { return (char *)((uintptr_t)base + (uintptr_t)off); }

/* Where block i starts in the user buffer, in bytes from m->user (may be negative). */
static int64_t user_offset(const nc_move_vec *m, int i, MPI_Aint extent)
{
    int wide = displs_wide(m);
    if (m->types) return nc_mpi_displ_at(m->displs, wide, i);
    return (m->displs ? (int64_t)nc_mpi_displ_at(m->displs, wide, i) : (int64_t)i * m->count) * (int64_t)extent;
}

static void pack_blocks(nc_move_vec *m, MPI_Comm comm, int unpack)
{
    for (int i = 0; i < m->n; i++) {
        size_t len = m->v.lens[i];
        if (!len) continue;
        MPI_Aint lb, extent;
        PMPI_Type_get_extent(type_of(m, i), &lb, &extent);
        char *packed = m->v.base + m->v.offs[i];
        char *user = address_at(m->user, user_offset(m, i, extent));
        nc_buffer block = {packed, len, user, count_of(m, i), type_of(m, i), packed};
        int err = nc_buffer_transfer(&block, comm, unpack);
        if (err != MPI_SUCCESS)
            nc_fatal("%s of a committed datatype failed (error %d)", unpack ? "unpacking" : "packing", err);
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
static int empty_typed_block(const nc_move_vec *m, int i) { return m->types && !count_of(m, i); }

/* Fills lens and signed offsets; 1 if a count or type is invalid.  *dense: every non-empty
 * block can be read in place. */
static int describe_blocks(nc_move_vec *m, int64_t *offs, int *dense)
{
    size_t *lens = m->table;
    MPI_Count size = 0;
    int type_dense = 1;
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
static int open_in_place(nc_move_vec *m, const int64_t *offs)
{
    const nc_config *cfg = nc_config_get();
    if (!cfg->dtype_engine) return 0;
    size_t n = (size_t)(m->n > 0 ? m->n : 1);
    nc_data *blocks = nc_alloc_or_die(sizeof *blocks * n);
    nc_dt_cursor *cursors = nc_alloc_or_die(sizeof *cursors * n);
    const nc_dtype *type = NULL;
    MPI_Count size;
    int dense = 1;
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
        size_t count = (size_t)count_of(m, i), min_run = (size_t)cfg->dtype_iov_min_run;
        blocks[i] = type ? nc_data_typed(base, type, count, min_run, &cursors[i]) : nc_data_bytes(base);
    }
    m->cursors = cursors;
    m->v = (nc_vec){.lens = m->table, .offs = m->table + n, .blocks = blocks};
    return 1;
}

/* A blocking call's tables, from the communicator's scratch instead of fresh memory per
 * call: the lengths and offsets of its send vector, then of its receive vector, then the
 * signed offsets that one vector at a time uses while it is opened, n per table for the
 * longer vector.  (The same size each time, so taking it again for the second vector keeps
 * the first one's.) */
static void vec_scratch_tables(nc_mpi_comm *s, const nc_move_args *a, nc_move_vec *m)
{
    int longer = a->send.n > a->recv.n ? a->send.n : a->recv.n, second = m == &a->recv;
    size_t n = (size_t)(longer > 0 ? longer : 1);
    size_t *tables = (size_t *)(void *)nc_mpi_scratch(s, sizeof(size_t) * 5 * n);
    m->table = tables + (second ? 2 * n : 0);
    m->signed_offs = (int64_t *)(void *)(tables + 4 * n);
}

/* The handle a request uses for `type`, held (also left in *held, to release; see
 * nc_mpi_hold_type), or `type` itself (predefined: nothing to hold). */
static MPI_Datatype held_type(MPI_Datatype type, MPI_Datatype *held)
{
    *held = nc_mpi_hold_type(type);
    return *held != MPI_DATATYPE_NULL ? *held : type;
}

/* Alltoallw's types, held: one duplicate per run of blocks with the same type (usually one
 * for all); an empty block keeps its handle, which may be anything (MPICH never reads it). */
static void hold_block_types(nc_move_vec *m, MPI_Datatype *types)
{
    MPI_Datatype last = MPI_DATATYPE_NULL, last_used = MPI_DATATYPE_NULL;
    for (int i = 0; i < m->n; i++) {
        m->held[i] = MPI_DATATYPE_NULL;
        types[i] = m->types[i];
        if (empty_typed_block(m, i)) continue;
        if (i == 0 || m->types[i] != last) last_used = held_type(m->types[i], &m->held[i]);
        last = m->types[i];
        types[i] = last_used;
    }
}

/* `bytes` rounded up so that what follows it stays aligned for any of the parts. */
static size_t aligned(size_t bytes) { return (bytes + 7) & ~(size_t)7; }

/* A request's own tables and copies of the vector's arguments (MPI lets the user free the
 * datatypes right after the call), its derived types held, all in one allocation. */
static void vec_keep(nc_move_vec *m, char *kept_inline)
{
    size_t n = (size_t)(m->n > 0 ? m->n : 1), ntypes = m->types ? n : 1;
    size_t tables = sizeof(size_t) * 3 * n, handles = aligned(sizeof(MPI_Datatype) * (ntypes + (m->types ? n : 0)));
    size_t counts = aligned(nc_mpi_count_size(m->wide) * n), displs = nc_mpi_displ_size(displs_wide(m)) * n;
    size_t bytes = tables + handles + (m->counts ? counts + displs : 0);
    m->owned_inline = bytes <= NC_MOVE_KEPT_INLINE;
    char *at = m->owned = m->owned_inline ? kept_inline : nc_alloc_or_die(bytes);
    m->table = (size_t *)(void *)at;
    m->signed_offs = (int64_t *)(void *)(at + sizeof(size_t) * 2 * n);
    m->held = (MPI_Datatype *)(void *)(at + tables);
    if (m->types) {
        MPI_Datatype *types = m->held + n;
        hold_block_types(m, types);
        m->types = types;
    } else {
        m->type = held_type(m->type, &m->held[0]);
    }
    if (m->counts) {
        char *counts_copy = at + tables + handles, *displs_copy = counts_copy + counts;
        memcpy(counts_copy, m->counts, nc_mpi_count_size(m->wide) * (size_t)m->n);
        if (m->displs) memcpy(displs_copy, m->displs, nc_mpi_displ_size(displs_wide(m)) * (size_t)m->n);
        m->counts = counts_copy;
        m->displs = m->displs ? displs_copy : NULL;
    }
}

/* A vector whose tables are filled: its byte form (nc_vec), in place or staged.  1:
 * invalid arguments.  An output-only derived vector is read into in place. */
static int vec_describe(nc_move_vec *m, int input)
{
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
    /* A null buffer with data is MPI_BOTTOM, valid with absolute addresses: a derived type's,
     * or displacements that are (from MPI_Get_address); blocks in the first page, where nothing
     * is ever mapped, are the error of a null buffer. */
    if (total && !m->user && dense && lowest < NC_FIRST_MAPPABLE) return 1;
    if (!dense && !input && open_in_place(m, signed_offs)) return 0;
    if (dense) { /* base at the lowest non-empty block, so offsets are never negative */
        if (!total) lowest = 0;
        for (int i = 0; i < m->n; i++) offs[i] = lens[i] ? (size_t)(signed_offs[i] - lowest) : 0;
        m->v = (nc_vec){address_at(m->user, lowest), lens, offs, NULL};
    } else { /* packed at each start (input), unpacked at delivery (a receive vector) */
        size_t at = 0;
        for (int i = 0; i < m->n; i++, at += lens[i - 1]) offs[i] = at;
        m->staging = nc_alloc_or_die(total);
        m->v = (nc_vec){m->staging, lens, offs, NULL};
    }
    return 0;
}

/* A vector of the uniform forms whose type is the predefined one with back-to-back
 * elements this thread described last (nc_last_dense_type): its blocks follow each other,
 * with no lookup of the type per call.  0: described the general way instead. */
static int vec_describe_uniform_dense(nc_move_vec *m)
{
    const nc_dense_type *last = &nc_last_dense_type;
    if (m->vector || !last->size || last->type != m->type || m->count < 0) return 0;
    size_t n = (size_t)(m->n > 0 ? m->n : 1), len = (size_t)m->count * last->size;
    if (len && !m->user) return 0; /* (the host's error to report) */
    size_t *lens = m->table, *offs = m->table + n;
    for (int i = 0; i < m->n; i++) {
        lens[i] = len;
        offs[i] = (size_t)i * len;
    }
    m->v = (nc_vec){m->user, lens, offs, NULL};
    return 1;
}

/* Opens vector m of call `call`: 0 on success, 1: invalid arguments (leave the call to the
 * host MPI).  `input`: its data is sent. */
static int vec_open(nc_mpi_move_call *call, nc_mpi_comm *s, nc_move_vec *m, int input)
{
    /* (a vector of no blocks, a neighbourhood of none, may come without arrays) */
    int arrays = m->counts && m->displs && (m->vector != 2 || m->types);
    if (m->vector && m->n > 0 && !arrays) return 1;
    if (call->request) vec_keep(m, call->kept_inline[m == &call->a.recv]);
    else vec_scratch_tables(s, &call->a, m);
    if (!vec_describe_uniform_dense(m) && vec_describe(m, input)) return 1;
    m->opened = 1;
    m->input = input;
    return 0;
}

/* (Each part tested first: a blocking call of predefined types has none, and frees nothing.) */
static void vec_release(nc_move_vec *m)
{
    if (m->staging) free(m->staging);
    if (m->v.blocks) {
        for (int i = 0; i < m->n; i++) nc_data_release(&m->v.blocks[i]);
        free(m->v.blocks);
        free(m->cursors);
    }
    if (m->owned) {
        for (int i = 0; i < (m->types ? m->n : 1); i++) nc_mpi_release_type(&m->held[i]);
        if (!m->owned_inline) free(m->owned);
    }
    m->staging = NULL;
    m->v.blocks = NULL;
    m->cursors = NULL;
    m->owned = NULL;
}

/* The entry points describe a call field by field: clearing whole structures (the vectors'
 * open state too) cost a blocking call more than the rest of its description. */

/* A call's collective, root and single buffer (count 0 and no buffer for Alltoall). */
static void args_set(nc_move_args *a, nc_coll_id coll, int root, const void *one, MPI_Count count, MPI_Datatype type)
{
    a->coll = coll;
    a->root = root;
    a->one = one;
    a->one_count = count;
    a->one_type = type;
}

static void vec_set(nc_move_vec *m, const void *buf, const void *counts, const void *displs, MPI_Count count,
                    MPI_Datatype type, const MPI_Datatype *types, int vector)
{
    m->aint_displs = 0;
    m->user = (char *)buf;
    m->counts = counts;
    m->displs = displs;
    m->count = count;
    m->type = type;
    m->types = types;
    m->vector = vector;
}

/* A vector argument of `count` elements of `type` per block, back to back. */
static void vec_uniform(nc_move_vec *m, const void *buf, MPI_Count count, MPI_Datatype type)
{
    vec_set(m, buf, NULL, NULL, count, type, NULL, 0);
}

/* A vector argument of the v-forms: counts and displacements per block. */
static void vec_varying(nc_move_vec *m, const void *buf, const void *counts, const void *displs, MPI_Datatype type)
{
    vec_set(m, buf, counts, displs, 0, type, NULL, 1);
}

/* Alltoallw's: a datatype per block, displacements in bytes. */
static void vec_typed(nc_move_vec *m, const void *buf, const void *counts, const void *displs,
                      const MPI_Datatype *types)
{
    vec_set(m, buf, counts, displs, 0, MPI_DATATYPE_NULL, types, 2);
}

/* Neighbor_alltoallw's: a datatype per block, displacements in bytes as MPI_Aint. */
static void vec_typed_aint(nc_move_vec *m, const void *buf, const void *counts, const MPI_Aint *displs,
                           const MPI_Datatype *types)
{
    vec_typed(m, buf, counts, displs, types);
    m->aint_displs = 1;
}

/* Before a vector is opened (or if it never is): nothing to release. */
static void vec_unopened(nc_move_vec *m, int n)
{
    m->n = n;
    m->opened = 0;
    m->staging = NULL;
    m->v.blocks = NULL;
    m->cursors = NULL;
    m->owned = NULL;
}

/* The bytes of every block of an opened vector. */
static uint64_t vec_total(const nc_move_vec *m)
{
    uint64_t total = 0;
    for (int i = 0; i < m->n; i++) total += m->v.lens[i];
    return total;
}

/* ---- one call, any form ------------------------------------------------------------------ */

static int is_scatter(nc_coll_id coll) { return coll == NC_COLL_SCATTER || coll == NC_COLL_SCATTERV; }
static int is_rooted(nc_coll_id coll) { return is_scatter(coll) || coll == NC_COLL_GATHER || coll == NC_COLL_GATHERV; }
static int is_alltoall(nc_coll_id coll)
{
    return coll == NC_COLL_ALLTOALL || coll == NC_COLL_ALLTOALLV || coll == NC_COLL_ALLTOALLW;
}
static int is_neighbor_alltoall(nc_coll_id coll)
{
    return coll == NC_COLL_NEIGHBOR_ALLTOALL || coll == NC_COLL_NEIGHBOR_ALLTOALLV ||
           coll == NC_COLL_NEIGHBOR_ALLTOALLW;
}
static int is_neighbor(nc_coll_id coll)
{
    return is_neighbor_alltoall(coll) || coll == NC_COLL_NEIGHBOR_ALLGATHER || coll == NC_COLL_NEIGHBOR_ALLGATHERV;
}

/* Scatter's single buffer is output: a derived type is received into in place (nc_data);
 * Gather's and Allgather's is input, packed at each start when derived. */
static int open_one(nc_mpi_move_call *m, MPI_Comm comm)
{
    void *buf = (void *)m->a.one;
    MPI_Datatype type = m->request ? held_type(m->a.one_type, &m->held_one_type) : m->a.one_type;
    MPI_Count count = m->a.one_count;
    if (m->one_output) return nc_buffer_open_data(&m->one, &m->one_data, &m->cursor, buf, count, type, comm, 0);
    return nc_buffer_open(&m->one, buf, count, type, comm, 0);
}

/* Gather(v), Scatter(v): the root's vector is opened, its counts and displacements
 * required, at the root alone (mpi4py passes NULL elsewhere).  1: the host judges. */
static int open_rooted(nc_mpi_move_call *m, nc_mpi_comm *s, MPI_Comm comm)
{
    nc_move_vec *all = m->one_output ? &m->a.send : &m->a.recv;
    if (m->a.root < 0 || m->a.root >= s->coll.size || (m->in_place && !m->is_root)) return 1;
    if (!m->in_place && open_one(m, comm)) return 1;
    /* In place, the root's own block of Gather is input: stage it (packed with the rest). */
    return m->is_root && vec_open(m, s, all, m->one_output || m->in_place);
}

static int open_allgather(nc_mpi_move_call *m, nc_mpi_comm *s, MPI_Comm comm)
{
    if (!m->in_place && open_one(m, comm)) return 1;
    /* In place, my own block is input: pack it too (the whole vector, when staged). */
    return vec_open(m, s, &m->a.recv, m->in_place);
}

/* In place, the send arguments are not significant; the receive vector is also input. */
static int open_alltoall(nc_mpi_move_call *m, nc_mpi_comm *s)
{
    return (!m->in_place && vec_open(m, s, &m->a.send, 1)) || vec_open(m, s, &m->a.recv, m->in_place);
}

/* A neighbourhood collective: a block per out-edge (sent) and per in-edge (received).  MPI
 * has no MPI_IN_PLACE for them: the host judges it. */
static int open_neighbor(nc_mpi_move_call *m, nc_mpi_comm *s, MPI_Comm comm)
{
    if (m->in_place) return 1;
    if (is_neighbor_alltoall(m->a.coll)) return vec_open(m, s, &m->a.send, 1) || vec_open(m, s, &m->a.recv, 0);
    return open_one(m, comm) || vec_open(m, s, &m->a.recv, 0);
}

/* Opens m, whose arguments m->a are set: NC_ALG_COUNT when nodecoll runs it, else the reason
 * the host MPI does (the registry's, the same on every rank, or this rank's arguments: a
 * neighbourhood collective on a communicator without a topology, whose error the host
 * raises). */
static nc_alg_id move_open(nc_mpi_move_call *m, nc_mpi_comm *s, MPI_Comm comm, int request)
{
    const nc_move_args *a = &m->a;
    const nc_neighbors *nb = s->coll.neighbors;
    int neighbor = is_neighbor(a->coll);
    vec_unopened(&m->a.send, !neighbor ? s->coll.size : nb ? nb->outdegree : 0);
    vec_unopened(&m->a.recv, !neighbor ? s->coll.size : nb ? nb->indegree : 0);
    m->request = request;
    int vector_sent = is_alltoall(a->coll) || is_neighbor_alltoall(a->coll);
    m->in_place = vector_sent ? a->send.user == MPI_IN_PLACE : a->one == MPI_IN_PLACE;
    m->is_root = s->coll.rank == a->root;
    m->one_output = is_scatter(a->coll);
    m->one = (nc_buffer){0};
    m->one_data = (nc_data){0};
    m->held_one_type = MPI_DATATYPE_NULL;
    if (neighbor && !nb) return NC_ALG_PMPI_ARGS;
    nc_alg_id host = nc_registry_host_reason(&s->coll, a->coll);
    if (host != NC_ALG_COUNT) return host;
    int bad = neighbor             ? open_neighbor(m, s, comm)
              : is_rooted(a->coll) ? open_rooted(m, s, comm)
              : is_alltoall(a->coll) ? open_alltoall(m, s)
                                     : open_allgather(m, s, comm);
    return bad ? NC_ALG_PMPI_ARGS : NC_ALG_COUNT;
}

/* The call's length as NODECOLL_CHECK compares it (0 when it is off). */
static uint64_t check_bytes(const nc_mpi_move_call *m, const nc_mpi_comm *s)
{
    const nc_move_args *a = &m->a;
    if (!s->coll.cfg.check) return 0;
    if (is_neighbor(a->coll)) return NC_CALL_ANY_BYTES; /* (each rank its own neighbourhood) */
    if (is_alltoall(a->coll)) return a->recv.vector ? NC_CALL_ANY_BYTES : vec_total(m->in_place ? &a->recv : &a->send);
    if (!is_rooted(a->coll)) return vec_total(&a->recv);
    /* The root's vector, or every block as long as mine (not the v-forms'). */
    const nc_move_vec *all = m->one_output ? &a->send : &a->recv;
    if (m->is_root) return vec_total(all);
    return all->vector ? NC_CALL_ANY_BYTES : (uint64_t)s->coll.size * m->one.bytes;
}

/* The call as the algorithms see it, and its bytes as the registry and counters count them. */
static nc_args run_args(nc_mpi_move_call *m)
{
    const void *one_in = m->one_output ? NULL : m->in_place ? NC_IN_PLACE : m->one.bytes_at;
    nc_data *one_out = m->one_output && !m->in_place ? &m->one_data : NULL;
    return (nc_args){.coll = m->a.coll,
                     .root = m->a.root,
                     .move = {.send = one_in,
                              .send_bytes = m->one_output ? 0 : m->one.bytes,
                              .recv = one_out,
                              .recv_bytes = m->one_output ? m->one.bytes : 0,
                              .send_vec = m->a.send.opened ? &m->a.send.v : NULL,
                              .recv_vec = m->a.recv.opened ? &m->a.recv.v : NULL}};
}
static size_t run_bytes(const nc_mpi_move_call *m)
{
    return is_alltoall(m->a.coll) || is_neighbor(m->a.coll) ? vec_total(&m->a.recv) : m->one.bytes;
}

static void pack_or_die(int err)
{
    if (err != MPI_SUCCESS) nc_fatal("packing a committed datatype failed (error %d)", err);
}

/* Before each run: counts the datatypes' path and packs what is sent from staging copies. */
static void move_begin(nc_mpi_move_call *m, MPI_Comm comm)
{
    nc_move_vec *send = &m->a.send, *recv = &m->a.recv;
    if (m->one.staging || send->staging || recv->staging) nc_stats_count(m->a.coll, NC_ALG_PACKED, m->one.bytes);
    else if (m->one_data.type || recv->v.blocks) nc_stats_count(m->a.coll, NC_ALG_TYPED, m->one.bytes);
    if (m->one.staging && !m->one_output) pack_or_die(nc_buffer_transfer(&m->one, comm, 0));
    if (send->staging) pack_blocks(send, comm, 0);
    if (recv->staging && recv->input) pack_blocks(recv, comm, 0);
}

/* After each run: what arrived in staging copies into the user's layout (also after a
 * truncation: what arrived is delivered, as the hosts deliver it); an MPI error code. */
static int move_deliver(nc_mpi_move_call *m, MPI_Comm comm)
{
    if (m->a.recv.staging) pack_blocks(&m->a.recv, comm, 1);
    return m->one.staging && m->one_output ? nc_buffer_transfer(&m->one, comm, 1) : MPI_SUCCESS;
}

/* (Each part tested here first: a blocking call of predefined types holds none of them.) */
static int vec_holds(const nc_move_vec *m) { return m->staging || m->v.blocks || m->owned; }

static void move_release(nc_mpi_move_call *m, MPI_Comm comm)
{
    if (vec_holds(&m->a.send)) vec_release(&m->a.send);
    if (vec_holds(&m->a.recv)) vec_release(&m->a.recv);
    if (m->one_data.bounce) nc_data_release(&m->one_data);
    if (m->one.staging) nc_buffer_close(&m->one, comm, 0);
    if (m->held_one_type != MPI_DATATYPE_NULL) nc_mpi_release_type(&m->held_one_type);
}

/* A request packs with MPI_COMM_SELF: the user may free the communicator while it lives. */
static void move_request_begin(nc_mpi_request *r) { move_begin(&r->call.move, MPI_COMM_SELF); }
static int move_request_deliver(nc_mpi_request *r) { return move_deliver(&r->call.move, MPI_COMM_SELF); }
static void move_request_release(nc_mpi_request *r) { move_release(&r->call.move, MPI_COMM_SELF); }
static const nc_mpi_call_form move_form = {move_request_begin, move_request_deliver, move_request_release,
                                             offsetof(nc_mpi_move_call, cursor)};

/* ---- repeated nonblocking calls (request.h, nc_mpi_request_again) ---------------------- */

/* The uniform forms (no count, displacement or type arrays, whose contents could change
 * behind the same pointers) outside the neighbourhoods. */
static int repeatable(nc_coll_id coll)
{
    return coll == NC_COLL_GATHER || coll == NC_COLL_SCATTER || coll == NC_COLL_ALLGATHER || coll == NC_COLL_ALLTOALL;
}

/* A repeatable call's key from its description: its single buffer, its vectors (each only
 * where the collective has it: the rest of the description is not filled in yet). */
static nc_mpi_reuse_key move_key(const nc_move_args *a)
{
    nc_mpi_reuse_key k = {a->coll, a->root, MPI_OP_NULL, {{NULL, 0, MPI_DATATYPE_NULL}}};
    if (!is_alltoall(a->coll)) k.part[0] = (nc_mpi_reuse_part){a->one, a->one_count, a->one_type};
    if (is_scatter(a->coll) || is_alltoall(a->coll))
        k.part[1] = (nc_mpi_reuse_part){a->send.user, a->send.count, a->send.type};
    if (!is_scatter(a->coll)) k.part[2] = (nc_mpi_reuse_part){a->recv.user, a->recv.count, a->recv.type};
    return k;
}

/* (A vector the call does not open, such as a Gather sender's receive vector, has only the
 * open state vec_unopened clears: its `held` is not set.) */
static int vec_plain(const nc_move_vec *m)
{
    return !m->staging && !m->v.blocks && (!m->owned || m->held[0] == MPI_DATATYPE_NULL);
}

/* Whether an opened call's request may serve its repetitions: predefined types, contiguous,
 * nothing staged (in place, Alltoall publishes a copy of its receive buffer). */
static int move_reusable(const nc_mpi_move_call *m)
{
    return repeatable(m->a.coll) && !m->in_place && m->held_one_type == MPI_DATATYPE_NULL && !m->one.staging &&
           vec_plain(&m->a.send) && vec_plain(&m->a.recv);
}

/* The call whose arguments `described->a` holds (the caller's: a blocking call runs in it),
 * in form f: run by nodecoll (blocking: to completion; else issued as a request, which
 * copies the arguments), or NC_RUN_HOST: the host's form of the call serves it. */
NC_FORM_INLINE int move_call(nc_mpi_move_call *described, MPI_Comm comm, const nc_call_form_args *f)
{
    const nc_move_args *a = &described->a;
    nc_mpi_comm *s = nc_mpi_state_for_form(comm, a->coll, f);
    if (!s) return NC_RUN_HOST;
    nc_mpi_reuse_key key;
    int err;
    if (!f->blocking && repeatable(a->coll)) {
        key = move_key(a);
        if (nc_mpi_restart_repeated(s, f, &key, &err)) return err;
    }
    nc_mpi_request *r = f->blocking ? NULL : nc_mpi_request_new(s, comm, &move_form, f->persistent);
    if (!f->blocking && !r) return NC_RUN_HOST;
    described->a.send.wide = described->a.recv.wide = f->large;
    nc_mpi_move_call *m = r ? &r->call.move : described;
    if (r) m->a = *a;
    nc_alg_id host = move_open(m, s, comm, r != NULL);
    uint64_t bytes = host == NC_ALG_COUNT ? check_bytes(m, s) : NC_CALL_ANY_BYTES;
    nc_call_record call = {a->coll, a->root, NC_CALL_NONE, host, bytes, 0};
    err = nc_mpi_enter_form(s, comm, &call, f);
    if (err || host != NC_ALG_COUNT) {
        if (r) nc_mpi_request_discard(r);
        else move_release(m, comm);
        if (err) return err;
        nc_mpi_fallback(a->coll, host);
        return NC_RUN_HOST;
    }
    nc_args args = run_args(m);
    if (r) {
        r->args = args;
        if (!f->persistent && move_reusable(m)) nc_mpi_request_reusable(r, &key, &call);
        nc_mpi_request_issue(r, run_bytes(m), f->request);
        return MPI_SUCCESS;
    }
    move_begin(m, comm);
    err = nc_collective(&s->coll, &args, run_bytes(m));
    int deliver_err = move_deliver(m, comm);
    move_release(m, comm);
    return nc_mpi_raise(comm, err ? err : deliver_err);
}

/* ---- the entry points ------------------------------------------------------------------
 * Collective Name's entry points in every form, classic and large-count (NC_COUNT_FORMS),
 * from its parameter list params_of(N, C, D) (request.h), its arguments (parenthesised) and
 * `describe`, which fills `call.a` from the parameters (parenthesised): the adapter
 * Name##_call runs the call, or returns NC_RUN_HOST for the host's form of it. */
#define NC_MOVE_FORMS(Name, IName, params_of, args, describe) \
    NC_MOVE_FORMS_OF(NC_COUNT_FORMS, Name, IName, params_of, args, describe)
/* (The neighbourhood collectives' persistent forms are found at build time apart.) */
#define NC_NEIGHBOR_FORMS(Name, IName, params_of, args, describe) \
    NC_MOVE_FORMS_OF(NC_NEIGHBOR_COUNT_FORMS, Name, IName, params_of, args, describe)
#define NC_MOVE_FORMS_OF(count_forms, Name, IName, params_of, args, describe)                     \
    NC_FORM_INLINE int Name##_call(NC_ADAPTER_PARAMS(params_of), const nc_call_form_args *f)       \
    {                                                                                              \
        nc_mpi_move_call call; /* (uncleared: described and opened field by field) */              \
        NC_UNPAREN describe;                                                                       \
        return move_call(&call, comm, f);                                                          \
    }                                                                                              \
    count_forms(Name, IName, Name##_call, params_of, args)

/* (MPI's parameters of Gather and Scatter, and of Allgather and Alltoall) */
#define NC_ROOTED_PARAMS(N, C, D)                                                                          \
    (const void *sendbuf, N scount, MPI_Datatype stype, void *recvbuf, N rcount, MPI_Datatype rtype, int root, \
     MPI_Comm comm)
#define NC_ROOTED_ARGS (sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm)
#define NC_ALL_PARAMS(N, C, D) \
    (const void *sendbuf, N scount, MPI_Datatype stype, void *recvbuf, N rcount, MPI_Datatype rtype, MPI_Comm comm)
#define NC_ALL_ARGS (sendbuf, scount, stype, recvbuf, rcount, rtype, comm)
#define NC_GATHERV_PARAMS(N, C, D)                                                                           \
    (const void *sendbuf, N scount, MPI_Datatype stype, void *recvbuf, const C *rcounts, const D *displs,   \
     MPI_Datatype rtype, int root, MPI_Comm comm)
#define NC_SCATTERV_PARAMS(N, C, D)                                                                          \
    (const void *sendbuf, const C *scounts, const D *displs, MPI_Datatype stype, void *recvbuf, N rcount,   \
     MPI_Datatype rtype, int root, MPI_Comm comm)
#define NC_ALLGATHERV_PARAMS(N, C, D)                                                                        \
    (const void *sendbuf, N scount, MPI_Datatype stype, void *recvbuf, const C *rcounts, const D *displs,   \
     MPI_Datatype rtype, MPI_Comm comm)
#define NC_ALLTOALLV_PARAMS(N, C, D)                                                                         \
    (const void *sendbuf, const C *scounts, const D *sdispls, MPI_Datatype stype, void *recvbuf,            \
     const C *rcounts, const D *rdispls, MPI_Datatype rtype, MPI_Comm comm)
#define NC_ALLTOALLW_PARAMS(N, C, D)                                                                         \
    (const void *sendbuf, const C *scounts, const D *sdispls, const MPI_Datatype *stypes, void *recvbuf,    \
     const C *rcounts, const D *rdispls, const MPI_Datatype *rtypes, MPI_Comm comm)

NC_MOVE_FORMS(Gather, Igather, NC_ROOTED_PARAMS, NC_ROOTED_ARGS,
              (args_set(&call.a, NC_COLL_GATHER, root, sendbuf, scount, stype),
               vec_uniform(&call.a.recv, recvbuf, rcount, rtype)))

NC_MOVE_FORMS(Gatherv, Igatherv, NC_GATHERV_PARAMS,
              (sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, root, comm),
              (args_set(&call.a, NC_COLL_GATHERV, root, sendbuf, scount, stype),
               vec_varying(&call.a.recv, recvbuf, rcounts, displs, rtype)))

NC_MOVE_FORMS(Scatter, Iscatter, NC_ROOTED_PARAMS, NC_ROOTED_ARGS,
              (args_set(&call.a, NC_COLL_SCATTER, root, recvbuf, rcount, rtype),
               vec_uniform(&call.a.send, sendbuf, scount, stype)))

NC_MOVE_FORMS(Scatterv, Iscatterv, NC_SCATTERV_PARAMS,
              (sendbuf, scounts, displs, stype, recvbuf, rcount, rtype, root, comm),
              (args_set(&call.a, NC_COLL_SCATTERV, root, recvbuf, rcount, rtype),
               vec_varying(&call.a.send, sendbuf, scounts, displs, stype)))

/* Allgather(v) and Alltoall(v) share their arguments and descriptions with their
 * neighbourhood forms (below): each once, for both. */
#define NC_ALLGATHERV_ARGS (sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, comm)
#define NC_ALLTOALLV_ARGS (sendbuf, scounts, sdispls, stype, recvbuf, rcounts, rdispls, rtype, comm)
#define NC_DESCRIBE_ALLGATHER(coll)                                             \
    (args_set(&call.a, coll, NC_CALL_NONE, sendbuf, scount, stype),            \
     vec_uniform(&call.a.recv, recvbuf, rcount, rtype))
#define NC_DESCRIBE_ALLGATHERV(coll)                                            \
    (args_set(&call.a, coll, NC_CALL_NONE, sendbuf, scount, stype),            \
     vec_varying(&call.a.recv, recvbuf, rcounts, displs, rtype))
#define NC_DESCRIBE_ALLTOALL(coll)                                              \
    (args_set(&call.a, coll, NC_CALL_NONE, NULL, 0, MPI_DATATYPE_NULL),        \
     vec_uniform(&call.a.send, sendbuf, scount, stype), vec_uniform(&call.a.recv, recvbuf, rcount, rtype))
#define NC_DESCRIBE_ALLTOALLV(coll)                                             \
    (args_set(&call.a, coll, NC_CALL_NONE, NULL, 0, MPI_DATATYPE_NULL),        \
     vec_varying(&call.a.send, sendbuf, scounts, sdispls, stype),              \
     vec_varying(&call.a.recv, recvbuf, rcounts, rdispls, rtype))

NC_MOVE_FORMS(Allgather, Iallgather, NC_ALL_PARAMS, NC_ALL_ARGS, NC_DESCRIBE_ALLGATHER(NC_COLL_ALLGATHER))
NC_MOVE_FORMS(Allgatherv, Iallgatherv, NC_ALLGATHERV_PARAMS, NC_ALLGATHERV_ARGS,
              NC_DESCRIBE_ALLGATHERV(NC_COLL_ALLGATHERV))
NC_MOVE_FORMS(Alltoall, Ialltoall, NC_ALL_PARAMS, NC_ALL_ARGS, NC_DESCRIBE_ALLTOALL(NC_COLL_ALLTOALL))
NC_MOVE_FORMS(Alltoallv, Ialltoallv, NC_ALLTOALLV_PARAMS, NC_ALLTOALLV_ARGS, NC_DESCRIBE_ALLTOALLV(NC_COLL_ALLTOALLV))

NC_MOVE_FORMS(Alltoallw, Ialltoallw, NC_ALLTOALLW_PARAMS,
              (sendbuf, scounts, sdispls, stypes, recvbuf, rcounts, rdispls, rtypes, comm),
              (args_set(&call.a, NC_COLL_ALLTOALLW, NC_CALL_NONE, NULL, 0, MPI_DATATYPE_NULL),
               vec_typed(&call.a.send, sendbuf, scounts, sdispls, stypes),
               vec_typed(&call.a.recv, recvbuf, rcounts, rdispls, rtypes)))

/* The neighbourhood collectives: a block per edge of the communicator's topology
 * (Neighbor_alltoallw's displacements are MPI_Aint in both its classic and _c forms). */
#define NC_NEIGHBOR_ALLTOALLW_PARAMS(N, C, D)                                                                   \
    (const void *sendbuf, const C *scounts, const MPI_Aint *sdispls, const MPI_Datatype *stypes, void *recvbuf, \
     const C *rcounts, const MPI_Aint *rdispls, const MPI_Datatype *rtypes, MPI_Comm comm)
NC_NEIGHBOR_FORMS(Neighbor_allgather, Ineighbor_allgather, NC_ALL_PARAMS, NC_ALL_ARGS,
                  NC_DESCRIBE_ALLGATHER(NC_COLL_NEIGHBOR_ALLGATHER))
NC_NEIGHBOR_FORMS(Neighbor_allgatherv, Ineighbor_allgatherv, NC_ALLGATHERV_PARAMS, NC_ALLGATHERV_ARGS,
                  NC_DESCRIBE_ALLGATHERV(NC_COLL_NEIGHBOR_ALLGATHERV))
NC_NEIGHBOR_FORMS(Neighbor_alltoall, Ineighbor_alltoall, NC_ALL_PARAMS, NC_ALL_ARGS,
                  NC_DESCRIBE_ALLTOALL(NC_COLL_NEIGHBOR_ALLTOALL))
NC_NEIGHBOR_FORMS(Neighbor_alltoallv, Ineighbor_alltoallv, NC_ALLTOALLV_PARAMS, NC_ALLTOALLV_ARGS,
                  NC_DESCRIBE_ALLTOALLV(NC_COLL_NEIGHBOR_ALLTOALLV))

NC_NEIGHBOR_FORMS(Neighbor_alltoallw, Ineighbor_alltoallw, NC_NEIGHBOR_ALLTOALLW_PARAMS,
                  (sendbuf, scounts, sdispls, stypes, recvbuf, rcounts, rdispls, rtypes, comm),
                  (args_set(&call.a, NC_COLL_NEIGHBOR_ALLTOALLW, NC_CALL_NONE, NULL, 0, MPI_DATATYPE_NULL),
                   vec_typed_aint(&call.a.send, sendbuf, scounts, sdispls, stypes),
                   vec_typed_aint(&call.a.recv, recvbuf, rcounts, rdispls, rtypes)))
