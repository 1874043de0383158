/* The node's topology through hwloc, and a rank's place on it (topo.h). */
#include "topo.h"

#include <hwloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

const char *const nc_topo_level_names[NC_TOPO_LEVELS] = {"package", "numa", "l3", "core"};

static hwloc_topology_t topology;
static nc_topo_info info;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t query_lock = PTHREAD_MUTEX_INITIALIZER; /* hwloc's queries are not all thread-safe */

/* hwloc 2.9 rejects a synthetic description whose last level is not the PU ("package:2 numa:4
 * l3:2 core:8"): it then reads the real machine without a word.  nodecoll completes such a
 * description with one PU per core and hands it to hwloc itself (the environment variable is
 * consulted by hwloc only when no source was set). */
static char *synthetic; /* (NULL: none, or hwloc rejected it) */

static void use_synthetic(void)
{
    const char *text = getenv("HWLOC_SYNTHETIC");
    if (!text || !*text) return;
    size_t n = strlen(text);
    while (n && text[n - 1] == ' ') n--;
    const char *last = text + n;
    while (last > text && last[-1] != ' ') last--;
    int ends_with_pu = !strncmp(last, "pu:", 3) || !strncmp(last, "PU:", 3);
    size_t len = n + sizeof " pu:1";
    synthetic = malloc(len);
    if (!synthetic) return;
    snprintf(synthetic, len, "%.*s%s", (int)n, text, ends_with_pu ? "" : " pu:1");
    if (!hwloc_topology_set_synthetic(topology, synthetic)) return;
    free(synthetic);
    synthetic = NULL;
}

static int count_of(hwloc_obj_type_t type) { return hwloc_get_nbobjs_by_type(topology, type); }

static void load(void)
{
    if (hwloc_topology_init(&topology)) return;
    use_synthetic();
    if (hwloc_topology_load(topology)) {
        hwloc_topology_destroy(topology);
        return;
    }
    info.loaded = 1;
    info.domains[NC_TOPO_PACKAGE] = count_of(HWLOC_OBJ_PACKAGE);
    info.domains[NC_TOPO_NUMA] = count_of(HWLOC_OBJ_NUMANODE);
    info.domains[NC_TOPO_L3] = count_of(HWLOC_OBJ_L3CACHE);
    info.domains[NC_TOPO_CORE] = count_of(HWLOC_OBJ_CORE);
    info.cores = info.domains[NC_TOPO_CORE] > 0 ? info.domains[NC_TOPO_CORE] : count_of(HWLOC_OBJ_PU);
    info.this_system = hwloc_topology_is_thissystem(topology);
    const char *xml = getenv("HWLOC_XMLFILE");
    int room = (int)sizeof info.source - 16; /* (a label: a long description is cut short) */
    if (synthetic)
        snprintf(info.source, sizeof info.source, "synthetic \"%.*s%s\"", room, synthetic,
                 strlen(synthetic) > (size_t)room ? "..." : "");
    else if (!info.this_system && xml) snprintf(info.source, sizeof info.source, "XML %s", xml);
    else snprintf(info.source, sizeof info.source, "%s", info.this_system ? "this machine" : "not this machine");
}

const nc_topo_info *nc_topo_get(void)
{
    pthread_once(&load_once, load);
    return &info;
}

/* The domain of `type` holding PU set `set` (its first PU), as a logical index; -1 if none. */
static int32_t domain_of(hwloc_obj_type_t type, hwloc_const_cpuset_t set)
{
    int first = hwloc_bitmap_first(set);
    if (first < 0) return -1;
    for (hwloc_obj_t o = hwloc_get_next_obj_by_type(topology, type, NULL); o;
         o = hwloc_get_next_obj_by_type(topology, type, o))
        if (o->cpuset && hwloc_bitmap_isset(o->cpuset, (unsigned)first)) return (int32_t)o->logical_index;
    return -1;
}

static nc_topo_loc locate_set(hwloc_const_cpuset_t set)
{
    static const hwloc_obj_type_t types[NC_TOPO_LEVELS] = {HWLOC_OBJ_PACKAGE, HWLOC_OBJ_NUMANODE, HWLOC_OBJ_L3CACHE,
                                                           HWLOC_OBJ_CORE};
    nc_topo_loc loc;
    for (int l = 0; l < NC_TOPO_LEVELS; l++) loc.id[l] = domain_of(types[l], set);
    return loc;
}

static uint64_t next_random(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Position `i` of a fixed shuffle of 0..n-1 (the same in every process). */
static int shuffled(int i, int n)
{
    int *perm = malloc(sizeof(int) * (size_t)n), at;
    if (!perm) return i;
    for (int k = 0; k < n; k++) perm[k] = k;
    uint64_t seed = 20240519;
    for (int k = n - 1; k > 0; k--) {
        int j = (int)(next_random(&seed) % (uint64_t)(k + 1)), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    at = perm[i];
    free(perm);
    return at;
}

/* The k-th of `count` ranks on `slots` places: packed while they fit, evenly shared beyond. */
static int slot_of(int k, int count, int slots)
{
    return count <= slots ? k : (int)((long)k * slots / count);
}

int nc_topo_deal(int place, int rank, int size, int cores, int numa)
{
    if (cores < 1) return 0;
    if (place == NC_PLACE_CYCLIC && numa > 1 && cores % numa == 0) {
        int per_numa = cores / numa, d = rank % numa;
        int in_d = size / numa + (d < size % numa); /* ranks dealt to domain d */
        return d * per_numa + slot_of(rank / numa, in_d, per_numa);
    }
    int c = slot_of(rank, size, cores);
    return place == NC_PLACE_SCATTER ? shuffled(c, cores) : c;
}

nc_topo_loc nc_topo_locate(int place, int rank, int size)
{
    const nc_topo_info *t = nc_topo_get();
    nc_topo_loc loc = {{-1, -1, -1, -1}};
    if (!t->loaded) return loc;
    if (place == NC_PLACE_AUTO) place = t->this_system ? NC_PLACE_CPU : NC_PLACE_BLOCK;
    pthread_mutex_lock(&query_lock);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (set && place == NC_PLACE_CPU && t->this_system) {
        /* Where the process last ran (inside its binding, if bound). */
        if (hwloc_get_last_cpu_location(topology, set, HWLOC_CPUBIND_PROCESS) == 0) loc = locate_set(set);
    } else if (set) {
        if (place == NC_PLACE_CPU) place = NC_PLACE_BLOCK; /* (a synthetic machine runs nothing) */
        int core = nc_topo_deal(place, rank, size, t->cores, t->domains[NC_TOPO_NUMA]);
        hwloc_obj_type_t unit = t->domains[NC_TOPO_CORE] > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
        hwloc_obj_t o = hwloc_get_obj_by_type(topology, unit, (unsigned)core);
        if (o && o->cpuset) loc = locate_set(o->cpuset);
    }
    hwloc_bitmap_free(set);
    pthread_mutex_unlock(&query_lock);
    return loc;
}
