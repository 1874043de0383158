/* The node's topology as hwloc reports it, and where a rank sits on it: for each level
 * (package, NUMA node, L3 cache, core) the logical index of the domain holding the rank.
 * hwloc is read once per process (the real machine, or HWLOC_SYNTHETIC / HWLOC_XMLFILE);
 * a rank's place is taken when a communicator is set up (topo_place). */
#ifndef NC_TOPO_H
#define NC_TOPO_H

#include <stddef.h>
#include <stdint.h>

/* The levels, coarse to fine as hardware usually nests them (the groups do not rely on it). */
enum { NC_TOPO_PACKAGE, NC_TOPO_NUMA, NC_TOPO_L3, NC_TOPO_CORE, NC_TOPO_LEVELS };
#define NC_TOPO_ALL_LEVELS ((1 << NC_TOPO_LEVELS) - 1)
/* What NODECOLL_TOPO_LEVELS=auto means (docs/results-topology.md: the model's table). */
#define NC_TOPO_AUTO_LEVELS (1 << NC_TOPO_PACKAGE | 1 << NC_TOPO_NUMA | 1 << NC_TOPO_L3)

extern const char *const nc_topo_level_names[NC_TOPO_LEVELS];

/* A rank's domain at each level (-1: the topology has no such level; all such ranks are in
 * one domain). */
typedef struct nc_topo_loc {
    int32_t id[NC_TOPO_LEVELS];
} nc_topo_loc;

/* What the process sees: domains per level, cores, whether it is this machine (not a
 * synthetic or XML topology), and the text of a synthetic topology nodecoll completed. */
typedef struct nc_topo_info {
    int loaded;
    int domains[NC_TOPO_LEVELS];
    int cores;
    int this_system;
    char source[160];
} nc_topo_info;

const nc_topo_info *nc_topo_get(void);

/* Where node rank `rank` of `size` sits, by placement `place` (NC_PLACE_*): the CPU it runs
 * on, or dealt onto the cores by rank.  Every id is -1 if hwloc could not be read. */
nc_topo_loc nc_topo_locate(int place, int rank, int size);

/* The core (in hwloc's logical order) that a dealt placement gives node rank `rank` of `size`
 * on a machine of `cores` cores in `numa` NUMA domains of equal size (cyclic deals round-robin
 * over them); exposed for the model, which places ranks without hwloc. */
int nc_topo_deal(int place, int rank, int size, int cores, int numa);

#endif
