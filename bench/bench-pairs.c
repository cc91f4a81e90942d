/* Workload of bench-overhead.sh's "pairs" part: the loop workload's malloc/free pairs
 * (4096 blocks of 16-64 bytes allocated, then freed, on the main thread), timed in
 * ROUNDS rounds of 64 batches; prints the fastest round's nanoseconds per pair. The
 * fastest of many short rounds is what one pair costs when nothing else took the CPU:
 * on a shared machine far steadier than the CPU time of a whole run, and free of what a
 * run costs once (start-up, exit). With AGENT_SO, the agent is dlopen'ed and started
 * with memsight_start(OPTIONS) first: its GOT-hook mode instead of a preload.
 * usage: bench-pairs [ROUNDS [AGENT_SO OPTIONS]] */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 4096
#define BATCHES 64

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    if (argc > 3) {
        void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        int (*start)(const char *) = NULL;
        if (h)
            *(void **)&start = dlsym(h, "memsight_start");
        if (!start || start(argv[3]) != 0) {
            fprintf(stderr, "bench-pairs: cannot start the agent %s\n", argv[2]);
            return 2;
        }
    }
    void **b = malloc(sizeof(void *) * BATCH);
    if (!b || rounds < 1)
        return 2;
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int i = 0; i < BATCHES; i++) {
            for (int k = 0; k < BATCH; k++)
                b[k] = malloc(16 + (size_t)(k & 3) * 16);
            for (int k = 0; k < BATCH; k++)
                free(b[k]);
        }
        double d = now() - t0;
        if (d < best)
            best = d;
    }
    free(b);
    printf("%.3f\n", best * 1e9 / ((double)BATCH * BATCHES));
    return 0;
}
