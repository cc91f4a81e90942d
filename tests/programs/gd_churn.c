/* Guard pages: a correct program with tens of thousands of allocations of every kind
 * (malloc, calloc, realloc growing and shrinking, memalign, posix_memalign, aligned
 * blocks and small ones, some kept, some freed), its data checked and summed. It writes
 * every byte malloc_usable_size says a block has (as SQLite does) and expects realloc
 * to keep them all, up to the new size. Under
 * guard=1 with a small pool most blocks find the pool full and must simply come from
 * the normal allocator: the output must be the same as without the agent. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 512
#define ROUNDS 40000

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    unsigned char *keep[KEEP] = {0};
    size_t size[KEEP] = {0}; /* malloc_usable_size: what the program may use */
    size_t asked[KEEP] = {0}; /* summed: the usable sizes differ under the agent */
    uint64_t sum = 0, bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        unsigned k = (unsigned)(next() % KEEP);
        if (keep[k]) { /* check what it holds, then free or resize it */
            for (size_t i = 0; i < size[k]; i++)
                if (keep[k][i] != (unsigned char)(size[k] + i))
                    bad++;
            sum += asked[k];
            if (next() % 3 == 0) {
                size_t n = (size_t)(next() % 6000);
                n = n ? n : 1;
                unsigned char *q = realloc(keep[k], n);
                if (!q)
                    return 1;
                size_t keepn = n < size[k] ? n : size[k];
                for (size_t i = 0; i < keepn; i++)
                    if (q[i] != (unsigned char)(size[k] + i))
                        bad++;
                keep[k] = q;
                asked[k] = n;
                size[k] = malloc_usable_size(q);
                if (size[k] < n)
                    bad++;
                for (size_t i = 0; i < size[k]; i++)
                    q[i] = (unsigned char)(size[k] + i);
                continue;
            }
            free(keep[k]);
            keep[k] = NULL;
        }
        size_t n = (size_t)(next() % (next() % 4 ? 200 : 9000)) + 1;
        unsigned char *p;
        void *a = NULL;
        switch (next() % 5) {
        case 0:
            p = calloc(1, n);
            for (size_t i = 0; p && i < n; i++)
                if (p[i])
                    bad++;
            break;
        case 1: p = memalign((size_t)1 << (4 + next() % 6), n); break;
        case 2:
            if (posix_memalign(&a, 32, n) != 0)
                return 1;
            p = a;
            break;
        default: p = malloc(n); break;
        }
        if (!p)
            return 1;
        size_t u = malloc_usable_size(p);
        if (u < n)
            bad++;
        for (size_t i = 0; i < u; i++)
            p[i] = (unsigned char)(u + i);
        keep[k] = p;
        asked[k] = n;
        size[k] = u;
    }
    for (unsigned k = 0; k < KEEP; k++)
        free(keep[k]);
    printf("sum %llu bad %llu\n", (unsigned long long)sum, (unsigned long long)bad);
    return bad != 0;
}
