/* Preloaded before nodecoll (test_preload.sh, scenario bigmachine): the ranks see a machine
 * whose kernel has more than 1024 possible CPUs, as sched_getaffinity shows it: a mask
 * buffer of fewer bits than the possible CPUs (nr_cpu_ids) is refused with EINVAL
 * (kernel/sched/core.c), a large enough one gets the mask.  NC_SHIM_POSSIBLE possible CPUs,
 * NC_SHIM_ONLINE online (sysconf), and each rank may run on CPU 0 only (a one-core cpuset).
 * Only in MPI ranks (OMPI_COMM_WORLD_RANK or PMI_RANK set): the launcher keeps the real
 * calls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default"))) /* (the build hides symbols) */

static long setting(const char *name)
{
    const char *v = getenv(name);
    return v ? atol(v) : 0;
}

static int active(void)
{
    return setting("NC_SHIM_POSSIBLE") > 0 && (getenv("OMPI_COMM_WORLD_RANK") || getenv("PMI_RANK"));
}

SHIM_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    if (!active()) {
        int (*real)(pid_t, size_t, cpu_set_t *) = (int (*)(pid_t, size_t, cpu_set_t *))dlsym(RTLD_NEXT, "sched_getaffinity");
        return real(pid, size, set);
    }
    if (size * 8 < (size_t)setting("NC_SHIM_POSSIBLE")) {
        errno = EINVAL;
        return -1;
    }
    memset(set, 0, size);
    CPU_SET_S(0, size, set);
    return 0;
}

SHIM_EXPORT long sysconf(int name)
{
    long (*real)(int) = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    if (active() && (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF)) return setting("NC_SHIM_ONLINE");
    return real(name);
}
