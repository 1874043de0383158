/* For broken invariants only (never for bad user input): print and abort. */
#ifndef NC_FATAL_H
#define NC_FATAL_H

#include <stddef.h>

__attribute__((noreturn, format(printf, 1, 2))) void nc_fatal(const char *fmt, ...);

/* malloc that aborts: once a collective is committed to the fast path on every rank, one
 * rank cannot leave it for the host MPI alone. */
void *nc_alloc_or_die(size_t bytes);
void *nc_calloc_or_die(size_t n, size_t size);

#endif
