/* Tuning rules: the file format, its checks, and the lookup (tune.h). */
#include "tune.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
    case 'T': scale = 1ULL << 40; end++; break;
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

/* A number-valued parameter `text` checked against `setting`'s range. */
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

/* The settings a rule's radix stands for (Barrier's tree: its fan-in and its fan-out). */
static const char *const *radix_settings(nc_coll_id coll)
{
    static const char *const barrier[] = {"BARRIER_FANIN", "BARRIER_FANOUT", NULL};
    static const char *const bcast[] = {"BCAST_RADIX", NULL};
    static const char *const reduction[] = {"REDUCE_FANIN", NULL};
    return coll == NC_COLL_BARRIER ? barrier : coll == NC_COLL_BCAST ? bcast : reduction;
}

/* The setting a cma rule's chunk stands for. */
static const char *chunk_setting(nc_coll_id coll) { return coll == NC_COLL_BCAST ? "CMA_CHUNK" : "REDUCE_CHUNK"; }

/* A rule's radix= and chunk= words, each within the range of the settings it stands for. */
static int parse_rule_params(parser *p, char **word, int words, nc_tune_rule *r)
{
    for (int i = 5; i < words; i++) {
        const char *v;
        if ((v = value_of(word[i], "radix")) && !r->radix) {
            int64_t radix = 0;
            for (const char *const *s = radix_settings((nc_coll_id)r->coll); *s; s++)
                if (parse_setting(p, "radix", v, *s, &radix)) return -1;
            r->radix = (int32_t)radix;
        } else if ((v = value_of(word[i], "chunk")) && !r->chunk) {
            if (needs_format_2(p, "chunk=")) return -1;
            if (r->alg != NC_ALG_CMA) return fail(p, "\"chunk=\" is a parameter of the cma algorithm only");
            if (parse_setting(p, "chunk", v, chunk_setting((nc_coll_id)r->coll), &r->chunk)) return -1;
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
    if (coll == NC_COLL_BARRIER && hi)
        return fail(p, "\"%s %s\" is no size range of a barrier rule: a Barrier moves no bytes, its range is 0 0",
                    word[2], word[3]);
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

/* The header's format line: "nodecoll-rules <n>", n a format this nodecoll reads. */
static int parse_format(parser *p, const char *line, char **word, int words)
{
    if (strcmp(word[0], "nodecoll-rules")) return fail(p, "not a rules file (it must begin with nodecoll-rules)");
    char *end = NULL, value[200];
    long format = words == 2 && isdigit((unsigned char)word[1][0]) ? strtol(word[1], &end, 10) : 0;
    p->format = end && !*end && format <= NC_TUNE_FORMAT ? (int)format : 0;
    rest_of(line, "nodecoll-rules", value, sizeof value);
    if (p->format < 1)
        return fail(p, "format %s, this nodecoll reads formats 1 to %d", *value ? value : "?", NC_TUNE_FORMAT);
    return 0;
}

/* The next line of `*s` into `line` without its comment, and *s past it.  A comment may make a
 * line longer than `line` holds; what comes before it may not. */
static int next_line(parser *p, const char **s, char *line, size_t len)
{
    size_t n = strcspn(*s, "\n"), kept = n;
    p->line++;
    if (n >= len) {
        const char *hash = memchr(*s, '#', len - 1);
        if (!hash) return fail(p, "a line longer than %zu characters (only a comment may be longer)", len - 1);
        kept = (size_t)(hash - *s);
    }
    memcpy(line, *s, kept);
    line[kept] = '\0';
    *s += n + ((*s)[n] == '\n');
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    return 0;
}

static int parse_text(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                      char *err, size_t err_len)
{
    parser p = {path, 0, 0, err, err_len};
    int saw_version = 0, saw_mpi = 0;
    char line[1024];
    for (const char *s = text; *s;) {
        if (next_line(&p, &s, line, sizeof line)) return -1;
        char copy[sizeof line], *word[8], *save = NULL;
        memcpy(copy, line, sizeof copy);
        int words = 0;
        for (char *w = strtok_r(copy, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save))
            if (words < 8) word[words++] = w;
            else words = 9; /* (too many for a rule; header lines are free text) */
        if (!words) continue;
        char value[200];
        if (!p.format) {
            if (parse_format(&p, line, word, words)) return -1;
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

/* `path` opened for reading if it is a regular file, else -1 with why in `err`: opening a
 * FIFO would wait for a writer, and every rank waiting for the rules with it. */
static int open_regular(const char *path, char *err, size_t err_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    if (fd < 0 || fstat(fd, &st)) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "is not a regular file";
    if (!why) return fd;
    if (fd >= 0) close(fd);
    snprintf(err, err_len, "nodecoll: %s: %s; using the built-in defaults", path, why);
    return -1;
}

enum { MAX_FILE_BYTES = 64 << 10 };

/* The whole of fd into `text` (room for MAX_FILE_BYTES + 2), NUL-terminated: NULL, or what is
 * wrong. */
static const char *read_text(int fd, char *text, size_t *used)
{
    ssize_t got = 0;
    *used = 0;
    while (*used <= MAX_FILE_BYTES && (got = read(fd, text + *used, MAX_FILE_BYTES + 1 - *used)) > 0)
        *used += (size_t)got;
    text[*used] = '\0';
    if (got < 0) return strerror(errno);
    if (*used > MAX_FILE_BYTES) return "larger than 64 KiB";
    return memchr(text, '\0', *used) ? "not a text file" : NULL;
}

int nc_tune_load(const char *path, const char *version, const char *mpi, nc_tune_rules *out, char *err,
                 size_t err_len)
{
    out->count = out->nodes = out->loaded = 0;
    snprintf(out->source, sizeof out->source, "%s", path);
    int fd = open_regular(path, err, err_len);
    if (fd < 0) return -1;
    size_t used;
    char *text = malloc(MAX_FILE_BYTES + 2);
    const char *why = text ? read_text(fd, text, &used) : "out of memory";
    close(fd);
    int rc = why ? -1 : nc_tune_parse(text, path, version, mpi, out, err, err_len);
    if (why) snprintf(err, err_len, "nodecoll: %s: %s; using the built-in defaults", path, why);
    free(text);
    return rc;
}

/* The MPI's name without its version, in lower case, letters and digits only: "Open MPI
 * 4.1.4" -> "openmpi", "MPICH 4.0.2" -> "mpich". */
static void mpi_flavour(const char *mpi, char *out, size_t len)
{
    size_t n = 0;
    for (const char *s = mpi; *s && n + 1 < len; s++) {
        if (isdigit((unsigned char)*s) && (s == mpi || s[-1] == ' ')) break;
        if (isalnum((unsigned char)*s)) out[n++] = (char)tolower((unsigned char)*s);
    }
    snprintf(out + n, len - n, "%s", n ? "" : "mpi");
}

const char *nc_tune_default_path(const char *mpi, char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char flavour[64];
    mpi_flavour(mpi, flavour, sizeof flavour);
    if (xdg && *xdg) snprintf(buf, len, "%s/nodecoll/rules-%s", xdg, flavour);
    else if (home && *home) snprintf(buf, len, "%s/.config/nodecoll/rules-%s", home, flavour);
    else return NULL;
    return buf;
}

const char *nc_tune_path(const char *mpi, char *buf, size_t len)
{
    const char *set = getenv("NODECOLL_TUNE_FILE");
    if (set) return *set ? set : NULL;
    struct stat st; /* (whatever is there: nc_tune_load says why it cannot be read) */
    return nc_tune_default_path(mpi, buf, len) && stat(buf, &st) == 0 ? buf : NULL;
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

static int given(const nc_config *cfg, const char *setting)
{
    return cfg->given[nc_setting_named(setting)->offset / sizeof(int64_t)];
}

/* Whether the environment gave any setting a rule's radix of `coll` stands for. */
static int radix_given(const nc_config *cfg, nc_coll_id coll)
{
    for (const char *const *s = radix_settings(coll); *s; s++)
        if (given(cfg, *s)) return 1;
    return 0;
}

void nc_tune_adopt(nc_tune_rules *t, int ranks, nc_config *cfg)
{
    for (int i = 0; i < t->count; i++) {
        nc_tune_rule *r = &t->rule[i];
        if (radix_given(cfg, (nc_coll_id)r->coll)) r->radix = 0;
        if (given(cfg, chunk_setting((nc_coll_id)r->coll))) r->chunk = 0;
    }
    const nc_tune_node *n = nc_tune_node_find(t, ranks);
    if (!n) return;
    if (n->segment_size && !NC_CONFIG_GIVEN(cfg, segment_size)) cfg->segment_size = n->segment_size;
    if (n->segments && !NC_CONFIG_GIVEN(cfg, segments)) cfg->segments = n->segments;
    if (n->levels_line && !NC_CONFIG_GIVEN(cfg, topo_levels)) cfg->topo_levels = n->levels;
}

static void format_bytes(uint64_t v, char *out, size_t len)
{
    static const char *units[] = {"", "K", "M", "G", "T"};
    int u = 0;
    if (v == NC_TUNE_NO_MAX) {
        snprintf(out, len, "inf");
        return;
    }
    while (v && v % 1024 == 0 && u < 4) v /= 1024, u++;
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

/* The lines of one node size in a set of rules: where the first is, how many rules, whether
 * it has a layout or levels line. */
typedef struct size_group {
    int ranks, first_line, rules, has_node, dropped;
} size_group;

static size_group *group_of(size_group *g, int *n, int ranks, int line)
{
    int i = 0;
    while (i < *n && g[i].ranks != ranks) i++;
    if (i == *n) g[(*n)++] = (size_group){ranks, line, 0, 0, 0};
    else if (line < g[i].first_line) g[i].first_line = line;
    return &g[i];
}

static int by_first_line(const void *a, const void *b)
{
    const size_group *x = a, *y = b;
    return x->first_line != y->first_line ? (x->first_line > y->first_line) - (x->first_line < y->first_line)
                                          : (x->ranks > y->ranks) - (x->ranks < y->ranks);
}

/* The node sizes of t in the order of their first lines (room for NC_TUNE_MAX_RULES +
 * NC_TUNE_MAX_NODES). */
static int size_groups(const nc_tune_rules *t, size_group *g)
{
    int n = 0;
    for (int i = 0; i < t->nodes; i++) {
        const nc_tune_node *x = &t->node[i];
        int both = x->layout_line && x->levels_line, first = x->layout_line ? x->layout_line : x->levels_line;
        if (both && x->levels_line < first) first = x->levels_line;
        group_of(g, &n, x->ranks, first)->has_node = x->layout_line || x->levels_line;
    }
    for (int i = 0; i < t->count; i++) group_of(g, &n, t->rule[i].ranks, t->rule[i].line)->rules++;
    qsort(g, (size_t)n, sizeof *g, by_first_line);
    return n;
}

/* Appends a rule, or a node's lines, to `out` as its next lines. */
static void append_rule(nc_tune_rules *out, const nc_tune_rule *r, int *line)
{
    out->rule[out->count] = *r;
    out->rule[out->count++].line = (uint16_t)++*line;
}

static void append_node(nc_tune_rules *out, const nc_tune_node *n, int *line)
{
    if (!n || (!n->layout_line && !n->levels_line)) return;
    nc_tune_node *to = &out->node[out->nodes++];
    *to = *n;
    if (to->layout_line) to->layout_line = (uint16_t)++*line;
    if (to->levels_line) to->levels_line = (uint16_t)++*line;
}

/* The rules of `from` for nodes of `ranks`, except those of the collectives in `colls`. */
static void append_rules(nc_tune_rules *out, const nc_tune_rules *from, int ranks, unsigned colls, int *line)
{
    for (int i = 0; i < from->count; i++)
        if (from->rule[i].ranks == ranks && !(colls >> from->rule[i].coll & 1)) append_rule(out, &from->rule[i], line);
}

/* The node-wide lines for u->ranks: what the run measured, the old file's where it measured
 * nothing. */
static nc_tune_node merged_node(const nc_tune_rules *old, const nc_tune_rules *mine, const nc_tune_update *u)
{
    const nc_tune_node *was = nc_tune_node_find(old, u->ranks), *now = nc_tune_node_find(mine, u->ranks);
    nc_tune_node none = {.ranks = u->ranks}, n = was ? *was : none;
    if (!now) now = &none;
    if (u->levels) n.levels_line = now->levels_line, n.levels = now->levels;
    if (u->layout) n.layout_line = now->layout_line, n.segment_size = now->segment_size, n.segments = now->segments;
    return n;
}

int nc_tune_merge(const nc_tune_rules *old, const nc_tune_rules *mine, const nc_tune_update *u, nc_tune_rules *out,
                  int *dropped, int *ndropped)
{
    size_group g[NC_TUNE_MAX_RULES + NC_TUNE_MAX_NODES];
    int ng = size_groups(old, g), line = 0;
    nc_tune_node node = merged_node(old, mine, u);
    int rules = mine->count, nodes = node.layout_line || node.levels_line;
    for (int i = 0; i < old->count; i++)
        rules += old->rule[i].ranks == u->ranks && !(u->colls >> old->rule[i].coll & 1);
    for (int i = 0; i < ng; i++)
        if (g[i].ranks != u->ranks) rules += g[i].rules, nodes += g[i].has_node;
    *ndropped = 0;
    for (int i = 0; i < ng && (rules > NC_TUNE_MAX_RULES || nodes > NC_TUNE_MAX_NODES); i++) {
        if (g[i].ranks == u->ranks) continue;
        g[i].dropped = 1;
        rules -= g[i].rules, nodes -= g[i].has_node;
        dropped[(*ndropped)++] = g[i].ranks;
    }
    out->count = out->nodes = out->loaded = 0;
    snprintf(out->source, sizeof out->source, "%s", old->source);
    if (rules > NC_TUNE_MAX_RULES || nodes > NC_TUNE_MAX_NODES) return -1;
    for (int i = 0; i < ng; i++) {
        if (g[i].dropped || g[i].ranks == u->ranks) continue;
        append_node(out, nc_tune_node_find(old, g[i].ranks), &line);
        append_rules(out, old, g[i].ranks, 0, &line);
    }
    append_node(out, &node, &line);
    append_rules(out, old, u->ranks, u->colls, &line);
    append_rules(out, mine, u->ranks, 0, &line);
    return 0;
}

void nc_tune_write(const nc_tune_rules *t, FILE *f)
{
    size_group g[NC_TUNE_MAX_RULES + NC_TUNE_MAX_NODES];
    int ng = size_groups(t, g);
    char line[200];
    for (int i = 0; i < ng; i++) {
        const nc_tune_node *n = nc_tune_node_find(t, g[i].ranks);
        nc_tune_node none = {.ranks = g[i].ranks};
        nc_tune_format_layout(n ? n : &none, line, sizeof line);
        if (*line) fprintf(f, "%s\n", line);
        nc_tune_format_levels(n ? n : &none, line, sizeof line);
        if (*line) fprintf(f, "%s\n", line);
        for (int k = 0; k < t->count; k++) {
            if (t->rule[k].ranks != g[i].ranks) continue;
            nc_tune_format_rule(&t->rule[k], line, sizeof line);
            fprintf(f, "%s\n", line);
        }
    }
}
