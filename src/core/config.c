#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NC_KIND(kind) NC_KIND_##kind

static nc_setting_info settings[] = {
#define NC_CONFIG_ROW(field, kind, def, lo, hi, choices, doc) \
    {"NODECOLL_" #field, NC_KIND(kind), def, lo, hi, choices, doc, offsetof(nc_config, field)},
    NC_CONFIG_TABLE(NC_CONFIG_ROW)
#undef NC_CONFIG_ROW
};

/* Environment names are the field names upper-cased; done once at first use. */
static char env_names[sizeof settings / sizeof settings[0]][64];

int nc_setting_count(void) { return (int)(sizeof settings / sizeof settings[0]); }

static void make_env_names(void)
{
    for (int i = 0; i < nc_setting_count(); i++) {
        const char *src = settings[i].env_name;
        size_t n = 0;
        for (; src[n] && n + 1 < sizeof env_names[i]; n++)
            env_names[i][n] = (char)toupper((unsigned char)src[n]);
        env_names[i][n] = '\0';
        settings[i].env_name = env_names[i];
    }
}

static pthread_once_t names_once = PTHREAD_ONCE_INIT;

const nc_setting_info *nc_setting(int index)
{
    if (index < 0 || index >= nc_setting_count()) return NULL;
    pthread_once(&names_once, make_env_names);
    return &settings[index];
}

static int parse_bool(const char *s, int64_t *v)
{
    static const char *yes[] = {"1", "yes", "on", "true"}, *no[] = {"0", "no", "off", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) { *v = 1; return 0; }
        if (!strcasecmp(s, no[i])) { *v = 0; return 0; }
    }
    return -1;
}

static int parse_enum(const char *s, const char *choices, int64_t *v)
{
    size_t len = strlen(s);
    int64_t index = 0;
    for (const char *c = choices; *c; index++) {
        const char *end = strchr(c, '|');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n == len && !strncasecmp(c, s, n)) { *v = index; return 0; }
        c += n + (end != NULL);
    }
    return -1;
}

/* A set: "auto" (-1), "flat" (0, none), or choices separated by commas (a bit each). */
static int parse_set(const char *s, const char *choices, int64_t *v)
{
    if (!strcasecmp(s, "auto")) { *v = -1; return 0; }
    if (!strcasecmp(s, "flat")) { *v = 0; return 0; }
    int64_t bits = 0, bit;
    char word[32];
    for (const char *p = s;; p++) {
        size_t n = strcspn(p, ",");
        if (!n || n >= sizeof word) return -1;
        memcpy(word, p, n);
        word[n] = '\0';
        if (parse_enum(word, choices, &bit)) return -1;
        bits |= (int64_t)1 << bit;
        p += n;
        if (!*p) break;
    }
    *v = bits;
    return 0;
}

static int parse_number(const char *s, int allow_suffix, int64_t *v)
{
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s) return -1;
    int64_t scale = 1;
    if (allow_suffix && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': scale = 1LL << 10; break;
        case 'M': scale = 1LL << 20; break;
        case 'G': scale = 1LL << 30; break;
        case 'T': scale = 1LL << 40; break;
        default: return -1;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I') end++;
        if (toupper((unsigned char)*end) == 'B') end++;
    }
    if (*end) return -1;
    if (x > INT64_MAX / scale || x < INT64_MIN / scale) return -1;
    *v = (int64_t)x * scale;
    return 0;
}

static void describe_range(const nc_setting_info *info, char *out, size_t len)
{
    char lo[32], hi[32];
    switch (info->kind) {
    case NC_KIND_BOOL: snprintf(out, len, "0 or 1"); break;
    case NC_KIND_ENUM: snprintf(out, len, "one of %s", info->choices); break;
    case NC_KIND_SET: snprintf(out, len, "auto, flat or a comma-separated list of %s", info->choices); break;
    default:
        nc_setting_format(info, info->min, lo, sizeof lo);
        nc_setting_format(info, info->max, hi, sizeof hi);
        snprintf(out, len, "%s to %s", lo, hi);
    }
}

int nc_setting_parse(const nc_setting_info *info, const char *text, int64_t *value, char *err,
                     size_t err_len)
{
    int64_t v = 0;
    int rc;
    switch (info->kind) {
    case NC_KIND_BOOL: rc = parse_bool(text, &v); break;
    case NC_KIND_ENUM: rc = parse_enum(text, info->choices, &v); break;
    case NC_KIND_SET: rc = parse_set(text, info->choices, &v); break;
    default:
        rc = parse_number(text, info->kind == NC_KIND_SIZE, &v);
        if (!rc && (v < info->min || v > info->max)) rc = -1;
    }
    if (rc) {
        char range[160], def[32];
        describe_range(info, range, sizeof range);
        nc_setting_format(info, info->default_value, def, sizeof def);
        snprintf(err, err_len, "nodecoll: %s=\"%s\" is invalid (allowed: %s); using the default %s",
                 info->env_name, text, range, def);
        return -1;
    }
    *value = v;
    return 0;
}

