/* A rank's data as a collective moves it: `bytes` packed bytes that lie either back to back
 * at `base`, or where a datatype description (src/core/dtype.h) places `count` elements from
 * `base` (a derived datatype used in place, without a staging copy).  The algorithms ask
 * for byte ranges of the packed stream; consecutive ranges continue from the saved cursor
 * instead of seeking from the start (Balaji et al.'s copying context). */
#ifndef NC_COLL_DATA_H
#define NC_COLL_DATA_H

#include <stddef.h>
#include <string.h>
#include <sys/types.h>

#include "../core/dtype.h"
#include "../core/single_copy.h"

typedef struct nc_data {
    char *base;
    const nc_dtype *type;  /* NULL: contiguous bytes at base */
    size_t count;
    size_t iov_min_run;    /* single-copy reads go straight to runs at least this long on average */
    nc_dt_cursor *cursor;  /* the caller's storage: where the last range ended */
    int positioned;        /* whether *cursor holds a position yet */
    char *bounce;          /* reads of short runs land here before unpacking */
    size_t bounce_bytes;
} nc_data;

static inline nc_data nc_data_bytes(void *base)
{
    return (nc_data){.base = (char *)base};
}
/* The same, stored in place.  (Field by field: GCC built the value of an assignment on the
 * stack and copied it with loads spanning two of its stores, which the store buffer cannot
 * forward; such a load waits for every older store, including the last call's posts to
 * shared lines, and cost an 8-byte Bcast about a quarter of its time.) */
static inline void nc_data_set_bytes(nc_data *l, void *base)
{
    memset(l, 0, sizeof *l);
    l->base = (char *)base;
}
/* `count` elements of `type` placed from `base`, positions kept in `cursor`; release with
 * nc_data_release. */
nc_data nc_data_typed(void *base, const nc_dtype *type, size_t count, size_t iov_min_run, nc_dt_cursor *cursor);
void nc_data_release(nc_data *l);

static inline int nc_data_is_bytes(const nc_data *l) { return l->type == NULL; }

/* Packed bytes [off, off+len) of the layout to `dst` / from `src` into the layout. */
void nc_data_pack(nc_data *l, size_t off, void *dst, size_t len);
void nc_data_unpack(nc_data *l, size_t off, const void *src, size_t len);
/* Single-copy read of `len` contiguous bytes at `remote` in the peer into packed bytes
 * [off, off+len): from its heap, unpacked straight from the mapping; else dense stretches go
 * to the runs directly (the look-ahead decides, Balaji et al. section 4.1), sparse ones
 * through the bounce buffer.  0 or an errno. */
int nc_data_read(nc_data *l, const nc_peer *peer, const char *remote, size_t off, size_t len);

#endif
