/* Unit tests of the accounting categories: the captured smaps of pa_layout, whose ground
 * truth (heap, arena, mmap, stacks, shared memory) it printed at capture time, and
 * hand-made layouts for each classification rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/accounting.h"
#include "core/snapshot.h"
#include "core/proc_read.h"
#include "core/proc_smaps.h"

static void read_data(ms_procbuf *b, const char *name)
{
    const char *src = getenv("MS_SOURCE_DIR");
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/tests/data/proc/%s", src ? src : ".", name);
    memset(b, 0, sizeof *b);
    if (ms_procbuf_read(b, path, 0, err, sizeof err) != 0)
        fail_msg("%s", err);
}

static uint64_t truth(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, " %s=", key);
    const char *p = strstr(text, k);
    if (!p)
        fail_msg("no %s in the truth line", key);
    return strtoull(p + strlen(k), NULL, 0);
}

static void test_layout_capture(void **state)
{
    (void)state;
    ms_smaps sm = {0};
    char err[256];
    read_data(&sm.buf, "layout.smaps");
    assert_int_equal(ms_smaps_parse(&sm, sm.buf.data, sm.buf.len, err, sizeof err), 0);
    ms_procbuf tb, sb;
    read_data(&tb, "layout.truth");
    read_data(&sb, "layout.syscall");
    /* Threads and their stack pointers as captured. */
    ms_thread_sp thr[16];
    size_t nthr = 0;
    for (char *line = strtok(sb.data, "\n"); line && nthr < 16; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        thr[nthr].tid = atoi(line);
        thr[nthr].sp = 0;
        ms_parse_syscall_sp(sp + 1, strlen(sp + 1), &thr[nthr].sp);
        nthr++;
    }
    ms_acct_hints h = {.exe = "/tmp/capture/pa_layout", .threads = thr, .nthreads = nthr};
    ms_acct a;
    assert_int_equal(ms_acct_build(&a, &sm, &h, err, sizeof err), 0);

    uint64_t heap_kb = (truth(tb.data, "heap_bytes") + truth(tb.data, "arena_bytes")) >> 10;
    uint64_t mmap_addr = truth(tb.data, "mmap_addr");
    uint64_t mmap_kb = truth(tb.data, "mmap_bytes") >> 10;
    uint64_t shm_kb = truth(tb.data, "shm_bytes") >> 10;
    uint64_t stack_kb = truth(tb.data, "stack_touch_kb");
    uint64_t nthreads = truth(tb.data, "threads");

    /* Native heap: [heap] plus the thread's arena hold what was malloc'ed, plus the
     * allocator's headers (16 of every 4016 bytes) and a little slack. */
    const ms_acct_counts *nh = &a.cat[MS_CAT_NATIVE_HEAP];
    assert_int_equal(nh->mappings, 2);
    assert_true(nh->rss_kb >= heap_kb);
    assert_true(nh->rss_kb <= heap_kb + heap_kb / 50 + 256);

    /* The anonymous mmap is one anon mapping of exactly its size, all resident. */
    int found_mmap = 0;
    for (size_t i = 0; i < sm.n; i++)
        if (sm.v[i].start == mmap_addr) {
            found_mmap = 1;
            assert_int_equal(a.vma_cat[i], MS_CAT_ANON);
            assert_int_equal(sm.v[i].kb[MS_SM_RSS], mmap_kb);
        }
    assert_true(found_mmap);

    /* Shared memory: memfd + /dev/shm file, all touched. */
    assert_int_equal(a.cat[MS_CAT_SHMEM].rss_kb, shm_kb);
    assert_int_equal(a.cat[MS_CAT_SHMEM].mappings, 2);

    /* Stacks: every thread's sp landed in a stack mapping of its own, each holding at
     * least the touched depth; the main [stack] too. Guards join their stack. */
    assert_int_equal(a.threads_matched, nthreads + 1);
    size_t stacks_with_tid = 0, guards = 0;
    for (size_t i = 0; i < sm.n; i++) {
        if (a.vma_cat[i] != MS_CAT_STACK)
            continue;
        if (a.vma_tid[i]) {
            stacks_with_tid++;
            if (strcmp(sm.v[i].name, "[stack]") != 0)
                assert_true(sm.v[i].kb[MS_SM_RSS] >= stack_kb);
        }
        if (!strcmp(sm.v[i].perms, "---p"))
            guards++;
    }
    assert_int_equal(stacks_with_tid, nthreads + 1);
    assert_int_equal(guards, nthreads);

    /* Code: the executable (all its mappings and its .bss) and the shared objects. */
    for (size_t i = 0; i < sm.n; i++) {
        if (!strcmp(sm.v[i].name, "/tmp/capture/pa_layout") || strstr(sm.v[i].name, ".so"))
            assert_int_equal(a.vma_cat[i], MS_CAT_CODE);
        if (strstr(sm.v[i].name, "pa layout")) {
            assert_int_equal(a.vma_cat[i], MS_CAT_FILE);
            assert_true(sm.v[i].flags & MS_VMA_DELETED);
        }
        if (sm.v[i].name[0] == '[' && strcmp(sm.v[i].name, "[heap]") && strcmp(sm.v[i].name, "[stack]"))
            assert_int_equal(a.vma_cat[i], MS_CAT_OTHER);
    }
    /* Categories partition the totals. */
    ms_acct_counts sum = {0};
    for (int c = 0; c < MS_CAT_COUNT; c++) {
        sum.rss_kb += a.cat[c].rss_kb;
        sum.pss_kb += a.cat[c].pss_kb;
        sum.mappings += a.cat[c].mappings;
        sum.private_dirty_kb += a.cat[c].private_dirty_kb;
    }
    assert_int_equal(sum.rss_kb, a.total.rss_kb);
    assert_int_equal(sum.pss_kb, a.total.pss_kb);
    assert_int_equal(sum.mappings, sm.n);
    assert_int_equal(a.total.rss_kb, ms_smaps_sum(&sm, MS_SM_RSS));
    ms_acct_free(&a);
    ms_procbuf_free(&tb);
    ms_procbuf_free(&sb);
    ms_smaps_free(&sm);
}

