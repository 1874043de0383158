#include "alive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The fields of /proc/<pid>/stat a judgement needs. */
typedef struct proc_stat {
    uint64_t pid;     /* field 1, as this /proc's pid namespace numbers it */
    char state;       /* field 3: R, S, D, Z (zombie), X (dead), ... */
    long threads;     /* field 20 */
    uint64_t start;   /* field 22 */
} proc_stat;

/* Field `k` (k >= 3) of a stat line, counted from the text after the command name, which
 * is in parentheses and may itself hold spaces and parentheses. */
static const char *stat_field(const char *after_comm, int k)
{
    const char *at = after_comm;
    for (int field = 3; field < k && at; field++) {
        at = strchr(at, ' ');
        if (at) at++;
    }
    return at;
}

static int parse_stat(const char *line, proc_stat *out)
{
    const char *close = strrchr(line, ')');
    if (!close || close[1] != ' ') return -1;
    const char *rest = close + 2, *threads = stat_field(rest, 20), *start = stat_field(rest, 22);
    if (!threads || !start) return -1;
    out->pid = strtoull(line, NULL, 10);
    out->state = rest[0];
    out->threads = strtol(threads, NULL, 10);
    out->start = strtoull(start, NULL, 10);
    return 0;
}

/* 0, or the errno of opening or reading the file (ENOENT / ESRCH: no such process). */
static int read_stat(const char *path, proc_stat *out)
{
    char line[2048];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    ssize_t got = read(fd, line, sizeof line - 1);
    int err = got < 0 ? errno : 0;
    close(fd);
    if (got <= 0) return got < 0 ? err : EIO;
    line[got] = '\0';
    return parse_stat(line, out) ? EINVAL : 0;
}

nc_proc_id nc_proc_self(void)
{
    nc_proc_id me = {.pid = (uint64_t)getpid()};
    proc_stat st;
    struct stat ns;
    /* A /proc mounted from another pid namespace numbers this process differently (or not
     * at all): then nothing it shows can be trusted, and the identity stays unknown. */
    if (read_stat("/proc/self/stat", &st) || st.pid != me.pid || stat("/proc/self/ns/pid", &ns)) return me;
    me.start = st.start;
    me.ns_dev = (uint64_t)ns.st_dev;
    me.ns_ino = (uint64_t)ns.st_ino;
    return me;
}

nc_proc_state nc_proc_look(const nc_proc_id *p, const char **why)
{
    char path[64];
    proc_stat st;
    const char *because = NULL;
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)p->pid);
    int err = read_stat(path, &st);
    if (err == ENOENT || err == ESRCH) because = "its pid no longer exists";
    else if (err) return NC_PROC_UNKNOWN;
    else if (st.start != p->start) because = "its pid now names another process";
    /* A zombie thread-group leader whose other threads still run is alive: it shows Z with
     * more than one thread (a main thread that called pthread_exit). */
    else if ((st.state == 'Z' || st.state == 'X') && st.threads <= 1) because = "it is a zombie";
    else return NC_PROC_ALIVE;
    if (why) *why = because;
    return NC_PROC_DEAD;
}

int nc_proc_watchable(const nc_proc_id *self, const nc_proc_id *p)
{
    if (!self->start || !p->start || !self->ns_ino || !p->ns_ino) return 0;
    if (self->ns_ino != p->ns_ino || self->ns_dev != p->ns_dev) return 0;
    return nc_proc_look(p, NULL) == NC_PROC_ALIVE;
}
