/* The agent's stack-read bounds and frame-record walk (src/agent/unwind/unwind_fp.h) fed random
 * frames. The walk runs on a stack image whose [lo, hi) is exactly a mapping between
 * two PROT_NONE pages, so any read outside it faults; its results are compared with a
 * model that computes every bound in 128 bits (no wrap-around). The words are drawn to
 * hit the edges: addresses near lo and hi, misaligned ones, values that wrap when a
 * frame's size is added (0xfffffffffffffff0 + 16 = 0), small return addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/unwind/unwind_fp.h"

typedef unsigned __int128 u128;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* A word a walk may meet: mostly near the stack's bounds, near the top of the address
 * space, or anything. */
static uintptr_t edge_word(uintptr_t lo, uintptr_t hi)
{
    uintptr_t d = (uintptr_t)(rnd() % 40);
    switch (rnd() % 9) {
    case 0: return lo + d;
    case 1: return hi - d;
    case 2: return hi + d;
    case 3: return (uintptr_t)0 - d;            /* wraps when 8 or 16 is added */
    case 4: return lo + (uintptr_t)(rnd() % (hi - lo)); /* inside, any alignment */
    case 5: return (lo + (uintptr_t)(rnd() % (hi - lo))) & ~(uintptr_t)7;
    case 6: return d * 100;                      /* below 4096 and just above */
    case 7: return (uintptr_t)rnd();
    default: return (uintptr_t)0x6e6f697461 + d; /* text bytes read as an address */
    }
}

