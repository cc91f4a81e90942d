/* Ground truth for resuming calls an agent signal cut short (sig_resume.c). The request
 * signal is sent to the main thread itself (tgkill) once /proc shows it inside:
 *  1. epoll_wait, after a poll that a SIGSTOP/SIGCONT restarted without a handler: the
 *     thread's restart block is stale; replaying it would poll the old, still readable
 *     pipe through a dead frame and make epoll_wait (no descriptors registered) return
 *     at once. It must return EINTR, or 0 after its own timeout.
 *  2. an absolute clock_nanosleep (no restart block): it must end at its deadline, 0.
 *  3. poll with no descriptors, a relative sleep: it must return 0 after its time.
 * Prints one line per case and exits 0 when all hold. Run under the agent only (the
 * request signal would kill it otherwise). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t g_pid, g_main_tid;

/* the system call number /proc shows task tid inside, -1 when not in one */
static long in_syscall(pid_t pid, pid_t tid)
{
    char path[64], buf[64] = "";
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long nr = fgets(buf, sizeof buf, f) ? strtol(buf, NULL, 10) : -1;
    fclose(f);
    return nr;
}

static void wait_in(pid_t pid, pid_t tid, long nr1, long nr2)
{
    for (;;) {
        long nr = in_syscall(pid, tid);
        if (nr == nr1 || nr == nr2)
            return;
        usleep(1000);
    }
}

static char task_state(pid_t pid)
{
    char path[64], buf[512] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return '?';
    char *r = fgets(buf, sizeof buf, f);
    fclose(f);
    char *p = r ? strrchr(buf, ')') : NULL;
    return p && p[1] && p[2] ? p[2] : '?';
}

struct kick {
    long nr1, nr2;
};

static void *kicker(void *arg)
{
    struct kick *k = arg;
    wait_in(g_pid, g_main_tid, k->nr1, k->nr2);
    usleep(20000); /* deep inside the call */
    syscall(SYS_tgkill, g_pid, g_main_tid, SIGRTMIN + 13);
    return NULL;
}

static void kick_during(long nr1, long nr2, pthread_t *t, struct kick *k)
{
    k->nr1 = nr1;
    k->nr2 = nr2;
    pthread_create(t, NULL, kicker, k);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
}

/* a poll restarted by a stop without a handler, its frame gone when this returns */
static __attribute__((noinline)) int stale_poll(int rfd, int wfd)
{
    pid_t parent = g_pid;
    pid_t c = fork();
    if (c == 0) {
        wait_in(parent, parent, SYS_poll, SYS_poll);
        kill(parent, SIGSTOP);
        while (task_state(parent) != 'T')
            usleep(1000);
        kill(parent, SIGCONT);
        wait_in(parent, parent, SYS_restart_syscall, SYS_poll);
        usleep(20000);
        (void)!write(wfd, "x", 1);
        _exit(0);
    }
    struct pollfd pfd[4];
    memset(pfd, 0, sizeof pfd);
    pfd[0].fd = rfd;
    pfd[0].events = POLLIN;
    int n = poll(pfd, 1, 20000);
    waitpid(c, NULL, 0);
    return n;
}

int main(void)
{
    int ok = 1;
    g_pid = getpid();
    g_main_tid = (pid_t)syscall(SYS_gettid);
    void *volatile keep = malloc(100); /* the agent's control thread starts here */

    int p[2];
    if (pipe(p) != 0)
        return 2;
    int pn = stale_poll(p[0], p[1]); /* the pipe stays readable: no read */
    pthread_t t;
    struct kick k;
    kick_during(SYS_epoll_wait, SYS_epoll_pwait, &t, &k);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev[4];
    struct timespec t0, dl;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int n = epoll_wait(ep, ev, 4, 3000);
    int err = n < 0 ? errno : 0;
    long ms = ms_since(&t0);
    pthread_join(t, NULL);
    printf("stale: poll=%d epoll_wait=%d errno=%d ms=%ld\n", pn, n, err, ms);
    /* EINTR as after any handler, or its own timeout: not the replayed poll's answer */
    ok &= pn == 1 && ((n < 0 && err == EINTR) || (n == 0 && ms >= 3000));

    clock_gettime(CLOCK_MONOTONIC, &t0);
    dl = t0;
    dl.tv_sec += 1;
    kick_during(SYS_clock_nanosleep, SYS_clock_nanosleep, &t, &k);
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL);
    ms = ms_since(&t0);
    pthread_join(t, NULL);
    printf("absolute: rc=%d ms=%ld\n", rc, ms);
    ok &= rc == 0 && ms >= 1000;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    kick_during(SYS_poll, SYS_poll, &t, &k);
    n = poll(NULL, 0, 1000);
    err = n < 0 ? errno : 0;
    ms = ms_since(&t0);
    pthread_join(t, NULL);
    printf("poll: n=%d errno=%d ms=%ld\n", n, err, ms);
    ok &= n == 0 && ms >= 1000;

    free(keep);
    printf("%s\n", ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
