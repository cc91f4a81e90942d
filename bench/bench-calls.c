/* Workload of bench-calls.sh: ITERS times, free a random one of 128k slots and allocate
 * it again (malloc, calloc) from one of four call sites at the bottom of a call chain 4
 * to 11 frames deep: the agent's per-call work (walk-cache hit, header, live entry,
 * counters) with few stacks and a live set larger than the caches. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS (1u << 17)
static uint64_t rng = 88172645463325252ull;
static void *slots[SLOTS];

static inline uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

__attribute__((noinline)) static void *site(unsigned k, size_t n)
{
    switch (k & 3) {
    case 0: return malloc(n);
    case 1: return malloc(n + 8);
    case 2: return calloc(1, n);
    default: return malloc(n * 2);
    }
}

__attribute__((noinline)) static void *chain(unsigned d, unsigned k, size_t n)
{
    if (d == 0)
        return site(k, n);
    void *p = chain(d - 1, k, n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: one frame per level */
    return p;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 3000000;
    for (long i = 0; i < iters; i++) {
        uint64_t r = next();
        unsigned s = (unsigned)(r & (SLOTS - 1));
        free(slots[s]);
        slots[s] = chain(4 + ((r >> 20) & 7), (unsigned)(r >> 24), 16 + ((r >> 28) & 63));
    }
    unsigned long n = 0;
    for (unsigned s = 0; s < SLOTS; s++) {
        n += slots[s] != NULL;
        free(slots[s]);
    }
    printf("%lu\n", n);
    return 0;
}
