/* diff, trend and merge on snapshots built in memory, whose numbers are known: per-stack
 * deltas and their order, the steady-growth ranking with exact slopes, and merge's sums
 * across different load addresses, written and read back through the snapshot reader. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/diff.h"
#include "analysis/merge.h"
#include "analysis/stack_agg.h"
#include "analysis/trend.h"

/* ---- building snapshots ------------------------------------------------------------ */

static ms_snapshot *snap_new(const char *path, uint64_t ns)
{
    ms_snapshot *s = calloc(1, sizeof *s);
    s->path = strdup(path);
    s->version_major = 1;
    if (ns) {
        s->meta = calloc(1, sizeof *s->meta);
        s->meta[0].key = strdup("snapshot_ns");
        asprintf(&s->meta[0].value, "%llu", (unsigned long long)ns);
        s->nmeta = 1;
    }
    return s;
}

static void meta(ms_snapshot *s, const char *k, const char *v)
{
    s->meta = realloc(s->meta, (s->nmeta + 1) * sizeof *s->meta);
    s->meta[s->nmeta].key = strdup(k);
    s->meta[s->nmeta].value = strdup(v);
    s->nmeta++;
}

/* One module "/bin/prog" with one executable segment [0, 0x10000) at bias. */
static void module(ms_snapshot *s, const char *path, uint64_t bias, uint8_t bid)
{
    s->modules = realloc(s->modules, (s->nmodules + 1) * sizeof *s->modules);
    ms_module *m = &s->modules[s->nmodules++];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    m->load_bias = bias;
    m->build_id_len = 4;
    memset(m->build_id, bid, 4);
    m->nseg = 1;
    m->segs = calloc(1, sizeof *m->segs);
    m->segs[0].memsz = 0x10000;
    m->segs[0].flags = 5;
}

/* A stack of pcs (innermost first), each named through the importer's meta entries. */
static void stack(ms_snapshot *s, uint64_t live_bytes, uint64_t live_blocks, int n, ...)
{
    s->stacks = realloc(s->stacks, (s->nstacks + 1) * sizeof *s->stacks);
    ms_stack *st = &s->stacks[s->nstacks];
    memset(st, 0, sizeof *st);
    st->id = (uint32_t)s->nstacks + 1;
    st->depth = (uint32_t)n;
    st->pcs = calloc((size_t)n, sizeof *st->pcs);
    st->c.live_bytes = live_bytes;
    st->c.live_blocks = live_blocks;
    st->c.alloc_bytes = live_bytes * 2;
    st->c.alloc_blocks = live_blocks * 2;
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        st->pcs[i] = va_arg(ap, uint64_t);
        const char *name = va_arg(ap, const char *);
        char k[40];
        snprintf(k, sizeof k, "sym.%llx", (unsigned long long)st->pcs[i]);
        if (name && !ms_agg_meta(s, k))
            meta(s, k, name);
    }
    va_end(ap);
    s->nstacks++;
}

#define PC(x) ((uint64_t)(x))

/* noinline: inlined, gcc -O2 takes open_memstream's buffer for a dangling local */
__attribute__((noinline)) static char *capture(int (*fn)(const void *, const ms_export_opts *, FILE *, char *, size_t),
                     const void *obj, ms_metric m)
{
    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_export_opts o = {.metric = m};
    assert_int_equal(fn(obj, &o, f, err, sizeof err), 0);
    fclose(f);
    return buf;
}

/* ---- diff -------------------------------------------------------------------------- */

