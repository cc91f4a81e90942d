/* A single-threaded target for requests without a control thread: keeps 64 blocks of
 * 64 KiB from sm_single_hold, loses one of 48 KiB from sm_single_lost (its only pointer
 * dropped), prints "ready <pid>" and then, until argv[2] ms have passed (default 5000) or
 * SIGTERM, does argv[1]:
 *   sleep   nanosleep in 50 ms steps, no allocation
 *   poll    poll on a pipe nothing is written to, 50 ms timeouts, no allocation
 *   read    a blocking read of a pipe a sibling process writes to only at the end
 *   alloc   malloc/free of small blocks without pause (never blocks)
 * Never creates a thread, unless SM_THREAD is set: then one that only sleeps, before the
 * agent starts. With SM_START_AGENT set the agent is not preloaded but dlopen'ed and
 * started by the program with memsight_start(SM_START_OPTIONS) (GOT hooks; NULL, i.e.
 * MEMSIGHT_OPTIONS, when unset) before the blocks above are allocated. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline, noclone))
static void *volatile sink;
static volatile sig_atomic_t stop;

NOINL void *sm_single_hold(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }
NOINL void sm_single_lost(size_t n) { sink = malloc(n); memset(sink, 2, n); sink = NULL; }
NOINL void *sm_single_tick(size_t n) { void *p = malloc(n); sink = p; return p; }

/* Overwrites the dead stack below the caller, where stale copies of pointers remain. */
NOINL static void clear_stack(void)
{
    volatile char buf[16384];
    memset((char *)buf, 0, sizeof buf);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

/* SIGTERM, or the run's time is over (SIGALRM) */
static void on_stop(int sig) { (void)sig; stop = 1; }

static void *sm_sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* SM_START_AGENT: the agent dlopen'ed and started by the program itself. */
static int sm_start_agent(void)
{
    const char *so = getenv("SM_START_AGENT");
    if (!so)
        return 0;
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    int (*start)(const char *) = h ? (int (*)(const char *))dlsym(h, "memsight_start") : NULL;
    if (!start || start(getenv("SM_START_OPTIONS")) != 0) {
        fprintf(stderr, "sm_single: memsight_start failed: %s\n", h ? "call" : dlerror());
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sleep";
    long run_ms = argc > 2 ? atol(argv[2]) : 5000;
    static void *held[64];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: a blocking read ends on them */
    sigaction(SIGALRM, &sa, NULL);
    int pfd[2];
    if (pipe(pfd) != 0)
        return 2;
    pid_t writer = 0;
    if (!strcmp(mode, "read")) {
        writer = fork(); /* a process, not a thread: wakes the reader at the end */
        if (writer == 0) {
            struct timespec ts = {run_ms / 1000, (run_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
            (void)!write(pfd[1], "x", 1);
            _exit(0);
        }
    }
    pthread_t sleeper;
    if (getenv("SM_THREAD") && pthread_create(&sleeper, NULL, sm_sleeper, NULL) != 0)
        return 2;
    if (sm_start_agent() != 0)
        return 2;
    for (int i = 0; i < 64; i++)
        held[i] = sm_single_hold(65536);
    sm_single_lost(49152);
    clear_stack();
    char line[64];
    int n = snprintf(line, sizeof line, "ready %d\n", (int)getpid());
    (void)!write(1, line, (size_t)n);
    struct itimerval it = {{0, 0}, {run_ms / 1000, (run_ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    while (!stop) {
        if (!strcmp(mode, "alloc")) {
            for (int i = 0; i < 1000; i++)
                free(sm_single_tick(16 + (size_t)(i & 63) * 8));
        } else if (!strcmp(mode, "poll")) {
            struct pollfd p = {pfd[0], POLLIN, 0};
            poll(&p, 1, 50);
        } else if (!strcmp(mode, "read")) {
            char c;
            if (read(pfd[0], &c, 1) == 1)
                break;
        } else {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    if (writer > 0) {
        kill(writer, SIGKILL);
        waitpid(writer, NULL, 0);
    }
    sink = held[0];
    return 0;
}
