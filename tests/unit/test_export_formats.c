/* The single-snapshot exporters on snapshots built in memory: pprof decoded back field by
 * field (sample types, totals, mappings with build-id, an inlined frame as two lines of
 * one location, resolved from this very test binary), collapsed stacks, the flame-graph
 * SVG and the HTML report (health warnings, leak-scan section, escaping). Built -O2 -g. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"
#include "analysis/symbolize.h"
#include "self_module.h"

/* ---- a pc inside an inlined call, in this binary ------------------------------------ */

volatile uint64_t g_sink;

__attribute__((noinline)) uint64_t ret_addr(void)
{
    return (uint64_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) uint64_t inlined_helper(void)
{
    uint64_t r = ret_addr();
    g_sink = r; /* a store after the call: no tail call */
    return r;
}

__attribute__((noinline)) uint64_t outer_function(void)
{
    uint64_t r = inlined_helper();
    g_sink += 1;
    return r;
}

/* ---- the snapshot: this executable as its one module -------------------------------- */

static ms_snapshot *self_snapshot(uint64_t pc_inlined)
{
    ms_snapshot *s = calloc(1, sizeof *s);
    s->path = strdup("self");
    s->version_major = 1;
    s->modules = calloc(1, sizeof *s->modules);
    s->nmodules = 1;
    dl_iterate_phdr(ms_test_self_module, &s->modules[0]);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = 0;
    s->modules[0].path = strdup(exe);

    s->meta = calloc(3, sizeof *s->meta);
    s->meta[0] = (ms_kv){strdup("exe"), strdup(exe)};
    s->meta[1] = (ms_kv){strdup("snapshot_ns"), strdup("2000000000")};
    s->meta[2] = (ms_kv){strdup("start_ns"), strdup("1000000000")};
    s->nmeta = 3;

    s->stacks = calloc(3, sizeof *s->stacks);
    s->nstacks = 3;
    /* 1: the inlined pc, then a pc in main's module area (outer's own address) */
    s->stacks[0] = (ms_stack){.id = 1, .depth = 2, .pcs = calloc(2, 8),
                              .c = {.live_blocks = 3, .live_bytes = 3000, .alloc_blocks = 10,
                                    .alloc_bytes = 10000, .free_blocks = 7, .free_bytes = 7000}};
    s->stacks[0].pcs[0] = pc_inlined;
    s->stacks[0].pcs[1] = (uint64_t)outer_function + 1;
    /* 2: an mmap stack outside every module */
    s->stacks[1] = (ms_stack){.id = 2, .kind = MS_KIND_MMAP, .depth = 1, .pcs = calloc(1, 8),
                              .c = {.live_blocks = 1, .live_bytes = 1 << 20, .alloc_blocks = 1,
                                    .alloc_bytes = 1 << 20}};
    s->stacks[1].pcs[0] = 0x10;
    /* 3: freed entirely */
    s->stacks[2] = (ms_stack){.id = 3, .depth = 1, .pcs = calloc(1, 8),
                              .c = {.alloc_blocks = 5, .alloc_bytes = 500, .free_blocks = 5,
                                    .free_bytes = 500}};
    s->stacks[2].pcs[0] = 0x20;
    return s;
}

/* ---- a minimal protobuf reader for the checks --------------------------------------- */

typedef struct rd {
    const uint8_t *p, *end;
} rd;

static uint64_t varint(rd *r)
{
    uint64_t v = 0;
    for (int sh = 0; r->p < r->end && sh < 64; sh += 7) {
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return v;
    }
    fail_msg("bad varint");
    return 0;
}

/* next field: returns 0 at the end; *sub for length-delimited */
static int field(rd *r, unsigned *num, uint64_t *val, rd *sub)
{
    if (r->p >= r->end)
        return 0;
    uint64_t key = varint(r);
    *num = (unsigned)(key >> 3);
    switch (key & 7) {
    case 0: *val = varint(r); break;
    case 2: {
        uint64_t n = varint(r);
        assert_true(n <= (uint64_t)(r->end - r->p));
        sub->p = r->p;
        sub->end = r->p + n;
        r->p += n;
        break;
    }
    default: fail_msg("unexpected wire type %d", (int)(key & 7));
    }
    return 1;
}

typedef struct prof {
    char *strings[256];
    int nstrings;
    uint64_t types[4][2];
    int ntypes;
    uint64_t totals[4];
    int nsamples;
    uint64_t loc_lines[64]; /* per location id: number of lines */
    uint64_t loc_fn[64][4]; /* function ids of its lines */
    uint64_t fn_name[64];
    uint64_t maps, map_buildid, default_type, time_nanos, duration;
    int labels_kind;
} prof;

static void decode(const uint8_t *data, size_t len, prof *pr)
{
    memset(pr, 0, sizeof *pr);
    rd r = {data, data + len}, sub, sub2, sub3;
    unsigned num, n2, n3;
    uint64_t v, v2, v3;
    while (field(&r, &num, &v, &sub)) {
        switch (num) {
        case 1: /* sample_type */
            while (field(&sub, &n2, &v2, &sub2))
                pr->types[pr->ntypes][n2 - 1] = v2;
            pr->ntypes++;
            break;
        case 2: { /* sample */
            pr->nsamples++;
            while (field(&sub, &n2, &v2, &sub2)) {
                if (n2 == 2) {
                    for (int i = 0; sub2.p < sub2.end; i++)
                        pr->totals[i] += varint(&sub2);
                } else if (n2 == 3) {
                    pr->labels_kind++;
                }
            }
            break;
        }
        case 3: /* mapping */
            pr->maps++;
            while (field(&sub, &n2, &v2, &sub2))
                if (n2 == 6)
                    pr->map_buildid = v2;
            break;
        case 4: { /* location */
            uint64_t id = 0;
            while (field(&sub, &n2, &v2, &sub2)) {
                if (n2 == 1)
                    id = v2;
                if (n2 == 4) {
                    assert_true(id > 0 && id < 64);
                    while (field(&sub2, &n3, &v3, &sub3))
                        if (n3 == 1 && pr->loc_lines[id] < 4)
                            pr->loc_fn[id][pr->loc_lines[id]] = v3;
                    pr->loc_lines[id]++;
                }
            }
            break;
        }
        case 5: { /* function */
            uint64_t id = 0, name = 0;
            while (field(&sub, &n2, &v2, &sub2)) {
                if (n2 == 1)
                    id = v2;
                if (n2 == 2)
                    name = v2;
            }
            assert_true(id > 0 && id < 64);
            pr->fn_name[id] = name;
            break;
        }
        case 6:
            assert_true(pr->nstrings < 256);
            pr->strings[pr->nstrings++] = strndup((const char *)sub.p, (size_t)(sub.end - sub.p));
            break;
        case 9: pr->time_nanos = v; break;
        case 10: pr->duration = v; break;
        case 14: pr->default_type = v; break;
        default: break;
        }
    }
}

static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *outlen)
{
    size_t cap = 1 << 20;
    uint8_t *out = malloc(cap);
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    *outlen = z.total_out;
    inflateEnd(&z);
    return out;
}