static void test_diff(void **state)
{
    (void)state;
    ms_snapshot *a = snap_new("a.msnap", 1000000000ull);
    ms_snapshot *b = snap_new("b.msnap", 3000000000ull);
    /* same stacks at different pcs in B (another run): matched by names */
    stack(a, 100, 1, 2, PC(0x1010), "grow", PC(0x1100), "main");
    stack(a, 500, 5, 2, PC(0x1020), "shrink", PC(0x1100), "main");
    stack(a, 70, 7, 2, PC(0x1030), "gone", PC(0x1100), "main");
    stack(b, 1100, 3, 2, PC(0x2010), "grow", PC(0x2100), "main");
    stack(b, 200, 2, 2, PC(0x2020), "shrink", PC(0x2100), "main");
    stack(b, 40, 4, 2, PC(0x2040), "new", PC(0x2100), "main");
    char err[256];
    ms_diff *d = ms_diff_build(a, NULL, b, NULL, MS_AGG_BY_SYMBOLS, err, sizeof err);
    assert_non_null(d);
    assert_int_equal(d->nrows, 4);
    assert_int_equal(d->dt_ns, 2000000000ll);
    assert_string_equal(d->rows[0].key, "main;grow");
    assert_int_equal(ms_diff_delta(&d->rows[0], MS_METRIC_LIVE_BYTES), 1000);
    assert_string_equal(d->rows[1].key, "main;new");
    assert_true(d->rows[1].ia < 0);
    assert_string_equal(d->rows[2].key, "main;gone");
    assert_true(d->rows[2].ib < 0);
    assert_string_equal(d->rows[3].key, "main;shrink");
    assert_int_equal(ms_diff_delta(&d->rows[3], MS_METRIC_LIVE_BYTES), -300);

    ms_diff_sort(d, MS_METRIC_LIVE_BLOCKS);
    assert_string_equal(d->rows[0].key, "main;new"); /* +4 blocks */

    char *col = capture((void *)ms_diff_write_collapsed, d, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(col, "main;grow 100 1100\n"));
    assert_non_null(strstr(col, "main;gone 70 0\n"));
    assert_non_null(strstr(col, "main;new 0 40\n"));
    free(col);
    char *js = capture((void *)ms_diff_write_json, d, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(js, "\"delta_live_bytes\":670")); /* 1340 - 670 */
    assert_non_null(strstr(js, "\"status\":\"gone\""));
    free(js);
    char *txt = capture((void *)ms_diff_write_text, d, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(txt, "2 grew, 2 shrank, 1 new in B, 1 gone from B"));
    assert_non_null(strstr(txt, "B taken 2.000 s after A"));
    free(txt);
    char *svg = capture((void *)ms_diff_write_svg, d, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(svg, "data-n=\"grow\""));
    assert_non_null(strstr(svg, "change: +1000 B live"));
    assert_non_null(strstr(svg, "rgb(255,")); /* grew: red */
    assert_non_null(strstr(svg, ",255)\"/>")); /* shrank: blue */
    free(svg);
    ms_diff_free(d);
    ms_snapshot_free(a);
    ms_snapshot_free(b);
}

/* ---- trend ------------------------------------------------------------------------- */

static ms_snapshot *series_snap(int i, int with_time)
{
    char path[32];
    snprintf(path, sizeof path, "s%d.msnap", i);
    ms_snapshot *s = snap_new(path, with_time ? (uint64_t)(5 + 2 * i) * 1000000000ull : 0);
    /* steady: +100 B every snapshot (every 2 s) */
    stack(s, 100 + 100 * (uint64_t)i, 1 + (uint64_t)i, 2, PC(0x10), "steady_leak", PC(0x100), "main");
    /* jump: 0 until snapshot 2, then 100000 (a single, much larger growth) */
    stack(s, i >= 2 ? 100000 : 0, i >= 2 ? 1 : 0, 2, PC(0x20), "jump_once", PC(0x100), "main");
    /* churn: up and down, net +50 */
    static const uint64_t churn[6] = {0, 400, 100, 500, 50, 50};
    stack(s, churn[i], 1, 2, PC(0x30), "churn", PC(0x100), "main");
    /* shrinking */
    stack(s, 1000 - 100 * (uint64_t)i, 1, 2, PC(0x40), "shrinks", PC(0x100), "main");
    return s;
}

