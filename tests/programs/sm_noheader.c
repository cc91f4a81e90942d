/* Ground truth for recorded blocks without header (sample=, min_size=): every block the
 * program gets is glibc's chunk for the size asked, recorded or not; realloc, calloc,
 * memalign and malloc_usable_size behave as without the agent. Exits 1 with a line
 * saying what differed.
 *   sm_nh_small   20000 blocks of 24 bytes (some sampled): glibc's size word below each
 *                 says a 32-byte chunk (with a 16-byte header it would not be glibc's)
 *   sm_nh_big     64 blocks of 64 KiB (above any threshold: all recorded), then
 *   sm_nh_grow    reallocs each to 128 KiB (moved: 64 blocks, 8 MiB live there at exit)
 *   sm_nh_zero    calloc of 4096 blocks of 40 bytes: zeroed, 48-byte chunks
 *   sm_nh_align   memalign(64) blocks: aligned, usable size as asked
 * Half of the small blocks are freed; the rest stay live until exit. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINL __attribute__((noinline, noclone))
#define NSMALL 20000
#define NBIG 64

static void *small[NSMALL], *big[NBIG], *zero[4096], *aligned[256];

static int bad(const char *what, size_t i, size_t got, size_t want)
{
    printf("FAIL %s [%zu]: %zu, expected %zu\n", what, i, got, want);
    return 1;
}

/* glibc's chunk size (the size word just below a block, flag bits off) */
static size_t chunk_of(const void *p) { return ((const size_t *)p)[-1] & ~(size_t)7; }

/* each keeps its frame (no tail call): the site is the first frame of its blocks */
static void *volatile sink;
NOINL void *sm_nh_small(void) { void *p = malloc(24); sink = p; return p; }
NOINL void *sm_nh_big(void) { void *p = malloc(65536); sink = p; return p; }
NOINL void *sm_nh_grow(void *p) { void *q = realloc(p, 131072); sink = q; return q; }
NOINL void *sm_nh_zero(void) { void *p = calloc(1, 40); sink = p; return p; }
NOINL void *sm_nh_align(void) { void *p = memalign(64, 200); sink = p; return p; }

int main(void)
{
    int fails = 0;
    for (size_t i = 0; i < NSMALL; i++) {
        small[i] = sm_nh_small();
        memset(small[i], (int)(i & 0xff), 24);
        if (chunk_of(small[i]) != 32)
            fails += bad("chunk of a 24-byte block", i, chunk_of(small[i]), 32);
        if (malloc_usable_size(small[i]) != 24)
            fails += bad("usable size of a 24-byte block", i, malloc_usable_size(small[i]), 24);
    }
    for (size_t i = 0; i < NBIG; i++) {
        big[i] = sm_nh_big();
        memset(big[i], (int)i + 1, 65536);
    }
    for (size_t i = 0; i < NBIG; i++) {
        unsigned char *q = sm_nh_grow(big[i]);
        if (!q || q[0] != i + 1 || q[65535] != i + 1)
            fails += bad("realloc kept the data", i, q ? q[65535] : 0, i + 1);
        if (q && malloc_usable_size(q) < 131072)
            fails += bad("usable size after realloc", i, malloc_usable_size(q), 131072);
        big[i] = q;
    }
    for (size_t i = 0; i < 4096; i++) {
        unsigned char *z = zero[i] = sm_nh_zero();
        for (size_t k = 0; k < 40; k++)
            if (z[k])
                fails += bad("calloc zeroed", i, z[k], 0);
        if (chunk_of(z) != 48)
            fails += bad("chunk of a 40-byte calloc block", i, chunk_of(z), 48);
        memset(z, 0xee, 40); /* a later calloc of this chunk must zero it again */
        if (i % 2) {
            free(z);
            zero[i] = NULL;
        }
    }
    for (size_t i = 0; i < 256; i++) {
        aligned[i] = sm_nh_align();
        if ((uintptr_t)aligned[i] % 64)
            fails += bad("memalign(64) alignment", i, (uintptr_t)aligned[i] % 64, 0);
        if (malloc_usable_size(aligned[i]) < 200)
            fails += bad("usable size of memalign", i, malloc_usable_size(aligned[i]), 200);
    }
    for (size_t i = 0; i < NSMALL; i += 2) {
        unsigned char *s = small[i];
        if (s[0] != (i & 0xff) || s[23] != (i & 0xff))
            fails += bad("small block data", i, s[23], i & 0xff);
        free(small[i]);
        small[i] = NULL;
    }
    for (size_t i = 0; i < 256; i++)
        free(aligned[i]);
    /* shrink in place and grow again: the data stays, the block stays the program's */
    for (size_t i = 1; i < NSMALL; i += 64) {
        unsigned char *s = realloc(small[i], 8);
        s = realloc(s, 4000);
        if (!s || s[0] != (i & 0xff))
            fails += bad("small realloc kept the data", i, s ? s[0] : 0, i & 0xff);
        small[i] = s;
    }
    printf("%s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}