static char *run_export(ms_export_fn fn, const ms_snapshot *s, ms_symbolizer *sym, ms_metric m,
                        size_t *len)
{
    char *buf = NULL, err[256];
    size_t l = 0;
    FILE *f = open_memstream(&buf, &l);
    ms_export_opts o = {.metric = m};
    if (fn(s, sym, &o, f, err, sizeof err) != 0)
        fail_msg("%s", err);
    fclose(f);
    if (len)
        *len = l;
    return buf;
}

static void test_pprof(void **state)
{
    (void)state;
    uint64_t pc = outer_function();
    ms_snapshot *s = self_snapshot(pc);
    ms_symbolizer *sym = ms_symbolizer_new(s);
    assert_non_null(sym);
    size_t len;
    char *gz = run_export(ms_export_pprof, s, sym, MS_METRIC_LIVE_BYTES, &len);
    assert_true(len > 20 && (uint8_t)gz[0] == 0x1f && (uint8_t)gz[1] == 0x8b);
    size_t plen;
    uint8_t *pb = gunzip((uint8_t *)gz, len, &plen);
    prof pr;
    decode(pb, plen, &pr);
    assert_string_equal(pr.strings[0], "");
    static const char *const want[4][2] = {{"inuse_objects", "count"}, {"inuse_space", "bytes"},
                                           {"alloc_objects", "count"}, {"alloc_space", "bytes"}};
    assert_int_equal(pr.ntypes, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(pr.strings[pr.types[i][0]], want[i][0]);
        assert_string_equal(pr.strings[pr.types[i][1]], want[i][1]);
    }
    assert_string_equal(pr.strings[pr.default_type], "inuse_space");
    assert_int_equal(pr.nsamples, 3);
    assert_int_equal(pr.totals[0], 3 + 1);
    assert_int_equal(pr.totals[1], 3000 + (1 << 20));
    assert_int_equal(pr.totals[2], 10 + 1 + 5);
    assert_int_equal(pr.totals[3], 10000 + (1 << 20) + 500);
    assert_int_equal(pr.labels_kind, 1); /* the mmap sample says so */
    assert_int_equal(pr.time_nanos, 2000000000ull);
    assert_int_equal(pr.duration, 1000000000ull);
    assert_true(pr.maps >= 1);
    /* build-id as hex */
    char hex[129] = "";
    for (uint32_t i = 0; i < s->modules[0].build_id_len; i++)
        sprintf(hex + 2 * i, "%02x", s->modules[0].build_id[i]);
    if (s->modules[0].build_id_len)
        assert_string_equal(pr.strings[pr.map_buildid], hex);
    /* location 1 is the inlined pc: two lines, the inlined helper first */
    assert_int_equal(pr.loc_lines[1], 2);
    assert_string_equal(pr.strings[pr.fn_name[pr.loc_fn[1][0]]], "inlined_helper");
    assert_string_equal(pr.strings[pr.fn_name[pr.loc_fn[1][1]]], "outer_function");
    for (int i = 0; i < pr.nstrings; i++)
        free(pr.strings[i]);
    free(pb);
    free(gz);
    ms_symbolizer_free(sym);
    ms_snapshot_free(s);
}

