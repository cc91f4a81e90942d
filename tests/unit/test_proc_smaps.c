/* Unit tests of the maps/smaps/smaps_rollup parser: hand-made edge cases with known
 * answers, and texts captured from stopped processes whose per-mapping sums must agree
 * with the kernel's own smaps_rollup of the same moment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/proc_read.h"
#include "core/proc_smaps.h"

static char *data_path(const char *name)
{
    const char *src = getenv("MS_SOURCE_DIR");
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/tests/data/proc/%s", src ? src : ".", name);
    return buf;
}

static void load(ms_smaps *sm, const char *name)
{
    char err[256];
    memset(sm, 0, sizeof *sm);
    int rc = ms_procbuf_read(&sm->buf, data_path(name), 0, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    assert_int_equal(ms_smaps_parse(sm, sm->buf.data, sm->buf.len, err, sizeof err), 0);
}

static void test_edge_cases(void **state)
{
    (void)state;
    ms_smaps sm;
    load(&sm, "edge.smaps");
    assert_int_equal(sm.n, 5);
    /* A counter before any header, and a garbage line, are counted and skipped. */
    assert_int_equal(sm.bad_lines, 2);

    const ms_vma *v = &sm.v[0];
    assert_true(v->start == 0x400000 && v->end == 0x452000);
    assert_string_equal(v->perms, "r-xp");
    assert_int_equal(v->dev_major, 8);
    assert_int_equal(v->dev_minor, 2);
    assert_int_equal(v->inode, 173521);
    assert_string_equal(v->name, "/usr/bin/my prog (v2)");
    assert_int_equal(v->flags & MS_VMA_DELETED, 0);
    assert_int_equal(v->kb[MS_SM_SIZE], 328);
    assert_int_equal(v->kb[MS_SM_RSS], 300);
    assert_int_equal(v->kb[MS_SM_PSS], 150);
    assert_int_equal(v->kb[MS_SM_PRIVATE_DIRTY], 10);
    /* Fields the text lacks are absent, not zero-by-accident. */
    assert_false(v->present & (1u << MS_SM_SWAP));
    assert_true(v->present & (1u << MS_SM_RSS));
    assert_string_equal(v->vmflags, "rd ex mr mw me dw");

    v = &sm.v[1];
    assert_string_equal(v->name, "/tmp/a b  c.so");
    assert_true(v->flags & MS_VMA_DELETED);
    assert_true(v->offset == 0x52000);
    assert_true(v->kb[MS_SM_RSS] == UINT64_MAX); /* 2^64-1 exactly */
    assert_true(v->kb[MS_SM_SWAP] == UINT64_MAX); /* saturated */

    v = &sm.v[2];
    assert_string_equal(v->name, ""); /* anonymous, trailing blank */
    assert_int_equal(v->kb[MS_SM_SIZE], 132);
    assert_false(v->present & (1u << MS_SM_RSS));

    v = &sm.v[3];
    assert_string_equal(v->perms, "---p");
    assert_int_equal(v->kb[MS_SM_SIZE], 4); /* tab separator */
    assert_int_equal(v->kb[MS_SM_RSS], 8);  /* CRLF line */
    assert_int_equal(v->kb[MS_SM_SWAP_PSS], 3);

    v = &sm.v[4];
    assert_string_equal(v->name, "[vsyscall]");
    assert_true(v->start == 0xffffffffff600000ull);
    assert_int_equal(v->kb[MS_SM_RSS], 0); /* last line without newline */
    assert_true(v->present & (1u << MS_SM_RSS));

    /* Sums saturate rather than wrap. */
    assert_true(ms_smaps_sum(&sm, MS_SM_RSS) == UINT64_MAX);
    ms_smaps_free(&sm);
}

static void parse_str(ms_smaps *sm, const char *text)
{
    char err[128];
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    memcpy(buf, text, n + 1);
    memset(sm, 0, sizeof *sm);
    sm->buf.data = buf; /* freed by ms_smaps_free */
    sm->buf.cap = n + 1;
    assert_int_equal(ms_smaps_parse(sm, buf, n, err, sizeof err), 0);
}

static void test_malformed_headers(void **state)
{
    (void)state;
    ms_smaps sm;
    /* Not headers: missing dash, bad perms, hex too long (saturates but parses), no
     * inode; each is skipped with its fields, without crashing. */
    parse_str(&sm, "1000-2000 rwxq 0 0:0 0 x\nRss: 4 kB\n"
                   "10002000 r--p 0 0:0 0\n"
                   "1000-2000 r--p 0 00:00\n"
                   "ffffffffffffffffffff-1 r--p 0 0:0 0 big\nRss: 1 kB\n"
                   "2000-1000 r--p 0 0:0 0 backwards\n"
                   "-\n:\n\n\n");
    assert_int_equal(sm.n, 2);
    assert_string_equal(sm.v[0].name, "big");
    assert_true(sm.v[0].start == UINT64_MAX && sm.v[0].end == UINT64_MAX);
    assert_int_equal(sm.v[0].kb[MS_SM_RSS], 1);
    assert_true(sm.v[1].end >= sm.v[1].start); /* never a negative size */
    ms_smaps_free(&sm);

    parse_str(&sm, "");
    assert_int_equal(sm.n, 0);
    ms_smaps_free(&sm);
}

/* Sums of the captured smaps against the captured smaps_rollup of the same stopped
 * process. The kernel sums PSS in fixed point before truncating for the rollup, while
 * each smaps entry is truncated on its own: the per-mapping sum may fall short by less
 * than 1 kB per mapping, never exceed. Everything else agrees to the kB. */