/* The name of choice `index` of "a|b|c" (its length in *n). */
static const char *choice_name(const char *choices, int64_t index, size_t *n)
{
    const char *c = choices;
    for (int64_t i = 0; i < index && c; i++) {
        c = strchr(c, '|');
        if (c) c++;
    }
    *n = c ? strcspn(c, "|") : 0;
    return c;
}

static void format_set(const char *choices, int64_t value, char *out, size_t len)
{
    if (value < 0 || value == 0) {
        snprintf(out, len, "%s", value ? "auto" : "flat");
        return;
    }
    size_t used = 0;
    out[0] = '\0';
    for (int64_t i = 0; i < 62 && used < len; i++) {
        size_t n;
        const char *name = (value >> i & 1) ? choice_name(choices, i, &n) : NULL;
        if (name) used += (size_t)snprintf(out + used, len - used, "%s%.*s", used ? "," : "", (int)n, name);
    }
}

void nc_setting_format(const nc_setting_info *info, int64_t value, char *out, size_t len)
{
    if (info->kind == NC_KIND_SET) {
        format_set(info->choices, value, out, len);
    } else if (info->kind == NC_KIND_ENUM) {
        const char *c = info->choices;
        for (int64_t i = 0; i < value && c; i++) {
            c = strchr(c, '|');
            if (c) c++;
        }
        size_t n = c ? strcspn(c, "|") : 0;
        snprintf(out, len, "%.*s", (int)n, c ? c : "?");
    } else if (info->kind == NC_KIND_SIZE && value > 0 && value % 1024 == 0) {
        static const char *units[] = {"K", "M", "G", "T"};
        int u = -1;
        while (value % 1024 == 0 && u < 3) { value /= 1024; u++; }
        snprintf(out, len, "%" PRId64 "%s", value, units[u]);
    } else {
        snprintf(out, len, "%" PRId64, value);
    }
}

int64_t nc_config_value(const nc_config *cfg, const nc_setting_info *info)
{
    return *(const int64_t *)((const char *)cfg + info->offset);
}

int nc_emulated_node(int64_t ranks_per_node, int64_t node_map, int rank, int size)
{
    if (ranks_per_node <= 0 || ranks_per_node >= size) return -1;
    int k = (int)ranks_per_node, nodes = (size + k - 1) / k;
    return node_map == NC_MAP_CYCLIC ? rank % nodes : rank / k;
}

void nc_config_from_env(nc_config *out, FILE *log)
{
    for (int i = 0; i < nc_setting_count(); i++) {
        const nc_setting_info *info = nc_setting(i);
        int64_t *field = (int64_t *)((char *)out + info->offset);
        *field = info->default_value;
        out->given[i] = 0;
        const char *text = getenv(info->env_name);
        if (!text || !*text) continue;
        char err[400];
        if (!nc_setting_parse(info, text, field, err, sizeof err)) out->given[i] = 1;
        else if (log) fprintf(log, "%s\n", err);
    }
}

nc_config nc_process_config;
_Atomic int nc_process_config_loaded;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static void load_process_config(void)
{
    nc_config_from_env(&nc_process_config, stderr);
    atomic_store_explicit(&nc_process_config_loaded, 1, memory_order_release);
}

const nc_config *nc_config_load(void)
{
    pthread_once(&config_once, load_process_config);
    return &nc_process_config;
}

const nc_setting_info *nc_setting_named(const char *name)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s", strncasecmp(name, "NODECOLL_", 9) ? "NODECOLL_" : "", name);
    for (int i = 0; i < nc_setting_count(); i++)
        if (!strcasecmp(nc_setting(i)->env_name, full)) return nc_setting(i);
    return NULL;
}

int nc_config_set(const char *name, const char *text, char *err, size_t err_len)
{
    nc_config_get();
    const nc_setting_info *info = nc_setting_named(name);
    if (!info) {
        snprintf(err, err_len, "nodecoll: no setting %s", name);
        return -1;
    }
    int rc = nc_setting_parse(info, text, (int64_t *)((char *)&nc_process_config + info->offset), err, err_len);
    if (!rc) nc_process_config.given[info->offset / sizeof(int64_t)] = 1;
    return rc;
}