/* The walk as specified, with 128-bit bounds. */
static unsigned model_walk(uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t skip_lo,
                           uintptr_t skip_hi, uint64_t *pcs, unsigned max, int *truncated)
{
    unsigned n = 0;
    *truncated = 0;
    while ((u128)fp >= lo && (u128)fp + 16 <= (u128)hi && fp % 8 == 0) {
        uintptr_t next, ra;
        memcpy(&next, (const void *)fp, 8);
        memcpy(&ra, (const void *)(fp + 8), 8);
        ra = ms_arch_strip_pc(ra);
        if (ra < 4096)
            break;
        if (ra < skip_lo || ra >= skip_hi) {
            if (n == max) {
                *truncated = 1;
                break;
            }
            pcs[n++] = ra;
        }
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

static void test_span_edges(void **state)
{
    (void)state;
    uintptr_t lo = 0x7ffd00000000ull, hi = 0x7ffd00010000ull;
    assert_true(ms_span_in(lo, 16, lo, hi));
    assert_true(ms_span_in(hi - 16, 16, lo, hi));
    assert_false(ms_span_in(hi - 15, 16, lo, hi));
    assert_false(ms_span_in(hi, 16, lo, hi));
    assert_false(ms_span_in(lo - 1, 16, lo, hi));
    /* the unwind=fp crash in python3: fp + 16 wrapped to 0 and passed "fp + 16 > hi" */
    assert_false(ms_span_in((uintptr_t)0xfffffffffffffff0ull, 16, lo, hi));
    assert_false(ms_span_in((uintptr_t)0xfffffffffffffff8ull, 8, lo, hi));
    assert_false(ms_span_in((uintptr_t)0xfffffffffffffff8ull, 16, lo, (uintptr_t)-1));
    assert_true(ms_span_in(0, 0, 0, 0));
    for (int i = 0; i < 1000000; i++) {
        uintptr_t a = edge_word(lo, hi), n = (uintptr_t)(rnd() % 24);
        uintptr_t l = edge_word(lo, hi), h = edge_word(lo, hi);
        int want = (u128)a >= l && (u128)a + n <= (u128)h;
        assert_int_equal(ms_span_in(a, n, l, h), want);
    }
}

/* Random stack images; every walk from every kind of start. */
static void test_walk_random_frames(void **state)
{
    (void)state;
    long pg = sysconf(_SC_PAGESIZE);
    size_t pages = 4, len = (size_t)pg * (pages + 2);
    unsigned char *map = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(map != MAP_FAILED);
    unsigned char *img = map + pg;
    assert_int_equal(mprotect(img, (size_t)pg * pages, PROT_READ | PROT_WRITE), 0);
    uintptr_t mlo = (uintptr_t)img, mhi = mlo + (uintptr_t)pg * pages;
    uint64_t pcs[64], want[64];
    unsigned long walks = 0, frames = 0, deep = 0;
    for (int round = 0; round < 4000; round++) {
        /* [lo, hi): the whole mapping (any read outside it faults), or inside it */
        uintptr_t lo = mlo, hi = mhi;
        if (round & 1) {
            lo += (uintptr_t)(rnd() % 64);
            hi -= (uintptr_t)(rnd() % 64);
        }
        uintptr_t *w = (uintptr_t *)img;
        size_t nw = (mhi - mlo) / sizeof *w;
        for (size_t i = 0; i < nw; i++)
            w[i] = edge_word(lo, hi);
        /* some chains that are frames for a while, then any word */
        uintptr_t heads[8];
        for (int c = 0; c < 8; c++) {
            size_t at = (size_t)(rnd() % (nw / 2)) & ~(size_t)1;
            heads[c] = (uintptr_t)&w[at];
            for (int k = 0; k < 12 && at + 2 < nw; k++) {
                size_t nx = at + 2 + (size_t)(rnd() % 16) * 2;
                w[at] = nx < nw ? (uintptr_t)&w[nx] : edge_word(lo, hi);
                w[at + 1] = 0x400000 + (uintptr_t)(rnd() % 0x100000);
                at = nx;
            }
        }
        for (int s = 0; s < 64; s++) {
            uintptr_t fp = s % 4 ? edge_word(lo, hi) : heads[rnd() % 8];
            uintptr_t skip_lo = 0x400000 + (uintptr_t)(rnd() % 0x80000), skip_hi = skip_lo + 0x1000;
            if (s & 1)
                skip_lo = skip_hi = 0;
            unsigned max = (unsigned)(rnd() % 64);
            int t1, t2;
            unsigned n = ms_fp_walk(fp, lo, hi, skip_lo, skip_hi, pcs, max, &t1);
            unsigned m = model_walk(fp, lo, hi, skip_lo, skip_hi, want, max, &t2);
            assert_int_equal(n, m);
            assert_int_equal(t1, t2);
            assert_memory_equal(pcs, want, n * sizeof pcs[0]);
            walks++;
            frames += n;
            deep += n >= 4;
        }
    }
    /* the images must have made walks of some depth, not only ones that stop at once */
    assert_true(deep > walks / 50);
    print_message("%lu walks, %lu frames, %lu of 4 frames or more\n", walks, frames, deep);
    munmap(map, len);
}

/* A proper chain is followed to its end exactly; a frame pointer at the top of the
 * address space stops it instead of being read. */
static void test_walk_chain(void **state)
{
    (void)state;
    uintptr_t st[64] __attribute__((aligned(16)));
    memset(st, 0, sizeof st);
    for (int i = 0; i < 10; i++) {
        st[i * 4] = (uintptr_t)&st[(i + 1) * 4];
        st[i * 4 + 1] = 0x401000 + (uintptr_t)i;
    }
    st[40] = (uintptr_t)0xfffffffffffffff0ull; /* the next record: must not be read */
    st[41] = 0x402000;
    uint64_t pcs[32];
    int t;
    uintptr_t lo = (uintptr_t)st, hi = (uintptr_t)(st + 64);
    unsigned n = ms_fp_walk(lo, lo, hi, 0, 0, pcs, 32, &t);
    assert_int_equal(n, 11);
    assert_int_equal(t, 0);
    assert_int_equal(pcs[0], 0x401000);
    assert_int_equal(pcs[10], 0x402000);
    /* the agent's own frames passed over, the depth limit said */
    n = ms_fp_walk(lo, lo, hi, 0x401000, 0x401003, pcs, 5, &t);
    assert_int_equal(n, 5);
    assert_int_equal(t, 1);
    assert_int_equal(pcs[0], 0x401003);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_edges),
        cmocka_unit_test(test_walk_chain),
        cmocka_unit_test(test_walk_random_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
