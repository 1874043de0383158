/* The tuning rules file without MPI (issue 19 part 3): a good file, and every way one can be
 * wrong (each named by its line, and no rules kept), the lookup, and the round trip of a rule
 * through its text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
                          "nodecoll-rules 1\n"
                          "nodecoll 9.8.7\n"
                          "mpi Some MPI 1.2\n"
                          "machine box, 128 cores, several words of free text: a b c d e f g h\n"
                          "date today\n";

static nc_tune_rules rules;
static char err[600];

static int parse(const char *body)
{
    char text[4096];
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

int main(void)
{
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
        {"bcast 4 0 1K shm radix=2 extra\n", 7, "a rule is"},
        {"bcast 4 0 1K shm radix=2 a b c d\n", 7, "a rule is"},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) bad(wrong[i].body, wrong[i].line, wrong[i].what);
    char many[4096] = "";
    for (int i = 0; i <= NC_TUNE_MAX_RULES; i++) strcat(many, "bcast 4 0 1 shm\n");
    bad(many, 7 + NC_TUNE_MAX_RULES, "more than");
    /* Files wrong from the head. */
    bad_file("nodecoll-rules 1\nnodecoll 9.8.6\nmpi Some MPI 1.2\n", 2,
             "9.8.6, this is nodecoll 9.8.7: run nodecoll-tune");
    bad_file("nodecoll-rules 1\nnodecoll 9.8.7\nmpi Other MPI 3\n", 3, "measured with Other MPI 3");
    bad_file("nodecoll-rules 2\n", 1, "format 2");
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
    if (failures) fprintf(stderr, "test_tune_rules: %d failures\n", failures);
    else printf("test_tune_rules: passed\n");
    return failures != 0;
}
