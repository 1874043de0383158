/* nodecoll-info: what this build is, whether single-copy works here, and every setting.
 * `--markdown` prints docs/tuning.md (the test suite checks the committed copy is current). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nodecoll.h"
#include "core/cma.h"
#include "core/config.h"

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
    if (argc > 1) {
        fprintf(stderr, "usage: %s [--markdown]\n", argv[0]);
        return argc > 1 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    printf("nodecoll %s\n", nodecoll_version());
    printf("built for:    %s\n", nodecoll_mpi_library());
    printf("single-copy:  %s\n", single_copy_status());
    printf("counters:     ");
    for (int i = 0; i < nodecoll_stat_count(); i++) {
        nodecoll_stat s;
        nodecoll_stat_get(i, &s);
        if (!strcmp(s.collective, "barrier")) printf("%s%s", i ? ", " : "", s.algorithm);
    }
    printf(" (per collective)\n");
    print_settings();
    return 0;
}
