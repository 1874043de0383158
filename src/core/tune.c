/* Tuning rules: the file format, its checks, and the lookup (tune.h). */
#include "tune.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const nc_coll_id tunable[] = {NC_COLL_BARRIER,   NC_COLL_BCAST,          NC_COLL_REDUCE,
                                     NC_COLL_ALLREDUCE, NC_COLL_REDUCE_SCATTER, NC_COLL_REDUCE_SCATTER_BLOCK};

static nc_coll_id coll_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof tunable / sizeof tunable[0]; i++)
        if (!strcmp(nc_coll_name(tunable[i]), name)) return tunable[i];
    return NC_COLL_COUNT;
}

nc_alg_id nc_tune_alg(nc_coll_id coll, const char *name)
{
    static const nc_alg_id barrier[] = {NC_ALG_FLAT, NC_ALG_TREE, NC_ALG_DISSEMINATION};
    static const nc_alg_id bcast[] = {NC_ALG_SHM, NC_ALG_CMA};
    static const nc_alg_id reduction[] = {NC_ALG_FLAT, NC_ALG_TREE, NC_ALG_CMA, NC_ALG_SHM, NC_ALG_RECURSIVE_DOUBLING};
    const nc_alg_id *algs = coll == NC_COLL_BARRIER ? barrier : coll == NC_COLL_BCAST ? bcast : reduction;
    size_t n = coll == NC_COLL_BARRIER ? 3 : coll == NC_COLL_BCAST ? 2 : 5;
    for (size_t i = 0; coll != NC_COLL_COUNT && i < n; i++)
        if (!strcmp(nc_alg_name(algs[i]), name)) return algs[i];
    return NC_ALG_COUNT;
}

static int parse_bytes(const char *s, uint64_t *v)
{
    if (!strcasecmp(s, "inf")) {
        *v = NC_TUNE_NO_MAX;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-') return -1;
    uint64_t scale = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': scale = 1ULL << 10; end++; break;
    case 'M': scale = 1ULL << 20; end++; break;
    case 'G': scale = 1ULL << 30; end++; break;
    default: break;
    }
    if (*end || x > UINT64_MAX / scale) return -1;
    *v = x * scale;
    return 0;
}

typedef struct parser {
    const char *path;
    int line, format;
    char *err;
    size_t err_len;
} parser;

__attribute__((format(printf, 2, 3))) static int fail(parser *p, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(p->err, p->err_len, "nodecoll: %s:%d: %s; using the built-in defaults", p->path, p->line, what);
    return -1;
}

/* The rest of a line after its first word, without surrounding blanks. */
static void rest_of(const char *line, const char *word, char *out, size_t len)
{
    const char *s = strstr(line, word) + strlen(word);
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    snprintf(out, len, "%.*s", (int)n, s);
}

/* A size-kind parameter `text` checked against `setting`'s range. */
static int parse_setting(parser *p, const char *key, const char *text, const char *setting, int64_t *v)
{
    const nc_setting_info *info = nc_setting_named(setting);
    char why[400], lo[32], hi[32];
    if (!nc_setting_parse(info, text, v, why, sizeof why)) return 0;
    nc_setting_format(info, info->min, lo, sizeof lo);
    nc_setting_format(info, info->max, hi, sizeof hi);
    return fail(p, "\"%s=%s\" is out of range (%s: %s .. %s)", key, text, info->env_name, lo, hi);
}

/* `word` as key=value: the value, or NULL if the key is another. */
static const char *value_of(const char *word, const char *key)
{
    size_t n = strlen(key);
    return !strncmp(word, key, n) && word[n] == '=' ? word + n + 1 : NULL;
}

static int needs_format_2(parser *p, const char *what)
{
    return p->format < 2 ? fail(p, "%s needs nodecoll-rules 2 (this file is format %d)", what, p->format) : 0;
}

/* A rule's radix= and chunk= words. */
static int parse_rule_params(parser *p, char **word, int words, nc_tune_rule *r)
{
    for (int i = 5; i < words; i++) {
        const char *v;
        char *end;
        long radix;
        if ((v = value_of(word[i], "radix")) && !r->radix) {
            if ((radix = strtol(v, &end, 10)) < 1 || *end || radix > 1024)
                return fail(p, "\"%s\" is not radix=<1..1024>", word[i]);
            r->radix = (int32_t)radix;
        } else if ((v = value_of(word[i], "chunk")) && !r->chunk) {
            if (needs_format_2(p, "chunk=")) return -1;
            if (r->alg != NC_ALG_CMA) return fail(p, "\"chunk=\" is a parameter of the cma algorithm only");
            const char *setting = r->coll == NC_COLL_BCAST ? "CMA_CHUNK" : "REDUCE_CHUNK";
            if (parse_setting(p, "chunk", v, setting, &r->chunk)) return -1;
        } else {
            return fail(p, "\"%s\" is no parameter of a rule (radix=<n>, chunk=<bytes>, each once)", word[i]);
        }
    }
    return 0;
}

