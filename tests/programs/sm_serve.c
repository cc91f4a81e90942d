/* A long-running target for `memsight dump` and interval=: allocates and frees a little
 * every 10 ms from sm_serve_tick, keeps 4 MiB from sm_serve_hold, prints "ready <pid>"
 * once started, and exits after argv[1] ms (default 3000) or on SIGTERM.
 * With argv[2] = "idle" it stops allocating after start-up and only sleeps. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINL __attribute__((noinline, noclone))
static void *volatile sink;
static volatile sig_atomic_t stop;

NOINL void *sm_serve_hold(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_serve_tick(size_t n) { void *p = malloc(n); sink = p; return p; }

static void on_term(int sig) { (void)sig; stop = 1; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    long run_ms = argc > 1 ? atol(argv[1]) : 3000;
    int idle = argc > 2 && !strcmp(argv[2], "idle");
    signal(SIGTERM, on_term);
    for (int i = 0; i < 64; i++)
        memset(sm_serve_hold(65536), i, 65536);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    double end = now_ms() + run_ms;
    while (!stop && now_ms() < end) {
        if (!idle) {
            for (int i = 0; i < 100; i++)
                free(sm_serve_tick(32 + i * 8));
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}