static void test_collapsed_and_svg(void **state)
{
    (void)state;
    uint64_t pc = outer_function();
    ms_snapshot *s = self_snapshot(pc);
    ms_symbolizer *sym = ms_symbolizer_new(s);
    char *c = run_export(ms_export_collapsed, s, sym, MS_METRIC_LIVE_BYTES, NULL);
    /* mmap under its own root; the inlined frame is a frame of its own; freed stacks out */
    assert_non_null(strstr(c, "[mmap];0x10 1048576\n"));
    /* inlined: a frame of its own, marked as flamegraph.pl reads it; the allocation site
     * with its file:line */
    if (!strstr(c, ";outer_function;inlined_helper test_export_formats.c:") ||
        !strstr(c, "_[i] 3000\n"))
        fail_msg("%s", c);
    assert_null(strstr(c, "0x20"));
    free(c);
    c = run_export(ms_export_collapsed, s, sym, MS_METRIC_ALLOC_BLOCKS, NULL);
    assert_non_null(strstr(c, "0x20 5\n"));
    free(c);

    char *svg = run_export(ms_export_svg, s, sym, MS_METRIC_LIVE_BYTES, NULL);
    assert_non_null(strstr(svg, "<?xml"));
    assert_non_null(strstr(svg, "data-total=\"1051576\""));
    /* frames carry their source location: "inlined_helper test_export_formats.c:N" */
    assert_non_null(strstr(svg, "data-n=\"inlined_helper test_export_formats.c:"));
    assert_non_null(strstr(svg, "live: 2.93 KiB (3000 bytes) in 3 blocks"));
    assert_null(strstr(svg, "href=\"http"));
    /* frames: all, [mmap], 0x10, and two (outer_function, inlined_helper) levels = 7 */
    int frames = 0;
    for (const char *p = svg; (p = strstr(p, "<g class=\"fg-f\"")); p++)
        frames++;
    assert_int_equal(frames, 7);
    free(svg);
    ms_symbolizer_free(sym);
    ms_snapshot_free(s);
}

