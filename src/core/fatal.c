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
