/* Thread lives with a known ground truth. `mix`: 5 joinable threads that return and are
 * never joined (th_leak_return), 1 that leaves through pthread_exit unjoined
 * (th_leak_exit), 1 cancelled and never joined (th_leak_cancel), 2 created detached by
 * attribute and 1 detached with pthread_detach (th_detached), 4 joined with pthread_join,
 * pthread_tryjoin_np, pthread_timedjoin_np and pthread_clockjoin_np (th_joined), 2 still
 * running at the snapshot (th_running); then memsight_dump(). Leaked: 7, alive: 2 + main.
 * Each group is created from its own spawn_* function (the creation stack).
 * `fork`: 2 leaked, then a thread forks; parent and child each write a snapshot.
 * `drip N`: one leaked thread (th_drip) every 100 ms until N have leaked, then waits for
 * stdin to close. Prints "snapshot PATH" / "leaked K" lines. Stack sizes: 256 KiB each. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK (256 * 1024)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int release_running, running;
static pid_t tids[64];
static int ntids;

static void note_tid(void)
{
    pthread_mutex_lock(&mu);
    tids[ntids++] = (pid_t)syscall(SYS_gettid);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

/* Waits until the kernel task of every noted thread is gone: whatever they do on the way
 * out (key destructors, the agent's bookkeeping) is done by then. */
static void wait_gone(void)
{
    for (int i = 0; i < ntids; i++) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/task/%d", (int)tids[i]);
        for (int k = 0; k < 60000 && access(p, F_OK) == 0; k++)
            usleep(1000);
    }
}

__attribute__((noinline)) static void *th_leak_return(void *a)
{
    note_tid();
    return a;
}

__attribute__((noinline)) static void *th_leak_exit(void *a)
{
    note_tid();
    pthread_exit(a);
}

__attribute__((noinline)) static void *th_leak_cancel(void *a)
{
    pthread_setname_np(pthread_self(), "th-cancelled");
    note_tid();
    for (;;)
        pause(); /* a cancellation point */
    return a;
}

__attribute__((noinline)) static void *th_detached(void *a)
{
    note_tid();
    return a;
}

__attribute__((noinline)) static void *th_joined(void *a)
{
    return a;
}

__attribute__((noinline)) static void *th_running(void *a)
{
    pthread_mutex_lock(&mu);
    running++;
    pthread_cond_broadcast(&cv);
    while (!release_running)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return a;
}

__attribute__((noinline)) static void *th_drip(void *a)
{
    note_tid();
    return a;
}

static pthread_t make(void *(*fn)(void *), int detached)
{
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, STACK);
    if (detached)
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &at, fn, NULL);
    pthread_attr_destroy(&at);
    if (rc) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        exit(1);
    }
    return t;
}

__attribute__((noinline)) static void spawn_drip(void)
{
    make(th_drip, 0);
    __asm__ volatile("" ::: "memory");
}

static void wait_noted(int n)
{
    pthread_mutex_lock(&mu);
    while (ntids < n)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Each group is created from a function of its own: the creation stacks tell them apart. */
static pthread_t cancelled; /* stored after the call: no tail call, spawn_* stays a frame */

__attribute__((noinline)) static void spawn_leakers(void)
{
    for (int i = 0; i < 5; i++)
        make(th_leak_return, 0);
    make(th_leak_exit, 0);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void spawn_canceller(void)
{
    cancelled = make(th_leak_cancel, 0);
}

__attribute__((noinline)) static int spawn_detached(void)
{
    make(th_detached, 1);
    make(th_detached, 1);
    pthread_t t = make(th_detached, 0);
    __asm__ volatile("" ::: "memory");
    return pthread_detach(t);
}

__attribute__((noinline)) static void spawn_joined(pthread_t *j)
{
    for (int i = 0; i < 4; i++)
        j[i] = make(th_joined, 0);
}

__attribute__((noinline)) static void spawn_running(pthread_t *r)
{
    r[0] = make(th_running, 0);
    r[1] = make(th_running, 0);
}

static int mix(void)
{
    spawn_leakers();
    if (spawn_detached()) {
        fprintf(stderr, "pthread_detach failed\n");
        return 1;
    }
    spawn_canceller();
    wait_noted(10);
    pthread_cancel(cancelled);

    pthread_t j[4];
    spawn_joined(j);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    int rc = pthread_join(j[0], NULL);
    while ((rc = pthread_tryjoin_np(j[1], NULL)) == EBUSY)
        usleep(1000);
    int rc2 = pthread_timedjoin_np(j[2], NULL, &ts);
    struct timespec mts;
    clock_gettime(CLOCK_MONOTONIC, &mts);
    mts.tv_sec += 60;
    int rc3 = pthread_clockjoin_np(j[3], NULL, CLOCK_MONOTONIC, &mts);
    if (rc || rc2 || rc3) {
        fprintf(stderr, "join failed: %d %d %d\n", rc, rc2, rc3);
        return 1;
    }
    pthread_t r[2];
    spawn_running(r);
    pthread_mutex_lock(&mu);
    while (running < 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    wait_gone();

    char path[4096];
    int (*dump)(char *, unsigned long) = (int (*)(char *, unsigned long))dlsym(RTLD_DEFAULT, "memsight_dump");
    int drc = dump ? dump(path, sizeof path) : -1;
    if (drc != 0) {
        fprintf(stderr, "memsight_dump: %d\n", drc);
        return 1;
    }
    printf("snapshot %s\n", path);
    fflush(stdout);
    pthread_mutex_lock(&mu);
    release_running = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(r[0], NULL);
    pthread_join(r[1], NULL);
    return 0;
}

static int dump_now(void)
{
    char path[4096];
    int (*dump)(char *, unsigned long) = (int (*)(char *, unsigned long))dlsym(RTLD_DEFAULT, "memsight_dump");
    if (!dump || dump(path, sizeof path) != 0)
        return 1;
    printf("snapshot %s\n", path);
    fflush(stdout);
    return 0;
}

/* Two leaked threads and one running, then fork from a thread: the child's snapshot
 * holds that thread alone; the parent's still has its leaks. */
static void *th_forker(void *a)
{
    (void)a;
    pid_t c = fork();
    if (c == 0)
        _exit(dump_now());
    int st = 0;
    waitpid(c, &st, 0);
    return (void *)(intptr_t)(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

static int forked(void)
{
    spawn_drip();
    spawn_drip();
    wait_noted(2);
    wait_gone();
    pthread_t f;
    void *r = NULL;
    if (pthread_create(&f, NULL, th_forker, NULL) || pthread_join(f, &r) || r)
        return 1;
    return dump_now();
}

static int drip(int n)
{
    for (int i = 0; i < n; i++) {
        spawn_drip();
        wait_noted(i + 1);
        wait_gone();
        printf("leaked %d\n", i + 1);
        fflush(stdout);
        usleep(100 * 1000);
    }
    char b[64];
    while (fread(b, 1, sizeof b, stdin) > 0)
        ;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "mix"))
        return mix();
    if (argc >= 2 && !strcmp(argv[1], "fork"))
        return forked();
    if (argc >= 3 && !strcmp(argv[1], "drip"))
        return drip(atoi(argv[2]));
    fprintf(stderr, "usage: th_leaks mix | drip N\n");
    return 2;
}
