/* The liveness judgement of core/alive.c on real processes (no MPI): what must read as dead
 * (a killed child, zombie or reaped; a pid that names another process) and what must never
 * (a live child, one whose command name holds ") ", a main thread that called pthread_exit
 * while another thread runs, a process of another pid namespace or of unknown identity). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/alive.h"

static int failures;
#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                 \
            fputc('\n', stderr);                          \
            failures++;                                   \
        }                                                 \
    } while (0)

typedef enum { CHILD_SLEEPS, CHILD_ODD_NAME, CHILD_LEADER_EXITS } child_kind;

static void *sleeper(void *arg)
{
    sleep(30);
    return arg;
}

/* A child of the given kind that has told its identity through a pipe; it lives until killed
 * (at most 30 s). */
static nc_proc_id start_child(child_kind kind, pid_t *pid)
{
    int fds[2];
    nc_proc_id id = {0};
    if (pipe(fds)) exit(2);
    *pid = fork();
    if (*pid < 0) exit(2);
    if (*pid == 0) {
        if (kind == CHILD_ODD_NAME) prctl(PR_SET_NAME, "a) b ) Z 1 (c", 0, 0, 0);
        id = nc_proc_self();
        if (write(fds[1], &id, sizeof id) != (ssize_t)sizeof id) _exit(2);
        if (kind == CHILD_LEADER_EXITS) {
            pthread_t t;
            pthread_create(&t, NULL, sleeper, NULL);
            pthread_exit(NULL);
        }
        sleep(30);
        _exit(0);
    }
    close(fds[1]);
    if (read(fds[0], &id, sizeof id) != (ssize_t)sizeof id) exit(2);
    close(fds[0]);
    return id;
}

/* Polls until `p` shows state `state` in /proc (a kill or pthread_exit takes a moment). */
static int wait_for_state(pid_t pid, char state)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(path, "r");
        int got = f && fgets(line, sizeof line, f);
        if (f) fclose(f);
        const char *close = got ? strrchr(line, ')') : NULL;
        if (close && close[1] == ' ' && close[2] == state) return 1;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return 0;
}

static void reap(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void test_self(nc_proc_id *self)
{
    *self = nc_proc_self();
    CHECK(self->start && self->ns_ino, "no identity for this process (start %llu, ns %llu)",
          (unsigned long long)self->start, (unsigned long long)self->ns_ino);
    CHECK(nc_proc_look(self, NULL) == NC_PROC_ALIVE, "this process reads as not alive");
    CHECK(nc_proc_watchable(self, self), "this process cannot be watched from itself");
}

static void test_killed_child(const nc_proc_id *self)
{
    pid_t pid;
    nc_proc_id child = start_child(CHILD_SLEEPS, &pid);
    const char *why = NULL;
    CHECK(nc_proc_watchable(self, &child), "a live child cannot be watched");
    CHECK(nc_proc_look(&child, NULL) == NC_PROC_ALIVE, "a live child reads as not alive");
    kill(pid, SIGKILL);
    CHECK(wait_for_state(pid, 'Z'), "the killed child never became a zombie");
    CHECK(nc_proc_look(&child, &why) == NC_PROC_DEAD, "a killed child (zombie) reads as not dead");
    CHECK(why && strstr(why, "zombie"), "zombie reason: %s", why ? why : "(none)");
    waitpid(pid, NULL, 0);
    CHECK(nc_proc_look(&child, &why) == NC_PROC_DEAD, "a killed and reaped child reads as not dead");
    CHECK(why && strstr(why, "no longer exists"), "reaped reason: %s", why ? why : "(none)");
}

static void test_odd_name(const nc_proc_id *self)
{
    pid_t pid;
    nc_proc_id child = start_child(CHILD_ODD_NAME, &pid);
    /* (a parser misled by the name would take another field for the start time) */
    uint64_t ticks = (uint64_t)sysconf(_SC_CLK_TCK);
    CHECK(child.start >= self->start && child.start - self->start < 60 * ticks,
          "odd-named child: start %llu, mine %llu", (unsigned long long)child.start, (unsigned long long)self->start);
    CHECK(nc_proc_look(&child, NULL) == NC_PROC_ALIVE, "a child named \"a) b ) Z 1 (c\" reads as not alive");
    reap(pid);
}

static void test_leader_exited(void)
{
    pid_t pid;
    nc_proc_id child = start_child(CHILD_LEADER_EXITS, &pid);
    CHECK(wait_for_state(pid, 'Z'), "the child's main thread never exited");
    CHECK(nc_proc_look(&child, NULL) == NC_PROC_ALIVE, "a process whose main thread exited while another runs reads as dead");
    reap(pid);
}

/* What no live process may be judged by: another start time is another process; another pid
 * namespace, or an identity /proc could not give, is never watched. */
static void test_identities(const nc_proc_id *self)
{
    nc_proc_id reused = *self, foreign = *self, unknown = *self;
    const char *why = NULL;
    reused.start++;
    CHECK(nc_proc_look(&reused, &why) == NC_PROC_DEAD && why && strstr(why, "another process"),
          "a pid with another start time reads as the same process");
    foreign.ns_ino++;
    CHECK(!nc_proc_watchable(self, &foreign), "a process of another pid namespace is watched");
    unknown.start = 0;
    CHECK(!nc_proc_watchable(self, &unknown) && !nc_proc_watchable(&unknown, self), "an unknown identity is watched");
}

int main(void)
{
    nc_proc_id self;
    test_self(&self);
    test_killed_child(&self);
    test_odd_name(&self);
    test_leader_exited();
    test_identities(&self);
    if (failures) return 1;
    puts("test_alive: passed");
    return 0;
}
