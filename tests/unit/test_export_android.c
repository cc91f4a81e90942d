/* Android native heap dump importer: the hand-written fixtures of tests/data/android
 * (their README lists the expected stacks and totals) and malformed inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/android_dump.h"
#include "analysis/export.h"
#include "analysis/stack_agg.h"

static char *fixture_path(const char *name)
{
    const char *src = getenv("MS_SOURCE_DIR");
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/tests/data/android/%s", src ? src : ".", name);
    return buf;
}

static ms_snapshot *load(const char *name)
{
    char err[512] = "";
    ms_snapshot *s = ms_snapshot_load(fixture_path(name), err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    return s;
}

static void totals(const ms_snapshot *s, uint64_t *bytes, uint64_t *blocks)
{
    *bytes = *blocks = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        *bytes += s->stacks[i].c.live_bytes;
        *blocks += s->stacks[i].c.live_blocks;
    }
}

static char *collapsed(const ms_snapshot *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[256];
    ms_export_opts o = {.metric = MS_METRIC_LIVE_BYTES};
    assert_int_equal(ms_export_collapsed(s, NULL, &o, f, err, sizeof err), 0);
    fclose(f);
    return buf;
}

static void test_v12_totals_and_stacks(void **state)
{
    (void)state;
    ms_snapshot *s = load("game_v12.txt");
    uint64_t bytes, blocks;
    totals(s, &bytes, &blocks);
    assert_int_equal(bytes, 80892);
    assert_int_equal(blocks, 23);
    assert_int_equal(s->nstacks, 4); /* two records share one backtrace */
    assert_string_equal(ms_agg_meta(s, "android.total_memory"), "80892");
    assert_string_equal(ms_agg_meta(s, "build_fingerprint"),
                        "memsight/fixture/generic_arm64:14/TEST.1/1:userdebug/test-keys");
    /* modules from MAPS: three files, anonymous mappings left out */
    assert_int_equal(s->nmodules, 3);
    const ms_module *libc = ms_agg_module_for_pc(s, 0x7000001234);
    assert_non_null(libc);
    assert_string_equal(libc->path, "/system/lib64/libc.so");
    assert_int_equal(libc->load_bias, 0x7000000000);
    assert_int_equal(libc->nseg, 3);
    assert_null(ms_agg_module_for_pc(s, 0x7050000010));

    char *c = collapsed(s);
    assert_non_null(strstr(c, "main;Game::init();Mesh::build(std::vector<float, std::allocator<float> > "
                              "const&);malloc 65536\n"));
    assert_non_null(strstr(c, "main;Game::init();Texture::load(char const*);malloc 14336\n"));
    assert_non_null(strstr(c, "main;{lambda()#1}::operator()() const;calloc 700\n"));
    assert_non_null(strstr(c, "main;libgame.so+0x6000;malloc 320\n"));
    /* largest first */
    assert_true(strstr(c, "Mesh::build") < strstr(c, "Texture::load"));
    free(c);
    ms_snapshot_free(s);
}

/* Names are indexed (sorted behind "sym.index") and found by binary search; an index that
 * lies (a crafted file) loses names or falls back to a scan, never reads out of bounds. */
static void test_name_index(void **state)
{
    (void)state;
    ms_snapshot *s = load("game_v12.txt");
    assert_string_equal(s->meta[0].key, "sym.index");
    assert_string_equal(s->meta[0].value, "8");
    ms_frame f;
    assert_int_equal(ms_agg_resolve(s, NULL, 0x7100004000, 1, &f, 1), 1);
    assert_string_equal(f.function, "Mesh::build(std::vector<float, std::allocator<float> > const&)");
    assert_int_equal(ms_agg_resolve(s, NULL, 0x5500001500, 1, &f, 1), 1);
    assert_string_equal(f.function, "main");
    assert_int_equal(ms_agg_resolve(s, NULL, 0x7100006000, 1, &f, 1), 1);
    assert_null(f.function); /* the empty name in bt_info */
    assert_int_equal(f.module_offset, 0x6000);
    free(s->meta[0].value);
    s->meta[0].value = strdup("1000000");
    assert_int_equal(ms_agg_resolve(s, NULL, 0x5500001500, 1, &f, 1), 1);
    assert_string_equal(f.function, "main");
    free(s->meta[0].value);
    s->meta[0].value = strdup("3"); /* too short: names past it are not found, nothing breaks */
    assert_int_equal(ms_agg_resolve(s, NULL, 0x7100005000, 1, &f, 1), 1);
    assert_null(f.function);
    ms_snapshot_free(s);
}