static const char *leaf(const ms_trend *t, size_t rank)
{
    const ms_agg_stack *ks = &t->keys->stacks[t->stacks[t->rank[rank]].id];
    return t->keys->names[ks->frames[ks->nframes - 1]];
}

static void test_trend_ranking(void **state)
{
    (void)state;
    ms_snapshot *ser[6];
    /* given out of order: the trend orders by snapshot_ns */
    for (int i = 0; i < 6; i++)
        ser[i] = series_snap(5 - i, 1);
    ms_trend_sort_series(ser, 6);
    assert_string_equal(ser[0]->path, "s0.msnap");
    char err[256];
    ms_trend *t = ms_trend_build(ser, 6, NULL, MS_AGG_BY_SYMBOLS, err, sizeof err);
    assert_non_null(t);
    assert_true(t->have_times);
    assert_int_equal(t->nstacks, 4);
    /* churn grew as often as it shrank: not a suspect, whatever its net growth */
    assert_int_equal(t->nsuspects, 2);
    assert_string_equal(leaf(t, 0), "steady_leak");
    assert_string_equal(leaf(t, 1), "jump_once");
    assert_string_equal(leaf(t, 2), "churn");
    const ms_trend_stack *st = &t->stacks[t->rank[0]];
    assert_int_equal(st->grew, 5);
    assert_int_equal(st->growth, 500);
    assert_true(st->steadiness == 1.0);
    assert_true(st->slope > 49.999 && st->slope < 50.001); /* 100 B per 2 s */
    const ms_trend_stack *j = &t->stacks[t->rank[1]];
    assert_int_equal(j->grew, 1);
    assert_true(j->growth > 100 * st->growth);  /* larger growth, ranked lower */
    assert_true(j->share > 0.99);
    assert_int_equal(t->total_growth, 500 + 100000 + 50 - 500);
    char *txt = capture((void *)ms_trend_write_text, t, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(txt, "  1  0.502     5/5"));
    char *l1 = strstr(txt, "\n  1 ");
    assert_non_null(l1);
    assert_true(strstr(l1, "steady_leak") < strstr(l1, "jump_once"));
    free(txt);
    char *js = capture((void *)ms_trend_write_json, t, MS_METRIC_LIVE_BYTES);
    assert_non_null(strstr(js, "\"live_bytes\":[100,200,300,400,500,600]"));
    assert_non_null(strstr(js, "\"slope_bytes_per_s\":50.000"));
    free(js);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_trend_write_charts(t, 3, f);
    fclose(f);
    assert_non_null(strstr(buf, "chart-total"));
    assert_non_null(strstr(buf, "steady_leak"));
    free(buf);
    ms_trend_free(t);
    for (int i = 0; i < 6; i++)
        ms_snapshot_free(ser[i]);

    /* without times: per snapshot, same order */
    for (int i = 0; i < 6; i++)
        ser[i] = series_snap(i, 0);
    t = ms_trend_build(ser, 6, NULL, MS_AGG_BY_SYMBOLS, err, sizeof err);
    assert_non_null(t);
    assert_false(t->have_times);
    assert_string_equal(leaf(t, 0), "steady_leak");
    assert_true(t->stacks[t->rank[0]].slope > 99.999 && t->stacks[t->rank[0]].slope < 100.001);
    ms_trend_free(t);
    for (int i = 0; i < 6; i++)
        ms_snapshot_free(ser[i]);
}

/* ---- merge ------------------------------------------------------------------------- */

