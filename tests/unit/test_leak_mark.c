/* Unit tests of the leak-scan core (src/agent/leak/leak_mark.c) on synthetic memory images
 * whose answer is known: classes, counts, folding, cycles, unreadable memory, order
 * independence and a deep chain (no recursion). Never touches real process memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/leak/leak_mark.h"
#include "memsight/snapshot_format.h"

/* A fake address space: BASE..BASE+MEMSZ backed by mem[], with one unreadable hole. */
#define BASE 0x10000000ull
#define MEMSZ (4u << 20)
static uint8_t *mem;
static uint64_t hole_lo, hole_hi; /* unreadable [lo, hi) */

static const void *view(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail)
{
    (void)ctx;
    if (addr < BASE || addr >= BASE + MEMSZ) {
        *avail = len;
        return NULL;
    }
    if (addr >= hole_lo && addr < hole_hi) {
        *avail = hole_hi - addr < len ? hole_hi - addr : len;
        return NULL;
    }
    uint64_t lim = BASE + MEMSZ;
    if (addr < hole_lo && hole_lo < lim)
        lim = hole_lo;
    *avail = lim - addr < len ? lim - addr : len;
    return mem + (addr - BASE);
}

static void put(uint64_t addr, uint64_t value)
{
    memcpy(mem + (addr - BASE), &value, 8);
}

/* A small builder: blocks added in any order, sorted by ms_lk_sort. */
#define MAXB 200000
static ms_lk_block *blocks, *tmp;
static uint32_t *stk;
static size_t nb;
static ms_lk_scan scan;

static uint64_t blk(uint64_t off, uint64_t size, uint32_t tag)
{
    ms_lk_block *b = &blocks[nb++];
    memset(b, 0, sizeof *b);
    b->addr = BASE + off;
    b->size = size;
    b->stack_id = tag;
    return b->addr;
}

static void *idxmem;

/* Sorts, inits and builds the granule index (as the agent does). */
static void start(void)
{
    ms_lk_sort(blocks, nb, tmp);
    ms_lk_init(&scan, blocks, nb, stk, nb, view, NULL);
    size_t bytes = ms_lk_index_size(&scan);
    free(idxmem);
    idxmem = calloc(1, bytes);
    ms_lk_index_build(&scan, idxmem, bytes);
    assert_non_null(scan.idx);
}

static int cls_of(uint64_t addr)
{
    long i = ms_lk_find(&scan, addr);
    assert_true(i >= 0);
    return blocks[i].state;
}

static uint64_t root_of(uint64_t addr)
{
    long i = ms_lk_find(&scan, addr);
    assert_true(i >= 0);
    return blocks[ms_lk_fold_root(&scan, (size_t)i)].addr;
}

static void count(uint64_t nblk[4], uint64_t nbytes[4])
{
    memset(nblk, 0, 4 * sizeof *nblk);
    memset(nbytes, 0, 4 * sizeof *nbytes);
    for (size_t i = 0; i < nb; i++) {
        nblk[blocks[i].state]++;
        nbytes[blocks[i].state] += blocks[i].size;
    }
}

static int setup(void **state)
{
    (void)state;
    mem = calloc(1, MEMSZ);
    blocks = calloc(MAXB, sizeof *blocks);
    tmp = calloc(MAXB, sizeof *tmp);
    stk = calloc(MAXB, sizeof *stk);
    nb = 0;
    hole_lo = hole_hi = 0;
    return mem && blocks && tmp && stk ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(mem);
    free(blocks);
    free(tmp);
    free(stk);
    free(idxmem);
    idxmem = NULL;
    return 0;
}

/* Root area at offset 0 (4 KiB); blocks from 0x10000 on. */
#define ROOT (BASE + 0)

