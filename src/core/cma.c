#include "cma.h"

#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/uio.h>

void nc_cma_allow_readers(void)
{
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
}

typedef ssize_t (*cma_fn)(pid_t, const struct iovec *, unsigned long, const struct iovec *,
                          unsigned long, unsigned long);

/* Both directions: the kernel may copy less than asked, so continue where it stopped. */
static int transfer(cma_fn fn, pid_t pid, char *local, char *remote, size_t len)
{
    while (len) {
        struct iovec l = {local, len}, r = {remote, len};
        ssize_t n = fn(pid, &l, 1, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EFAULT;
        local += n;
        remote += n;
        len -= (size_t)n;
    }
    return 0;
}

int nc_cma_read(pid_t pid, const void *remote, void *local, size_t len)
{
    return transfer(process_vm_readv, pid, local, (char *)(uintptr_t)remote, len);
}

int nc_cma_write(pid_t pid, void *remote, const void *local, size_t len)
{
    return transfer(process_vm_writev, pid, (char *)(uintptr_t)local, remote, len);
}

/* Drops the first `done` bytes of the list; returns the new first entry. */
static struct iovec *skip_bytes(struct iovec *iov, size_t *niov, size_t done)
{
    while (*niov && done >= iov->iov_len) {
        done -= iov->iov_len;
        iov++;
        (*niov)--;
    }
    if (*niov) {
        iov->iov_base = (char *)iov->iov_base + done;
        iov->iov_len -= done;
    }
    return iov;
}

int nc_cma_readv(pid_t pid, const void *remote, struct iovec *local, size_t nlocal, size_t len)
{
    char *from = (char *)(uintptr_t)remote;
    while (len) {
        size_t batch = nlocal < NC_CMA_IOV_MAX ? nlocal : NC_CMA_IOV_MAX, batch_len = 0;
        for (size_t i = 0; i < batch; i++) batch_len += local[i].iov_len;
        struct iovec r = {from, batch_len};
        ssize_t n = process_vm_readv(pid, local, batch, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EFAULT;
        local = skip_bytes(local, &nlocal, (size_t)n);
        from += n;
        len -= (size_t)n;
    }
    return 0;
}
