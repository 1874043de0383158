/* Single-copy reads from another process (Linux cross-memory attach). */
#ifndef NC_CMA_H
#define NC_CMA_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Entries one vectored call may pass (the kernel's UIO_MAXIOV). */
#define NC_CMA_IOV_MAX 1024

/* Lets sibling processes read our memory where Yama restricts ptrace to ancestors. */
void nc_cma_allow_readers(void);

/* Copies len bytes from `remote` in process pid into `local`; returns 0 or an errno. */
int nc_cma_read(pid_t pid, const void *remote, void *local, size_t len);
/* Copies len bytes from `local` to `remote` in process pid; returns 0 or an errno. */
int nc_cma_write(pid_t pid, void *remote, const void *local, size_t len);
/* Copies the len contiguous bytes at `remote` in process pid into the `nlocal` runs of
 * `local` (which it consumes: the entries are modified); returns 0 or an errno. */
int nc_cma_readv(pid_t pid, const void *remote, struct iovec *local, size_t nlocal, size_t len);

#endif