static int parse_rule(parser *p, char **word, int words, nc_tune_rule *r)
{
    nc_coll_id coll = coll_by_name(word[0]);
    if (coll == NC_COLL_COUNT) return fail(p, "\"%s\" is no collective nodecoll tunes", word[0]);
    if (words < 5 || words > 7) /* (9: more than 8) */
        return fail(p, "a rule is: collective ranks-per-node min-bytes max-bytes algorithm [radix=n] [chunk=bytes]");
    char *end;
    long ranks = strtol(word[1], &end, 10);
    if (*end || ranks < 1 || ranks > 1 << 24) return fail(p, "\"%s\" is no number of ranks per node", word[1]);
    uint64_t lo, hi;
    if (parse_bytes(word[2], &lo) || parse_bytes(word[3], &hi) || lo > hi)
        return fail(p, "\"%s %s\" is no size range (bytes, K/M/G, max may be inf)", word[2], word[3]);
    nc_alg_id alg = nc_tune_alg(coll, word[4]);
    if (alg == NC_ALG_COUNT) return fail(p, "\"%s\" is no algorithm of %s", word[4], word[0]);
    *r = (nc_tune_rule){(uint8_t)coll, (uint8_t)alg, (uint16_t)(p->line > 65535 ? 65535 : p->line), (int32_t)ranks,
                        0, 0, lo, hi};
    return parse_rule_params(p, word, words, r);
}

/* The node-wide entry for `ranks` (a new one if there is none yet), or NULL when full. */
static nc_tune_node *node_entry(nc_tune_rules *t, int ranks)
{
    for (int i = 0; i < t->nodes; i++)
        if (t->node[i].ranks == ranks) return &t->node[i];
    if (t->nodes == NC_TUNE_MAX_NODES) return NULL;
    t->node[t->nodes] = (nc_tune_node){.ranks = ranks};
    return &t->node[t->nodes++];
}

/* The ranks-per-node word of a layout or levels line, and its entry, seen once per kind. */
static nc_tune_node *node_line(parser *p, nc_tune_rules *t, char **word, int levels)
{
    char *end;
    long ranks = strtol(word[1], &end, 10);
    if (*end || ranks < 1 || ranks > 1 << 24) {
        fail(p, "\"%s\" is no number of ranks per node", word[1]);
        return NULL;
    }
    nc_tune_node *n = node_entry(t, (int)ranks);
    if (!n) {
        fail(p, "layout and levels lines for more than %d node sizes", NC_TUNE_MAX_NODES);
        return NULL;
    }
    uint16_t *seen = levels ? &n->levels_line : &n->layout_line;
    if (*seen) {
        fail(p, "a second %s line for %ld ranks per node (the first is line %d)", word[0], ranks, *seen);
        return NULL;
    }
    *seen = (uint16_t)(p->line > 65535 ? 65535 : p->line);
    return n;
}

static int parse_layout(parser *p, char **word, int words, nc_tune_rules *t)
{
    if (needs_format_2(p, "a layout line")) return -1;
    if (words < 3 || words > 4) return fail(p, "a layout line is: layout ranks-per-node [segment=bytes] [segments=n]");
    nc_tune_node *n = node_line(p, t, word, 0);
    if (!n) return -1;
    for (int i = 2; i < words; i++) {
        const char *v;
        if ((v = value_of(word[i], "segment")) && !n->segment_size) {
            if (parse_setting(p, "segment", v, "SEGMENT_SIZE", &n->segment_size)) return -1;
        } else if ((v = value_of(word[i], "segments")) && !n->segments) {
            if (parse_setting(p, "segments", v, "SEGMENTS", &n->segments)) return -1;
        } else {
            return fail(p, "\"%s\" is no parameter of a layout (segment=<bytes>, segments=<n>, each once)", word[i]);
        }
    }
    return 0;
}

static int parse_levels(parser *p, char **word, int words, nc_tune_rules *t)
{
    if (needs_format_2(p, "a levels line")) return -1;
    if (words != 3) return fail(p, "a levels line is: levels ranks-per-node flat|auto|<list of package,numa,l3,core>");
    nc_tune_node *n = node_line(p, t, word, 1);
    if (!n) return -1;
    char why[400];
    if (nc_setting_parse(nc_setting_named("TOPO_LEVELS"), word[2], &n->levels, why, sizeof why))
        return fail(p, "\"%s\" is no list of topology levels (flat, auto, or of package,numa,l3,core)", word[2]);
    return 0;
}

