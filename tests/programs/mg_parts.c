/* Ground truth for `memsight merge`: a run whose exit snapshot holds live blocks, a leak
 * scan and a peak, each from a known call stack. Usage: mg_parts KEEP LEAK PEAK.
 * mg_keep keeps KEEP blocks of 1000 bytes reachable from a global; mg_leak allocates LEAK
 * blocks of 200 bytes (filled with 'L') and drops every pointer to them; mg_peak holds
 * PEAK blocks of 64 KiB at once, then frees them (the peak of live bytes). With a fourth
 * argument "shift", three other call stacks allocate (and free) first, so that the agent
 * numbers the same call stacks differently. Prints the truth as JSON on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINL __attribute__((noinline, noclone))
#define KEEP_SIZE 1000
#define LEAK_SIZE 200
#define PEAK_SIZE 65536

void **kept; /* global: the blocks stay reachable */

NOINL void mg_keep(size_t n)
{
    kept = malloc(n * sizeof *kept);
    for (size_t i = 0; i < n; i++) {
        kept[i] = malloc(KEEP_SIZE);
        memset(kept[i], 'K', KEEP_SIZE);
    }
}

NOINL void mg_leak(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *volatile p = malloc(LEAK_SIZE);
        memset(p, 'L', LEAK_SIZE);
        p = NULL;
    }
}

NOINL void mg_peak(size_t n)
{
    void **p = calloc(n, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(PEAK_SIZE);
        memset(p[i], 'P', PEAK_SIZE);
    }
    for (size_t i = 0; i < n; i++)
        free(p[i]);
    free(p);
}

void *volatile mg_sink; /* the compiler may not drop an allocation stored here */

NOINL void mg_shift(void)
{
    mg_sink = malloc(10);
    free(mg_sink);
    mg_sink = malloc(20);
    free(mg_sink);
    mg_sink = malloc(30);
    free(mg_sink);
}

/* Clears the stack below main's frame, where dead copies of leaked pointers may stay. */
NOINL void mg_wipe(void)
{
    volatile char pad[16384];
    memset((char *)pad, 0, sizeof pad);
}

int main(int argc, char **argv)
{
    if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "shift"))) {
        fprintf(stderr, "usage: mg_parts KEEP LEAK PEAK [shift]\n");
        return 2;
    }
    size_t keep = strtoull(argv[1], NULL, 10), leak = strtoull(argv[2], NULL, 10);
    size_t peak = strtoull(argv[3], NULL, 10);
    if (keep < 1 || keep > 100000 || leak > 100000 || peak > 1000) {
        fprintf(stderr, "mg_parts: KEEP 1..100000, LEAK 0..100000, PEAK 0..1000\n");
        return 2;
    }
    if (argc == 5)
        mg_shift();
    mg_keep(keep);
    mg_leak(leak);
    mg_peak(peak);
    mg_wipe();
    printf("{\"keep_blocks\": %zu, \"keep_size\": %d, \"leak_blocks\": %zu, \"leak_size\": %d, "
           "\"peak_blocks\": %zu, \"peak_size\": %d}\n",
           keep, KEEP_SIZE, leak, LEAK_SIZE, peak, PEAK_SIZE);
    return 0;
}
