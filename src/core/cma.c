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

/* Both directions, `len` contiguous remote bytes against the runs of `local` (consumed):
 * the kernel may copy less than asked, so continue where it stopped. */
static int transfer(cma_fn fn, pid_t pid, struct iovec *local, size_t nlocal, char *remote, size_t len)
{
    while (len) {
        size_t batch = nlocal < NC_CMA_IOV_MAX ? nlocal : NC_CMA_IOV_MAX, batch_len = 0;
        for (size_t i = 0; i < batch; i++) batch_len += local[i].iov_len;
        struct iovec r = {remote, batch_len};
        ssize_t n = fn(pid, local, batch, &r, 1, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EFAULT;
        local = skip_bytes(local, &nlocal, (size_t)n);
        remote += n;
        len -= (size_t)n;
    }
    return 0;
}

int nc_cma_read(pid_t pid, const void *remote, void *local, size_t len)
{
    struct iovec l = {local, len};
    return transfer(process_vm_readv, pid, &l, 1, (char *)(uintptr_t)remote, len);
}

int nc_cma_write(pid_t pid, void *remote, const void *local, size_t len)
{
    struct iovec l = {(void *)(uintptr_t)local, len};
    return transfer(process_vm_writev, pid, &l, 1, remote, len);
}

int nc_cma_readv(pid_t pid, const void *remote, struct iovec *local, size_t nlocal, size_t len)
{
    return transfer(process_vm_readv, pid, local, nlocal, (char *)(uintptr_t)remote, len);
}