static int parse_text(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                      char *err, size_t err_len)
{
    parser p = {path, 0, 0, err, err_len};
    int saw_version = 0, saw_mpi = 0;
    char line[1024];
    for (const char *s = text; *s;) {
        size_t n = strcspn(s, "\n");
        p.line++;
        if (n >= sizeof line) return fail(&p, "line too long");
        memcpy(line, s, n);
        line[n] = '\0';
        s += n + (s[n] == '\n');
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char copy[sizeof line], *word[8], *save = NULL;
        memcpy(copy, line, sizeof copy);
        int words = 0;
        for (char *w = strtok_r(copy, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save))
            if (words < 8) word[words++] = w;
            else words = 9; /* (too many for a rule; header lines are free text) */
        if (!words) continue;
        char value[200];
        if (!p.format) {
            if (strcmp(word[0], "nodecoll-rules"))
                return fail(&p, "not a rules file (it must begin with nodecoll-rules)");
            p.format = words == 2 ? atoi(word[1]) : 0;
            if (p.format < 1 || p.format > NC_TUNE_FORMAT)
                return fail(&p, "format %s, this nodecoll reads formats 1 to %d", words > 1 ? word[1] : "?",
                            NC_TUNE_FORMAT);
        } else if (!strcmp(word[0], "nodecoll")) {
            rest_of(line, "nodecoll", value, sizeof value);
            if (strcmp(value, version))
                return fail(&p, "written for nodecoll %s, this is nodecoll %s: run nodecoll-tune again", value,
                            version);
            saw_version = 1;
        } else if (!strcmp(word[0], "mpi")) {
            rest_of(line, "mpi", value, sizeof value);
            if (strcmp(value, mpi)) return fail(&p, "measured with %s, this nodecoll runs on %s", value, mpi);
            saw_mpi = 1;
        } else if (!strcmp(word[0], "machine") || !strcmp(word[0], "date")) {
            continue;
        } else if (!strcmp(word[0], "layout")) {
            if (parse_layout(&p, word, words, out)) return -1;
        } else if (!strcmp(word[0], "levels")) {
            if (parse_levels(&p, word, words, out)) return -1;
        } else {
            if (out->count == NC_TUNE_MAX_RULES) return fail(&p, "more than %d rules", NC_TUNE_MAX_RULES);
            if (parse_rule(&p, word, words, &out->rule[out->count])) return -1;
            out->count++;
        }
    }
    if (!p.format || !saw_version || !saw_mpi) {
        p.line = 0;
        return fail(&p, "incomplete: a rules file names its format, nodecoll version and MPI");
    }
    return 0;
}

int nc_tune_parse(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                  char *err, size_t err_len)
{
    out->count = out->nodes = 0;
    snprintf(out->source, sizeof out->source, "%s", path);
    int rc = parse_text(text, path, version, mpi, out, err, err_len);
    if (rc) out->count = out->nodes = 0; /* a file is taken whole or not at all */
    out->loaded = rc == 0;
    return rc;
}

int nc_tune_load(const char *path, const char *version, const char *mpi, nc_tune_rules *out, char *err,
                 size_t err_len)
{
    out->count = out->nodes = out->loaded = 0;
    snprintf(out->source, sizeof out->source, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "nodecoll: %s: %s; using the built-in defaults", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, used = 0;
    char *text = malloc(cap);
    while (text && used + 1 < cap) {
        size_t got = fread(text + used, 1, cap - 1 - used, f);
        if (!got) break;
        used += got;
    }
    int too_big = text && used + 1 == cap && !feof(f);
    fclose(f);
    if (!text || too_big) {
        free(text);
        snprintf(err, err_len, "nodecoll: %s: %s; using the built-in defaults", path,
                 text ? "larger than 64 KiB" : "out of memory");
        return -1;
    }
    text[used] = '\0';
    if (memchr(text, '\0', used)) {
        free(text);
        snprintf(err, err_len, "nodecoll: %s: not a text file; using the built-in defaults", path);
        return -1;
    }
    int rc = nc_tune_parse(text, path, version, mpi, out, err, err_len);
    free(text);
    return rc;
}

const char *nc_tune_default_path(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, len, "%s/nodecoll/rules", xdg);
    else if (home && *home) snprintf(buf, len, "%s/.config/nodecoll/rules", home);
    else return NULL;
    return buf;
}

const char *nc_tune_path(char *buf, size_t len)
{
    const char *set = getenv("NODECOLL_TUNE_FILE");
    if (set) return *set ? set : NULL;
    if (!nc_tune_default_path(buf, len)) return NULL;
    FILE *f = fopen(buf, "r");
    if (!f) return NULL;
    fclose(f);
    return buf;
}

