/* A model of what a collective's schedule costs on a topology, without the machine: which
 * rank reads which bytes from whose memory at which step, counted per topology level as
 * cache-line transfers and payload bytes that cross a domain boundary of that level (the
 * reader and the memory's owner in different domains), and bytes copied in all.  Shared
 * memory is first-touched by its owner (docs/design.md), so a rank's ring, slots and buffers
 * live in its own domains.
 *
 * The schedules are generated from the same trees the algorithms run (hier.h), on a regular
 * machine described by its arities, with ranks dealt onto it as NODECOLL_TOPO_PLACE deals
 * them (topo.h).  No MPI, no hwloc. */
#ifndef NC_MODEL_H
#define NC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "hier.h"
#include "topo.h"

/* packages, NUMA nodes per package, L3 caches per NUMA node, cores per L3 */
typedef struct nc_model_machine {
    int arity[NC_TOPO_LEVELS];
} nc_model_machine;

int nc_model_cores(const nc_model_machine *m);
/* Ranks 0..size-1 dealt onto the machine by placement `place` (NC_PLACE_BLOCK, _CYCLIC, _SCATTER). */
void nc_model_place(const nc_model_machine *m, int place, int size, nc_topo_loc *locs);

/* `bytes` of `owner`'s memory read by `reader` at `step`; `flag`: a signal line, not payload. */
typedef struct nc_model_read {
    int step, reader, owner, flag;
    size_t bytes;
} nc_model_read;

typedef struct nc_model_schedule {
    nc_model_read *reads;
    size_t count, cap;
} nc_model_schedule;

void nc_model_add(nc_model_schedule *s, int step, int reader, int owner, size_t bytes, int flag);
void nc_model_clear(nc_model_schedule *s);
void nc_model_free(nc_model_schedule *s);

typedef enum { NC_MODEL_BARRIER, NC_MODEL_BCAST, NC_MODEL_REDUCE, NC_MODEL_ALLREDUCE, NC_MODEL_SLICES } nc_model_coll;
extern const char *const nc_model_coll_names[];

/* Appends the schedule of `coll` over the trees of hierarchy h (NULL: today's flat trees)
 * for `size` ranks: Barrier's fan-in/fan-out (flags only), Bcast's ring pipeline (each
 * rank reads the message from its parent, fragment by fragment, after the parent's flag;
 * forwarders copy it into their own ring), Reduce's fan-in (a parent reads each child's
 * partial result), Allreduce as the fan-in to rank 0 and the Bcast, and SLICES the
 * slice Allreduce (each rank folds 1/size of everybody's vector, then reads every other
 * slice), which takes no tree.  `frag` bytes per fragment (one flag read each). */
void nc_model_schedule_coll(nc_model_schedule *s, nc_model_coll coll, const nc_hier *h, int size, int root,
                            int radix, size_t bytes, size_t frag);

typedef struct nc_model_count {
    uint64_t lines[NC_TOPO_LEVELS]; /* cache lines crossing a boundary of each level (payload and flags) */
    uint64_t bytes[NC_TOPO_LEVELS]; /* payload bytes crossing a boundary of each level */
    uint64_t copied;                /* payload bytes copied in all, local or not */
    int steps;                      /* steps of the schedule (its depth) */
    int domains[NC_TOPO_LEVELS];    /* domains of each level holding ranks */
} nc_model_count;

#define NC_MODEL_LINE 64

void nc_model_count_reads(const nc_model_schedule *s, const nc_topo_loc *locs, int size, nc_model_count *out);

#endif
