#include "datatype.h"

#include <pthread.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>

#include "../core/config.h"
#include "../core/fatal.h"
#include "dtype_decode.h"
#include "state.h"

/* The committed mark: a type the program committed through nodecoll's MPI_Type_commit, or
 * one found committed by the host (committed behind nodecoll's back, through PMPI_: MPICH's
 * mpi_f08 binding describes a non-contiguous array section with a type it commits and frees
 * itself around the call). */
enum { COMMITTED_HERE = 1, COMMITTED_ELSEWHERE = 2 };
static int committed_keyval = MPI_KEYVAL_INVALID;
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

static void create_keyval(void)
{
    /* Dup copies the mark: a duplicate of a committed type is committed. */
    PMPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &committed_keyval, NULL);
}

static void mark(MPI_Datatype type, int how)
{
    pthread_once(&keyval_once, create_keyval);
    if (committed_keyval != MPI_KEYVAL_INVALID) PMPI_Type_set_attr(type, committed_keyval, (void *)(uintptr_t)how);
}

void nc_datatype_mark_committed(MPI_Datatype type) { mark(type, COMMITTED_HERE); }

void nc_datatype_release_keyval(void)
{
    if (committed_keyval != MPI_KEYVAL_INVALID) PMPI_Type_free_keyval(&committed_keyval);
    nc_mpi_dtype_release_keyval();
}

static int committed_mark(MPI_Datatype type)
{
    int found = 0;
    void *value = NULL;
    pthread_once(&keyval_once, create_keyval);
    if (committed_keyval == MPI_KEYVAL_INVALID) return 0;
    PMPI_Type_get_attr(type, committed_keyval, &value, &found);
    return found ? (int)(uintptr_t)value : 0;
}

/* MPI has no query for it, but both hosts refuse to pack zero elements of an uncommitted type
 * (Open MPI 4.1 and MPICH 4.0: MPI_ERR_TYPE), and accept it for a committed one. */
static int host_says_committed(MPI_Datatype type)
{
    char out[1];
    int position = 0;
    MPI_Comm self = nc_mpi_own_self();
    return self != MPI_COMM_NULL && PMPI_Pack(out, 0, type, out, (int)sizeof out, &position, self) == MPI_SUCCESS;
}

/* COMMITTED_HERE, COMMITTED_ELSEWHERE or 0 (not committed) for a derived type. */
static int commit_state(MPI_Datatype type)
{
    int state = committed_mark(type);
    if (state || !host_says_committed(type)) return state;
    mark(type, COMMITTED_ELSEWHERE);
    return COMMITTED_ELSEWHERE;
}

static int is_committed(MPI_Datatype type, int combiner)
{
    return nc_mpi_combiner_predefined(combiner) || commit_state(type);
}

int nc_datatype_committed_elsewhere(MPI_Datatype type) { return commit_state(type) == COMMITTED_ELSEWHERE; }

/* Predefined types whose elements lie back to back (not MPI_DOUBLE_INT and friends, whose
 * extent includes padding): their bytes in memory are their bytes on the wire. */
static int is_dense_named(MPI_Datatype type, int combiner, MPI_Count size)
{
    MPI_Aint lb, extent;
    if (combiner != MPI_COMBINER_NAMED) return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS) return 0;
    return lb == 0 && extent == size;
}

/* The last few predefined types this thread used.  Only predefined handles are kept: they
 * are never freed, so a handle seen here cannot have been reused for another type. */
typedef struct named_type {
    MPI_Datatype type;
    MPI_Count size;
    int dense, valid;
} named_type;
#define NC_RECENT_TYPES 4
static _Thread_local named_type recent_types[NC_RECENT_TYPES];
static _Thread_local unsigned recent_next;

static const named_type *recent_named(MPI_Datatype type)
{
    for (int i = 0; i < NC_RECENT_TYPES; i++)
        if (recent_types[i].valid && recent_types[i].type == type) return &recent_types[i];
    return NULL;
}

NC_HOT_TLS nc_dense_type nc_last_dense_type;

int nc_datatype_known_predefined(MPI_Datatype type)
{
    const nc_dense_type *last = &nc_last_dense_type; /* (hot: no __tls_get_addr, as recent_types costs) */
    return (last->size && last->type == type) || recent_named(type) != NULL;
}

