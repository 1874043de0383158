/* NODECOLL_* settings: parsed once per process from the environment, validated against the table. */
#ifndef NC_CONFIG_H
#define NC_CONFIG_H

#include <stdatomic.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config_table.h"

typedef enum { NC_KIND_INT, NC_KIND_SIZE, NC_KIND_BOOL, NC_KIND_ENUM, NC_KIND_SET } nc_config_kind;

#define NC_CONFIG_ONE(field, kind, def, lo, hi, choices, doc) +1
enum { NC_SETTING_COUNT = 0 NC_CONFIG_TABLE(NC_CONFIG_ONE) };
#undef NC_CONFIG_ONE

typedef struct nc_config {
#define NC_CONFIG_FIELD(field, kind, def, lo, hi, choices, doc) int64_t field;
    NC_CONFIG_TABLE(NC_CONFIG_FIELD)
#undef NC_CONFIG_FIELD
    /* 1 where the environment (or nc_config_set) gave the setting a valid value: such a
     * setting wins over a tuning rule (core/tune.h).  Indexed like the table. */
    uint8_t given[NC_SETTING_COUNT];
} nc_config;

/* Whether `field` of cfg was given rather than defaulted. */
#define NC_CONFIG_GIVEN(cfg, field) ((cfg)->given[offsetof(nc_config, field) / sizeof(int64_t)])

typedef struct nc_setting_info {
    const char *env_name;   /* "NODECOLL_SEGMENT_SIZE" */
    nc_config_kind kind;
    int64_t default_value, min, max;
    const char *choices;    /* "a|b|c" for enums, else NULL */
    const char *doc;
    size_t offset;          /* of the field in nc_config */
} nc_setting_info;

enum { NC_BARRIER_AUTO, NC_BARRIER_FLAT, NC_BARRIER_TREE, NC_BARRIER_DISSEMINATION };
enum { NC_BCAST_AUTO, NC_BCAST_SHM, NC_BCAST_CMA };
enum { NC_REDUCE_AUTO, NC_REDUCE_FLAT, NC_REDUCE_TREE, NC_REDUCE_CMA, NC_REDUCE_SHM, NC_REDUCE_RECURSIVE_DOUBLING };
enum { NC_MAP_BLOCK, NC_MAP_CYCLIC };
enum { NC_CMA_AUTO, NC_CMA_OFF };
enum { NC_HEAP_OFF, NC_HEAP_ALLOC_MEM, NC_HEAP_ON };
enum { NC_PLACE_AUTO, NC_PLACE_CPU, NC_PLACE_BLOCK, NC_PLACE_CYCLIC, NC_PLACE_SCATTER };
enum { NC_SPREAD_AUTO, NC_SPREAD_RING, NC_SPREAD_DOUBLING, NC_SPREAD_DISSEMINATION };

int nc_setting_count(void);
const nc_setting_info *nc_setting(int index);
/* The setting called `name` (NODECOLL_ prefix optional, any case), or NULL. */
const nc_setting_info *nc_setting_named(const char *name);

/* The process-wide settings, parsed from the environment on first use (thread-safe). */
const nc_config *nc_config_load(void);
extern nc_config nc_process_config;
extern _Atomic int nc_process_config_loaded;
/* (Inline: every call asks; pthread_once costs a small collective a call and a branch.) */
static inline const nc_config *nc_config_get(void)
{
    if (atomic_load_explicit(&nc_process_config_loaded, memory_order_acquire)) return &nc_process_config;
    return nc_config_load();
}
/* Changes one process-wide setting (NODECOLL_ prefix optional) for the communicators set up
 * from now on; 0, or -1 with a message in `err`.  For tools (nodecoll-tune) that compare
 * settings in one process: not while another thread sets a communicator up. */
int nc_config_set(const char *name, const char *text, char *err, size_t err_len);

/* Parses `text` for setting `info`. Returns 0 and stores the value, or -1 and writes a
 * message naming the setting and its allowed range into `err`. */
int nc_setting_parse(const nc_setting_info *info, const char *text, int64_t *value,
                     char *err, size_t err_len);

/* Writes a setting's value as a user would type it (enum name, size with suffix). */
void nc_setting_format(const nc_setting_info *info, int64_t value, char *out, size_t len);

/* Fills `out` from the environment; invalid values are reported on `log` and replaced by the default. */
void nc_config_from_env(nc_config *out, FILE *log);

/* Value of one setting in a config. */
int64_t nc_config_value(const nc_config *cfg, const nc_setting_info *info);

/* The emulated node (NODECOLL_RANKS_PER_NODE, NODECOLL_NODE_MAP) of the rank-th of `size` ranks
 * that share memory: its number, or -1 where the settings leave the node whole.  The adapter
 * splits nodes by it, and nodecoll-tune measures the nodes nodecoll makes. */
int nc_emulated_node(int64_t ranks_per_node, int64_t node_map, int rank, int size);

#endif