static void test_all_classes(void **state)
{
    (void)state;
    uint64_t a = blk(0x10000, 32, 1);  /* root -> a (start) */
    uint64_t b = blk(0x10100, 16, 2);  /* a -> b (start) */
    uint64_t c = blk(0x10200, 100, 3); /* nothing: definitely lost */
    uint64_t d = blk(0x10300, 64, 4);  /* root -> d+8 (interior): possibly lost */
    uint64_t e = blk(0x10400, 24, 5);  /* d -> e (start): possibly lost (via d) */
    uint64_t z = blk(0x10500, 0, 6);   /* root -> z, zero-sized: reachable */
    uint64_t f = blk(0x10600, 40, 7);  /* b -> f+16 interior from a reached block */
    put(ROOT + 0, a);
    put(ROOT + 8, 12345);          /* not a pointer */
    put(ROOT + 16, d + 8);
    put(ROOT + 24, z);
    put(ROOT + 33, c);             /* unaligned: ignored */
    put(a + 8, b);
    put(b + 0, f + 16);
    put(d + 16, e);
    put(c, a);                     /* a lost block pointing at a reached one changes nothing */
    start();
    ms_lk_root_range(&scan, ROOT, ROOT + 4096);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    assert_int_equal(cls_of(a), MS_LEAK_REACHABLE);
    assert_int_equal(cls_of(b), MS_LEAK_REACHABLE);
    assert_int_equal(cls_of(z), MS_LEAK_REACHABLE);
    assert_int_equal(cls_of(c), MS_LEAK_DEFINITE);
    assert_int_equal(cls_of(d), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(e), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(f), MS_LEAK_POSSIBLE);
    uint64_t n[4], by[4];
    count(n, by);
    assert_int_equal(n[MS_LEAK_REACHABLE], 3);
    assert_int_equal(by[MS_LEAK_REACHABLE], 48);
    assert_int_equal(n[MS_LEAK_DEFINITE], 1);
    assert_int_equal(by[MS_LEAK_DEFINITE], 100);
    assert_int_equal(n[MS_LEAK_POSSIBLE], 3);
    assert_int_equal(by[MS_LEAK_POSSIBLE], 128);
    assert_int_equal(n[MS_LEAK_INDIRECT], 0);
    assert_int_equal(scan.overflow, 0);
}

/* Possible upgraded to reachable when a start pointer arrives later. */
static void test_possible_then_start(void **state)
{
    (void)state;
    uint64_t a = blk(0x20000, 64, 1);
    uint64_t b = blk(0x20100, 64, 2);
    put(ROOT, a + 8);      /* interior first */
    put(ROOT + 8, b);      /* b -> a start */
    put(b, a);
    start();
    ms_lk_root_range(&scan, ROOT, ROOT + 64);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    assert_int_equal(cls_of(a), MS_LEAK_REACHABLE);
    assert_int_equal(cls_of(b), MS_LEAK_REACHABLE);
}

static void test_cycle_one_definite(void **state)
{
    (void)state;
    /* a lost cycle of 4: one definite (the leader), 3 indirect, all folded under it */
    uint64_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = blk(0x30000 + 0x100 * (uint64_t)i, 48, 9);
    for (int i = 0; i < 4; i++)
        put(x[i] + 8, x[(i + 1) % 4]);
    start();
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    uint64_t n[4], by[4];
    count(n, by);
    assert_int_equal(n[MS_LEAK_DEFINITE], 1);
    assert_int_equal(n[MS_LEAK_INDIRECT], 3);
    assert_int_equal(by[MS_LEAK_INDIRECT], 144);
    uint64_t r = root_of(x[0]);
    for (int i = 0; i < 4; i++)
        assert_int_equal(root_of(x[i]), r);
    assert_int_equal(cls_of(r), MS_LEAK_DEFINITE);
}

/* A tree whose root has the highest address: leaves are visited first as leaders and
 * must be absorbed, so one record holds the whole tree. */
