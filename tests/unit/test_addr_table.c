/* Unit tests of the address table of recorded blocks (addr_table.c) on its own: every
 * kept block found again with its live index after any order of removals (keys that
 * share a first slot included), plain addresses never found, the filter's "maybe" for
 * every kept block, its locality within a window, a steady number of blocks kept
 * without new mappings, and threads sharing the shards (their locks waited for, shards
 * grown while others wait). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "agent/tables/addr_table.h"

/* What the table needs from the agent: its mappings (counted) and health counters. */
ms_health_t ms_health;
static unsigned long maps_made;

void *ms_sys_mmap(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    maps_made++;
    return p;
}

void ms_sys_munmap(void *p, size_t len)
{
    munmap(p, len);
}

static uint64_t rng = 1;
static uint64_t next(void) /* an LCG, its high bits folded down */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng ^ (rng >> 29);
}

static void *addr(uint64_t k) { return (void *)(uintptr_t)k; }

static void setup_once(void)
{
    static int done;
    if (!done) {
        assert_int_equal(ms_addr_init(), 0);
        done = 1;
    }
}

/* Keys 16 MiB apart share the low bits of their hash, so those of one shard share their
 * first slot: one long run of linear probing, emptied from its middle and its ends. */
/* A new key: no stale index may come back (a stale one means the key was kept). */
static int insert(const void *p, uint32_t idx)
{
    uint32_t stale = 12345;
    int rc = ms_addr_insert(p, idx, &stale);
    return rc == 0 && stale != 0 ? -1000 : rc;
}

/* A key inserted again (its block freed behind the table's back and handed out anew):
 * the index it had comes back once, the new one is kept, one key is counted. */
static void test_stale_key(void **state)
{
    (void)state;
    setup_once();
    uint64_t before = ms_addr_count();
    uint32_t stale = 99;
    assert_int_equal(ms_addr_insert(addr(0x77777770), 5, &stale), 0);
    assert_int_equal(stale, 0);
    assert_int_equal(ms_addr_insert(addr(0x77777770), 7, &stale), 0);
    assert_int_equal(stale, 5);
    assert_int_equal(ms_addr_count(), before + 1);
    assert_int_equal(ms_addr_remove(addr(0x77777770)), 7);
    assert_int_equal(ms_addr_remove(addr(0x77777770)), 0);
    assert_int_equal(ms_addr_count(), before);
}

