/* MPI entry points of the data-movement collectives: Gather(v), Scatter(v), Allgather(v),
 * Alltoall(v,w).  Each turns its arguments into byte blocks (nc_vec) and runs the algorithm
 * of src/coll, or hands the call unchanged to the host MPI: when the selection table says
 * so (the same on every rank), or when this rank's arguments are invalid (the host then
 * reports its own error class). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "datatype.h"
#include "state.h"
#include "../core/fatal.h"
#include "../coll/select.h"

#define NC_EXPORT __attribute__((visibility("default")))

/* A vector argument as byte blocks.  Dense types are used in place; any other committed
 * type is packed block by block into a compact staging copy (and unpacked afterwards). */
typedef struct move_vec {
    nc_vec v;
    size_t *lens_offs; /* byte form: lens then offs, when staged or per-block types */
    char *user;
    const int *counts, *displs;
    int count, n, staged;
    MPI_Datatype type;
    const MPI_Datatype *types; /* Alltoallw: one per block, displacements in bytes */
} move_vec;

static int count_of(const move_vec *m, int i) { return m->counts ? m->counts[i] : m->count; }
static MPI_Datatype type_of(const move_vec *m, int i) { return m->types ? m->types[i] : m->type; }

/* Where block i starts in the user buffer. */
static char *user_block(const move_vec *m, int i)
{
    if (m->types) return m->user + m->displs[i];
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(m->type, &lb, &extent);
    return m->user + (m->displs ? (MPI_Aint)m->displs[i] : (MPI_Aint)i * m->count) * extent;
}

/* Validates every block; 0 if usable, with each block's size and whether all are dense. */
static int check_blocks(move_vec *m, int *all_dense, size_t *total)
{
    *all_dense = 1;
    *total = 0;
    for (int i = 0; i < m->n; i++) {
        int size, dense, count = count_of(m, i);
        if (count < 0 || (m->displs && m->displs[i] < 0)) return 1;
        if (nc_datatype_describe(type_of(m, i), &size, &dense)) return 1;
        if (!m->types && i > 0) { /* one type: the rest of the blocks look the same */
            for (; i < m->n; i++) {
                if (count_of(m, i) < 0 || (m->displs && m->displs[i] < 0)) return 1;
                *total += (size_t)count_of(m, i) * (size_t)size;
            }
            break;
        }
        *all_dense &= dense;
        *total += (size_t)count * (size_t)size;
    }
    return 0;
}

static void pack_block(move_vec *m, int i, int unpack, MPI_Comm comm)
{
    size_t len = m->v.lens[i];
    if (!len) return;
    if (len > INT_MAX) nc_fatal("a block of %zu bytes of a derived datatype is beyond MPI_Pack's int", len);
    int position = 0, err;
    char *packed = m->v.base + m->v.offs[i];
    if (unpack) err = PMPI_Unpack(packed, (int)len, &position, user_block(m, i), count_of(m, i), type_of(m, i), comm);
    else err = PMPI_Pack(user_block(m, i), count_of(m, i), type_of(m, i), packed, (int)len, &position, comm);
    if (err != MPI_SUCCESS) nc_fatal("MPI_%s of a committed datatype failed (error %d)", unpack ? "Unpack" : "Pack", err);
}

/* 0 on success, 1: invalid arguments (leave the call to the host MPI).  `fill`: pack now. */
static int vec_open(move_vec *m, MPI_Comm comm, int fill)
{
    int all_dense;
    size_t total;
    if (check_blocks(m, &all_dense, &total)) return 1;
    if (total && !m->user) return 1;
    if (all_dense && !m->types) {
        int size, dense;
        nc_datatype_describe(m->type, &size, &dense);
        m->v = (nc_vec){m->user, m->counts, m->displs, m->count, (size_t)size, (size_t)size, NULL, NULL};
        return 0;
    }
    if (!(m->lens_offs = malloc(sizeof(size_t) * 2 * (size_t)(m->n ? m->n : 1))))
        nc_fatal("out of memory for %d block descriptions", m->n);
    size_t *lens = m->lens_offs, *offs = m->lens_offs + m->n, at = 0;
    for (int i = 0; i < m->n; i++) {
        int size, dense;
        nc_datatype_describe(type_of(m, i), &size, &dense);
        lens[i] = (size_t)count_of(m, i) * (size_t)size;
        offs[i] = all_dense ? (size_t)m->displs[i] : at; /* all_dense here: Alltoallw in place */
        at += lens[i];
    }
    m->v = (nc_vec){.base = m->user, .lens = lens, .offs = offs};
    if (all_dense) return 0;
    m->staged = 1;
    if (!(m->v.base = malloc(at ? at : 1))) nc_fatal("cannot allocate %zu bytes to pack derived datatypes", at);
    if (fill)
        for (int i = 0; i < m->n; i++) pack_block(m, i, 0, comm);
    return 0;
}