const nc_tune_rule *nc_tune_find(const nc_tune_rules *t, nc_coll_id coll, int ranks, uint64_t bytes)
{
    for (int i = 0; i < t->count; i++) {
        const nc_tune_rule *r = &t->rule[i];
        if (r->coll == coll && r->ranks == ranks && bytes >= r->min_bytes && bytes <= r->max_bytes) return r;
    }
    return NULL;
}

int64_t nc_tune_param_of(const nc_tune_rule *r, nc_tune_param p) { return p == NC_TUNE_RADIX ? r->radix : r->chunk; }

const nc_tune_node *nc_tune_node_find(const nc_tune_rules *t, int ranks)
{
    for (int i = 0; i < t->nodes; i++)
        if (t->node[i].ranks == ranks) return &t->node[i];
    return NULL;
}

int nc_tune_has_ranks(const nc_tune_rules *t, int ranks)
{
    for (int i = 0; i < t->count; i++)
        if (t->rule[i].ranks == ranks) return 1;
    return nc_tune_node_find(t, ranks) != NULL;
}

/* Whether the environment gave any setting a rule's radix of `coll` stands for. */
static int radix_given(const nc_config *cfg, nc_coll_id coll)
{
    switch (coll) {
    case NC_COLL_BARRIER: return NC_CONFIG_GIVEN(cfg, barrier_fanin) || NC_CONFIG_GIVEN(cfg, barrier_fanout);
    case NC_COLL_BCAST: return NC_CONFIG_GIVEN(cfg, bcast_radix);
    default: return NC_CONFIG_GIVEN(cfg, reduce_fanin);
    }
}

static int chunk_given(const nc_config *cfg, nc_coll_id coll)
{
    return coll == NC_COLL_BCAST ? NC_CONFIG_GIVEN(cfg, cma_chunk) : NC_CONFIG_GIVEN(cfg, reduce_chunk);
}

void nc_tune_adopt(nc_tune_rules *t, int ranks, nc_config *cfg)
{
    for (int i = 0; i < t->count; i++) {
        nc_tune_rule *r = &t->rule[i];
        if (radix_given(cfg, (nc_coll_id)r->coll)) r->radix = 0;
        if (chunk_given(cfg, (nc_coll_id)r->coll)) r->chunk = 0;
    }
    const nc_tune_node *n = nc_tune_node_find(t, ranks);
    if (!n) return;
    if (n->segment_size && !NC_CONFIG_GIVEN(cfg, segment_size)) cfg->segment_size = n->segment_size;
    if (n->segments && !NC_CONFIG_GIVEN(cfg, segments)) cfg->segments = n->segments;
    if (n->levels_line && !NC_CONFIG_GIVEN(cfg, topo_levels)) cfg->topo_levels = n->levels;
}

static void format_bytes(uint64_t v, char *out, size_t len)
{
    static const char *units[] = {"", "K", "M", "G"};
    int u = 0;
    if (v == NC_TUNE_NO_MAX) {
        snprintf(out, len, "inf");
        return;
    }
    while (v && v % 1024 == 0 && u < 3) v /= 1024, u++;
    snprintf(out, len, "%" PRIu64 "%s", v, units[u]);
}

/* " key=<bytes>" */
static void format_param(const char *key, int64_t bytes, char *out, size_t len)
{
    char value[32];
    format_bytes((uint64_t)bytes, value, sizeof value);
    snprintf(out, len, "%s=%s", key, value);
}

void nc_tune_format_rule(const nc_tune_rule *r, char *out, size_t len)
{
    char lo[32], hi[32], radix[32] = "", chunk[48] = "";
    format_bytes(r->min_bytes, lo, sizeof lo);
    format_bytes(r->max_bytes, hi, sizeof hi);
    if (r->radix) snprintf(radix, sizeof radix, " radix=%d", r->radix);
    if (r->chunk) format_param(" chunk", r->chunk, chunk, sizeof chunk);
    snprintf(out, len, "%s %d %s %s %s%s%s", nc_coll_name((nc_coll_id)r->coll), r->ranks, lo, hi,
             nc_alg_name((nc_alg_id)r->alg), radix, chunk);
}

void nc_tune_format_layout(const nc_tune_node *n, char *out, size_t len)
{
    char segment[48] = "", segments[32] = "";
    if (n->segment_size) format_param(" segment", n->segment_size, segment, sizeof segment);
    if (n->segments) snprintf(segments, sizeof segments, " segments=%lld", (long long)n->segments);
    if (n->layout_line) snprintf(out, len, "layout %d%s%s", n->ranks, segment, segments);
    else if (len) out[0] = '\0';
}

void nc_tune_format_levels(const nc_tune_node *n, char *out, size_t len)
{
    char levels[64];
    nc_setting_format(nc_setting_named("TOPO_LEVELS"), n->levels, levels, sizeof levels);
    if (n->levels_line) snprintf(out, len, "levels %d %s", n->ranks, levels);
    else if (len) out[0] = '\0';
}
