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
    int line;
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

static int parse_rule(parser *p, char **word, int words, nc_tune_rule *r)
{
    nc_coll_id coll = coll_by_name(word[0]);
    if (coll == NC_COLL_COUNT) return fail(p, "\"%s\" is no collective nodecoll tunes", word[0]);
    if (words < 5 || words > 6) /* (9: more than 8) */
        return fail(p, "a rule is: collective ranks-per-node min-bytes max-bytes algorithm [radix=n]");
    char *end;
    long ranks = strtol(word[1], &end, 10);
    if (*end || ranks < 1 || ranks > 1 << 24) return fail(p, "\"%s\" is no number of ranks per node", word[1]);
    uint64_t lo, hi;
    if (parse_bytes(word[2], &lo) || parse_bytes(word[3], &hi) || lo > hi)
        return fail(p, "\"%s %s\" is no size range (bytes, K/M/G, max may be inf)", word[2], word[3]);
    nc_alg_id alg = nc_tune_alg(coll, word[4]);
    if (alg == NC_ALG_COUNT) return fail(p, "\"%s\" is no algorithm of %s", word[4], word[0]);
    long radix = 0;
    if (words == 6 && (strncmp(word[5], "radix=", 6) || (radix = strtol(word[5] + 6, &end, 10)) < 1 || *end ||
                       radix > 1024))
        return fail(p, "\"%s\" is not radix=<1..1024>", word[5]);
    *r = (nc_tune_rule){(uint8_t)coll, (uint8_t)alg, (uint16_t)(p->line > 65535 ? 65535 : p->line), (int32_t)ranks,
                        (int32_t)radix, lo, hi};
    return 0;
}

static int parse_text(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                      char *err, size_t err_len)
{
    parser p = {path, 0, err, err_len};
    int format = 0, saw_version = 0, saw_mpi = 0;
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
        if (!format) {
            if (strcmp(word[0], "nodecoll-rules"))
                return fail(&p, "not a rules file (it must begin with nodecoll-rules)");
            if (words != 2 || atoi(word[1]) != NC_TUNE_FORMAT)
                return fail(&p, "format %s, this nodecoll reads format %d", words > 1 ? word[1] : "?", NC_TUNE_FORMAT);
            format = 1;
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
        } else {
            if (out->count == NC_TUNE_MAX_RULES) return fail(&p, "more than %d rules", NC_TUNE_MAX_RULES);
            if (parse_rule(&p, word, words, &out->rule[out->count])) return -1;
            out->count++;
        }
    }
    if (!format || !saw_version || !saw_mpi) {
        p.line = 0;
        return fail(&p, "incomplete: a rules file names its format, nodecoll version and MPI");
    }
    return 0;
}

int nc_tune_parse(const char *text, const char *path, const char *version, const char *mpi, nc_tune_rules *out,
                  char *err, size_t err_len)
{
    out->count = 0;
    snprintf(out->source, sizeof out->source, "%s", path);
    int rc = parse_text(text, path, version, mpi, out, err, err_len);
    if (rc) out->count = 0; /* a file is taken whole or not at all */
    out->loaded = rc == 0;
    return rc;
}

int nc_tune_load(const char *path, const char *version, const char *mpi, nc_tune_rules *out, char *err,
                 size_t err_len)
{
    out->count = out->loaded = 0;
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

int nc_tune_has_ranks(const nc_tune_rules *t, int ranks)
{
    for (int i = 0; i < t->count; i++)
        if (t->rule[i].ranks == ranks) return 1;
    return 0;
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

void nc_tune_format_rule(const nc_tune_rule *r, char *out, size_t len)
{
    char lo[32], hi[32], radix[32] = "";
    format_bytes(r->min_bytes, lo, sizeof lo);
    format_bytes(r->max_bytes, hi, sizeof hi);
    if (r->radix) snprintf(radix, sizeof radix, " radix=%d", r->radix);
    snprintf(out, len, "%s %d %s %s %s%s", nc_coll_name((nc_coll_id)r->coll), r->ranks, lo, hi,
             nc_alg_name((nc_alg_id)r->alg), radix);
}
