/* Facts about real dumps (tests/data/hprof) that their origins' own tests assert:
 * perflib's HprofParserTest on the Dialer dump, MAT's instance sizes on the 6u18 dumps.
 * Located through MS_SOURCE_DIR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hprof/reader.h"

static void sample_path(char *path, size_t len, const char *name)
{
    const char *src = getenv("MS_SOURCE_DIR");
    snprintf(path, len, "%s/tests/data/hprof/%s", src ? src : ".", name);
}

static ms_hgraph *load_opts(const char *name, const ms_hprof_read_opts *o)
{
    char path[4096], err[512];
    sample_path(path, sizeof path, name);
    ms_hgraph *g = NULL;
    if (ms_hprof_read(path, o, &g, err, sizeof err))
        fail_msg("%s", err);
    return g;
}

static ms_hgraph *load_threads(const char *name, int threads)
{
    ms_hprof_read_opts o = {.threads = threads};
    return load_opts(name, &o);
}

static ms_hgraph *load(const char *name)
{
    return load_threads(name, 1);
}

static uint32_t cls(const ms_hgraph *g, const char *name)
{
    uint32_t k = ms_hgraph_find_class(g, name, UINT64_MAX, 0);
    if (k == MS_HCLASS_NONE)
        fail_msg("class %s not found", name);
    return k;
}

static uint64_t count_instances(const ms_hgraph *g, const char *name, uint64_t *shallow)
{
    uint64_t n = 0, s = 0;
    for (uint32_t i = 0; i < g->nobj; i++)
        if (!strcmp(ms_hgraph_class_name(g, g->obj_class[i]), name)) {
            n++;
            s += g->obj_size[i];
        }
    if (shallow)
        *shallow = s;
    return n;
}

static void test_dialer(void **state)
{
    (void)state;
    ms_hgraph *g = load("adt-tools-base__dialer.android-hprof");
    assert_string_equal(g->version, "JAVA PROFILE 1.0.3");
    assert_int_equal(g->id_size, 4);
    assert_int_equal(g->nobj, 43687); /* DominatorsTest: instances + classes, all heaps */
    assert_int_equal(g->problem_total, 0);
    /* HprofParserTest: the class hierarchy of android.app.Application */
    uint32_t c = cls(g, "android.app.Application");
    const char *chain[] = {"android.app.Application", "android.content.ContextWrapper",
                           "android.content.Context", "java.lang.Object"};
    for (int d = 0; d < 4; d++) {
        assert_int_not_equal(c, MS_HCLASS_NONE);
        assert_string_equal(ms_hgraph_class_name(g, c), chain[d]);
        c = g->classes[c].super;
    }
    assert_int_equal(c, MS_HCLASS_NONE);
    uint64_t sh;
    assert_int_equal(count_instances(g, "byte[]", &sh), 1406);
    assert_int_equal(sh, 681489);
    assert_int_equal(count_instances(g, "int[][]", NULL), 37);
    assert_int_equal(count_instances(g, "java.lang.String[]", NULL), 1396);
    ms_hidx b = ms_hgraph_find(g, 0xB0D60401);
    assert_int_not_equal(b, MS_HIDX_NONE);
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[b]), "byte[]");
    assert_int_equal(g->obj_size[b], 43224);
    /* java.lang.Thread$State.$VALUES has 6 elements (perflib: n x 4 bytes) */
    const ms_hclass *ts = &g->classes[cls(g, "java.lang.Thread$State")];
    int found = 0;
    for (uint32_t s = 0; s < ts->static_count; s++) {
        const ms_hstatic *st = &g->statics[ts->static_first + s];
        if (strcmp(g->strs + st->name, "$VALUES"))
            continue;
        ms_hidx v = ms_hgraph_find(g, st->value);
        assert_int_not_equal(v, MS_HIDX_NONE);
        assert_int_equal(g->obj_kind[v], MS_HOBJ_OBJ_ARRAY);
        assert_int_equal(g->obj_size[v], 6 * 4);
        assert_int_equal(g->edge_off[v + 1] - g->edge_off[v], 6);
        for (uint64_t e = g->edge_off[v]; e < g->edge_off[v + 1]; e++)
            assert_int_equal(g->obj_class[g->edge_dst[e]], cls(g, "java.lang.Thread$State"));
        found = 1;
    }
    assert_true(found);
    /* heaps: zygote and app only */
    uint64_t per[256] = {0};
    for (uint32_t i = 0; i < g->nobj; i++)
        per[g->obj_heap[i]]++;
    int z = 0, a = 0;
    for (uint32_t h = 0; h < g->nheap; h++) {
        const char *n = g->strs + g->heaps[h].name;
        if (!strcmp(n, "zygote")) {
            z = 1;
            assert_int_equal(per[h], 42243);
        } else if (!strcmp(n, "app")) {
            a = 1;
            assert_int_equal(per[h], 1444);
        } else {
            assert_int_equal(per[h], 0);
        }
    }
    assert_true(z && a);
    ms_hgraph_free(g);
}