static void vec_close(move_vec *m, MPI_Comm comm, int drain)
{
    if (m->staged) {
        if (drain)
            for (int i = 0; i < m->n; i++) pack_block(m, i, 1, comm);
        free(m->v.base);
    }
    free(m->lens_offs);
}

static move_vec vec_of(void *buf, const int *counts, const int *displs, int count, MPI_Datatype type, int n)
{
    return (move_vec){.user = buf, .counts = counts, .displs = displs, .count = count, .n = n, .type = type};
}

/* The state when the table accelerates `coll` on comm, else NULL (counted). */
static nc_mpi_comm *accelerated(MPI_Comm comm, nc_coll_id coll)
{
    nc_mpi_comm *s = nc_mpi_state(comm, coll);
    if (!s) return NULL;
    nc_alg_id alg = nc_select(&s->coll, coll, 0);
    if (nc_alg_is_fallback(alg)) {
        nc_mpi_fallback(coll, alg);
        return NULL;
    }
    return s;
}

static void count_packed(nc_coll_id coll, int staged, size_t bytes)
{
    if (staged) nc_stats_count(coll, NC_ALG_PACKED, bytes);
}

/* ---- Gather, Gatherv -------------------------------------------------------------------- */

static int gather_common(nc_coll_id coll, const void *sendbuf, int scount, MPI_Datatype stype, move_vec *recv,
                         int root, MPI_Comm comm)
{
    nc_mpi_comm *s = accelerated(comm, coll);
    if (!s) return -1;
    int is_root = s->coll.rank == root, in_place = sendbuf == MPI_IN_PLACE;
    nc_buffer sb = {0};
    if (root < 0 || root >= s->coll.size || (in_place && !is_root) ||
        (!in_place && nc_buffer_open(&sb, (void *)sendbuf, scount, stype, comm, 1))) {
        nc_mpi_fallback(coll, NC_ALG_PMPI_ARGS);
        return -1;
    }
    if (is_root && vec_open(recv, comm, in_place)) {
        nc_buffer_close(&sb, comm, 0);
        nc_mpi_fallback(coll, NC_ALG_PMPI_ARGS);
        return -1;
    }
    count_packed(coll, sb.staging || recv->staged, sb.bytes);
    int err = nc_gatherv(&s->coll, coll, in_place ? NULL : sb.bytes_at, sb.bytes, is_root ? &recv->v : NULL, root);
    if (is_root) vec_close(recv, comm, 1);
    nc_buffer_close(&sb, comm, 0);
    return nc_mpi_raise(comm, err);
}

NC_EXPORT int MPI_Gather(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
                         MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int size = 0;
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
    move_vec rv = vec_of(recvbuf, NULL, NULL, rcount, rtype, size);
    int err = gather_common(NC_COLL_GATHER, sendbuf, scount, stype, &rv, root, comm);
    return err >= 0 ? err : PMPI_Gather(sendbuf, scount, stype, recvbuf, rcount, rtype, root, comm);
}

NC_EXPORT int MPI_Gatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
                          const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    int size = 0;
    if (comm != MPI_COMM_NULL) PMPI_Comm_size(comm, &size);
    move_vec rv = vec_of(recvbuf, rcounts, displs, 0, rtype, size);
    if (!rcounts || !displs) rv.n = 0; /* checked at the root below */
    int err = (rcounts && displs) || 1 ? gather_common(NC_COLL_GATHERV, sendbuf, scount, stype, &rv, root, comm) : -1;
    return err >= 0 ? err : PMPI_Gatherv(sendbuf, scount, stype, recvbuf, rcounts, displs, rtype, root, comm);
}
