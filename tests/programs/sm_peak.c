/* Ground truth for dump_at_peak and the thresholds: allocates 100 MiB (100 blocks of
 * 1 MiB, touched) from sm_peak_big, optionally holds them argv[1] ms, frees them all,
 * then keeps 1 MiB (64 blocks of 16 KiB) from sm_peak_keep live until exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINL __attribute__((noinline, noclone))
static void *volatile sink;

NOINL void *sm_peak_big(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_peak_keep(size_t n) { void *p = malloc(n); sink = p; return p; }

int main(int argc, char **argv)
{
    long hold_ms = argc > 1 ? atol(argv[1]) : 0;
    static void *big[100], *keep[64];
    for (int i = 0; i < 100; i++) {
        big[i] = sm_peak_big(1 << 20);
        if (!big[i])
            return 1;
        memset(big[i], i, 1 << 20);
    }
    if (hold_ms > 0) {
        struct timespec ts = {hold_ms / 1000, (hold_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < 100; i++)
        free(big[i]);
    for (int i = 0; i < 64; i++) {
        keep[i] = sm_peak_keep(16384);
        if (!keep[i])
            return 1;
        memset(keep[i], 1, 16384);
    }
    printf("{\"peak_big_bytes\": %d, \"keep_bytes\": %d}\n", 100 << 20, 64 * 16384);
    return 0;
}