static void test_merge_roundtrip(void **state)
{
    (void)state;
    /* two runs of one program: libx at different load addresses (ASLR) */
    ms_snapshot *a = snap_new("a", 10), *b = snap_new("b", 20);
    meta(a, "exe", "/bin/prog");
    meta(b, "exe", "/usr/local/bin/prog");
    module(a, "/lib/libx.so", 0x7f0000000000ull, 0xab);
    module(b, "/lib/libx.so", 0x7f5500000000ull, 0xab);
    module(b, "/lib/liby.so", 0x7f0000000000ull, 0xcd); /* overlaps libx's place in A */
    stack(a, 100, 1, 2, PC(0x7f0000001010), "f", PC(0x7f0000002000), "main");
    stack(b, 300, 3, 2, PC(0x7f5500001010), NULL, PC(0x7f5500002000), NULL);
    stack(b, 7, 1, 1, PC(0x7f0000000500), "in_liby");
    stack(b, 9, 1, 1, PC(0x1234), "no_module");
    ms_snapshot *in[2] = {a, b};
    char err[256];
    ms_snapshot *m = ms_merge(in, 2, NULL, err, sizeof err);
    assert_non_null(m);
    assert_int_equal(m->nmodules, 2);
    assert_int_equal(m->nstacks, 3);
    assert_int_equal(m->stacks[0].c.live_bytes, 400);
    assert_int_equal(m->stacks[0].c.live_blocks, 4);
    assert_int_equal(m->stacks[0].pcs[0], 0x7f0000001010ull);
    /* liby moved out of libx's way; its pc follows, with its name */
    const ms_module *y = &m->modules[1];
    assert_string_equal(y->path, "/lib/liby.so");
    assert_true(y->load_bias >= 0x7f0000010000ull);
    assert_int_equal(m->stacks[1].pcs[0], y->load_bias + 0x500);
    char k[40];
    snprintf(k, sizeof k, "sym.%llx", (unsigned long long)m->stacks[1].pcs[0]);
    assert_string_equal(ms_agg_meta(m, k), "in_liby");
    assert_string_equal(ms_agg_meta(m, "merged_from"), "2");
    assert_string_equal(ms_agg_meta(m, "snapshot_ns"), "20");

    char dir[] = "/tmp/ms-merge-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/m.msnap", dir);
    assert_int_equal(ms_merge_write(m, path, err, sizeof err), 0);
    ms_snapshot *r = ms_snapshot_read(path, err, sizeof err);
    if (!r)
        fail_msg("%s", err);
    assert_int_equal(r->nstacks, 3);
    assert_int_equal(r->nmodules, 2);
    assert_int_equal(r->modules[0].build_id[0], 0xab);
    uint64_t total = 0;
    for (size_t i = 0; i < r->nstacks; i++)
        total += r->stacks[i].c.live_bytes;
    assert_int_equal(total, 400 + 7 + 9);
    assert_int_equal(r->stacks[1].pcs[0], m->stacks[1].pcs[0]);
    assert_string_equal(ms_agg_meta(r, k), "in_liby");
    ms_snapshot_free(r);
    /* a symlink planted at the output path is replaced, its target left alone */
    char victim[80];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *vf = fopen(victim, "w");
    fputs("precious", vf);
    fclose(vf);
    unlink(path);
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(ms_merge_write(m, path, err, sizeof err), 0);
    struct stat stv, stp;
    assert_int_equal(stat(victim, &stv), 0);
    assert_int_equal(stv.st_size, 8);
    assert_int_equal(lstat(path, &stp), 0);
    assert_true(S_ISREG(stp.st_mode));
    assert_int_equal(stp.st_mode & 0777, 0600);
    unlink(victim);
    unlink(path);
    rmdir(dir);
    ms_snapshot_free(m);

    /* different programs are refused unless asked */
    free(b->meta[1].value);
    b->meta[1].value = strdup("/bin/other");
    assert_null(ms_merge(in, 2, NULL, err, sizeof err));
    assert_non_null(strstr(err, "different program"));
    ms_merge_opts force = {.allow_different_programs = 1};
    m = ms_merge(in, 2, &force, err, sizeof err);
    assert_non_null(m);
    ms_snapshot_free(m);
    ms_snapshot_free(a);
    ms_snapshot_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_trend_ranking),
        cmocka_unit_test(test_merge_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