static void test_tree_folds_under_root(void **state)
{
    (void)state;
    enum { N = 10 };
    uint64_t leaf[N];
    for (int i = 0; i < N; i++)
        leaf[i] = blk(0x40000 + 0x40 * (uint64_t)i, 32, 2);
    uint64_t mid = blk(0x41000, 8 * N, 3);
    uint64_t root = blk(0x42000, 16, 4);
    for (int i = 0; i < N; i++)
        put(mid + 8 * (uint64_t)i, leaf[i]);
    put(root, mid);
    put(leaf[3], leaf[4]); /* a cross edge inside the tree changes nothing */
    start();
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    uint64_t n[4], by[4];
    count(n, by);
    assert_int_equal(n[MS_LEAK_DEFINITE], 1);
    assert_int_equal(by[MS_LEAK_DEFINITE], 16);
    assert_int_equal(n[MS_LEAK_INDIRECT], N + 1);
    assert_int_equal(by[MS_LEAK_INDIRECT], 32 * N + 8 * N);
    for (int i = 0; i < N; i++)
        assert_int_equal(root_of(leaf[i]), root);
    assert_int_equal(root_of(mid), root);
    assert_int_equal(root_of(root), root);
}

/* Two lost roots sharing a child: two definite, the child counted once. */
static void test_shared_child(void **state)
{
    (void)state;
    uint64_t r1 = blk(0x50000, 16, 1), r2 = blk(0x50100, 16, 1), s = blk(0x50200, 16, 2);
    put(r1, s);
    put(r2, s);
    start();
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    uint64_t n[4], by[4];
    count(n, by);
    assert_int_equal(n[MS_LEAK_DEFINITE], 2);
    assert_int_equal(n[MS_LEAK_INDIRECT], 1);
    uint64_t rs = root_of(s);
    assert_true(rs == r1 || rs == r2);
}

/* A freed block is not in the table: its stale contents keep nothing alive, and an
 * unreadable root range is skipped and counted. */
static void test_unreadable_and_stale(void **state)
{
    (void)state;
    uint64_t live = blk(0x60000, 64, 1);
    put(BASE + 0x5ff00, live); /* "freed" memory: not a block, not a root */
    hole_lo = ROOT + 4096;
    hole_hi = ROOT + 8192;
    start();
    ms_lk_root_range(&scan, ROOT, ROOT + 4096 + 4096 + 64);
    ms_lk_root_range(&scan, BASE + MEMSZ, BASE + MEMSZ + 4096); /* outside the image */
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    assert_int_equal(cls_of(live), MS_LEAK_DEFINITE);
    assert_int_equal(scan.skipped_bytes, 4096 + 4096);
}

static void test_register_and_forced_start(void **state)
{
    (void)state;
    uint64_t a = blk(0x70000, 64, 1), b = blk(0x70100, 64, 1), c = blk(0x70200, 64, 1);
    start();
    ms_lk_root_value(&scan, a);        /* register holding a start pointer */
    ms_lk_root_value(&scan, b + 16);   /* register holding an interior pointer */
    ms_lk_root_start(&scan, c + 16);   /* known-interior reference (glibc DTV) */
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    assert_int_equal(cls_of(a), MS_LEAK_REACHABLE);
    assert_int_equal(cls_of(b), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(c), MS_LEAK_REACHABLE);
}

