/* nodecoll-info: what this build is, whether single-copy works here, the topology hwloc
 * reports and where this process sits on it, and every setting.  `--groups N` shows the
 * topology groups of a node of N ranks placed by NODECOLL_TOPO_PLACE (a dealt placement, or
 * all at this process's place).  `--markdown` prints docs/tuning.md (the test suite checks the
 * committed copy is current). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodecoll.h"
#include "core/cma.h"
#include "core/config.h"
#include "core/heap.h"
#include "core/hier.h"
#include "core/topo.h"
#include "core/tune.h"

static volatile uint64_t probe_word = 0x6e6f6465636f6c6cULL;

/* A child process reads the parent's memory the way one rank reads another's. */
static const char *single_copy_status(void)
{
    nc_cma_allow_readers();
    pid_t parent = getpid(), child = fork();
    if (child < 0) return "unknown (fork failed)";
    if (child == 0) {
        uint64_t got = 0;
        _exit(nc_cma_read(parent, (const void *)&probe_word, &got, sizeof got) == 0 && got == probe_word ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes (process_vm_readv)"
                                                          : "no (process_vm_readv not permitted)";
}

/* This process's heap mapped a second time, the way a peer maps it (its descriptor sent to
 * this process's own socket): a word written through one mapping must be read through the
 * other. */
static const char *heap_status(void)
{
    const nc_heap_arena *mine = nc_heap_mine(NC_HEAP_ALLOC_MEM);
    if (!mine) return "no (libnodecoll-heap.so not found, or its memfd could not be made here)";
    uint64_t link = nc_heap_link();
    if (!link || nc_heap_offer(link, mine)) return "no (a descriptor cannot travel over a UNIX socket here)";
    nc_heap_take_offers();
    nc_heap_view *view = nc_heap_view_get(mine->id);
    uint64_t *word = nc_heap_alloc(sizeof *word);
    char *mapped = view && word ? nc_heap_view_at(view, word, sizeof *word) : NULL;
    volatile uint64_t *seen = (volatile uint64_t *)(void *)mapped;
    if (word) *word = probe_word;
    int works = seen && *seen == probe_word;
    nc_heap_release(word);
    nc_heap_view_put(view);
    return works ? "yes (memfd shared over a UNIX socket; turn it on with NODECOLL_HEAP, README)"
                 : "no (a second mapping of the heap does not show its contents)";
}

static int setting_index(const char *env_name)
{
    for (int i = 0; i < nc_setting_count(); i++)
        if (!strcmp(nc_setting(i)->env_name, env_name)) return i;
    return -1;
}

/* This process's rules file, read as nodecoll would (NULL: none, or it cannot be used:
 * *why says so). */
static nc_tune_rules *read_rules(const char **path, char *why, size_t len)
{
    static char buf[512];
    *path = nc_tune_path(nodecoll_mpi_library(), buf, sizeof buf);
    nc_tune_rules *rules = *path ? malloc(sizeof *rules) : NULL;
    if (rules && !nc_tune_load(*path, nodecoll_version(), nodecoll_mpi_library(), rules, why, len)) return rules;
    free(rules);
    return NULL;
}

static void print_topology(const nc_config *cfg)
{
    const nc_topo_info *t = nc_topo_get();
    if (!t->loaded) {
        printf("topology:     unknown (hwloc could not read it): every node runs flat\n");
        return;
    }
    printf("topology:     %s:", t->source);
    for (int l = 0; l < NC_TOPO_LEVELS; l++)
        printf(" %s %d%s", nc_topo_level_names[l], t->domains[l], l + 1 < NC_TOPO_LEVELS ? "," : "\n");
    nc_topo_loc me = nc_topo_locate((int)cfg->topo_place, 0, 1);
    printf("this process: ");
    for (int l = 0; l < NC_TOPO_LEVELS; l++)
        printf("%s %d%s", nc_topo_level_names[l], me.id[l], l + 1 < NC_TOPO_LEVELS ? ", " : "\n");
    const nc_setting_info *setting = nc_setting(setting_index("NODECOLL_TOPO_LEVELS"));
    char levels[64], automatic[64];
    nc_setting_format(setting, cfg->topo_levels, levels, sizeof levels);
    nc_setting_format(setting, NC_TOPO_AUTO_LEVELS, automatic, sizeof automatic);
    printf("levels:       %s%s%s (NODECOLL_TOPO_LEVELS)\n", levels, cfg->topo_levels < 0 ? " = " : "",
           cfg->topo_levels < 0 ? automatic : "");
}

/* The levels and layout the rules file gives a node of `size` ranks, as a job would take them. */
static void adopt_rules_for(int size, nc_config *cfg)
{
    char why[600];
    const char *path;
    nc_tune_rules *rules = read_rules(&path, why, sizeof why);
    const nc_tune_node *n = rules ? nc_tune_node_find(rules, size) : NULL;
    if (n && n->levels_line && !NC_CONFIG_GIVEN(cfg, topo_levels))
        printf("rules:        %s line %d names the levels of %d ranks per node\n", path, n->levels_line, size);
    if (rules) nc_tune_adopt(rules, size, cfg);
    free(rules);
}

/* The groups of a node of `size` ranks at the places NODECOLL_TOPO_PLACE gives them. */
static void print_groups(const nc_config *cfg, int size)
{
    nc_topo_loc *locs = malloc(sizeof *locs * (size_t)size);
    if (!locs) return;
    for (int r = 0; r < size; r++) locs[r] = nc_topo_locate((int)cfg->topo_place, r, size);
    int mask = cfg->topo_levels < 0 ? NC_TOPO_AUTO_LEVELS : (int)cfg->topo_levels;
    nc_hier *h = nc_hier_build(locs, size, mask);
    if (!h) {
        printf("%d ranks: flat (no level splits them into groups with company)\n", size);
    } else {
        printf("%d ranks:", size);
        for (int l = 1; l <= h->depth; l++)
            printf(" %s %d groups%s", nc_topo_level_names[h->level[l - 1]], h->ngroups[l], l < h->depth ? "," : "\n");
        printf("  ");
        for (int i = 0; i < size; i++) { /* each group in brackets, nested */
            int r = h->order[i];
            for (int l = 1; l <= h->depth; l++)
                if (h->start[l][h->group_of[l][r]] == i) printf("[");
            printf("%d", r);
            for (int l = h->depth; l >= 1; l--)
                if (h->start[l][h->group_of[l][r] + 1] == i + 1) printf("]");
            printf(i + 1 < size ? " " : "\n");
        }
    }
    nc_hier_free(h);
    free(locs);
}

/* A node size's layout and levels lines, with what they set unless the environment does. */
static void print_node_rules(const nc_tune_node *n, const nc_config *cfg)
{
    char line[200];
    nc_tune_format_layout(n, line, sizeof line);
    int segment_given = NC_CONFIG_GIVEN(cfg, segment_size) || NC_CONFIG_GIVEN(cfg, segments);
    if (*line)
        printf("  line %-4d %s%s\n", n->layout_line, line,
               segment_given ? "  (NODECOLL_SEGMENT_SIZE or NODECOLL_SEGMENTS given wins)" : "");
    nc_tune_format_levels(n, line, sizeof line);
    if (*line)
        printf("  line %-4d %s%s\n", n->levels_line, line,
               NC_CONFIG_GIVEN(cfg, topo_levels) ? "  (NODECOLL_TOPO_LEVELS given wins)" : "");
}


/* The tuning rules a job started here would use, and where they come from. */
static void print_rules(const nc_config *cfg)
{
    char err[600] = "";
    const char *path;
    nc_tune_rules *rules = read_rules(&path, err, sizeof err);
    if (!path) {
        char where[512];
        const char *default_path = nc_tune_default_path(nodecoll_mpi_library(), where, sizeof where);
        printf("tuning rules: none (NODECOLL_TUNE_FILE %s; nothing at %s, the default location for %s)\n",
               getenv("NODECOLL_TUNE_FILE") ? "is empty" : "unset", default_path ? default_path : "(no HOME)",
               nodecoll_mpi_library());
        return;
    }
    if (!rules) {
        printf("tuning rules: none in force\n  %s\n", err);
    } else {
        printf("tuning rules: %d per call and %d node sizes' layout or levels from %s%s\n"
               "  (the rules before the built-in rows, layout and levels when a communicator is set up;\n"
               "  a NODECOLL_* setting given in the environment still wins)\n",
               rules->count, rules->nodes, path,
               getenv("NODECOLL_TUNE_FILE") ? " (NODECOLL_TUNE_FILE)" : " (default location)");
        for (int i = 0; i < rules->nodes; i++) print_node_rules(&rules->node[i], cfg);
        for (int i = 0; i < rules->count; i++) {
            char line[200];
            nc_tune_format_rule(&rules->rule[i], line, sizeof line);
            printf("  line %-4d %s\n", rules->rule[i].line, line);
        }
    }
    free(rules);
}

static void print_settings(void)
{
    nc_config current;
    nc_config_from_env(&current, stdout);
    printf("\n%-28s %-12s %-12s %s\n", "setting", "default", "current", "allowed");
    for (int i = 0; i < nc_setting_count(); i++) {
        const nc_setting_info *s = nc_setting(i);
        char def[32], cur[32], lo[32], hi[32];
        nc_setting_format(s, s->default_value, def, sizeof def);
        nc_setting_format(s, nc_config_value(&current, s), cur, sizeof cur);
        nc_setting_format(s, s->min, lo, sizeof lo);
        nc_setting_format(s, s->max, hi, sizeof hi);
        if (s->kind == NC_KIND_ENUM) printf("%-28s %-12s %-12s %s\n", s->env_name, def, cur, s->choices);
        else if (s->kind == NC_KIND_SET)
            printf("%-28s %-12s %-12s auto|flat|list of %s\n", s->env_name, def, cur, s->choices);
        else if (s->kind == NC_KIND_BOOL) printf("%-28s %-12s %-12s 0|1\n", s->env_name, def, cur);
        else printf("%-28s %-12s %-12s %s..%s\n", s->env_name, def, cur, lo, hi);
    }
}

static void print_markdown(void)
{
    printf("| setting | default | allowed | meaning |\n|---|---|---|---|\n");
    for (int i = 0; i < nc_setting_count(); i++) {
        const nc_setting_info *s = nc_setting(i);
        char def[32], lo[32], hi[32], allowed[96];
        nc_setting_format(s, s->default_value, def, sizeof def);
        nc_setting_format(s, s->min, lo, sizeof lo);
        nc_setting_format(s, s->max, hi, sizeof hi);
        if (s->kind == NC_KIND_ENUM) snprintf(allowed, sizeof allowed, "%s", s->choices);
        else if (s->kind == NC_KIND_SET) snprintf(allowed, sizeof allowed, "auto, flat, or a list of %s", s->choices);
        else if (s->kind == NC_KIND_BOOL) snprintf(allowed, sizeof allowed, "0, 1");
        else snprintf(allowed, sizeof allowed, "%s .. %s", lo, hi);
        for (char *p = allowed; *p; p++)
            if (*p == '|') *p = '/';
        printf("| `%s` | `%s` | %s | %s |\n", s->env_name, def, allowed, s->doc);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--markdown")) {
        print_markdown();
        return 0;
    }
    nc_config cfg;
    nc_config_from_env(&cfg, NULL);
    if (argc > 2 && !strcmp(argv[1], "--groups") && atoi(argv[2]) > 0) {
        adopt_rules_for(atoi(argv[2]), &cfg);
        print_topology(&cfg);
        print_groups(&cfg, atoi(argv[2]));
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: %s [--markdown | --groups RANKS]\n", argv[0]);
        return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    printf("nodecoll %s\n", nodecoll_version());
    printf("built for:    %s\n", nodecoll_mpi_library());
    printf("single-copy:  %s\n", single_copy_status());
    printf("shared heap:  %s\n", heap_status());
    printf("counters:     ");
    for (int i = 0; i < nodecoll_stat_count(); i++) {
        nodecoll_stat s;
        nodecoll_stat_get(i, &s);
        if (!strcmp(s.collective, "barrier")) printf("%s%s", i ? ", " : "", s.algorithm);
    }
    printf(" (per collective)\n");
    print_topology(&cfg);
    print_rules(&cfg);
    print_settings();
    return 0;
}
