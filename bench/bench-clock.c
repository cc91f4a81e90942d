/* The blocks' timestamp read two ways, interleaved in one run: through the C library's
 * clock_gettime (its wrapper, then the vDSO) and by a direct call of the vDSO's own
 * function, as the agent makes it (vdso.c). Prints ns per read for each, best of ROUNDS,
 * and their ratio. The vDSO is found here through the dynamic loader, not the agent.
 * usage: bench-clock [READS] [ROUNDS] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ns per read; the pointer is volatile so that both are indirect calls */
static double per_read(clock_fn volatile *f, long n, unsigned long *sink)
{
    struct timespec ts;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        (*f)(CLOCK_MONOTONIC_COARSE, &ts);
        *sink += (unsigned long)ts.tv_nsec;
    }
    return (now() - t0) / (double)n * 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
    clock_fn v = h ? (clock_fn)dlsym(h, "__vdso_clock_gettime") : NULL;
    if (!v && h)
        v = (clock_fn)dlsym(h, "__kernel_clock_gettime");
    if (!v || n <= 0 || rounds <= 0) {
        fprintf(stderr, "bench-clock: %s\n", v ? "bad arguments" : "no vDSO clock_gettime here");
        return 1;
    }
    clock_fn volatile libc = clock_gettime, direct = v;
    unsigned long sink = 0;
    double bl = 1e9, bd = 1e9;
    for (int r = 0; r < rounds; r++) {
        double l = per_read(&libc, n, &sink), d = per_read(&direct, n, &sink);
        bl = l < bl ? l : bl;
        bd = d < bd ? d : bd;
    }
    printf("CLOCK_MONOTONIC_COARSE, %ld reads, best of %d rounds (interleaved)\n", n, rounds);
    printf("%-40s %8.2f ns\n", "C library's clock_gettime", bl);
    printf("%-40s %8.2f ns\n", "vDSO function called directly", bd);
    printf("%-40s %8.2fx (%.2f ns saved per block)\n", "ratio", bl / bd, bl - bd);
    return sink == 1; /* keeps the reads */
}