static void classify(const char *text, const ms_acct_hints *h, ms_smaps *sm, ms_acct *a)
{
    char err[128];
    size_t n = strlen(text);
    memset(sm, 0, sizeof *sm);
    sm->buf.data = malloc(n + 1);
    sm->buf.cap = n + 1;
    memcpy(sm->buf.data, text, n + 1);
    assert_int_equal(ms_smaps_parse(sm, sm->buf.data, n, err, sizeof err), 0);
    assert_int_equal(ms_acct_build(a, sm, h, err, sizeof err), 0);
}

static void test_rules(void **state)
{
    (void)state;
    const char *t =
        /* 0: a glibc arena: 64 MiB aligned rw head, ---p tail up to 64 MiB */
        "7f0004000000-7f0004100000 rw-p 00000000 00:00 0\nRss: 1024 kB\n"
        "7f0004100000-7f0008000000 ---p 00000000 00:00 0\n"
        /* 2: a thread stack found by its guard page (no sp given) */
        "7f0010000000-7f0010001000 ---p 00000000 00:00 0\n"
        "7f0010001000-7f0010801000 rw-p 00000000 00:00 0\nRss: 100 kB\n"
        /* 4: a small rw region above ---p is not a stack (below PTHREAD_STACK_MIN) */
        "7f0020000000-7f0020001000 ---p 00000000 00:00 0\n"
        "7f0020001000-7f0020002000 rw-p 00000000 00:00 0\nRss: 4 kB\n"
        /* 6: shared anonymous, SysV, a data file, a versioned .so, a named anon */
        "7f0030000000-7f0030100000 rw-s 00000000 00:01 1234 /dev/zero (deleted)\nRss: 8 kB\n"
        "7f0031000000-7f0031100000 rw-s 00000000 00:01 99 /SYSV00000000\nRss: 8 kB\n"
        "7f0032000000-7f0032100000 r--p 00000000 08:01 55 /var/lib/data.bin\nRss: 8 kB\n"
        "7f0033000000-7f0033100000 r--p 00000000 08:01 56 /usr/lib/libfoo.so.1.2\nRss: 8 kB\n"
        "7f0034000000-7f0034100000 rw-p 00000000 00:00 0 [anon:libc_malloc]\nRss: 8 kB\n"
        "7f0035000000-7f0035100000 rw-p 00000000 00:00 0 [anon:stack_and_tls:77]\nRss: 8 kB\n"
        "7f0036000000-7f0036100000 r--p 00000000 08:01 57 /usr/lib/not.sofa\nRss: 8 kB\n"
        /* 13: a plain anonymous mmap that is none of the above */
        "7f0040000000-7f0040100000 rw-p 00000000 00:00 0\nRss: 12 kB\n"
        "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\nRss: 16 kB\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
    ms_smaps sm;
    ms_acct a;
    classify(t, NULL, &sm, &a);
    static const int want[] = {MS_CAT_NATIVE_HEAP, MS_CAT_GUARD, MS_CAT_STACK, MS_CAT_STACK,
                               MS_CAT_GUARD, MS_CAT_ANON, MS_CAT_SHMEM, MS_CAT_SHMEM,
                               MS_CAT_FILE, MS_CAT_CODE, MS_CAT_NATIVE_HEAP, MS_CAT_STACK,
                               MS_CAT_FILE, MS_CAT_ANON, MS_CAT_STACK, MS_CAT_OTHER};
    assert_int_equal(sm.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sm.n; i++)
        if (a.vma_cat[i] != want[i])
            fail_msg("mapping %zu (%s %s): %s, want %s", i, sm.v[i].perms, sm.v[i].name,
                     ms_acct_cat_name(a.vma_cat[i]), ms_acct_cat_name(want[i]));
    assert_int_equal(a.vma_why[0], MS_WHY_ARENA);
    assert_int_equal(a.vma_why[3], MS_WHY_GUARD_BELOW);
    ms_acct_free(&a);

    /* With every thread's sp known, the guard guess is off: only sps make stacks, and
     * a heap hint claims an anonymous region for the native heap. */
    ms_thread_sp thr[] = {{.tid = 5, .sp = 0x7f0040080000ull}};
    ms_addr_range heap[] = {{0x7f0010100000ull, 0x7f0010100100ull}};
    ms_acct_hints h = {.threads = thr, .nthreads = 1, .heap = heap, .nheap = 1};
    char err[64];
    assert_int_equal(ms_acct_build(&a, &sm, &h, err, sizeof err), 0);
    assert_int_equal(a.vma_cat[3], MS_CAT_NATIVE_HEAP);
    assert_int_equal(a.vma_why[3], MS_WHY_HINT);
    assert_int_equal(a.vma_cat[2], MS_CAT_GUARD);
    assert_int_equal(a.vma_cat[13], MS_CAT_STACK);
    assert_int_equal(a.vma_tid[13], 5);
    assert_int_equal(a.threads_matched, 1);
    ms_acct_free(&a);
    ms_smaps_free(&sm);
}

