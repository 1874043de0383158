/* For broken invariants only (never for bad user input): print and abort. */
#ifndef NC_FATAL_H
#define NC_FATAL_H

__attribute__((noreturn, format(printf, 1, 2))) void nc_fatal(const char *fmt, ...);

#endif
