/* Tuning rules: which algorithm (and radix) serves a collective for a node of so many ranks
 * and a message size range, as nodecoll-tune measured them on a machine, read from a small
 * text file (NODECOLL_TUNE_FILE).  The registry consults them before its built-in rows.
 *
 *   # comments and blank lines anywhere
 *   nodecoll-rules 1                       the format, first
 *   nodecoll 0.1.0                         the nodecoll version that wrote it (must match)
 *   mpi Open MPI 4.1.4                     the MPI it was measured with (must match)
 *   machine ...                            free text: where it was measured
 *   date ...                               free text
 *   <collective> <ranks per node> <min bytes> <max bytes> <algorithm> [radix=<n>]
 *
 * collective: barrier, bcast, reduce, allreduce, reduce_scatter, reduce_scatter_block;
 * algorithm: as nodecoll's counters name them (barrier: flat, tree, dissemination; bcast:
 * shm, cma; the reductions: flat, tree, cma, shm, recursive-doubling); sizes in bytes with
 * K/M/G suffixes, max `inf` for no bound (both inclusive); radix: the tree's (Barrier: fan-in
 * and fan-out; Bcast: fan-out; reductions: fan-in).  Barrier rules give 0 0 as the size range.
 * No MPI: the adapter reads the file on rank 0 and broadcasts the parsed rules. */
#ifndef NC_TUNE_H
#define NC_TUNE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stats.h"

#define NC_TUNE_FORMAT 1
#define NC_TUNE_MAX_RULES 128
#define NC_TUNE_NO_MAX UINT64_MAX

typedef struct nc_tune_rule {
    uint8_t coll, alg; /* nc_coll_id, nc_alg_id */
    uint16_t line;     /* where it was read */
    int32_t ranks;     /* ranks per node */
    int32_t radix;     /* 0: the setting's */
    uint64_t min_bytes, max_bytes;
} nc_tune_rule;

typedef struct nc_tune_rules {
    int32_t count;
    int32_t loaded;   /* a file was read and accepted */
    char source[200]; /* its path, or why there is none */
    nc_tune_rule rule[NC_TUNE_MAX_RULES];
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
/* Whether the rules say anything for nodes of `ranks` ranks. */
int nc_tune_has_ranks(const nc_tune_rules *t, int ranks);

/* One rule as a line of the file (no newline). */
void nc_tune_format_rule(const nc_tune_rule *r, char *out, size_t len);
/* The algorithm of a collective by its counter name (NC_ALG_COUNT: none or not tunable). */
nc_alg_id nc_tune_alg(nc_coll_id coll, const char *name);

#endif