/* 100k blocks in a list: an explicit stack, no recursion; sort of shuffled input. */
static void test_long_chain_and_sort(void **state)
{
    (void)state;
    enum { N = 100000 };
    for (size_t i = 0; i < N; i++)
        blk(0x80000 + 8 * (uint64_t)i, 8, (uint32_t)i);
    /* shuffle */
    uint64_t seed = 88172645463325252ull;
    for (size_t i = N - 1; i > 0; i--) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        size_t j = seed % (i + 1);
        ms_lk_block t = blocks[i];
        blocks[i] = blocks[j];
        blocks[j] = t;
    }
    /* block k points to block k+1; root -> block 0 */
    for (size_t i = 0; i + 1 < N; i++)
        put(BASE + 0x80000 + 8 * i, BASE + 0x80000 + 8 * (i + 1));
    put(ROOT, BASE + 0x80000);
    start();
    for (size_t i = 1; i < N; i++)
        assert_true(blocks[i - 1].addr < blocks[i].addr);
    assert_int_equal(blocks[5].stack_id, 5); /* tags travel with their block */
    ms_lk_root_range(&scan, ROOT, ROOT + 8);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    uint64_t n[4], by[4];
    count(n, by);
    assert_int_equal(n[MS_LEAK_REACHABLE], N);
    assert_int_equal(scan.overflow, 0);

    /* the same list lost: one definite, N-1 indirect, all under the head */
    memset(mem, 0, 8);
    ms_lk_init(&scan, blocks, nb, stk, nb, view, NULL);
    ms_lk_root_range(&scan, ROOT, ROOT + 8);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    count(n, by);
    assert_int_equal(n[MS_LEAK_DEFINITE], 1);
    assert_int_equal(n[MS_LEAK_INDIRECT], N - 1);
    assert_int_equal(root_of(BASE + 0x80000 + 8 * (N - 1)), BASE + 0x80000);
}

/* glibc's pointer to the next chunk header (16-aligned, in the block's last 8 bytes)
 * is not a reference; other interior pointers are. */
static void test_chunk_header_pointer_ignored(void **state)
{
    (void)state;
    uint64_t a = blk(0xa0000, 200, 1); /* chunk of 208: next header at a + 192 */
    uint64_t b = blk(0xa1000, 200, 1);
    put(ROOT, a + 192);
    put(ROOT + 8, b + 184); /* 8-aligned only: a real interior pointer */
    start();
    ms_lk_root_range(&scan, ROOT, ROOT + 16);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
    assert_int_equal(cls_of(a), MS_LEAK_DEFINITE);
    assert_int_equal(cls_of(b), MS_LEAK_POSSIBLE);
}

static void test_find_edges(void **state)
{
    (void)state;
    uint64_t a = blk(0x90000, 16, 1), b = blk(0x90010, 16, 1);
    uint64_t big = blk(0x100000, 0x50000, 1); /* spans granules */
    uint64_t c = blk(0x150000 + 0x8000, 8, 1);
    start();
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(ms_lk_find(&scan, a), 0);
        assert_int_equal(ms_lk_find(&scan, a + 15), 0);
        assert_int_equal(ms_lk_find(&scan, b), 1);
        assert_int_equal(ms_lk_find(&scan, b + 16), -1); /* one past the end */
        assert_int_equal(ms_lk_find(&scan, a - 1), -1);
        assert_int_equal(ms_lk_find(&scan, 0), -1);
        assert_int_equal(ms_lk_find(&scan, big + 0x3ffff), 2);
        assert_int_equal(ms_lk_find(&scan, big + 0x50000), -1);
        assert_int_equal(ms_lk_find(&scan, c - 8), -1); /* same granule, before c */
        assert_int_equal(ms_lk_find(&scan, c + 7), 3);
        scan.idx = NULL; /* the same answers from the plain binary search */
    }
}

/* Random blocks: the index and the plain binary search agree on every address. */
static void test_index_matches_search(void **state)
{
    (void)state;
    uint64_t seed = 12345, off = 0x10000;
    for (int i = 0; i < 5000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t size = (seed >> 33) % 3000;
        off += 16 + ((seed >> 20) % 4096) * ((seed & 1) ? 1 : 40);
        blk(off, size, 1);
        off += size;
    }
    start();
    for (uint64_t a = BASE; a < BASE + off + 100; a += 61) {
        long x = ms_lk_find(&scan, a);
        ms_lk_gran *saved = scan.idx;
        scan.idx = NULL;
        long y = ms_lk_find(&scan, a);
        scan.idx = saved;
        if (x != y)
            fail_msg("address 0x%llx: index %ld, search %ld", (unsigned long long)a, x, y);
    }
}


