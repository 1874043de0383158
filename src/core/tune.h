/* Tuning rules: which algorithm and parameters serve a collective for a node of so many ranks
 * and a message size range, and how such a node's segment is laid out and grouped, as
 * nodecoll-tune measured them on a machine, read from a small text file (NODECOLL_TUNE_FILE).
 * The registry consults them before its built-in rows; the node-wide lines apply when a
 * communicator is set up.
 *
 *   # comments and blank lines anywhere
 *   nodecoll-rules 2                       the format, first (format 1 is read too)
 *   nodecoll 0.1.0                         the nodecoll version that wrote it (must match)
 *   mpi Open MPI 4.1.4                     the MPI it was measured with (must match)
 *   machine ...                            free text: where it was measured
 *   date ...                               free text
 *   <collective> <ranks per node> <min bytes> <max bytes> <algorithm> [radix=<n>] [chunk=<bytes>]
 *   layout <ranks per node> [segment=<bytes>] [segments=<n>]     (format 2)
 *   levels <ranks per node> flat|auto|<list of package,numa,l3,core>   (format 2)
 *
 * collective: barrier, bcast, reduce, allreduce, reduce_scatter, reduce_scatter_block;
 * algorithm: as nodecoll's counters name them (barrier: flat, tree, dissemination; bcast:
 * shm, cma; the reductions: flat, tree, cma, shm, recursive-doubling); sizes in bytes with
 * K/M/G suffixes, max `inf` for no bound (both inclusive); radix: the tree's (Barrier: fan-in
 * and fan-out; Bcast: fan-out; reductions: fan-in); chunk: the cma algorithms' step
 * (NODECOLL_CMA_CHUNK for Bcast, NODECOLL_REDUCE_CHUNK for the reductions).  Barrier rules
 * give 0 0 as the size range.  layout: NODECOLL_SEGMENT_SIZE and NODECOLL_SEGMENTS, levels:
 * NODECOLL_TOPO_LEVELS, for every communicator whose nodes all have that many ranks (one
 * line of each per node size).  A setting given in the environment wins over a rule.
 * No MPI: the adapter reads the file on rank 0 and broadcasts the parsed rules. */
#ifndef NC_TUNE_H
#define NC_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "stats.h"

#define NC_TUNE_FORMAT 2
#define NC_TUNE_MAX_RULES 128
#define NC_TUNE_MAX_NODES 16
#define NC_TUNE_NO_MAX UINT64_MAX

typedef struct nc_tune_rule {
    uint8_t coll, alg; /* nc_coll_id, nc_alg_id */
    uint16_t line;     /* where it was read */
    int32_t ranks;     /* ranks per node */
    int32_t radix;     /* 0: the setting's */
    int64_t chunk;     /* 0: the setting's */
    uint64_t min_bytes, max_bytes;
} nc_tune_rule;

/* The per-call parameters a rule may carry. */
typedef enum { NC_TUNE_RADIX, NC_TUNE_CHUNK } nc_tune_param;

/* What is fixed when a node's segment is laid out and its ranks grouped. */
typedef struct nc_tune_node {
    int32_t ranks;
    uint16_t layout_line, levels_line; /* where they were read; 0: no such line */
    int64_t segment_size, segments;    /* 0: the setting's */
    int64_t levels;                    /* NODECOLL_TOPO_LEVELS's value, if levels_line */
} nc_tune_node;

typedef struct nc_tune_rules {
    int32_t count, nodes;
    int32_t loaded;   /* a file was read and accepted */
    char source[200]; /* its path, or why there is none */
    nc_tune_rule rule[NC_TUNE_MAX_RULES];
    nc_tune_node node[NC_TUNE_MAX_NODES];
} nc_tune_rules;

/* Parses `text` (from `path`, for messages) written for nodecoll `version` with MPI `mpi`.
 * Returns 0 with the rules in *out, or -1 with one line in `err` naming path:line and what is
 * wrong (a malformed line, another version or MPI, too many rules); *out then has none. */
int nc_tune_parse(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                  char *err, size_t err_len);

/* Reads and parses the file at `path` (the same, with a message if it cannot be read). */
int nc_tune_load(const char *path, const char *version, const char *mpi, nc_tune_rules *out, char *err,
                 size_t err_len);

/* The file nodecoll reads: NODECOLL_TUNE_FILE if set (empty: none), else the default
 * location if it exists; NULL: none. */
const char *nc_tune_path(char *buf, size_t len);
/* The default location: $XDG_CONFIG_HOME/nodecoll/rules, else ~/.config/nodecoll/rules (NULL:
 * neither variable is set). */
const char *nc_tune_default_path(char *buf, size_t len);

/* The rule for `coll` on a node of `ranks` ranks moving `bytes`, or NULL. */
const nc_tune_rule *nc_tune_find(const nc_tune_rules *t, nc_coll_id coll, int ranks, uint64_t bytes);
/* A rule's parameter (0: none, the setting's). */
int64_t nc_tune_param_of(const nc_tune_rule *r, nc_tune_param p);
/* The node-wide lines for nodes of `ranks` ranks, or NULL. */
const nc_tune_node *nc_tune_node_find(const nc_tune_rules *t, int ranks);
/* Whether the rules say anything for nodes of `ranks` ranks. */
int nc_tune_has_ranks(const nc_tune_rules *t, int ranks);

/* The rules as they hold under rank 0's settings `cfg` for a node of `ranks` ranks: the
 * layout and levels lines for that size go into cfg, and a rule's radix or chunk is dropped,
 * wherever the environment gave the setting concerned (an explicit setting wins). */
void nc_tune_adopt(nc_tune_rules *t, int ranks, nc_config *cfg);

/* One rule as a line of the file (no newline). */
void nc_tune_format_rule(const nc_tune_rule *r, char *out, size_t len);
/* A node's layout and levels lines (empty when it has none). */
void nc_tune_format_layout(const nc_tune_node *n, char *out, size_t len);
void nc_tune_format_levels(const nc_tune_node *n, char *out, size_t len);
/* The algorithm of a collective by its counter name (NC_ALG_COUNT: none or not tunable). */
nc_alg_id nc_tune_alg(nc_coll_id coll, const char *name);

#endif
