#include "single_copy.h"

#include <errno.h>
#include <string.h>

#include "cma.h"

int nc_peer_read(const nc_peer *p, const void *remote, void *local, size_t len)
{
    const char *mapped = nc_peer_mapped(p, remote, len);
    nc_peer_counted(mapped != NULL, len);
    if (mapped) {
        memcpy(local, mapped, len);
        return 0;
    }
    return p->cma ? nc_cma_read(p->pid, remote, local, len) : NC_NO_SINGLE_COPY;
}

int nc_peer_write(const nc_peer *p, void *remote, const void *local, size_t len)
{
    char *mapped = nc_peer_mapped(p, remote, len);
    nc_peer_counted(mapped != NULL, len);
    if (mapped) {
        memcpy(mapped, local, len);
        return 0;
    }
    return p->cma ? nc_cma_write(p->pid, remote, local, len) : NC_NO_SINGLE_COPY;
}

int nc_peer_readv(const nc_peer *p, const void *remote, struct iovec *local, size_t nlocal, size_t len)
{
    const char *mapped = nc_peer_mapped(p, remote, len);
    nc_peer_counted(mapped != NULL, len);
    if (!mapped) return p->cma ? nc_cma_readv(p->pid, remote, local, nlocal, len) : NC_NO_SINGLE_COPY;
    for (size_t i = 0; i < nlocal && len; i++) {
        size_t n = local[i].iov_len < len ? local[i].iov_len : len;
        memcpy(local[i].iov_base, mapped, n);
        mapped += n;
        len -= n;
    }
    return 0;
}
