/* The tuning rules file without MPI (issue 19 part 3): a good file of each format, and every
 * way one can be wrong (each named by its line, and no rules kept), the lookup, the round
 * trip of a rule and a node's lines through their text, and how rules yield to settings the
 * environment gave; files that are no regular files (never opened for reading: a FIFO would
 * hang), the default location per MPI, and how the tuner merges its rules into a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/tune.h"

static int failures;
#define CHECK(cond, ...)                           \
    do {                                           \
        if (!(cond)) {                             \
            failures++;                            \
            fprintf(stderr, "FAIL: " __VA_ARGS__); \
            fputc('\n', stderr);                   \
        }                                          \
    } while (0)

static const char *head = "# written by hand\n"
                          "nodecoll-rules 2\n"
                          "nodecoll 9.8.7\n"
                          "mpi Some MPI 1.2\n"
                          "machine box, 128 cores, several words of free text: a b c d e f g h\n"
                          "date today\n";

static nc_tune_rules rules;
static char err[600];

static int parse(const char *body)
{
    static char text[16384];
    snprintf(text, sizeof text, "%s%s", head, body);
    err[0] = '\0';
    return nc_tune_parse(text, "rules.txt", "9.8.7", "Some MPI 1.2", &rules, err, sizeof err);
}

/* A whole file that must fail at `line` with `what` in the message, and keep no rule. */
static void bad_file(const char *text, int line, const char *what)
{
    char at[32];
    snprintf(at, sizeof at, "rules.txt:%d:", line);
    err[0] = '\0';
    int rc = nc_tune_parse(text, "rules.txt", "9.8.7", "Some MPI 1.2", &rules, err, sizeof err);
    CHECK(rc == -1 && rules.count == 0 && !rules.loaded, "accepted: %s", text);
    CHECK(strstr(err, at) && strstr(err, what) && strstr(err, "built-in defaults"), "message for \"%s\": %s", text,
          err);
}

/* The same for rules after a good head. */
static void bad(const char *body, int line, const char *what)
{
    char text[8192];
    snprintf(text, sizeof text, "%s%s", head, body);
    bad_file(text, line, what);
}

/* A comment may make a line as long as it likes; what comes before it may not pass 1023
 * characters. */
static void long_lines(void)
{
    static char body[8192], text[8192];
    char comment[3001];
    memset(comment, 'x', sizeof comment - 1);
    comment[sizeof comment - 1] = '\0';
    snprintf(body, sizeof body, "# %s\nbcast 4 0 1K shm   # %s\nbarrier 4 0 0 tree radix=1024\n", comment, comment);
    CHECK(parse(body) == 0 && rules.count == 2, "long comment lines: %s", err);
    CHECK(parse("allreduce 4 0 1K tree radix=64\nbcast 4 0 1K shm radix=1024\n") == 0 && rules.count == 2,
          "radices at the top of their settings' ranges: %s", err);
    char words[1100];
    memset(words, ' ', sizeof words - 1);
    words[sizeof words - 1] = '\0';
    snprintf(text, sizeof text, "bcast 4 0 1K shm%s# too late\n", words);
    bad(text, 7, "a line longer than 1023 characters (only a comment may be longer)");
}

/* Rules files that are not regular files: said so at once (a FIFO must not be opened for
 * reading: that waits for a writer), and the default location is found without opening it. */