/* ---------------------------------------------------------------------------
 * Interior-pointer heuristics: valgrind's four shapes, and LeakSanitizer's rule.
 * ------------------------------------------------------------------------- */
static uint64_t vt1 = 0x7f0000001000ull, vt2 = 0x7f0000002000ull; /* "vtables" */

static int fake_vtable(void *ctx, uint64_t addr)
{
    (void)ctx;
    return addr == vt1 || addr == vt2;
}

static int heur_of(uint64_t addr)
{
    long i = ms_lk_find(&scan, addr);
    assert_true(i >= 0);
    return blocks[i].heur;
}

/* One block of each shape, held only by an interior pointer of its shape from a root,
 * and near misses of each shape. */
typedef struct shapes {
    uint64_t str, len64, arr, mi, plain;           /* each matches its shape */
    uint64_t str_bad, len64_bad, arr_zero, mi_bad; /* near misses */
} shapes;

static void build_shapes(shapes *h)
{
    h->str = blk(0x40000, 24 + 10 + 1, 1); /* length 5, capacity 10, refcount, chars, NUL */
    put(h->str, 5);
    put(h->str + 8, 10);
    put(ROOT + 0, h->str + 24);
    h->len64 = blk(0x40100, 8 + 40, 2); /* sqlite3MemMalloc: the size of the rest first */
    put(h->len64, 40);
    put(ROOT + 8, h->len64 + 8);
    h->arr = blk(0x40200, 8 + 3 * 16, 3); /* new T[3], sizeof(T) 16: the count first */
    put(h->arr, 3);
    put(ROOT + 16, h->arr + 8);
    h->mi = blk(0x40300, 48, 4); /* a vtable pointer at 0 and at the second base (+16) */
    put(h->mi, vt1);
    put(h->mi + 16, vt2);
    put(ROOT + 24, h->mi + 16);
    h->plain = blk(0x40400, 64, 5); /* an interior pointer of no shape */
    put(ROOT + 32, h->plain + 40);
    h->str_bad = blk(0x40500, 24 + 10 + 1, 6); /* length above capacity */
    put(h->str_bad, 11);
    put(h->str_bad + 8, 10);
    put(ROOT + 40, h->str_bad + 24);
    h->len64_bad = blk(0x40600, 8 + 40, 7); /* a length that is not the rest: 7 */
    put(h->len64_bad, 7);
    put(ROOT + 48, h->len64_bad + 8);
    h->arr_zero = blk(0x40700, 8 + 48, 8); /* a count of 0 */
    put(ROOT + 56, h->arr_zero + 8);
    h->mi_bad = blk(0x40800, 48, 9); /* a vtable at the second base, none at the start */
    put(h->mi_bad, 0x1234);
    put(h->mi_bad + 16, vt2);
    put(ROOT + 64, h->mi_bad + 16);
    start();
}

/* Marks and classifies the blocks again from ROOT's 4 KiB, with these heuristics. */
static void scan_with(unsigned set, ms_lk_vtable_fn vt)
{
    ms_lk_init(&scan, blocks, nb, stk, nb, view, NULL);
    ms_lk_set_heuristics(&scan, set, vt, NULL);
    ms_lk_root_range(&scan, ROOT, ROOT + 4096);
    ms_lk_mark(&scan);
    ms_lk_classify(&scan);
}

static void test_heuristics_valgrind_default(void **state)
{
    (void)state;
    shapes h;
    build_shapes(&h);
    scan_with(MS_LEAK_H_VALGRIND, fake_vtable);
    assert_int_equal(cls_of(h.str), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.str), 1);
    assert_int_equal(cls_of(h.len64), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.len64), 2); /* length64 before newarray, as valgrind */
    assert_int_equal(cls_of(h.arr), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.arr), 3);
    assert_int_equal(cls_of(h.mi), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.mi), 4);
    assert_int_equal(cls_of(h.plain), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(h.str_bad), MS_LEAK_POSSIBLE);
    /* 40 % 7 != 0: neither length64 nor newarray */
    assert_int_equal(cls_of(h.len64_bad), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(h.arr_zero), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(h.mi_bad), MS_LEAK_POSSIBLE);
}