/* 0 and the type's size and density, or 1 if the type cannot be used (null, uncommitted). */
static int describe_type(MPI_Datatype type, MPI_Count *size, int *dense)
{
    const named_type *known = recent_named(type);
    if (known) {
        if (known->dense) nc_last_dense_type = (nc_dense_type){type, (size_t)known->size};
        *size = known->size;
        *dense = known->dense;
        return 0;
    }
    int combiner = type == MPI_DATATYPE_NULL ? -1 : nc_mpi_type_combiner(type);
    if (combiner == MPI_COMBINER_DUP) {
        MPI_Datatype named = nc_mpi_type_undup(type);
        if (named != type) return describe_type(named, size, dense); /* (committed, like every predefined type) */
    }
    if (combiner < 0 || !is_committed(type, combiner)) return 1;
    if (PMPI_Type_size_x(type, size) != MPI_SUCCESS || *size < 0) return 1;
    *dense = is_dense_named(type, combiner, *size);
    if (combiner == MPI_COMBINER_NAMED) {
        recent_types[recent_next++ % NC_RECENT_TYPES] = (named_type){type, *size, *dense, 1};
        if (*dense) nc_last_dense_type = (nc_dense_type){type, (size_t)*size};
    }
    return 0;
}

int nc_datatype_describe(MPI_Datatype type, MPI_Count *size, int *dense) { return describe_type(type, size, dense); }

int nc_datatype_gapless(MPI_Datatype type, size_t *size)
{
    MPI_Count bytes;
    int dense;
    MPI_Aint lb, extent, true_lb, true_extent;
    if (describe_type(type, &bytes, &dense) || bytes <= 0) return 0;
    if (PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(type, &true_lb, &true_extent) != MPI_SUCCESS)
        return 0;
    *size = (size_t)bytes;
    return lb == 0 && true_lb == 0 && extent == bytes && true_extent == bytes;
}

/* MPICH 4.0 refuses a null buffer in MPI_Pack/MPI_Unpack even with MPI_BOTTOM and a type of
 * absolute addresses: the same bytes are reached from address 1 through the type moved down
 * one byte (same extent).  Freed by the caller. */
static MPI_Datatype moved_down_a_byte(MPI_Datatype type)
{
    int one = 1;
    MPI_Aint minus_one = -1;
    MPI_Datatype moved;
    PMPI_Type_create_hindexed(1, &one, &minus_one, type, &moved);
    PMPI_Type_commit(&moved);
    return moved;
}

/* The host's MPI_Pack or MPI_Unpack of n elements: MPI-4's large-count forms where the host
 * has them (one call packs any size), else the int forms, whose pieces stay below INT_MAX
 * bytes (NC_PACK_MAX). */
#ifdef NODECOLL_HAVE_MPI_LARGE_COUNT
#define NC_PACK_MAX ((size_t)PTRDIFF_MAX)
#define NC_HOST_PACK(Name) PMPI_##Name##_c
typedef MPI_Count nc_pack_count;
#else
#define NC_PACK_MAX ((size_t)INT_MAX)
#define NC_HOST_PACK(Name) PMPI_##Name
typedef int nc_pack_count;
#endif
static int host_pack(char *packed, size_t bytes, void *user, size_t n, MPI_Datatype type, MPI_Comm comm, int unpack)
{
    nc_pack_count position = 0, size = (nc_pack_count)bytes, count = (nc_pack_count)n;
    return unpack ? NC_HOST_PACK(Unpack)(packed, size, &position, user, count, type, comm)
                  : NC_HOST_PACK(Pack)(user, count, type, packed, size, &position, comm);
}

/* Moves the data in pieces of whole elements within what the host's MPI_Pack counts, so a
 * message of any size stays on the same path on every rank. */