static void test_output_formats(void **state)
{
    (void)state;
    ms_smaps sm;
    ms_acct a;
    classify("1000-3000 rw-p 00000000 00:00 0 /tmp/we\"ird\x01name\xff\nRss: 8 kB\nPss: 6 kB\n"
             "Private_Dirty: 4 kB\nShared_Clean: 4 kB\nSwap: 1 kB\nSwapPss: 1 kB\n",
             NULL, &sm, &a);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_acct_write_opts o = {.format = MS_FMT_JSON, .with_mappings = 1, .pid = 7};
    assert_int_equal(ms_acct_write(f, &sm, &a, &o), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"totals\":{\"mappings\":1,\"size_kb\":8,\"rss_kb\":8,\"pss_kb\":6,\"uss_kb\":4"));
    assert_non_null(strstr(buf, "\"swap_pss_kb\":1"));
    assert_non_null(strstr(buf, "\"name\":\"/tmp/we\\\"ird\\u0001name\\u00ff\""));
    assert_non_null(strstr(buf, "{\"name\":\"file\",\"mappings\":1"));
    free(buf);
    f = open_memstream(&buf, &len);
    o.format = MS_FMT_CSV;
    assert_int_equal(ms_acct_write(f, &sm, &a, &o), 0);
    fclose(f);
    assert_non_null(strstr(buf, "mapping,1000,3000,rw-p,file,8,8,6,4,4,0,0,4,1,1,\"/tmp/we\"\"ird?name"));
    assert_non_null(strstr(buf, "total,,,,total,8,8,6,4,"));
    free(buf);
    ms_acct_free(&a);
    ms_smaps_free(&sm);
}