static void test_heuristics_none_and_one(void **state)
{
    (void)state;
    shapes h;
    build_shapes(&h);
    /* none: every interior pointer makes a block possibly lost, as before */
    scan_with(0, fake_vtable);
    for (size_t i = 0; i < nb; i++) {
        assert_int_equal(blocks[i].state, MS_LEAK_POSSIBLE);
        assert_int_equal(blocks[i].heur, 0);
    }
    /* newarray alone: the length64 block is a new[] too (40 % 40 == 0), the rest not */
    scan_with(MS_LEAK_H_NEWARRAY, fake_vtable);
    assert_int_equal(cls_of(h.arr), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.len64), 3);
    assert_int_equal(cls_of(h.str), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(h.mi), MS_LEAK_POSSIBLE);
    /* multipleinheritance without a vtable test never matches */
    scan_with(MS_LEAK_H_MULTIPLEINHERITANCE, NULL);
    assert_int_equal(cls_of(h.mi), MS_LEAK_POSSIBLE);
}

static void test_heuristic_interior_rule(void **state)
{
    (void)state;
    shapes h;
    build_shapes(&h);
    scan_with(MS_LEAK_H_VALGRIND | MS_LEAK_H_INTERIOR, fake_vtable);
    for (size_t i = 0; i < nb; i++)
        assert_int_equal(blocks[i].state, MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(h.len64), 2); /* a named shape first */
    assert_int_equal(heur_of(h.plain), 5);
    assert_int_equal(heur_of(h.mi_bad), 5);
}

/* A start pointer found after the heuristic clears it; a heuristic pointer from a
 * possibly reachable block or from a lost one does not make a block reachable. */
static void test_heuristic_paths(void **state)
{
    (void)state;
    uint64_t a = blk(0x50000, 8 + 40, 1); /* root -> a+8 (length64), later b -> a */
    put(a, 40);
    uint64_t b = blk(0x50100, 32, 2);
    uint64_t p = blk(0x50200, 64, 3);     /* root -> p+40: possibly reachable */
    uint64_t c = blk(0x50300, 8 + 24, 4); /* p -> c+8 (length64): possibly reachable */
    put(c, 24);
    uint64_t l = blk(0x50400, 32, 5);     /* lost, -> d+8 (length64): d indirectly lost */
    uint64_t d = blk(0x50500, 8 + 16, 6);
    put(d, 16);
    uint64_t e = blk(0x50600, 8 + 16, 7); /* root -> e+8 (length64) only: keeps its heur */
    put(e, 16);
    put(ROOT, a + 8);
    put(ROOT + 8, b);
    put(ROOT + 16, p + 40);
    put(ROOT + 24, e + 8);
    put(b, a);
    put(p + 8, c + 8);
    put(l, d + 8);
    start();
    scan_with(MS_LEAK_H_VALGRIND, fake_vtable);
    assert_int_equal(cls_of(a), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(a), 0);
    assert_int_equal(cls_of(e), MS_LEAK_REACHABLE);
    assert_int_equal(heur_of(e), 2);
    assert_int_equal(cls_of(p), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(c), MS_LEAK_POSSIBLE);
    assert_int_equal(cls_of(l), MS_LEAK_DEFINITE);
    assert_int_equal(cls_of(d), MS_LEAK_INDIRECT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_all_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_possible_then_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cycle_one_definite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tree_folds_under_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_child, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_register_and_forced_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_chain_and_sort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunk_header_pointer_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_index_matches_search, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heuristics_valgrind_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heuristics_none_and_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heuristic_interior_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heuristic_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
