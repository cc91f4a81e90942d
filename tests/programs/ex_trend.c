/* Ground truth for `memsight trend`: one call stack leaks steadily (16 KiB at every
 * step), one jumps once (1 MiB kept at step 3), one cache grows and shrinks, and short
 * bursts allocate and free within a step. Usage: ex_trend STEPS [snap | sleep MS]. With
 * "snap" and the agent loaded, a snapshot is written after every step (memsight_dump,
 * else memsight_leak_check); with "sleep MS" each step is followed by a pause, for the
 * agent's interval snapshots; without either, the exit snapshot is the only one, so a
 * series comes from runs of increasing STEPS. The steady leak must rank first. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STEADY_BYTES (16 * 1024)
#define JUMP_BYTES (1024 * 1024)
#define JUMP_STEP 3
#define CHURN_BLOCK 4096

void *steady[64]; /* global: the compiler may not drop stores nobody reads here */
void *jump;
static void *cache[128];
static int cached;
/* cache levels (in 4 KiB blocks) at each step: up and down, never steady */
static const int churn_levels[16] = {0, 50, 10, 60, 20, 40, 5, 30, 0, 50, 10, 60, 20, 40, 5, 30};

__attribute__((noinline)) void leak_steady(int step)
{
    steady[step] = malloc(STEADY_BYTES);
    memset(steady[step], 1, STEADY_BYTES);
}

__attribute__((noinline)) void jump_once(void)
{
    jump = malloc(JUMP_BYTES);
    memset(jump, 2, JUMP_BYTES);
}

__attribute__((noinline)) void churn_cache(int level)
{
    while (cached < level) {
        cache[cached] = malloc(CHURN_BLOCK);
        memset(cache[cached++], 3, CHURN_BLOCK);
    }
    while (cached > level)
        free(cache[--cached]);
}

__attribute__((noinline)) void burst(int step)
{
    void *p[100];
    for (int i = 0; i < 100; i++) {
        p[i] = malloc(256 + 64 * (size_t)((i + step) % 7));
        memset(p[i], 4, 256);
    }
    for (int i = 0; i < 100; i++)
        free(p[i]);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 8;
    int snap = argc > 2 && !strcmp(argv[2], "snap");
    long pause_ms = argc > 3 && !strcmp(argv[2], "sleep") ? atol(argv[3]) : 0;
    if (pause_ms < 0 || pause_ms > 10000) {
        fprintf(stderr, "ex_trend: sleep 0..10000 ms\n");
        return 2;
    }
    if (steps < 1 || steps > 16) {
        fprintf(stderr, "usage: ex_trend STEPS(1..16) [snap]\n");
        return 2;
    }
    typedef int (*dump_fn)(char *, unsigned long);
    dump_fn dump = (dump_fn)dlsym(RTLD_DEFAULT, "memsight_dump");
    if (!dump)
        dump = (dump_fn)dlsym(RTLD_DEFAULT, "memsight_leak_check");
    for (int s = 0; s < steps; s++) {
        leak_steady(s);
        if (s == JUMP_STEP)
            jump_once();
        churn_cache(churn_levels[s]);
        burst(s);
        if (pause_ms) {
            struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0)
                ;
        }
        if (snap && dump) {
            char path[4096];
            if (dump(path, sizeof path) != 0) {
                fprintf(stderr, "ex_trend: snapshot failed\n");
                return 1;
            }
        }
    }
    printf("steady %d jump %d churn %d\n", steps * STEADY_BYTES, steps > JUMP_STEP ? JUMP_BYTES : 0,
           churn_levels[steps - 1] * CHURN_BLOCK);
    return 0;
}