/* The explain join on a hand-made snapshot and smaps with known answers: a heap of 100
 * blocks of 1000 bytes (1008-byte chunks), an mmap region covering half of a 400 kB
 * mapping, a thread stack range, and an anonymous mapping nobody made. */
static void test_explain(void **state)
{
    (void)state;
    const char *t =
        "1000000-1040000 rw-p 00000000 00:00 0 [heap]\nRss: 200 kB\n"          /* 256 kB */
        "7f0000000000-7f0000064000 rw-p 00000000 00:00 0\nRss: 400 kB\n"       /* 400 kB */
        "7f0001000000-7f0001001000 ---p 00000000 00:00 0\nRss: 0 kB\n"
        "7f0001001000-7f0001101000 rw-p 00000000 00:00 0\nRss: 64 kB\n"        /* stack */
        "7f0002000000-7f0002010000 rw-p 00000000 00:00 0\nRss: 32 kB\n"        /* nobody's */
        "7f0003000000-7f0003010000 r-xp 00000000 08:01 7 /lib/libz.so.1\nRss: 40 kB\n"
        "7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]\nRss: 12 kB\n";
    ms_smaps sm;
    ms_acct a;
    classify(t, NULL, &sm, &a);
    ms_acct_free(&a);

    ms_snap_block blocks[102];
    memset(blocks, 0, sizeof blocks);
    for (int i = 0; i < 100; i++) {
        blocks[i].address = 0x1000000 + (uint64_t)i * 1008;
        blocks[i].size = 1000;
        blocks[i].kind = MS_KIND_HEAP;
        blocks[i].stack_id = 1;
    }
    blocks[100] = (ms_snap_block){.address = 0x7f0000000000ull, .size = 200 * 1024,
                                  .stack_id = 2, .kind = MS_KIND_MMAP};
    blocks[101] = (ms_snap_block){.address = 0x7f0001001000ull, .size = 1 << 20,
                                  .stack_id = 3, .kind = MS_KIND_STACK};
    ms_thread thr = {.tid = 9, .stack_lo = 0x7f0001001000ull, .stack_hi = 0x7f0001101000ull};
    ms_stack stacks[3] = {{.id = 1, .kind = MS_KIND_HEAP}, {.id = 2, .kind = MS_KIND_MMAP},
                          {.id = 3, .kind = MS_KIND_STACK}};
    ms_snapshot s;
    memset(&s, 0, sizeof s);
    s.blocks = blocks;
    s.nblocks = 102;
    s.has_blocks = 1;
    s.threads = &thr;
    s.nthreads = 1;
    s.stacks = stacks;
    s.nstacks = 3;

    ms_explain ex;
    char err[128];
    assert_int_equal(ms_explain_build(&ex, &sm, &s, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(ex.rss_kb, 200 + 400 + 64 + 32 + 40 + 12);
    uint64_t sum = 0;
    for (int p = 0; p < MS_EX_COUNT; p++)
        sum += ex.part_kb[p];
    assert_int_equal(sum, ex.rss_kb);
    assert_int_equal(ex.heap_rss_kb, 200);
    assert_int_equal(ex.heap_tracked_bytes, 100000);
    assert_int_equal(ex.heap_chunk_bytes, 100 * 1008);
    assert_int_equal(ex.part_kb[MS_EX_HEAP_TRACKED], 100000 / 1024);     /* 97 */
    assert_int_equal(ex.part_kb[MS_EX_HEAP_OVERHEAD], 800 / 1024);       /* 0 */
    assert_int_equal(ex.part_kb[MS_EX_HEAP_FREE], 200 - 97);
    /* The region covers half of the 400 kB mapping: half its RSS; the rest is anon. */
    assert_int_equal(ex.part_kb[MS_EX_MMAP_TRACKED], 200);
    assert_int_equal(ex.nmmap_stacks, 1);
    assert_int_equal(ex.mmap_stacks[0].stack_id, 2);
    assert_int_equal(ex.mmap_stacks[0].rss_kb, 200);
    assert_int_equal(ex.mmap_stacks[0].bytes, 200 * 1024);
    assert_int_equal(ex.part_kb[MS_EX_STACKS], 64 + 12);
    assert_int_equal(ex.nthreads, 1);
    assert_int_equal(ex.threads[0].tid, 9);
    assert_int_equal(ex.threads[0].stack_kb, 64);
    assert_int_equal(ex.part_kb[MS_EX_CODE], 40);
    assert_int_equal(ex.part_kb[MS_EX_UNEXPLAINED], 200 + 32);
    assert_non_null(strstr(ex.heap_method, "chunk"));

    /* mallinfo2 in the health counters gives the free space: 40 kB of free chunks;
     * in-use bytes beyond the 100 chunks (49200) are blocks the agent never saw, and
     * the 15 kB of heap RSS counted neither in use nor free are unexplained too. */
    ms_health_item h[3] = {{"mallinfo2_uordblks", 150000}, {"mallinfo2_hblkhd", 0},
                           {"mallinfo2_fordblks", 40960}};
    s.health = h;
    s.nhealth = 3;
    ms_explain_free(&ex);
    assert_int_equal(ms_explain_build(&ex, &sm, &s, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(ex.heap_split, MS_SPLIT_MALLINFO);
    assert_int_equal(ex.part_kb[MS_EX_HEAP_OVERHEAD], 800 / 1024);
    assert_int_equal(ex.heap_untracked_bytes, 150000 - 100 * 1008);
    assert_int_equal(ex.part_kb[MS_EX_HEAP_FREE], 40);
    assert_int_equal(ex.heap_unaccounted_kb, 200 - 97 - 48 - 40);
    assert_int_equal(ex.part_kb[MS_EX_UNEXPLAINED], 200 + 32 + 48 + 15);
    assert_non_null(strstr(ex.heap_method, "mallinfo2"));
    sum = 0;
    for (int p = 0; p < MS_EX_COUNT; p++)
        sum += ex.part_kb[p];
    assert_int_equal(sum, ex.rss_kb);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(ms_explain_write(f, &ex, &s, NULL, MS_FMT_JSON, 5, "x.msnap"), 0);
    fclose(f);
    assert_non_null(strstr(buf, "{\"name\":\"mmap_tracked\",\"kb\":200}"));
    assert_non_null(strstr(buf, "\"rss_kb\":748"));
    free(buf);
    ms_explain_free(&ex);
    ms_smaps_free(&sm);
}

static void test_glibc_names_and_32bit(void **state)
{
    (void)state;
    const char *t =
        "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 [anon: glibc: malloc arena]\n"
        "7f0001000000-7f0001100000 rw-p 00000000 00:00 0 [anon: glibc: malloc]\n"
        "7f0002000000-7f0002800000 rw-p 00000000 00:00 0 [anon: glibc: pthread stack: 12]\n"
        "7f0003000000-7f0003001000 rw-p 00000000 00:00 0 [anon: glibc: fork handler]\n";
    ms_smaps sm;
    ms_acct a;
    classify(t, NULL, &sm, &a);
    static const int want[] = {MS_CAT_NATIVE_HEAP, MS_CAT_NATIVE_HEAP, MS_CAT_STACK, MS_CAT_ANON};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(a.vma_cat[i], want[i]);
    ms_acct_free(&a);
    ms_smaps_free(&sm);
    /* A 32-bit layout: a 1 MiB-aligned arena of 1 MiB (rw head + ---p tail). */
    t = "08048000-08049000 r-xp 00000000 08:01 3 /bin/prog32\n"
        "b7400000-b7421000 rw-p 00000000 00:00 0\n"
        "b7421000-b7500000 ---p 00000000 00:00 0\n"
        "bf000000-bf021000 rw-p 00000000 00:00 0 [stack]\n";
    classify(t, NULL, &sm, &a);
    assert_int_equal(a.vma_cat[1], MS_CAT_NATIVE_HEAP);
    assert_int_equal(a.vma_why[1], MS_WHY_ARENA);
    ms_acct_free(&a);
    ms_smaps_free(&sm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_capture),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_output_formats),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_glibc_names_and_32bit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
