/* A user buffer seen as contiguous bytes: predefined dense types are used in place, any other
 * committed type is packed into (or unpacked from) a staging buffer by the datatype engine
 * (or the host's MPI_Pack), or, for algorithms that take an nc_data, used in place.  Each
 * rank decides for its own datatype, so ranks whose types differ but whose type signatures
 * match (as MPI allows) still move the same bytes on the same path. */
#ifndef NC_MPI_DATATYPE_H
#define NC_MPI_DATATYPE_H

#include <mpi.h>
#include <stddef.h>

#include "../coll/data.h"
#include "../core/hot_tls.h"

/* Element i of a count or displacement array of an MPI call: int in the classic forms, and
 * MPI_Count / MPI_Aint in MPI-4's large-count (_c) forms (`wide`). */
static inline MPI_Count nc_mpi_count_at(const void *counts, int wide, int i)
{
    return wide ? ((const MPI_Count *)counts)[i] : (MPI_Count)((const int *)counts)[i];
}
static inline MPI_Aint nc_mpi_displ_at(const void *displs, int wide, int i)
{
    return wide ? ((const MPI_Aint *)displs)[i] : (MPI_Aint)((const int *)displs)[i];
}
/* The bytes of one element of such an array. */
static inline size_t nc_mpi_count_size(int wide) { return wide ? sizeof(MPI_Count) : sizeof(int); }
static inline size_t nc_mpi_displ_size(int wide) { return wide ? sizeof(MPI_Aint) : sizeof(int); }

typedef struct nc_buffer {
    char *bytes_at;   /* contiguous bytes: the user buffer or the staging copy */
    size_t bytes;
    void *user;
    MPI_Count count;
    MPI_Datatype type;
    void *staging;    /* non-NULL when packed */
} nc_buffer;

/* 0 on success; non-zero means "leave this call to the host MPI" (invalid or uncommitted
 * type); the same on every rank whose arguments are valid.  `fill`: pack the user data now. */
int nc_buffer_open(nc_buffer *b, void *buf, MPI_Count count, MPI_Datatype type, MPI_Comm comm, int fill);
/* The same for algorithms that move data through an nc_data: a derived type the datatype
 * engine describes is used in place (no staging copy; l->type set, its position kept in
 * `cursor`, the caller's storage), any other as above.  Release the nc_data with
 * nc_data_release, then close the buffer. */
int nc_buffer_open_data_described(nc_buffer *b, nc_data *l, nc_dt_cursor *cursor, void *buf, MPI_Count count,
                                  MPI_Datatype type, MPI_Comm comm, int fill);
/* The predefined type with back-to-back elements this thread described last (predefined
 * handles are never freed, so the handle cannot name another type later). */
typedef struct nc_dense_type {
    MPI_Datatype type;
    size_t size; /* 0: none yet */
} nc_dense_type;
extern NC_HOT_TLS nc_dense_type nc_last_dense_type;
/* (Inline for that type: most calls use the type of the call before.) */
static inline int nc_buffer_open_data(nc_buffer *b, nc_data *l, nc_dt_cursor *cursor, void *buf, MPI_Count count,
                                      MPI_Datatype type, MPI_Comm comm, int fill)
{
    const nc_dense_type *last = &nc_last_dense_type;
    if (!last->size || last->type != type || count < 0)
        return nc_buffer_open_data_described(b, l, cursor, buf, count, type, comm, fill);
    *b = (nc_buffer){buf, (size_t)count * last->size, buf, count, type, NULL};
    nc_data_set_bytes(l, buf);
    return b->bytes && !buf; /* (a null buffer with data is the host's error to report) */
}
/* Packs the user data into b->staging (or unpacks it back) with the datatype engine, or the
 * host's MPI_Pack where the engine is off or declines the type; an MPI error code. */
int nc_buffer_transfer(nc_buffer *b, MPI_Comm comm, int unpack);
/* Unpacks into the user buffer if `drain` and frees the staging copy; returns an MPI error code. */
int nc_buffer_close(nc_buffer *b, MPI_Comm comm, int drain);

/* 0 and the type's size (MPI_Type_size_x: a derived type may exceed INT_MAX bytes) and
 * whether its elements lie back to back with no gaps (used in place), or 1 if the type
 * cannot be used (null, uncommitted). */
int nc_datatype_describe(MPI_Datatype type, MPI_Count *size, int *dense);
/* 1: `type` is a predefined type this thread described lately (no host query needed). */
int nc_datatype_known_predefined(MPI_Datatype type);

/* 1 and the size when the type is committed and its elements are `size` bytes with no gaps
 * (lb and true lb 0, extent and true extent equal to the size), else 0. */
int nc_datatype_gapless(MPI_Datatype type, size_t *size);

/* Marks committed derived types (MPI has no query for it); called from MPI_Type_commit. */
void nc_datatype_mark_committed(MPI_Datatype type);
/* Whether a derived type nodecoll uses was committed behind its back (through PMPI_, as MPICH's
 * mpi_f08 binding does for the types of array sections, which it also frees through PMPI_). */
int nc_datatype_committed_elsewhere(MPI_Datatype type);
void nc_datatype_release_keyval(void);

#endif
