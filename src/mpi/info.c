#include <mpi.h>
#include <stdio.h>

#include "nodecoll.h"

#define NC_EXPORT __attribute__((visibility("default")))
#define NC_STR2(x) #x
#define NC_STR(x) NC_STR2(x)

NC_EXPORT const char *nodecoll_version(void)
{
    return NC_STR(NODECOLL_VERSION_MAJOR) "." NC_STR(NODECOLL_VERSION_MINOR) "." NC_STR(NODECOLL_VERSION_PATCH);
}

NC_EXPORT const char *nodecoll_mpi_library(void)
{
#if defined(OMPI_MAJOR_VERSION)
    return "Open MPI " NC_STR(OMPI_MAJOR_VERSION) "." NC_STR(OMPI_MINOR_VERSION) "." NC_STR(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
    return "MPICH " MPICH_VERSION;
#else
    return "unknown MPI";
#endif
}