static void test_escaping_and_html(void **state)
{
    (void)state;
    ms_snapshot *s = calloc(1, sizeof *s);
    s->path = strdup("odd.msnap");
    s->meta = calloc(3, sizeof *s->meta);
    s->meta[0] = (ms_kv){strdup("sym.100"), strdup("tpl<a&b>::f(\"x\");</script>")};
    s->meta[1] = (ms_kv){strdup("exe"), strdup("/bin/<prog>")};
    s->meta[2] = (ms_kv){strdup("snapshot_ns"), strdup("1700000000000000000")};
    s->nmeta = 3;
    s->stacks = calloc(1, sizeof *s->stacks);
    s->nstacks = 1;
    s->stacks[0] = (ms_stack){.id = 7, .depth = 1, .pcs = calloc(1, 8),
                              .c = {.live_blocks = 2, .live_bytes = 64, .alloc_blocks = 2, .alloc_bytes = 64}};
    s->stacks[0].pcs[0] = 0x100;
    s->health = calloc(2, sizeof *s->health);
    s->health[0] = (ms_health_item){strdup("dropped_blocks"), 5};
    s->health[1] = (ms_health_item){strdup("agent_ns"), 12345};
    s->nhealth = 2;
    s->has_leaks = 1;
    s->leak_summary.blocks[MS_LEAK_DEFINITE] = 2;
    s->leak_summary.bytes[MS_LEAK_DEFINITE] = 64;
    s->leaks = calloc(1, sizeof *s->leaks);
    s->leaks[0] = (ms_snap_leak_rec){.stack_id = 7, .leak_class = MS_LEAK_DEFINITE, .blocks = 2,
                                     .bytes = 64, .example_address = 0xabc0, .example_size = 32};
    s->nleaks = 1;

    char *c = run_export(ms_export_collapsed, s, NULL, MS_METRIC_LIVE_BYTES, NULL);
    assert_string_equal(c, "tpl<a&b>::f(\"x\")_</script> 64\n"); /* ';' would split a frame */
    free(c);
    char *svg = run_export(ms_export_svg, s, NULL, MS_METRIC_LIVE_BYTES, NULL);
    assert_null(strstr(svg, "tpl<a"));
    assert_non_null(strstr(svg, "tpl&lt;a&amp;b&gt;::f(&quot;x&quot;);&lt;/script&gt;"));
    free(svg);

    char *buf = NULL, err[256];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ms_snapshot *series[1] = {s};
    ms_export_opts o = {.metric = MS_METRIC_LIVE_BYTES};
    assert_int_equal(ms_export_html(series, 1, NULL, &o, f, err, sizeof err), 0);
    fclose(f);
    assert_null(strstr(buf, "</script>\");"));      /* never closes the page's script */
    assert_null(strstr(buf, "/bin/<prog>"));
    assert_non_null(strstr(buf, "1 counter(s) say data was lost"));
    assert_non_null(strstr(buf, "id=\"leaks\""));
    assert_non_null(strstr(buf, "definitely lost"));
    assert_non_null(strstr(buf, "0xabc0 (32 B)"));
    assert_non_null(strstr(buf, "2023-11-14 22:13:20 UTC"));
    assert_null(strstr(buf, "src=\"http"));
    assert_null(strstr(buf, "id=\"series\"")); /* one snapshot: no charts */
    free(buf);
    ms_snapshot_free(s);
}

static char *escaped(void (*fn)(FILE *, const char *), const char *in)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, in);
    fclose(f);
    return buf;
}

/* Invalid UTF-8 from a symbol or a dump would make the SVG unparsable and the JSON
 * invalid: such bytes become '?', valid sequences stay. */
static void test_utf8(void **state)
{
    (void)state;
    char *x = escaped(ms_xml_escape, "na\xc3\xafve \xe2\x82\xac bad\xff\xc3 over\xc0\xaf sur\xed\xa0\x80 cut\xe2\x82");
    assert_string_equal(x, "na\xc3\xafve \xe2\x82\xac bad?? over?? sur??? cut??");
    free(x);
    x = escaped(ms_json_string, "a\"\\\x01\xf0\x9f\x98\x80\xf5\x80\x80\x80</script>");
    assert_string_equal(x, "\"a\\\"\\\\\\u0001\xf0\x9f\x98\x80????\\u003c/script\\u003e\"");
    free(x);
}

static void test_metric_names(void **state)
{
    (void)state;
    ms_metric m;
    assert_int_equal(ms_metric_parse("live-blocks", &m), 0);
    assert_int_equal(m, MS_METRIC_LIVE_BLOCKS);
    assert_int_equal(ms_metric_parse("alloc_space", &m), 0);
    assert_int_equal(m, MS_METRIC_ALLOC_BYTES);
    assert_int_equal(ms_metric_parse("bogus", &m), -1);
    assert_int_equal(ms_metric_parse("a-very-long-name-that-does-not-fit-anywhere", &m), -1);
    assert_non_null(ms_export_find("pprof"));
    assert_non_null(ms_export_find("svg"));
    assert_null(ms_export_find("png"));
    char b[32];
    assert_string_equal(ms_fmt_bytes(1023, b, sizeof b), "1023 B");
    assert_string_equal(ms_fmt_bytes(1536, b, sizeof b), "1.50 KiB");
    assert_string_equal(ms_fmt_sbytes(-2048, b, sizeof b), "-2.00 KiB");
    assert_true(ms_fmt_sbytes(INT64_MIN, b, sizeof b)[0] == '-'); /* no overflow on negation */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pprof),
        cmocka_unit_test(test_collapsed_and_svg),
        cmocka_unit_test(test_escaping_and_html),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_metric_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