static void test_colliding_keys(void **state)
{
    (void)state;
    setup_once();
    enum { N = 48 };
    uint64_t keys[N];
    int n = 0;
    uint64_t want_shard = 7;
    for (uint64_t j = 1; n < N; j++) {
        uint64_t k = 0x7f0000001230ull + j * (16ull << 20);
        if ((((k >> 4) * 0x9E3779B97F4A7C15ull) >> 58 & 63) == want_shard)
            keys[n++] = k;
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(insert(addr(keys[i]), 100 + i), 0);
    assert_int_equal(ms_addr_count(), N);
    int order[N], gone[N] = {0};
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int i = N - 1; i > 0; i--) { /* a shuffle */
        int j = (int)(next() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int r = 0; r < N; r++) {
        int x = order[r];
        assert_int_equal(ms_addr_remove(addr(keys[x])), 100 + x);
        gone[x] = 1;
        assert_int_equal(ms_addr_remove(addr(keys[x])), 0); /* once */
        for (int i = 0; i < N; i++) { /* the others still there: removed and put back */
            if (gone[i])
                continue;
            assert_true(ms_addr_maybe(addr(keys[i])));
            assert_int_equal(ms_addr_remove(addr(keys[i])), 100 + i);
            assert_int_equal(insert(addr(keys[i]), 100 + i), 0);
        }
    }
    assert_int_equal(ms_addr_count(), 0);
}

/* A program's steady state: blocks recorded and freed by the million, a few dozen live at
 * a time, against a model; the table keeps its mappings (no rebuild per so many frees). */
static void test_steady_churn(void **state)
{
    (void)state;
    setup_once();
    enum { LIVE = 64 };
    uint64_t live[LIVE] = {0};
    uint32_t idx[LIVE] = {0};
    /* warm up: every shard gets its slots */
    for (int i = 0; i < 100000; i++) {
        uint64_t k = (next() & 0x00007ffffffffff0ull) | 0x10;
        assert_int_equal(insert(addr(k), 1), 0);
        assert_int_equal(ms_addr_remove(addr(k)), 1);
    }
    unsigned long maps_before = maps_made;
    uint64_t bytes_before = ms_addr_bytes_reserved();
    for (uint32_t i = 0; i < 2000000; i++) {
        int s = (int)(next() % LIVE);
        if (live[s]) {
            assert_int_equal(ms_addr_remove(addr(live[s])), idx[s]);
            assert_int_equal(ms_addr_remove(addr(live[s] + 16)), 0); /* a plain neighbour */
            live[s] = 0;
        } else {
            live[s] = (next() & 0x00007ffffffffff0ull) | 0x10;
            idx[s] = i + 1;
            assert_int_equal(insert(addr(live[s]), idx[s]), 0);
            assert_true(ms_addr_maybe(addr(live[s])));
        }
    }
    uint64_t n = 0;
    for (int s = 0; s < LIVE; s++)
        if (live[s]) {
            n++;
            assert_int_equal(ms_addr_remove(addr(live[s])), idx[s]);
        }
    assert_true(n > 0);
    assert_int_equal(ms_addr_count(), 0);
    assert_int_equal(maps_made, maps_before);
    assert_int_equal(ms_addr_bytes_reserved(), bytes_before);
    /* all counters back to zero: no address is a "maybe" */
    for (int i = 0; i < 1000; i++)
        assert_false(ms_addr_maybe(addr((next() & 0x00007ffffffffff0ull) | 0x10)));
}

/* The filter's locality: within one 4 MiB window every 16-byte granule has a counter of
 * its own (a heap within one window never sends a plain free to the table), blocks a
 * granule apart are neighbours in the filter, and a block in another window lands
 * elsewhere than the same offset here. */
static void test_filter_window(void **state)
{
    (void)state;
    setup_once();
    const uint64_t win = 0x7f3a12c00000ull; /* a 4 MiB window's start */
    const uint64_t k = win + 0x234560ull;
    assert_int_equal(insert(addr(k), 9), 0);
    uint64_t same = 0;
    for (uint64_t g = win; g < win + (4ull << 20); g += 16)
        same += g != k && ms_addr_maybe(addr(g));
    assert_int_equal(same, 0);
    assert_int_equal(ms_addr_hash(addr(k + 16)), (ms_addr_hash(addr(k)) + 1) & ((1u << 18) - 1));
    assert_false(ms_addr_maybe(addr(k + (4ull << 20))));
    assert_false(ms_addr_maybe(addr(k + (1ull << 32))));
    assert_int_equal(ms_addr_remove(addr(k)), 9);
    assert_false(ms_addr_maybe(addr(k)));
}

/* Threads churn blocks of their own in shards they all share, each against its own
 * model, and also hold many at once (the shards grow while other threads wait for their
 * locks): every block is found again with its index, no thread sees another's, and the
 * table and the filter end empty. */
enum { CHURNERS = 4, CHURN_LIVE = 512 };

static void *churn_thread(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    uint64_t r = 0x9E3779B97F4A7C15ull * (t + 1), live[CHURN_LIVE] = {0};
    uint32_t idx[CHURN_LIVE] = {0};
    uintptr_t bad = 0;
    for (uint32_t i = 1; i <= 400000; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t x = r ^ (r >> 29);
        unsigned s = (unsigned)(x % CHURN_LIVE);
        if (live[s]) {
            bad += ms_addr_remove(addr(live[s])) != idx[s];
            live[s] = 0;
        } else {
            /* the thread's number in bits 4..5: no two threads share a key */
            live[s] = ((x << 6) & 0x00007fffffffffc0ull) | 0x100000000ull | (t << 4);
            idx[s] = i * CHURNERS + (uint32_t)t;
            bad += insert(addr(live[s]), idx[s]) != 0;
            bad += !ms_addr_maybe(addr(live[s]));
        }
    }
    for (unsigned s = 0; s < CHURN_LIVE; s++)
        if (live[s])
            bad += ms_addr_remove(addr(live[s])) != idx[s];
    return (void *)bad;
}

static void test_threads_share_shards(void **state)
{
    (void)state;
    setup_once();
    pthread_t th[CHURNERS];
    for (uintptr_t t = 0; t < CHURNERS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, churn_thread, (void *)t), 0);
    for (int t = 0; t < CHURNERS; t++) {
        void *bad = (void *)1;
        assert_int_equal(pthread_join(th[t], &bad), 0);
        assert_int_equal((uintptr_t)bad, 0);
    }
    assert_int_equal(ms_addr_count(), 0);
    for (int i = 0; i < 1000; i++)
        assert_false(ms_addr_maybe(addr((next() & 0x00007ffffffffff0ull) | 0x10)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_key),
        cmocka_unit_test(test_colliding_keys),
        cmocka_unit_test(test_steady_churn),
        cmocka_unit_test(test_filter_window),
        cmocka_unit_test(test_threads_share_shards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