/* MAT TestInstanceSizes: java.lang.String is 40 bytes on 6u18 x64, 32 with compressed
 * oops (detected from array spacing, as MAT does). */
static void test_mat_instance_sizes(void **state)
{
    (void)state;
    ms_hgraph *g = load("mat__sun_jdk6_18_x64.hprof");
    assert_int_equal(g->model.compressed_oops, 0);
    assert_int_equal(g->classes[cls(g, "java.lang.String")].inst_shallow, 40);
    ms_hgraph_free(g);
    g = load("mat__sun_jdk6_30_x64_compressedOops.hprof");
    assert_int_equal(g->model.compressed_oops, 1);
    assert_int_equal(g->classes[cls(g, "java.lang.String")].inst_shallow, 32);
    ms_hgraph_free(g);
}

static void assert_same_graph(const ms_hgraph *a, const ms_hgraph *b)
{
        assert_int_equal(a->nobj, b->nobj);
        assert_int_equal(a->nedge, b->nedge);
        assert_int_equal(a->nclass, b->nclass);
        uint32_t n = a->nobj;
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(ms_hgraph_id(a, i), ms_hgraph_id(b, i));
        assert_memory_equal(a->obj_class, b->obj_class, n * sizeof *a->obj_class);
        assert_memory_equal(a->obj_size, b->obj_size, n * sizeof *a->obj_size);
        assert_memory_equal(a->obj_kind, b->obj_kind, n);
        assert_memory_equal(a->obj_heap, b->obj_heap, n);
        assert_memory_equal(a->edge_off, b->edge_off, (n + 1) * sizeof *a->edge_off);
        assert_memory_equal(a->edge_dst, b->edge_dst, a->nedge * sizeof *a->edge_dst);
        assert_memory_equal(a->edge_label, b->edge_label, a->nedge * sizeof *a->edge_label);
        assert_int_equal(a->problem_total, b->problem_total);
        assert_int_equal(a->nroot, b->nroot);
        for (uint32_t k = 0; k < a->nroot; k++) {
            assert_int_equal(a->roots[k].id, b->roots[k].id);
            assert_int_equal(a->roots[k].obj, b->roots[k].obj);
        }
        assert_int_equal(a->nstrings, b->nstrings);
        assert_int_equal(a->file_size, b->file_size);
        assert_memory_equal(a->record_count, b->record_count, sizeof a->record_count);
        assert_memory_equal(a->subrecord_count, b->subrecord_count, sizeof a->subrecord_count);
        for (uint32_t k = 0; k < a->nclass; k++)
            assert_string_equal(a->strs + a->classes[k].name, b->strs + b->classes[k].name);
}

/* Two threads (each half of the heap-dump segments) build the very same graph. */
static void test_threads_same_graph(void **state)
{
    (void)state;
    const char *names[] = {"adt-tools-base__dialer.android-hprof", "hprof-slurp__hprof-64.bin"};
    for (int d = 0; d < 2; d++) {
        ms_hgraph *a = load_threads(names[d], 1), *b = load_threads(names[d], 2);
        assert_same_graph(a, b);
        ms_hgraph_free(a);
        ms_hgraph_free(b);
    }
}

/* A file is read through windows that slide forward (input.h): with windows so small
 * that every record, header and array crosses an end (1 byte: each need is a read of
 * its own; 61: odd, below a record's fixed part), on one thread and two, every sample
 * gives the graph read from memory in one piece. */
static void test_windows_same_graph(void **state)
{
    (void)state;
    const char *names[] = {"adt-tools-base__dialer.android-hprof", "hprof-slurp__hprof-32.bin",
                           "hprof-slurp__hprof-64.bin", "mat__sun_jdk5_64bit.hprof",
                           "mat__sun_jdk6_18_x64.hprof", "mat__sun_jdk6_30_x64_compressedOops.hprof",
                           "mat__sun_jdk6_32bit.hprof"};
    const size_t windows[] = {1, 61, 4096};
    for (size_t d = 0; d < sizeof names / sizeof *names; d++) {
        char path[4096], err[512];
        sample_path(path, sizeof path, names[d]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        rewind(f);
        char *data = malloc((size_t)len);
        assert_non_null(data);
        assert_int_equal(fread(data, 1, (size_t)len, f), (size_t)len);
        fclose(f);
        ms_hprof_read_opts one = {.threads = 1};
        ms_hgraph *m = NULL;
        if (ms_hprof_read_mem(data, (size_t)len, &one, &m, err, sizeof err))
            fail_msg("%s: %s", names[d], err);
        for (size_t w = 0; w < sizeof windows / sizeof *windows; w++)
            for (int t = 1; t <= 2; t++) {
                ms_hprof_read_opts o = {.threads = t, .window = windows[w]};
                ms_hgraph *g = load_opts(names[d], &o);
                assert_same_graph(m, g);
                ms_hgraph_free(g);
            }
        ms_hgraph_free(m);
        free(data);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dialer),
        cmocka_unit_test(test_mat_instance_sizes),
        cmocka_unit_test(test_threads_same_graph),
        cmocka_unit_test(test_windows_same_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
