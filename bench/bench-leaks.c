/* Program for bench-leaks.sh: holds about 1 GiB of live heap blocks in 1 million
 * allocations (sizes 512..1535 bytes, filled with non-pointer data), linked in lists
 * from a global table, with 1% of the lists cut loose (leaked). Then one mid-run leak
 * check through whichever tool is present (memsight_leak_check, LeakSanitizer's
 * __lsan_do_recoverable_leak_check, or VALGRIND_DO_LEAK_CHECK), timed from the outside
 * and by a ticker thread (waking every 0.5 ms) that records its longest stall: what
 * the program felt, including the scheduler's own delays on a busy machine. With no tool
 * present, the "check" is one bare fork of the program (a clone without exit signal, as
 * memsight's scan makes, whose child exits at once): the floor of a fork-based pause. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/valgrind.h>
#include <valgrind/memcheck.h>

int memsight_leak_check(char *path, unsigned long pathlen) __attribute__((weak));
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

enum { NLISTS = 10000 };
static void **heads[NLISTS];
static volatile int stop;
static volatile uint64_t max_gap_ns;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *ticker(void *arg)
{
    (void)arg;
    /* wakes every 0.5 ms (not spinning: it must not steal the scan's CPU) */
    uint64_t last = now_ns();
    while (!stop) {
        struct timespec ts = {0, 500000};
        nanosleep(&ts, NULL);
        uint64_t t = now_ns();
        if (t - last > max_gap_ns)
            max_gap_ns = t - last;
        last = t;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    uint64_t seed = 88172645463325252ull, bytes = 0;
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        size_t sz = 512 + seed % 1024;
        void **b = malloc(sz);
        if (!b)
            return 1;
        /* small integers, not pointers: the common content of real heaps */
        for (size_t w = 1; w < sz / 8; w++)
            b[w] = (void *)(uintptr_t)((seed + w) & 0xffff);
        long l = i % NLISTS;
        b[0] = heads[l];
        heads[l] = b;
        bytes += sz;
    }
    for (long l = 0; l < NLISTS; l += 100)
        heads[l] = NULL; /* leak 1% of the lists: ~10000 blocks */
    uint64_t t1 = now_ns();
    fprintf(stderr, "bench: %ld blocks, %.2f GiB live, built in %.2f s\n", n,
            bytes / 1073741824.0, (t1 - t0) / 1e9);
    pthread_t th;
    pthread_create(&th, NULL, ticker, NULL);
    usleep(200000);
    max_gap_ns = 0;
    const char *tool = "none";
    uint64_t c0 = now_ns(), c1 = 0;
    char path[1024] = "";
    if (memsight_leak_check) {
        tool = "memsight";
        int rc = memsight_leak_check(path, sizeof path);
        if (rc)
            fprintf(stderr, "memsight_leak_check: %d\n", rc);
    } else if (__lsan_do_recoverable_leak_check) {
        tool = "lsan";
        __lsan_do_recoverable_leak_check();
    } else if (RUNNING_ON_VALGRIND) {
        tool = "valgrind";
        VALGRIND_DO_LEAK_CHECK;
    } else {
        long pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
        if (pid == 0)
            syscall(SYS_exit_group, 0);
        if (pid > 0) {
            c1 = now_ns(); /* the fork alone, not the child's exit */
            tool = "fork";
            int st;
            while (syscall(SYS_wait4, pid, &st, __WCLONE, NULL) < 0 && errno == EINTR)
                ;
        }
    }
    if (!c1)
        c1 = now_ns();
    usleep(100000);
    stop = 1;
    pthread_join(th, NULL);
    printf("RESULT tool=%s check_s=%.3f max_stall_ms=%.1f snapshot=%s\n", tool, (c1 - c0) / 1e9,
           max_gap_ns / 1e6, path[0] ? path : "-");
    fflush(stdout);
    _exit(0); /* no exit-time check: only the mid-run one is measured */
}