static void check_capture(const char *smaps_name, const char *rollup_name)
{
    ms_smaps sm, ro;
    load(&sm, smaps_name);
    load(&ro, rollup_name);
    assert_true(sm.n > 20);
    assert_int_equal(sm.bad_lines, 0);
    assert_int_equal(ro.n, 1);
    assert_string_equal(ro.v[0].name, "[rollup]");
    static const int exact[] = {MS_SM_RSS, MS_SM_SHARED_CLEAN, MS_SM_SHARED_DIRTY,
                                MS_SM_PRIVATE_CLEAN, MS_SM_PRIVATE_DIRTY, MS_SM_REFERENCED,
                                MS_SM_ANONYMOUS, MS_SM_SWAP, MS_SM_LOCKED, MS_SM_LAZYFREE};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        int f = exact[i];
        assert_true(ro.v[0].present & (1u << f));
        if (ms_smaps_sum(&sm, f) != ro.v[0].kb[f])
            fail_msg("%s: %s sums to %llu, rollup says %llu", smaps_name, ms_smaps_field_name(f),
                     (unsigned long long)ms_smaps_sum(&sm, f), (unsigned long long)ro.v[0].kb[f]);
    }
    uint64_t pss = ms_smaps_sum(&sm, MS_SM_PSS), rpss = ro.v[0].kb[MS_SM_PSS];
    assert_true(pss <= rpss);
    assert_true(rpss - pss < sm.n);
    assert_true(ro.v[0].kb[MS_SM_RSS] > 1000); /* a real capture, not an empty file */
    ms_smaps_free(&sm);
    ms_smaps_free(&ro);
}

static void test_capture_layout(void **state)
{
    (void)state;
    check_capture("layout.smaps", "layout.smaps_rollup");
}

static void test_capture_python(void **state)
{
    (void)state;
    check_capture("python.smaps", "python.smaps_rollup");
}

/* The live kernel: our own smaps against our own rollup is only comparable when nothing
 * changes in between, so compare the fields that do not move here (file mappings). */
static void test_live_self(void **state)
{
    (void)state;
    ms_smaps sm = {0}, maps = {0};
    char err[256];
    assert_int_equal(ms_smaps_read(&sm, 0, MS_SRC_SMAPS, err, sizeof err), 0);
    assert_int_equal(ms_smaps_read(&maps, 0, MS_SRC_MAPS, err, sizeof err), 0);
    assert_true(sm.n > 5);
    assert_true(maps.n > 5);
    assert_int_equal(maps.present_any, 0); /* maps has no counters */
    int has_stack = 0;
    for (size_t i = 0; i < sm.n; i++) {
        if (!strcmp(sm.v[i].name, "[stack]"))
            has_stack = 1;
        assert_true(sm.v[i].present & (1u << MS_SM_RSS));
        assert_int_equal(sm.v[i].kb[MS_SM_SIZE], (sm.v[i].end - sm.v[i].start) >> 10);
    }
    assert_true(has_stack);
    ms_smaps_free(&sm);
    ms_smaps_free(&maps);
    assert_true(ms_smaps_read(&sm, 999999999, MS_SRC_SMAPS, err, sizeof err) < 0);
    assert_non_null(strstr(err, "/proc/999999999/smaps"));
    ms_smaps_free(&sm);
}

/* Many mappings: the array grows many times while counters keep landing on the right
 * mapping (each mapping i carries Rss = i and a name with i in it). Counter names that
 * start with a hex letter (AnonHugePages, FilePmdMapped) are tried as headers first: a
 * grow at that moment must not leave the parser writing into the old array. */
static void test_many_mappings(void **state)
{
    (void)state;
    enum { N = 5000 };
    size_t cap = (size_t)N * 200, len = 0;
    char *text = malloc(cap + 1);
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "%x-%x rw-p 00000000 00:00 0    /m %d\nSize: 4 kB\nRss: %d kB\n"
                                "Pss: %d kB\nAnonHugePages: 0 kB\nFilePmdMapped: 0 kB\nVmFlags: rd wr\n",
                                0x10000 + i * 0x2000, 0x11000 + i * 0x2000, i, i, i / 2);
    ms_smaps sm = {0};
    sm.buf.data = text;
    sm.buf.cap = cap + 1;
    char err[64];
    assert_int_equal(ms_smaps_parse(&sm, text, len, err, sizeof err), 0);
    assert_int_equal(sm.n, N);
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "/m %d", i);
        assert_string_equal(sm.v[i].name, name);
        assert_int_equal(sm.v[i].kb[MS_SM_RSS], (uint64_t)i);
        assert_int_equal(sm.v[i].kb[MS_SM_PSS], (uint64_t)(i / 2));
        assert_string_equal(sm.v[i].vmflags, "rd wr");
    }
    assert_int_equal(ms_smaps_sum(&sm, MS_SM_RSS), (uint64_t)N * (N - 1) / 2);
    ms_smaps_free(&sm);
}

static void test_numbers(void **state)
{
    (void)state;
    const char *s = "  18446744073709551616x";
    const char *p = s;
    uint64_t v;
    assert_true(ms_parse_u64(&p, s + strlen(s), &v));
    assert_true(v == UINT64_MAX && *p == 'x');
    s = "0x7fffABCDEF ";
    p = s;
    assert_true(ms_parse_hex(&p, s + strlen(s), &v, 1));
    assert_true(v == 0x7fffabcdefull);
    s = "12345";
    p = s;
    assert_true(ms_parse_u64(&p, s + 2, &v)); /* bounded by end */
    assert_true(v == 12);
    p = s;
    assert_false(ms_parse_u64(&p, s, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_cases),     cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_capture_layout), cmocka_unit_test(test_capture_python),
        cmocka_unit_test(test_live_self),      cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_many_mappings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
