#include "fatal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void nc_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nodecoll: fatal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void *nc_alloc_or_die(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) nc_fatal("cannot allocate %zu bytes for a collective's working copy", bytes);
    return p;
}

void *nc_calloc_or_die(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) nc_fatal("cannot allocate %zu x %zu bytes for a collective's working copy", n, size);
    return p;
}