static int pack_in_pieces(nc_buffer *b, MPI_Comm comm, int unpack)
{
    MPI_Aint lb, extent;
    if (PMPI_Type_get_extent(b->type, &lb, &extent) != MPI_SUCCESS) return MPI_ERR_TYPE;
    size_t elem_bytes = b->bytes / (size_t)b->count;
    size_t per_piece = elem_bytes ? NC_PACK_MAX / elem_bytes : (size_t)b->count;
    if (per_piece == 0) return MPI_ERR_COUNT; /* one element above 2 GiB: not packable by MPI_Pack */
    int err = MPI_SUCCESS;
    for (size_t first = 0; first < (size_t)b->count && err == MPI_SUCCESS; first += per_piece) {
        size_t n = (size_t)b->count - first < per_piece ? (size_t)b->count - first : per_piece;
        /* (address arithmetic in integers: MPI_BOTTOM is a null pointer) */
        uintptr_t at = (uintptr_t)b->user + (uintptr_t)((MPI_Aint)first * extent);
        MPI_Datatype type = at ? b->type : moved_down_a_byte(b->type);
        void *user = (void *)(at ? at : 1);
        char *packed = (char *)b->staging + first * elem_bytes;
        err = host_pack(packed, n * elem_bytes, user, n, type, comm, unpack);
        if (type != b->type) PMPI_Type_free(&type);
    }
    return err;
}

/* Moves the whole buffer between the user's layout and the staging copy with the datatype
 * engine; 0 (nothing moved) when the engine is off or cannot describe the type. */
static int engine_move(nc_buffer *b, int unpack)
{
    const nc_dtype *d = nc_config_get()->dtype_engine ? nc_mpi_dtype(b->type) : NULL;
    if (!d) return 0;
    nc_dt_cursor c;
    nc_dt_cursor_init(&c, d, b->user, (size_t)b->count, 0);
    if (unpack) nc_dt_unpack(&c, b->staging, b->bytes);
    else nc_dt_pack(&c, b->staging, b->bytes);
    return 1;
}

int nc_buffer_transfer(nc_buffer *b, MPI_Comm comm, int unpack)
{
    return engine_move(b, unpack) ? MPI_SUCCESS : pack_in_pieces(b, comm, unpack);
}

/* nc_buffer_open once the type is known to be usable; `stage`: give a type that is not
 * dense a packed staging copy (else the caller uses it in place). */
static int open_described(nc_buffer *b, void *buf, MPI_Count count, MPI_Datatype type, MPI_Count size, int dense,
                          MPI_Comm comm, int fill, int stage)
{
    *b = (nc_buffer){buf, (size_t)count * (size_t)size, buf, count, type, NULL};
    if (dense || !b->bytes) {
        /* A predefined type with a null buffer is the host's error to report. */
        return b->bytes && !buf;
    }
    if (!stage) return 0; /* (MPI_BOTTOM is a null buffer with absolute displacements: valid) */
    /* Past this point every rank with valid arguments takes the fast path: a failure here
     * on one rank alone must not send it to the host MPI while the others wait in ours. */
    b->staging = nc_alloc_or_die(b->bytes);
    b->bytes_at = b->staging;
    if (fill) {
        int err = nc_buffer_transfer(b, comm, 0);
        if (err != MPI_SUCCESS) nc_fatal("MPI_Pack of a committed datatype failed (error %d)", err);
    }
    return 0;
}

int nc_buffer_open(nc_buffer *b, void *buf, MPI_Count count, MPI_Datatype type, MPI_Comm comm, int fill)
{
    MPI_Count size;
    int dense;
    if (count < 0 || describe_type(type, &size, &dense)) return 1;
    return open_described(b, buf, count, type, size, dense, comm, fill, 1);
}

int nc_buffer_open_data_described(nc_buffer *b, nc_data *l, nc_dt_cursor *cursor, void *buf, MPI_Count count,
                                  MPI_Datatype type, MPI_Comm comm, int fill)
{
    MPI_Count size;
    int dense;
    if (count < 0 || describe_type(type, &size, &dense)) return 1;
    const nc_config *cfg = nc_config_get();
    const nc_dtype *d = !dense && count && size && cfg->dtype_engine ? nc_mpi_dtype(type) : NULL;
    if (open_described(b, buf, count, type, size, dense, comm, fill, !d)) return 1;
    *l = d ? nc_data_typed(buf, d, (size_t)count, (size_t)cfg->dtype_iov_min_run, cursor) : nc_data_bytes(b->bytes_at);
    return 0;
}

int nc_buffer_close(nc_buffer *b, MPI_Comm comm, int drain)
{
    int err = MPI_SUCCESS;
    if (!b->staging) return MPI_SUCCESS;
    if (drain) err = nc_buffer_transfer(b, comm, 1);
    free(b->staging);
    b->staging = NULL;
    return err;
}