static void not_regular(void)
{
    char dir[64], home[128], fifo[256];
    snprintf(dir, sizeof dir, "/tmp/nodecoll-test-rules-dir-%d", (int)getpid());
    snprintf(home, sizeof home, "%s/nodecoll", dir);
    snprintf(fifo, sizeof fifo, "%s/rules-somempi", home);
    CHECK(mkdir(dir, 0700) == 0 && mkdir(home, 0700) == 0 && mkfifo(fifo, 0600) == 0, "cannot make %s", fifo);
    alarm(20); /* (a FIFO opened for reading would wait for ever) */
    CHECK(nc_tune_load(fifo, "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == -1 &&
              strstr(err, "rules-somempi: is not a regular file; using the built-in defaults"),
          "FIFO: %s", err);
    CHECK(nc_tune_load(dir, "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == -1 &&
              strstr(err, ": is not a regular file; using the built-in defaults"),
          "directory: %s", err);
    char buf[512];
    setenv("XDG_CONFIG_HOME", dir, 1);
    unsetenv("NODECOLL_TUNE_FILE");
    const char *path = nc_tune_path("Some MPI 1.2", buf, sizeof buf);
    CHECK(path && !strcmp(path, fifo), "the default location holds a FIFO: %s", path ? path : "none");
    alarm(0);
    remove(fifo);
    remove(home);
    remove(dir);
}

/* One default file per MPI: Open MPI's and MPICH's rules differ, and each rejects the other's. */
static void default_paths(void)
{
    char buf[512];
    setenv("XDG_CONFIG_HOME", "/x", 1);
    CHECK(!strcmp(nc_tune_default_path("Open MPI 4.1.4", buf, sizeof buf), "/x/nodecoll/rules-openmpi"), "%s", buf);
    CHECK(!strcmp(nc_tune_default_path("MPICH 4.0.2", buf, sizeof buf), "/x/nodecoll/rules-mpich"), "%s", buf);
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/h", 1);
    CHECK(!strcmp(nc_tune_default_path("MPICH 4.0.2", buf, sizeof buf), "/h/.config/nodecoll/rules-mpich"), "%s", buf);
    CHECK(!nc_tune_path("MPICH 4.0.2", buf, sizeof buf), "nothing at the default location: no file");
}

static nc_tune_rules old, mine, merged;

/* `body` as a tuner run's rules (no line numbers, as the tuner makes them). */
static void tuned(const char *body)
{
    CHECK(parse(body) == 0, "tuned rules: %s", err);
    mine = rules;
    for (int i = 0; i < mine.count; i++) mine.rule[i].line = 0;
    for (int i = 0; i < mine.nodes; i++) {
        mine.node[i].layout_line = mine.node[i].layout_line != 0;
        mine.node[i].levels_line = mine.node[i].levels_line != 0;
    }
}

/* The merged rules as a file, read back: the text of its rules, one line each. */
static const char *written(void)
{
    static char text[16384];
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    nc_tune_write(&merged, f);
    fclose(f);
    snprintf(text, sizeof text, "%s%s", head, body);
    CHECK(nc_tune_parse(text, "merged", "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == 0, "merged: %s", err);
    CHECK(rules.count == merged.count && rules.nodes == merged.nodes, "merged: %d rules read back, %d written",
          rules.count, merged.count);
    snprintf(text, sizeof text, "%s", body);
    free(body);
    return text;
}

static void lines_for(char *text, size_t len, const char *coll, int ranks, int n)
{
    size_t used = strlen(text);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, len - used, "%s %d %d %d %s\n", coll, ranks, i * 10, i * 10 + 9,
                                 strcmp(coll, "bcast") ? "flat" : "shm");
}

/* A tuner run's rules merged into a full file: the node sizes tuned longest ago (their lines
 * first) make room, whole, and the result is a file nodecoll reads. */
static void merge_within_limits(void)
{
    static char text[16384];
    int dropped[NC_TUNE_MAX_RULES + NC_TUNE_MAX_NODES], ndropped = -1;
    nc_tune_update u = {2, 1u << NC_COLL_BCAST | 1u << NC_COLL_ALLREDUCE, 1, 1};
    tuned("bcast 2 0 1K shm\nbcast 2 1025 inf cma\nallreduce 2 0 inf flat\nlayout 2 segments=4\n");
    text[0] = '\0';
    lines_for(text, sizeof text, "bcast", 4, 63);
    lines_for(text, sizeof text, "reduce", 8, 63);
    CHECK(parse(text) == 0 && rules.count == 126, "126 rules: %s", err);
    old = rules;
    CHECK(nc_tune_merge(&old, &mine, &u, &merged, dropped, &ndropped) == 0 && ndropped == 1 && dropped[0] == 4 &&
              merged.count == 66 && merged.nodes == 1,
          "126 + 3 rules: %d dropped (%d), %d rules", ndropped, ndropped > 0 ? dropped[0] : 0, merged.count);
    CHECK(strstr(written(), "reduce 8 620 629 flat\nlayout 2 segments=4\nbcast 2 0 1K shm\n"), "8 kept, 2 last");
    /* Node sizes' lines: at most 16. */
    text[0] = '\0';
    for (int i = 0; i < NC_TUNE_MAX_NODES; i++) sprintf(text + strlen(text), "levels %d numa\n", 100 - i);
    CHECK(parse(text) == 0 && rules.nodes == NC_TUNE_MAX_NODES, "16 node sizes: %s", err);
    old = rules;
    CHECK(nc_tune_merge(&old, &mine, &u, &merged, dropped, &ndropped) == 0 && ndropped == 1 && dropped[0] == 100 &&
              merged.nodes == NC_TUNE_MAX_NODES,
          "a 17th node size: %d dropped", ndropped);
    written();
    /* The size measured alone too much: nothing to drop. */
    text[0] = '\0';
    lines_for(text, sizeof text, "reduce_scatter", 2, NC_TUNE_MAX_RULES);
    CHECK(parse(text) == 0, "128 rules: %s", err);
    old = rules;
    CHECK(nc_tune_merge(&old, &mine, &u, &merged, dropped, &ndropped) == -1, "129 rules for one size");
}

/* A run of some collectives replaces only their rules, and only the node-wide lines it
 * measured, for its node size. */
static void merge_subset(void)
{
    int dropped[NC_TUNE_MAX_RULES + NC_TUNE_MAX_NODES], ndropped;
    CHECK(parse("layout 2 segment=64K segments=4\nlevels 2 numa\nbarrier 2 0 0 tree\nbcast 2 0 inf shm\n"
                "allreduce 2 0 inf tree\nbcast 4 0 inf cma\n") == 0,
          "old: %s", err);
    old = rules;
    tuned("barrier 2 0 0 flat\n");
    nc_tune_update barrier_only = {2, 1u << NC_COLL_BARRIER, 0, 0};
    CHECK(nc_tune_merge(&old, &mine, &barrier_only, &merged, dropped, &ndropped) == 0 && ndropped == 0, "barrier");
    CHECK(!strcmp(written(), "bcast 4 0 inf cma\nlayout 2 segment=64K segments=4\nlevels 2 numa\nbcast 2 0 inf shm\n"
                             "allreduce 2 0 inf tree\nbarrier 2 0 0 flat\n"),
          "--coll barrier keeps the rest:\n%s", written());
    tuned("bcast 2 0 inf cma\n");
    nc_tune_update bcast = {2, 1u << NC_COLL_BCAST, 0, 1}; /* (the layout measured, the default kept) */
    CHECK(nc_tune_merge(&old, &mine, &bcast, &merged, dropped, &ndropped) == 0, "bcast");
    CHECK(!strcmp(written(), "bcast 4 0 inf cma\nlevels 2 numa\nbarrier 2 0 0 tree\nallreduce 2 0 inf tree\n"
                             "bcast 2 0 inf cma\n"),
          "--coll bcast measured the layout:\n%s", written());
    tuned("levels 2 flat\nlayout 2 segments=16\n");
    nc_tune_update both = {2, 0, 1, 1};
    CHECK(nc_tune_merge(&old, &mine, &both, &merged, dropped, &ndropped) == 0, "node-wide");
    CHECK(strstr(written(), "layout 2 segments=16\nlevels 2 flat\nbarrier 2 0 0 tree\n"), "new lines:\n%s",
          written());
}

/* What nodecoll-info and tuning.md print for a setting (its default and range) reads back as
 * the same value: a user may type what the docs show (\"1T\" once did not). */
static void settings_read_back(void)
{
    for (int i = 0; i < nc_setting_count(); i++) {
        const nc_setting_info *info = nc_setting(i);
        const int64_t values[] = {info->default_value, info->min, info->max};
        for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
            char text[64], why[256] = "";
            int64_t back = 0;
            nc_setting_format(info, values[k], text, sizeof text);
            CHECK(nc_setting_parse(info, text, &back, why, sizeof why) == 0 && back == values[k],
                  "%s: \"%s\" does not read back as %lld (%s)", info->env_name, text, (long long)values[k], why);
        }
    }
}

int main(void)
{
    settings_read_back();
    /* A good file. */
    static const char *good = "barrier 4 0 0 flat\n"
                              "bcast 4 0 16K shm radix=2   # comment\n"
                              "bcast 4 16385 inf cma\n"
                              "\n"
                              "allreduce 4 0 1M tree radix=3\n"
                              "reduce_scatter_block 64 8 8 recursive-doubling\n";
    CHECK(parse(good) == 0, "good file: %s", err);
    CHECK(rules.count == 5 && rules.loaded, "five rules");
    CHECK(rules.rule[1].line == 8 && rules.rule[1].radix == 2 && rules.rule[1].max_bytes == 16384, "rule 2 read");
    const nc_tune_rule *r = nc_tune_find(&rules, NC_COLL_BCAST, 4, 16384);
    CHECK(r && r->alg == NC_ALG_SHM, "16K is shm's (inclusive)");
    r = nc_tune_find(&rules, NC_COLL_BCAST, 4, 16385);
    CHECK(r && r->alg == NC_ALG_CMA && r->max_bytes == NC_TUNE_NO_MAX, "16K+1 is cma's, without bound");
    CHECK(!nc_tune_find(&rules, NC_COLL_BCAST, 8, 100), "other node sizes have no rule");
    CHECK(!nc_tune_find(&rules, NC_COLL_REDUCE, 4, 100), "other collectives have no rule");
    CHECK(nc_tune_find(&rules, NC_COLL_ALLREDUCE, 4, 1 << 20) &&
              !nc_tune_find(&rules, NC_COLL_ALLREDUCE, 4, (1 << 20) + 1),
          "1M bound");
    CHECK(nc_tune_has_ranks(&rules, 64) && !nc_tune_has_ranks(&rules, 5), "ranks per node");
    /* Each rule survives its own text. */
    for (int i = 0; i < rules.count; i++) {
        char line[200], text[1024];
        nc_tune_rule before = rules.rule[i];
        nc_tune_format_rule(&before, line, sizeof line);
        snprintf(text, sizeof text, "%s\n", line);
        CHECK(parse(text) == 0 && rules.count == 1, "rule %d: \"%s\" does not read back: %s", i, line, err);
        before.line = rules.rule[0].line;
        CHECK(!memcmp(&before, &rules.rule[0], sizeof before), "rule %d: \"%s\" reads back differently", i, line);
        parse(good);
    }

    /* Format 2: chunks, layout and levels. */
    static const char *good2 = "layout 4 segment=64K segments=16\n"
                               "levels 4 numa,l3\n"
                               "bcast 4 16385 inf cma chunk=256K radix=2\n"
                               "allreduce 4 32K inf cma chunk=1M\n"
                               "levels 64 flat\n"
                               "layout 8 segments=4\n";
    CHECK(parse(good2) == 0, "format 2 file: %s", err);
    CHECK(rules.count == 2 && rules.nodes == 3, "two rules, three node sizes");
    const nc_tune_node *n4 = nc_tune_node_find(&rules, 4), *n64 = nc_tune_node_find(&rules, 64);
    CHECK(n4 && n4->segment_size == 65536 && n4->segments == 16 && n4->layout_line == 7 && n4->levels_line == 8 &&
              n4->levels == (1 << 1 | 1 << 2),
          "node 4's layout and levels");
    CHECK(n64 && n64->levels_line == 11 && n64->levels == 0 && !n64->layout_line, "node 64: levels flat only");
    CHECK(!nc_tune_node_find(&rules, 5) && nc_tune_has_ranks(&rules, 8), "a node size with only a layout has rules");
    r = nc_tune_find(&rules, NC_COLL_BCAST, 4, 1 << 20);
    CHECK(r && nc_tune_param_of(r, NC_TUNE_CHUNK) == 262144 && nc_tune_param_of(r, NC_TUNE_RADIX) == 2,
          "bcast's chunk and radix");
    {
        char line[200];
        nc_tune_format_layout(n4, line, sizeof line);
        CHECK(!strcmp(line, "layout 4 segment=64K segments=16"), "layout line: %s", line);
        nc_tune_format_levels(n4, line, sizeof line);
        CHECK(!strcmp(line, "levels 4 numa,l3"), "levels line: %s", line);
        nc_tune_format_layout(n64, line, sizeof line);
        CHECK(!*line, "no layout line for 64: %s", line);
        nc_tune_format_rule(r, line, sizeof line);
        CHECK(!strcmp(line, "bcast 4 16385 inf cma radix=2 chunk=256K"), "rule line: %s", line);
    }
    /* An explicit setting wins: the rules' radix and chunk under it are dropped, and the node's
     * layout and levels go into the settings where the environment gave none. */
    {
        nc_config cfg;
        setenv("NODECOLL_CMA_CHUNK", "2M", 1);
        setenv("NODECOLL_SEGMENTS", "32", 1);
        unsetenv("NODECOLL_SEGMENT_SIZE");
        unsetenv("NODECOLL_TOPO_LEVELS");
        unsetenv("NODECOLL_BCAST_RADIX");
        unsetenv("NODECOLL_REDUCE_CHUNK");
        nc_config_from_env(&cfg, NULL);
        nc_tune_adopt(&rules, 4, &cfg);
        CHECK(cfg.segment_size == 65536 && cfg.segments == 32 && cfg.topo_levels == (1 << 1 | 1 << 2),
              "node 4 under NODECOLL_SEGMENTS=32: segment %lld, segments %lld, levels %lld",
              (long long)cfg.segment_size, (long long)cfg.segments, (long long)cfg.topo_levels);
        r = nc_tune_find(&rules, NC_COLL_BCAST, 4, 1 << 20);
        CHECK(r && r->chunk == 0 && r->radix == 2, "bcast's chunk yields to NODECOLL_CMA_CHUNK, its radix stays");
        r = nc_tune_find(&rules, NC_COLL_ALLREDUCE, 4, 1 << 20);
        CHECK(r && r->chunk == 1 << 20, "allreduce's chunk stays (NODECOLL_REDUCE_CHUNK unset)");
        nc_config_from_env(&cfg, NULL);
        nc_tune_adopt(&rules, 5, &cfg);
        CHECK(cfg.segment_size == 32768 && cfg.topo_levels == -1, "a node size without lines keeps the settings");
        unsetenv("NODECOLL_CMA_CHUNK");
        unsetenv("NODECOLL_SEGMENTS");
    }
    /* Format 1 is still read, without the format-2 kinds. */
    CHECK(nc_tune_parse("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Some MPI 1.2\nbcast 4 0 1K shm radix=2\n", "rules.txt",
                        "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == 0 &&
              rules.count == 1,
          "format 1: %s", err);
    bad_file("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Some MPI 1.2\nlayout 4 segment=8K\n", 4,
             "a layout line needs nodecoll-rules 2 (this file is format 1)");
    bad_file("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Some MPI 1.2\nlevels 4 numa\n", 4, "needs nodecoll-rules 2");
    bad_file("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Some MPI 1.2\nbcast 4 0 inf cma chunk=64K\n", 4,
             "chunk= needs nodecoll-rules 2");

    /* Every way to be wrong: the line and what, and nothing kept. */
    static const struct {
        const char *body;
        int line;
        const char *what;
    } wrong[] = {
        {"bcast 4 0 16K shm\nscan 4 0 1 chain\n", 8, "no collective"},
        {"bcast 4 0 16K\n", 7, "a rule is"},
        {"bcast four 0 16K shm\n", 7, "ranks per node"},
        {"bcast 4 0 -1 shm\n", 7, "size range"},
        {"bcast 4 2K 1K shm\n", 7, "size range"},
        {"bcast 4 0 1Q shm\n", 7, "size range"},
        {"bcast 4 0 1K tree\n", 7, "no algorithm of bcast"},
        {"barrier 4 0 0 cma\n", 7, "no algorithm of barrier"},
        {"bcast 4 0 1K shm radix=0\n", 7, "radix"},
        {"bcast 4 0 1K shm fanin=2\n", 7, "radix"},
        {"bcast 4 0 1K shm radix=2 extra\n", 7, "\"extra\" is no parameter of a rule"},
        {"bcast 4 0 1K shm radix=2 radix=4\n", 7,
         "\"radix=4\" is no parameter of a rule (radix=<n>, chunk=<bytes>, each once)"},
        {"bcast 4 0 1K shm chunk=64K\n", 7, "\"chunk=\" is a parameter of the cma algorithm only"},
        {"allreduce 4 0 1K cma chunk=1\n", 7, "\"chunk=1\" is out of range (NODECOLL_REDUCE_CHUNK: 64 .. 1G)"},
        {"bcast 4 0 1K cma chunk=1K\n", 7, "\"chunk=1K\" is out of range (NODECOLL_CMA_CHUNK: 4K .. 1T)"},
        {"bcast 4 0 1K cma chunk=lots\n", 7, "\"chunk=lots\" is out of range"},
        {"bcast 4 0 1K cma radix=2 chunk=64K chunk=64K\n", 7, "a rule is"},
        {"layout 4\n", 7, "a layout line is: layout ranks-per-node [segment=bytes] [segments=n]"},
        {"layout four segment=8K\n", 7, "\"four\" is no number of ranks per node"},
        {"layout 4 segment=1K\n", 7, "\"segment=1K\" is out of range (NODECOLL_SEGMENT_SIZE: 4K .. 64M)"},
        {"layout 4 segments=1\n", 7, "\"segments=1\" is out of range (NODECOLL_SEGMENTS: 2 .. 1024)"},
        {"layout 4 sgement=8K\n", 7, "\"sgement=8K\" is no parameter of a layout"},
        {"layout 4 segment=8K segment=16K\n", 7, "no parameter of a layout"},
        {"layout 4 segment=8K\nbcast 4 0 1 shm\nlayout 4 segments=4\n", 9,
         "a second layout line for 4 ranks per node (the first is line 7)"},
        {"levels 4\n", 7, "a levels line is"},
        {"levels 4 numa,gpu\n", 7, "\"numa,gpu\" is no list of topology levels"},
        {"levels 4 numa\nlevels 4 flat\n", 8, "a second levels line"},
        {"bcast 4 0 1K shm radix=2 a b c d\n", 7, "a rule is"},
        {"allreduce 4 0 1K tree radix=65\n", 7, "\"radix=65\" is out of range (NODECOLL_REDUCE_FANIN: 1 .. 64)"},
        {"reduce 4 0 1K tree radix=1024\n", 7, "(NODECOLL_REDUCE_FANIN: 1 .. 64)"},
        {"bcast 4 0 1K shm radix=1025\n", 7, "\"radix=1025\" is out of range (NODECOLL_BCAST_RADIX: 1 .. 1024)"},
        {"barrier 4 0 0 tree radix=2000\n", 7, "(NODECOLL_BARRIER_FANIN: 1 .. 1024)"},
        {"bcast 4 0 1K shm radix=4x\n", 7, "\"radix=4x\" is out of range"},
        {"barrier 4 0 1K flat\n", 7, "\"0 1K\" is no size range of a barrier rule: a Barrier moves no bytes"},
        {"barrier 4 8 8 tree\n", 7, "its range is 0 0"},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) bad(wrong[i].body, wrong[i].line, wrong[i].what);
    char many[4096] = "";
    for (int i = 0; i <= NC_TUNE_MAX_RULES; i++) strcat(many, "bcast 4 0 1 shm\n");
    bad(many, 7 + NC_TUNE_MAX_RULES, "more than");
    /* Files wrong from the head. */
    char nodes[4096] = "";
    for (int i = 0; i <= NC_TUNE_MAX_NODES; i++) sprintf(nodes + strlen(nodes), "levels %d flat\n", i + 1);
    bad(nodes, 7 + NC_TUNE_MAX_NODES, "more than 16 node sizes");
    bad_file("nodecoll-rules 1\nnodecoll 9.8.6\nmpi Some MPI 1.2\n", 2,
             "9.8.6, this is nodecoll 9.8.7: run nodecoll-tune");
    bad_file("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Other MPI 3\n", 3, "measured with Other MPI 3");
    bad_file("nodecoll-rules 3\n", 1, "format 3, this nodecoll reads formats 1 to 2");
    bad_file("nodecoll-rules 2.9\nnodecoll 9.8.7\nmpi Some MPI 1.2\n", 1, "format 2.9, this nodecoll reads");
    bad_file("nodecoll-rules 2abc\nnodecoll 9.8.7\nmpi Some MPI 1.2\n", 1, "format 2abc, this nodecoll reads");
    bad_file("nodecoll-rules -2\n", 1, "format -2,");
    bad_file("nodecoll-rules\n", 1, "format ?,");
    bad_file("nodecoll-rules 2 2\n", 1, "format 2 2,");
    bad_file("bcast 4 0 1 shm\n", 1, "not a rules file");
    bad_file("nodecoll-rules 1\nbcast 4 0 1 shm\n", 0, "incomplete");
    bad_file("", 0, "incomplete");
    char text[512];
    /* Files: missing, binary. */
    CHECK(nc_tune_load("/nonexistent/rules", "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == -1 &&
              strstr(err, "/nonexistent/rules") && strstr(err, "built-in defaults"),
          "missing file: %s", err);
    snprintf(text, sizeof text, "/tmp/nodecoll-test-rules-%d", (int)getpid());
    FILE *f = fopen(text, "wb");
    fwrite("nodecoll-rules 1\n\0\1\2", 1, 20, f);
    fclose(f);
    CHECK(nc_tune_load(text, "9.8.7", "Some MPI 1.2", &rules, err, sizeof err) == -1 && strstr(err, "not a text file"),
          "binary file: %s", err);
    remove(text);
    long_lines();
    not_regular();
    default_paths();
    merge_within_limits();
    merge_subset();
    if (failures) fprintf(stderr, "test_tune_rules: %d failures\n", failures);
    else printf("test_tune_rules: passed\n");
    return failures != 0;
}
