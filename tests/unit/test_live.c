/* Unit tests of the live table (live.c, live_hot.h) on its own, against a ground truth
 * kept beside it: entries stored across several chunks, some freed (only their in-use
 * byte cleared), their indices taken again for new blocks. The count, the iteration and
 * the look-up by index must show exactly the blocks live at each step: never a freed
 * one whose entry still holds its old address, never a reused entry's old contents. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "agent/tables/tables.h"
#include "agent/tables/live_hot.h"

/* What the table needs from the agent: its thread's index cache, mappings, health. */
__thread ms_tls ms_self __attribute__((tls_model("initial-exec")));
ms_health_t ms_health;

void *ms_sys_mmap(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void ms_sys_munmap(void *p, size_t len)
{
    munmap(p, len);
}

void *ms_sys_mremap(void *old, size_t old_len, size_t new_len)
{
    void *p = mremap(old, old_len, new_len, MREMAP_MAYMOVE);
    return p == MAP_FAILED ? NULL : p;
}

void ms_say(const char *const *parts, size_t nparts)
{
    (void)parts;
    (void)nparts;
}

/* More blocks than two chunks hold: the iteration crosses chunk boundaries. */
#define BLOCKS (2 * MS_LIVE_CHUNK_ENTRIES + 5000)

typedef struct truth {
    uint32_t *idx;     /* block b's entry index */
    uint64_t *addr;    /* block b's address, 0 once freed */
    uint8_t *seen;     /* per block: found by the iteration */
    uint32_t nblocks;
    uint64_t live;
} truth;

static uint64_t addr_of(uint32_t b, unsigned generation)
{
    return 0x100000000ull * (generation + 1) + (uint64_t)b * 48;
}

static void store(truth *t, uint32_t b, unsigned generation)
{
    uint32_t idx = ms_live_take_index();
    assert_int_not_equal(idx, 0);
    t->idx[b] = idx;
    t->addr[b] = addr_of(b, generation);
    ms_live_store(idx, t->addr[b], b + 1, 1000 + b, b % 1000 + 1, 7);
    t->live++;
}

static void forget(truth *t, uint32_t b)
{
    ms_live_clear(t->idx[b]);
    ms_live_put_index(t->idx[b]);
    t->addr[b] = 0;
    t->live--;
}

static int find_block(truth *t, uint64_t addr)
{
    uint64_t gen = addr / 0x100000000ull - 1, off = addr - 0x100000000ull * (gen + 1);
    if (off % 48)
        return -1;
    uint64_t b = off / 48;
    if (b >= t->nblocks || t->addr[b] != addr)
        return -1;
    return (int)b;
}

static int visit(const ms_live_entry *e, unsigned kind, void *arg)
{
    truth *t = arg;
    assert_int_equal(kind, MS_KIND_HEAP);
    int b = find_block(t, e->addr);
    assert_true(b >= 0); /* a freed block, or a reused entry's old address: wrong */
    assert_int_equal(e->size, (uint64_t)b + 1);
    assert_int_equal(e->ticks, 1000 + (uint64_t)b);
    assert_int_equal(e->stack_id, (uint32_t)b % 1000 + 1);
    assert_int_equal(e->tid, 7);
    assert_int_equal(t->seen[b], 0);
    t->seen[b] = 1;
    return 0;
}

/* Count, iteration and look-ups against the truth. */
static void check(truth *t)
{
    assert_int_equal(ms_live_count(), t->live);
    memset(t->seen, 0, t->nblocks);
    assert_int_equal(ms_live_foreach(visit, t, 0), 0);
    uint64_t seen = 0;
    for (uint32_t b = 0; b < t->nblocks; b++) {
        seen += t->seen[b];
        assert_int_equal(t->seen[b], t->addr[b] != 0);
    }
    assert_int_equal(seen, t->live);
    for (uint32_t b = 0; b < t->nblocks; b++) {
        ms_live_entry e;
        if (t->addr[b]) {
            assert_int_equal(ms_live_get(t->idx[b], &e), 1);
            assert_int_equal(e.addr, t->addr[b]);
        }
    }
}

static int stop_at_third(const ms_live_entry *e, unsigned kind, void *arg)
{
    (void)e;
    (void)kind;
    return ++*(int *)arg == 3 ? 42 : 0;
}

static void test_store_free_reuse(void **state)
{
    (void)state;
    assert_int_equal(ms_live_init(BLOCKS + 1000), 0);
    truth t = {.nblocks = BLOCKS};
    t.idx = calloc(BLOCKS, sizeof *t.idx);
    t.addr = calloc(BLOCKS, sizeof *t.addr);
    t.seen = calloc(BLOCKS, 1);
    assert_non_null(t.idx);
    assert_non_null(t.addr);
    assert_non_null(t.seen);

    ms_live_entry e;
    assert_int_equal(ms_live_get(0, &e), 0);          /* index 0 is never an entry */
    assert_int_equal(ms_live_get(UINT32_MAX, &e), 0); /* beyond the capacity */
    assert_int_equal(ms_live_count(), 0);
    uint64_t reserved0 = ms_live_bytes_reserved();

    for (uint32_t b = 0; b < BLOCKS; b++)
        store(&t, b, 0);
    check(&t);
    /* the entries and their in-use bytes of three chunks */
    assert_true(ms_live_bytes_reserved() >= reserved0 + (uint64_t)BLOCKS * 33);

    /* every third block freed: its entry keeps its old contents, its byte is cleared */
    uint32_t freed_idx = 0;
    for (uint32_t b = 0; b < BLOCKS; b += 3) {
        freed_idx = t.idx[b];
        forget(&t, b);
    }
    check(&t);
    assert_int_equal(ms_live_get(freed_idx, &e), 0);

    /* the freed indices taken again, for blocks at new addresses */
    for (uint32_t b = 0; b < BLOCKS; b += 3)
        if (b % 2 == 0)
            store(&t, b, 1);
    check(&t);

    /* everything freed, then a few blocks again */
    for (uint32_t b = 0; b < BLOCKS; b++)
        if (t.addr[b])
            forget(&t, b);
    check(&t);
    for (uint32_t b = 0; b < 10; b++)
        store(&t, b, 2);
    check(&t);

    /* a non-zero return stops the iteration and is returned */
    int calls = 0;
    assert_int_equal(ms_live_foreach(stop_at_third, &calls, 0), 42);
    assert_int_equal(calls, 3);

    free(t.idx);
    free(t.addr);
    free(t.seen);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_free_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