static void test_v11_num_counts(void **state)
{
    (void)state;
    ms_snapshot *s = load("plain_v11.txt");
    uint64_t bytes, blocks;
    totals(s, &bytes, &blocks);
    assert_int_equal(bytes, 3900);
    assert_int_equal(blocks, 6);
    assert_int_equal(s->nstacks, 2);
    char *c = collapsed(s);
    assert_non_null(strstr(c, "libutils.so+0x500;libc.so+0x230 2400\n"));
    assert_non_null(strstr(c, "libutils.so+0x1000;libc.so+0x1000 1500\n" /* b000 returns into libc */));
    free(c);
    ms_snapshot_free(s);
}

static void test_v10_num_is_one(void **state)
{
    (void)state;
    ms_snapshot *s = load("plain_v10.txt");
    uint64_t bytes, blocks;
    totals(s, &bytes, &blocks);
    assert_int_equal(bytes, 1900);
    assert_int_equal(blocks, 3);
    ms_snapshot_free(s);
}

static void expect_error(const char *text, const char *what)
{
    char err[512] = "";
    ms_snapshot *s = ms_android_dump_parse(text, strlen(text), "bad.txt", err, sizeof err);
    if (s)
        fail_msg("accepted: %s", text);
    if (!strstr(err, what))
        fail_msg("message '%s' lacks '%s'", err, what);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error("Android Native Heap Dump v2.0\n", "unsupported");
    expect_error("Android Native Heap Dump vX\n", "unsupported");
    expect_error("Android Native Heap Dump v1.2\n\nz 0 sz 10 num 1 bt zz\nMAPS\nEND\n", "line 3");
    expect_error("Android Native Heap Dump v1.2\nz 0 sz 99999999999999999999 num 1 bt 1\n", "sz");
    expect_error("Android Native Heap Dump v1.2\nz 0 sz 18446744073709551615 num 2 bt 1\n",
                 "overflow");
    expect_error("Android Native Heap Dump v1.2\n  bt_info {\"x\" 1 \"f\" 0}\n", "bt_info");
    expect_error("Android Native Heap Dump v1.2\nz 0 sz 1 num 1 bt 1\n  bt_info {\"x\" 1 \"f 0}\n",
                 "bt_info");
    expect_error("Android Native Heap Dump v1.2\nz 0 sz 1 num 1 bt 1\nMAPS\nzz-1 r-xp\nEND\n",
                 "MAPS");
    expect_error("Android Native Heap Dump v1.2\n", "truncated");
    expect_error("Something else\n", "not an Android");
    /* binary junk after a valid header never crashes */
    char junk[300];
    memcpy(junk, "Android Native Heap Dump v1.2\nz ", 32);
    for (int i = 32; i < 300; i++)
        junk[i] = (char)(i * 7);
    char err[256];
    ms_snapshot *s = ms_android_dump_parse(junk, sizeof junk, "junk", err, sizeof err);
    ms_snapshot_free(s);
}

static void test_truncated_frames(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fprintf(f, "Android Native Heap Dump v1.2\n\nz 0 sz 8 num 1 bt");
    for (int i = 0; i < 300; i++)
        fprintf(f, " %x", 0x1000 + i);
    fprintf(f, "\nMAPS\nEND\n");
    fclose(f);
    char err[256];
    ms_snapshot *s = ms_android_dump_parse(text, len, "deep", err, sizeof err);
    assert_non_null(s);
    assert_int_equal(s->stacks[0].depth, 256);
    assert_true(s->stacks[0].flags & MS_STACKF_TRUNCATED);
    ms_snapshot_free(s);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v12_totals_and_stacks),
        cmocka_unit_test(test_name_index),
        cmocka_unit_test(test_v11_num_counts),
        cmocka_unit_test(test_v10_num_is_one),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_truncated_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
