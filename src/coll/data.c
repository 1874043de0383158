#include "data.h"

#include <stdint.h>
#include <stdlib.h>

#include "../core/cma.h"
#include "../core/fatal.h"
#include "../core/team.h"

/* Bytes of sparse data read in one piece before unpacking: small enough to stay in cache
 * (the L2 of current cores), large enough that the system call costs little next to the
 * copy.  Chosen by that reasoning, not by a separate measurement. */
#define NC_DATA_BOUNCE ((size_t)65536)

nc_data nc_data_typed(void *base, const nc_dtype *type, size_t count, size_t iov_min_run, nc_dt_cursor *cursor)
{
    return (nc_data){.base = (char *)base, .type = type, .count = count, .iov_min_run = iov_min_run, .cursor = cursor};
}

void nc_data_release(nc_data *l)
{
    free(l->bounce);
    l->bounce = NULL;
    l->bounce_bytes = 0;
}

/* The cursor at packed offset `off`: where the last range ended costs nothing. */
static nc_dt_cursor *cursor_at(nc_data *l, size_t off)
{
    if (!l->positioned || l->cursor->offset != off) {
        nc_dt_cursor_init(l->cursor, l->type, l->base, l->count, off);
        l->positioned = 1;
    }
    return l->cursor;
}

void nc_data_pack(nc_data *l, size_t off, void *dst, size_t len)
{
    if (nc_data_is_bytes(l)) nc_par_copy(dst, l->base + off, len);
    else nc_dt_pack(cursor_at(l, off), dst, len);
}

void nc_data_unpack(nc_data *l, size_t off, const void *src, size_t len)
{
    if (nc_data_is_bytes(l)) nc_par_copy(l->base + off, src, len);
    else nc_dt_unpack(cursor_at(l, off), src, len);
}

static char *bounce_of(nc_data *l, size_t len)
{
    if (l->bounce_bytes < len) {
        free(l->bounce);
        l->bounce = nc_alloc_or_die(len);
        l->bounce_bytes = len;
    }
    return l->bounce;
}

int nc_data_read(nc_data *l, const nc_peer *peer, const char *remote, size_t off, size_t len)
{
    if (nc_data_is_bytes(l)) return nc_par_single_copy(0, peer, (void *)(uintptr_t)remote, l->base + off, len);
    const char *mapped = nc_peer_mapped(peer, remote, len);
    if (mapped) {
        nc_peer_counted(1, len);
        nc_data_unpack(l, off, mapped, len);
        return 0;
    }
    nc_dt_cursor *c = cursor_at(l, off);
    struct iovec iov[NC_CMA_IOV_MAX];
    for (size_t done = 0; done < len;) {
        nc_dt_shape next = nc_dt_lookahead(c, len - done, NC_CMA_IOV_MAX, l->iov_min_run);
        size_t n, niov;
        int err;
        if (next.dense) {
            n = nc_dt_iov(c, iov, NC_CMA_IOV_MAX, next.bytes, &niov);
            err = nc_peer_readv(peer, remote + done, iov, niov, n);
        } else { /* read a cache-sized piece, then unpack it while it is still in cache */
            n = len - done < NC_DATA_BOUNCE ? len - done : NC_DATA_BOUNCE;
            char *bounce = bounce_of(l, n);
            err = nc_peer_read(peer, remote + done, bounce, n);
            if (!err) nc_dt_unpack(c, bounce, n);
        }
        if (err) return err;
        done += n;
    }
    return 0;
}
