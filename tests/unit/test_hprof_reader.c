/* Unit tests of the HPROF reader on dumps built byte by byte here, so every field's
 * expected value is known: record kinds, roots, references and their labels, sizes in
 * both models, Android heaps and tags, and every kind of bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmp_file.h"

#include "hprof/histogram.h"
#include "hprof/reader.h"

/* ---- a tiny HPROF writer ---------------------------------------------------------- */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
    unsigned ids;
    size_t rec; /* start of the open record */
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void u1(buf *b, unsigned v) { uint8_t c = (uint8_t)v; put(b, &c, 1); }
static void u2(buf *b, unsigned v) { u1(b, v >> 8); u1(b, v); }
static void u4(buf *b, uint32_t v) { u2(b, v >> 16); u2(b, v & 0xFFFF); }
static void u8(buf *b, uint64_t v) { u4(b, (uint32_t)(v >> 32)); u4(b, (uint32_t)v); }
static void id(buf *b, uint64_t v)
{
    if (b->ids == 8)
        u8(b, v);
    else
        u4(b, (uint32_t)v);
}

static void header(buf *b, const char *version, unsigned ids)
{
    memset(b, 0, sizeof *b);
    b->ids = ids;
    put(b, version, strlen(version) + 1);
    u4(b, ids);
    u8(b, 1700000000123ull);
}
static void rec_open(buf *b, unsigned tag)
{
    u1(b, tag);
    u4(b, 0);
    b->rec = b->n;
    u4(b, 0); /* length, patched */
}
static void rec_close(buf *b)
{
    uint32_t len = (uint32_t)(b->n - b->rec - 4);
    b->p[b->rec] = (uint8_t)(len >> 24);
    b->p[b->rec + 1] = (uint8_t)(len >> 16);
    b->p[b->rec + 2] = (uint8_t)(len >> 8);
    b->p[b->rec + 3] = (uint8_t)len;
}
static void str(buf *b, uint64_t sid, const char *s)
{
    rec_open(b, 0x01);
    id(b, sid);
    put(b, s, strlen(s));
    rec_close(b);
}
static void load_class(buf *b, uint64_t cid, uint64_t sid)
{
    rec_open(b, 0x02);
    u4(b, 1);
    id(b, cid);
    u4(b, 0);
    id(b, sid);
    rec_close(b);
}
typedef struct fdesc {
    uint64_t name;
    unsigned type;
} fdesc;
static uint64_t next_loader; /* loader id of the next class_dump (then back to 0) */

/* A CLASS_DUMP with no constant pool, one optional object static, and fields. */
static void class_dump(buf *b, uint64_t cid, uint64_t super, uint32_t isize, uint64_t static_name,
                       uint64_t static_val, const fdesc *f, unsigned nf)
{
    u1(b, 0x20);
    id(b, cid);
    u4(b, 0);
    id(b, super);
    id(b, next_loader); /* loader */
    next_loader = 0;
    id(b, 0);
    id(b, 0);
    id(b, 0);
    id(b, 0);
    u4(b, isize);
    u2(b, 0);
    if (static_name) {
        u2(b, 2);
        id(b, static_name);
        u1(b, 2);
        id(b, static_val);
        id(b, static_name + 1000); /* an int static named by a missing string */
        u1(b, 10);
        u4(b, 42);
    } else {
        u2(b, 0);
    }
    u2(b, nf);
    for (unsigned i = 0; i < nf; i++) {
        id(b, f[i].name);
        u1(b, f[i].type);
    }
}

enum {
    S_OBJECT = 1, S_REF, S_WEAK, S_FOO, S_REFERENT, S_NEXT, S_X, S_B, S_OA, S_CLASS, S_SFIELD,
    S_QUEUE, S_ZYGOTE, S_APP,
};
#define C_OBJECT 0x100
#define C_REF 0x110
#define C_WEAK 0x120
#define C_FOO 0x130
#define C_B 0x140
#define C_OA 0x150
#define C_CLASS 0x160
#define O_FOO1 0x1000
#define O_FOO2 0x1010
#define O_WEAK 0x1020
#define O_ARR 0x1030
#define O_BYTES 0x1040

/* Builds the reference dump: classes Object, Reference, WeakReference, Foo {next, x},
 * byte[], Object[], Class; two Foos (Foo1.next = Foo2), a WeakReference to Foo1, an
 * Object[3] = {Foo1, null, Foo2}, a byte[10]; roots of several types. extra_foo_next
 * replaces Foo2.next (0 = null). */
static void build(buf *b, const char *version, unsigned ids, int segments, uint64_t foo2_next)
{
    header(b, version, ids);
    const char *names[] = {NULL, "java/lang/Object", "java/lang/ref/Reference",
                           "java/lang/ref/WeakReference", "Foo", "referent", "next", "x", "[B",
                           "[Ljava/lang/Object;", "java/lang/Class", "sfield", "queue", "zygote", "app"};
    for (unsigned i = 1; i < sizeof names / sizeof names[0]; i++)
        str(b, i, names[i]);
    load_class(b, C_OBJECT, S_OBJECT);
    load_class(b, C_REF, S_REF);
    load_class(b, C_WEAK, S_WEAK);
    load_class(b, C_FOO, S_FOO);
    load_class(b, C_B, S_B);
    load_class(b, C_OA, S_OA);
    load_class(b, C_CLASS, S_CLASS);
    rec_open(b, segments ? 0x1C : 0x0C);
    class_dump(b, C_OBJECT, 0, 0, 0, 0, NULL, 0);
    fdesc rf[] = {{S_REFERENT, 2}, {S_QUEUE, 2}};
    class_dump(b, C_REF, C_OBJECT, 2 * ids, 0, 0, rf, 2);
    class_dump(b, C_WEAK, C_REF, 2 * ids, 0, 0, NULL, 0);
    fdesc ff[] = {{S_NEXT, 2}, {S_X, 10}};
    class_dump(b, C_FOO, C_OBJECT, ids + 4, S_SFIELD, O_FOO1, ff, 2);
    class_dump(b, C_B, C_OBJECT, 0, 0, 0, NULL, 0);
    class_dump(b, C_OA, C_OBJECT, 0, 0, 0, NULL, 0);
    class_dump(b, C_CLASS, C_OBJECT, 0, 0, 0, NULL, 0);
    if (segments) {
        rec_close(b);
        rec_open(b, 0x1C);
    }
    /* Foo1 {next = Foo2, x = 7} */
    u1(b, 0x21); id(b, O_FOO1); u4(b, 0); id(b, C_FOO); u4(b, ids + 4); id(b, O_FOO2); u4(b, 7);
    u1(b, 0x21); id(b, O_FOO2); u4(b, 0); id(b, C_FOO); u4(b, ids + 4); id(b, foo2_next); u4(b, 1);
    /* WeakReference {referent = Foo1, queue = null} */
    u1(b, 0x21); id(b, O_WEAK); u4(b, 0); id(b, C_WEAK); u4(b, 2 * ids); id(b, O_FOO1); id(b, 0);
    u1(b, 0x22); id(b, O_ARR); u4(b, 0); u4(b, 3); id(b, C_OA); id(b, O_FOO1); id(b, 0); id(b, O_FOO2);
    u1(b, 0x23); id(b, O_BYTES); u4(b, 0); u4(b, 10); u1(b, 8);
    for (int i = 0; i < 10; i++)
        u1(b, i);
    /* roots */
    u1(b, 0x05); id(b, C_FOO);
    u1(b, 0x01); id(b, O_WEAK); id(b, 0x77);
    u1(b, 0x03); id(b, O_ARR); u4(b, 1); u4(b, 0);
    u1(b, 0x08); id(b, 0); u4(b, 1); u4(b, 1); /* thread object 0: not a root */
    u1(b, 0xFF); id(b, 0xDEAD);                /* names nothing in the dump */
    rec_close(b);
    if (segments) {
        rec_open(b, 0x2C);
        rec_close(b);
    }
}

static ms_hgraph *read_ok(const buf *b, const ms_hprof_read_opts *o)
{
    ms_hgraph *g = NULL;
    char err[512] = "";
    int rc = ms_hprof_read_mem(b->p, b->n, o, &g, err, sizeof err);
    if (rc)
        fail_msg("read failed: %s", err);
    assert_non_null(g);
    return g;
}

static int read_err(const buf *b, char *err, size_t len)
{
    ms_hgraph *g = NULL;
    int rc = ms_hprof_read_mem(b->p, b->n, NULL, &g, err, len);
    if (rc == 0)
        ms_hgraph_free(g);
    else
        assert_null(g);
    return rc;
}

static uint32_t cls(const ms_hgraph *g, const char *name)
{
    uint32_t k = ms_hgraph_find_class(g, name, UINT64_MAX, 0);
    if (k == MS_HCLASS_NONE)
        fail_msg("class %s not found", name);
    return k;
}

/* The edges of object i as "name->id" strings joined by ' ', referents marked '~'. */
static void edges_of(const ms_hgraph *g, ms_hidx i, char *out, size_t len)
{
    out[0] = '\0';
    for (uint64_t e = g->edge_off[i]; e < g->edge_off[i + 1]; e++) {
        char nm[64], one[128];
        ms_hgraph_edge_name(g, e, nm, sizeof nm);
        snprintf(one, sizeof one, "%s%s%s->%llx", out[0] ? " " : "",
                 ms_hedge_kind_of(g->edge_label[e]) == MS_HEDGE_REFERENT ? "~" : "", nm,
                 (unsigned long long)ms_hgraph_id(g, g->edge_dst[e]));
        strncat(out, one, len - strlen(out) - 1);
    }
}

static void check_graph(const ms_hgraph *g, unsigned ids)
{
    char e[512];
    assert_int_equal(g->id_size, ids);
    assert_int_equal(g->timestamp_ms, 1700000000123ull);
    assert_int_equal(g->nobj, 12);
    ms_hidx foo1 = ms_hgraph_find(g, O_FOO1), foo2 = ms_hgraph_find(g, O_FOO2);
    ms_hidx weak = ms_hgraph_find(g, O_WEAK), arr = ms_hgraph_find(g, O_ARR);
    ms_hidx bytes = ms_hgraph_find(g, O_BYTES), cfoo = ms_hgraph_find(g, C_FOO);
    assert_int_not_equal(foo1, MS_HIDX_NONE);
    assert_int_equal(ms_hgraph_find(g, 0x1001), MS_HIDX_NONE);
    assert_int_equal(ms_hgraph_find(g, 0), MS_HIDX_NONE);
    assert_int_equal(ms_hgraph_find(g, UINT64_MAX), MS_HIDX_NONE);
    assert_int_equal(g->obj_kind[foo1], MS_HOBJ_INSTANCE);
    assert_int_equal(g->obj_kind[arr], MS_HOBJ_OBJ_ARRAY);
    assert_int_equal(g->obj_kind[bytes], MS_HOBJ_PRIM_ARRAY);
    assert_int_equal(g->obj_kind[cfoo], MS_HOBJ_CLASS);
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[foo1]), "Foo");
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[arr]), "java.lang.Object[]");
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[bytes]), "byte[]");
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[cfoo]), "java.lang.Class");
    assert_int_equal(ms_hgraph_class_object_class(g, cfoo), cls(g, "Foo"));
    assert_int_equal(ms_hgraph_class_object_class(g, foo1), MS_HCLASS_NONE);
    /* references and their names */
    edges_of(g, foo1, e, sizeof e);
    assert_string_equal(e, "next->1010");
    edges_of(g, foo2, e, sizeof e);
    assert_string_equal(e, "");
    edges_of(g, weak, e, sizeof e);
    assert_string_equal(e, "~referent->1000");
    edges_of(g, arr, e, sizeof e);
    assert_string_equal(e, "[0]->1000 [2]->1010");
    edges_of(g, bytes, e, sizeof e);
    assert_string_equal(e, "");
    edges_of(g, cfoo, e, sizeof e);
    assert_string_equal(e, "static sfield->1000 <super>->100");
    /* classes */
    const ms_hclass *foo = &g->classes[cls(g, "Foo")];
    assert_int_equal(foo->field_count, 2);
    assert_string_equal(g->strs + g->fields[foo->field_first].name, "next");
    assert_int_equal(g->fields[foo->field_first + 1].type, MS_HT_INT);
    assert_int_equal(foo->static_count, 2);
    assert_int_equal(g->statics[foo->static_first + 1].value, 42);
    assert_string_equal(ms_hgraph_class_name(g, foo->super), "java.lang.Object");
    assert_true(foo->flags & MS_HCLASS_STICKY);
    assert_int_equal(g->classes[cls(g, "java.lang.ref.WeakReference")].ref_kind, MS_HREF_WEAK);
    assert_int_equal(g->classes[cls(g, "java.lang.ref.Reference")].ref_kind, MS_HREF_STRONG);
    assert_int_equal(foo->ref_kind, MS_HREF_NONE);
    assert_int_equal(g->classes[cls(g, "byte[]")].prim_type, MS_HT_BYTE);
    assert_true(ms_hgraph_class_is_a(g, cls(g, "java.lang.ref.WeakReference"), "java.lang.ref.Reference"));
    assert_false(ms_hgraph_class_is_a(g, cls(g, "Foo"), "java.lang.ref.Reference"));
    /* roots: thread object 0 is dropped, the unknown root is kept with no object */
    assert_int_equal(g->nroot, 4);
    assert_int_equal(g->roots[0].type, 0x05);
    assert_int_equal(g->roots[0].obj, cfoo);
    assert_int_equal(g->roots[1].type, 0x01);
    assert_int_equal(g->roots[1].obj, weak);
    assert_int_equal(g->roots[2].type, 0x03);
    assert_int_equal(g->roots[2].thread_serial, 1);
    assert_int_equal(g->roots[2].frame, 0);
    assert_int_equal(g->roots[3].obj, MS_HIDX_NONE);
    assert_int_equal(g->problem_total, 1);
    assert_non_null(strstr(g->problems[0].msg, "0xdead"));
    assert_int_equal(g->nheap, 1);
    assert_string_equal(ms_hgraph_heap_name(g, foo1), "default");
}

static void test_hotspot_ids8(void **state)
{
    (void)state;
    buf b;
    build(&b, "JAVA PROFILE 1.0.2", 8, 1, 0);
    ms_hgraph *g = read_ok(&b, NULL);
    check_graph(g, 8);
    ms_hidx foo1 = ms_hgraph_find(g, O_FOO1);
    /* MAT model, 8-byte references: header 16; Foo = align(16 + 8 + 4) = 32 */
    assert_int_equal(g->model.flavor, MS_HSIZE_HOTSPOT);
    assert_int_equal(g->obj_size[foo1], 32);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_BYTES)], 40); /* align(24 + 10) */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_ARR)], 48);   /* align(20 + 3 * 8) */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_WEAK)], 32);  /* 16 + 16 */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, C_FOO)], 16);   /* statics 8 + 4, aligned */
    assert_int_equal(g->record_count[0x1C], 2);
    assert_int_equal(g->record_count[0x2C], 1);
    assert_int_equal(g->subrecord_count[0x21], 3);
    ms_hgraph_free(g);
    /* compressed references: header 12; Foo = align(12 + 4 + 4) = 24, byte[10] = 16 + 10 -> 32 */
    ms_hprof_read_opts o = {.compressed_oops = 1};
    g = read_ok(&b, &o);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_FOO1)], 24);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_BYTES)], 32);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_ARR)], 32); /* align(16 + 12) */
    ms_hgraph_free(g);
    free(b.p);
}

static void test_hotspot_ids4(void **state)
{
    (void)state;
    buf b;
    build(&b, "JAVA PROFILE 1.0.1", 4, 0, 0);
    ms_hgraph *g = read_ok(&b, NULL);
    check_graph(g, 4);
    /* 32-bit: header 8; Foo = align(8 + 4 + 4) = 16; byte[10] = align(12 + 10) = 24 */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_FOO1)], 16);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_BYTES)], 24);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_ARR)], 24);
    /* the histogram */
    ms_hhist h;
    char err[128];
    assert_int_equal(ms_hhist_build(g, NULL, &h, err, sizeof err), 0);
    ms_hhist_sort(&h, g, MS_HHIST_SORT_INSTANCES);
    assert_string_equal(ms_hgraph_class_name(g, h.rows[0].cls), "java.lang.Class");
    assert_int_equal(h.rows[0].instances, 7);
    assert_string_equal(ms_hgraph_class_name(g, h.rows[1].cls), "Foo");
    assert_int_equal(h.rows[1].instances, 2);
    assert_int_equal(h.rows[1].shallow, 32);
    assert_int_equal(h.total_instances, 12);
    ms_hhist_free(&h);
    ms_hgraph_free(g);
    free(b.p);
}

/* Android: HEAP_DUMP_INFO heaps, the Android root tags, PRIMITIVE_ARRAY_NODATA. */
static void test_android(void **state)
{
    (void)state;
    buf b;
    header(&b, "JAVA PROFILE 1.0.3", 4);
    str(&b, S_OBJECT, "java.lang.Object");
    str(&b, S_FOO, "Foo");
    str(&b, S_X, "x");
    str(&b, S_ZYGOTE, "zygote");
    str(&b, S_APP, "app");
    str(&b, S_B, "byte[]");
    load_class(&b, C_OBJECT, S_OBJECT);
    load_class(&b, C_FOO, S_FOO);
    load_class(&b, C_B, S_B);
    rec_open(&b, 0x1C);
    u1(&b, 0xFE); u4(&b, 'Z'); id(&b, S_ZYGOTE);
    class_dump(&b, C_OBJECT, 0, 8, 0, 0, NULL, 0);
    fdesc ff[] = {{S_X, 10}};
    class_dump(&b, C_FOO, C_OBJECT, 12, 0, 0, ff, 1);
    class_dump(&b, C_B, C_OBJECT, 0, 0, 0, NULL, 0);
    u1(&b, 0x21); id(&b, 0x2000); u4(&b, 0); id(&b, C_FOO); u4(&b, 4); u4(&b, 5);
    rec_close(&b);
    rec_open(&b, 0x1C);
    u1(&b, 0xFE); u4(&b, 'A'); id(&b, S_APP);
    u1(&b, 0x21); id(&b, 0x2010); u4(&b, 0); id(&b, C_FOO); u4(&b, 4); u4(&b, 6);
    u1(&b, 0x23); id(&b, 0x2020); u4(&b, 0); u4(&b, 3); u1(&b, 8); u1(&b, 1); u1(&b, 2); u1(&b, 3);
    u1(&b, 0xC3); id(&b, 0x2030); u4(&b, 0); u4(&b, 100); u1(&b, 10); /* no element bytes */
    unsigned one_id[] = {0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x90};
    for (unsigned i = 0; i < 6; i++) {
        u1(&b, one_id[i]);
        id(&b, 0x2000);
    }
    u1(&b, 0x8E); id(&b, 0x2010); u4(&b, 3); u4(&b, 0xFFFFFFFF);
    u1(&b, 0x02); id(&b, 0x2010); u4(&b, 3); u4(&b, 2);
    u1(&b, 0x04); id(&b, 0x2010); u4(&b, 3);
    u1(&b, 0x06); id(&b, 0x2010); u4(&b, 3);
    u1(&b, 0x07); id(&b, 0x2010);
    rec_close(&b);
    /* without its HEAP_DUMP_END the dump was cut at a record boundary: a problem */
    ms_hgraph *g = read_ok(&b, NULL);
    assert_true(g->ends_early);
    assert_int_equal(g->problem_total, 1);
    assert_non_null(strstr(g->problems[0].msg, "ends early"));
    ms_hgraph_free(g);
    rec_open(&b, 0x2C);
    rec_close(&b);
    g = read_ok(&b, NULL);
    assert_false(g->ends_early);
    assert_int_equal(g->model.flavor, MS_HSIZE_ANDROID);
    assert_int_equal(g->nobj, 7);
    assert_string_equal(ms_hgraph_heap_name(g, ms_hgraph_find(g, 0x2000)), "zygote");
    assert_string_equal(ms_hgraph_heap_name(g, ms_hgraph_find(g, C_FOO)), "zygote");
    assert_string_equal(ms_hgraph_heap_name(g, ms_hgraph_find(g, 0x2010)), "app");
    assert_string_equal(ms_hgraph_heap_name(g, ms_hgraph_find(g, 0x2030)), "app");
    /* perflib sizes: instance = CLASS_DUMP instance size, arrays = elements only */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, 0x2000)], 12);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, 0x2020)], 3);
    assert_int_equal(g->obj_size[ms_hgraph_find(g, 0x2030)], 400);
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[ms_hgraph_find(g, 0x2030)]), "int[]");
    assert_true(g->classes[g->obj_class[ms_hgraph_find(g, 0x2030)]].flags & MS_HCLASS_SYNTHETIC);
    assert_string_equal(ms_hgraph_class_name(g, g->obj_class[ms_hgraph_find(g, 0x2020)]), "byte[]");
    assert_int_equal(g->nroot, 11);
    assert_int_equal(g->roots[6].type, 0x8E);
    assert_int_equal(g->roots[6].thread_serial, 3);
    assert_int_equal(g->roots[6].frame, -1);
    assert_int_equal(g->roots[7].frame, 2);
    assert_string_equal(ms_hroot_type_key(0x8D), "vm_internal");
    assert_int_equal(g->problem_total, 0);
    ms_hgraph_free(g);
    free(b.p);
}

/* Two classes of one name from two class loaders stay two rows of the histogram. */
static void test_two_loaders(void **state)
{
    (void)state;
    buf b;
    header(&b, "JAVA PROFILE 1.0.2", 8);
    str(&b, S_OBJECT, "java/lang/Object");
    str(&b, S_FOO, "com/example/Plugin");
    load_class(&b, C_OBJECT, S_OBJECT);
    load_class(&b, 0x200, S_FOO);
    load_class(&b, 0x210, S_FOO);
    rec_open(&b, 0x1C);
    class_dump(&b, C_OBJECT, 0, 0, 0, 0, NULL, 0);
    /* the loaders themselves: plain objects */
    u1(&b, 0x21); u8(&b, 0x500); u4(&b, 0); u8(&b, C_OBJECT); u4(&b, 0);
    u1(&b, 0x21); u8(&b, 0x510); u4(&b, 0); u8(&b, C_OBJECT); u4(&b, 0);
    next_loader = 0x500;
    class_dump(&b, 0x200, C_OBJECT, 0, 0, 0, NULL, 0);
    next_loader = 0x510;
    class_dump(&b, 0x210, C_OBJECT, 0, 0, 0, NULL, 0);
    for (int i = 0; i < 3; i++) {
        u1(&b, 0x21); u8(&b, 0x1000 + 16 * i); u4(&b, 0); u8(&b, i == 2 ? 0x210 : 0x200); u4(&b, 0);
    }
    rec_close(&b);
    ms_hgraph *g = read_ok(&b, NULL);
    uint32_t k1 = ms_hgraph_find_class(g, "com.example.Plugin", 0x500, 0);
    uint32_t k2 = ms_hgraph_find_class(g, "com.example.Plugin", 0x510, 0);
    assert_int_not_equal(k1, MS_HCLASS_NONE);
    assert_int_not_equal(k2, MS_HCLASS_NONE);
    assert_int_not_equal(k1, k2);
    assert_int_equal(g->classes[k1].loader, ms_hgraph_find(g, 0x500));
    ms_hhist h;
    char err[128];
    assert_int_equal(ms_hhist_build(g, NULL, &h, err, sizeof err), 0);
    ms_hhist_sort(&h, g, MS_HHIST_SORT_INSTANCES);
    int seen = 0;
    for (size_t i = 0; i < h.n; i++) {
        if (h.rows[i].cls == k1) {
            assert_int_equal(h.rows[i].instances, 2);
            seen |= 1;
        }
        if (h.rows[i].cls == k2) {
            assert_int_equal(h.rows[i].instances, 1);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    /* the text output names the loader of each */
    char *text = NULL;
    size_t tlen = 0;
    FILE *fp = open_memstream(&text, &tlen);
    assert_int_equal(ms_hhist_print(fp, g, &h, 0, "text", err, sizeof err), 0);
    fclose(fp);
    assert_non_null(strstr(text, "com.example.Plugin (loader 0x500)"));
    assert_non_null(strstr(text, "com.example.Plugin (loader 0x510)"));
    assert_null(strstr(text, "java.lang.Object (loader"));
    free(text);
    ms_hhist_free(&h);
    ms_hgraph_free(g);
    free(b.p);
}

/* ---- bad input -------------------------------------------------------------------- */
static void expect_err(const buf *b, const char *needle1, const char *needle2)
{
    char err[512] = "";
    assert_int_equal(read_err(b, err, sizeof err), -1);
    if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
        fail_msg("error '%s' lacks '%s' / '%s'", err, needle1, needle2 ? needle2 : "");
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    buf b;
    build(&b, "JAVA PROFILE 1.0.2", 8, 1, 0);
    size_t full = b.n;
    int errors = 0;
    for (size_t cut = 0; cut < full; cut++) {
        buf t = b;
        t.n = cut;
        char err[512] = "";
        ms_hgraph *g = NULL;
        int rc = ms_hprof_read_mem(b.p, cut, NULL, &g, err, sizeof err);
        if (rc) {
            errors++;
            assert_non_null(strstr(err, cut < 31 ? "" : "offset"));
        } else {
            ms_hgraph_free(g);
        }
        (void)t;
    }
    /* every cut but those at record boundaries is an error */
    assert_true(errors > (int)full - 40);
    /* a cut inside the heap dump names the record */
    buf t = b;
    t.n = full - 20;
    expect_err(&t, "HEAP_DUMP_SEGMENT", "offset");
    free(b.p);
}

static void test_bad_records(void **state)
{
    (void)state;
    buf b;
    /* not HPROF, bad version, bad id size */
    header(&b, "JAVA PROFILE 9.9.9", 8);
    expect_err(&b, "unsupported HPROF version", NULL);
    free(b.p);
    header(&b, "GIF89a", 8);
    expect_err(&b, "not an HPROF file", NULL);
    free(b.p);
    header(&b, "JAVA PROFILE 1.0.2", 3);
    expect_err(&b, "identifier size 3", NULL);
    free(b.p);
    /* LOAD_CLASS too short */
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x02);
    u4(&b, 1);
    rec_close(&b);
    expect_err(&b, "LOAD_CLASS", "offset 31");
    free(b.p);
    /* record length beyond the file */
    header(&b, "JAVA PROFILE 1.0.2", 8);
    u1(&b, 0x01); u4(&b, 0); u4(&b, 1000); u8(&b, 1);
    expect_err(&b, "exceeds", "STRING");
    free(b.p);
    /* unknown sub-record */
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    u1(&b, 0x42);
    u8(&b, 0);
    rec_close(&b);
    expect_err(&b, "unknown heap-dump sub-record tag 0x42", "offset 40");
    free(b.p);
    /* absurd counts */
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    u1(&b, 0x22); u8(&b, 0x10); u4(&b, 0); u4(&b, 0x7FFFFFFF); u8(&b, 0x20); u8(&b, 0);
    rec_close(&b);
    expect_err(&b, "claims 2147483647 elements", "OBJECT_ARRAY_DUMP");
    free(b.p);
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    u1(&b, 0x23); u8(&b, 0x10); u4(&b, 0); u4(&b, 0xFFFFFFFF); u1(&b, 11);
    rec_close(&b);
    expect_err(&b, "PRIMITIVE_ARRAY_DUMP", "claims");
    free(b.p);
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    u1(&b, 0x23); u8(&b, 0x10); u4(&b, 0); u4(&b, 1); u1(&b, 3); u1(&b, 0);
    rec_close(&b);
    expect_err(&b, "invalid element type 3", NULL);
    free(b.p);
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    u1(&b, 0x21); u8(&b, 0x10); u4(&b, 0); u8(&b, 0x20); u4(&b, 0xFFFFFF00);
    rec_close(&b);
    expect_err(&b, "INSTANCE_DUMP", "claims");
    free(b.p);
    header(&b, "JAVA PROFILE 1.0.2", 8);
    rec_open(&b, 0x1C);
    class_dump(&b, 0x10, 0, 0, 0, 0, NULL, 0);
    b.n -= 2; /* field count cut off, record still consistent */
    u1(&b, 0xFF);
    rec_close(&b);
    expect_err(&b, "CLASS_DUMP", "truncated");
    free(b.p);
}

static void test_problems(void **state)
{
    (void)state;
    buf b;
    /* Foo2.next names a missing object; a duplicate id */
    build(&b, "JAVA PROFILE 1.0.2", 8, 1, 0x9999);
    rec_open(&b, 0x1C);
    u1(&b, 0x23); u8(&b, O_BYTES); u4(&b, 0); u4(&b, 1); u1(&b, 8); u1(&b, 0);
    rec_close(&b);
    ms_hgraph *g = read_ok(&b, NULL);
    assert_int_equal(g->nobj, 12);
    assert_int_equal(g->dangling_refs, 1);
    assert_int_equal(g->duplicate_ids, 1);
    /* the first byte[] (10 elements) is kept */
    assert_int_equal(g->obj_size[ms_hgraph_find(g, O_BYTES)], 40);
    int seen_dangling = 0, seen_dup = 0;
    for (uint32_t i = 0; i < g->nproblem; i++) {
        if (strstr(g->problems[i].msg, "0x9999") && g->problems[i].subrecord == 0x21 && g->problems[i].offset > 0)
            seen_dangling = 1;
        if (strstr(g->problems[i].msg, "duplicate object id 0x1040") && g->problems[i].subrecord == 0x23 &&
            g->problems[i].offset > 0)
            seen_dup = 1;
    }
    assert_true(seen_dangling);
    assert_true(seen_dup);
    ms_hgraph_free(g);
    free(b.p);
}

/* A top-level record tag HPROF does not define is an error where it stands: its length
 * cannot be trusted (zeros would read as records of tag 0, nine bytes each). */
static void test_unknown_record_tag(void **state)
{
    (void)state;
    buf b;
    build(&b, "JAVA PROFILE 1.0.2", 8, 1, 0);
    size_t at = b.n;
    rec_open(&b, 0x55);
    u4(&b, 1);
    rec_close(&b);
    char want[64];
    snprintf(want, sizeof want, "offset %zu ", at);
    expect_err(&b, want, "unknown record tag 0x55");
    free(b.p);
    /* zeros after a valid dump: tag 0 at the first of them */
    build(&b, "JAVA PROFILE 1.0.2", 8, 1, 0);
    at = b.n;
    for (int i = 0; i < 4096; i++)
        u1(&b, 0);
    snprintf(want, sizeof want, "offset %zu ", at);
    expect_err(&b, want, "unknown record tag 0x00");
    free(b.p);
}

/* Classes made up while reading (instances and arrays of classes not dumped, primitive
 * arrays without their class): one "(unknown class)" whichever record needs it first,
 * numbered in name order, and the same graph on one thread and two (a fuzzed dump read
 * on two threads once numbered them in the order the threads met them). */
static void test_made_up_classes(void **state)
{
    (void)state;
    buf b;
    header(&b, "JAVA PROFILE 1.0.2", 8);
    str(&b, S_OBJECT, "java/lang/Object");
    load_class(&b, C_OBJECT, S_OBJECT);
    rec_open(&b, 0x1C);
    class_dump(&b, C_OBJECT, 0, 0, 0, 0, NULL, 0);
    /* an Object[] of an undumped class with no LOAD_CLASS, an int[], an instance of an
     * undumped class */
    u1(&b, 0x22); id(&b, 0x2000); u4(&b, 0); u4(&b, 1); id(&b, 0x777); id(&b, 0x2010);
    u1(&b, 0x23); id(&b, 0x2010); u4(&b, 0); u4(&b, 1); u1(&b, 10); u4(&b, 5);
    u1(&b, 0x21); id(&b, 0x2020); u4(&b, 0); id(&b, 0x888); u4(&b, 0);
    rec_close(&b);
    rec_open(&b, 0x1C);
    /* the second half: an instance of another undumped class, a byte[] */
    u1(&b, 0x21); id(&b, 0x2030); u4(&b, 0); id(&b, 0x889); u4(&b, 0);
    u1(&b, 0x23); id(&b, 0x2040); u4(&b, 0); u4(&b, 2); u1(&b, 8); u1(&b, 1); u1(&b, 2);
    rec_close(&b);
    rec_open(&b, 0x2C);
    rec_close(&b);

    ms_hprof_read_opts one = {.threads = 1}, two = {.threads = 2};
    ms_hgraph *g = read_ok(&b, &one), *h = read_ok(&b, &two);
    assert_int_equal(g->nobj, 6);
    uint32_t unknown = 0, prev = MS_HCLASS_NONE;
    for (uint32_t k = 0; k < g->nclass; k++) {
        if (!(g->classes[k].flags & MS_HCLASS_SYNTHETIC) || !strcmp(g->strs + g->classes[k].name, "java.lang.Class"))
            continue;
        unknown += !strcmp(g->strs + g->classes[k].name, "(unknown class)");
        if (prev != MS_HCLASS_NONE)
            assert_true(strcmp(g->strs + g->classes[prev].name, g->strs + g->classes[k].name) < 0);
        prev = k;
    }
    assert_int_equal(unknown, 1);
    uint32_t arr = g->obj_class[ms_hgraph_find(g, 0x2000)];
    assert_string_equal(g->strs + g->classes[arr].name, "(unknown class)");
    assert_int_equal(g->obj_class[ms_hgraph_find(g, 0x2020)], arr);
    assert_int_equal(g->obj_class[ms_hgraph_find(g, 0x2030)], arr);
    assert_string_equal(g->strs + g->classes[g->obj_class[ms_hgraph_find(g, 0x2010)]].name, "int[]");
    assert_string_equal(g->strs + g->classes[g->obj_class[ms_hgraph_find(g, 0x2040)]].name, "byte[]");
    assert_int_equal(h->nclass, g->nclass);
    assert_int_equal(h->nobj, g->nobj);
    assert_memory_equal(h->obj_class, g->obj_class, g->nobj * sizeof *g->obj_class);
    for (uint32_t k = 0; k < g->nclass; k++)
        assert_string_equal(h->strs + h->classes[k].name, g->strs + g->classes[k].name);
    ms_hgraph_free(g);
    ms_hgraph_free(h);
    free(b.p);
}

/* Pass 1 on two threads: the second half's heap-dump records (objects, then roots, as
 * JDK 17 writes them) read apart and appended after the first half's, so roots keep
 * their file order and the compressed-reference guess sees the pair of object arrays
 * that straddles the split (the only pair in this dump: 16-byte headers without it);
 * with a class dump in the second half the first thread reads that half itself. The
 * graphs must equal those read on one thread. */
static void test_pass1_two_threads(void **state)
{
    (void)state;
    for (int class_in_second = 0; class_in_second <= 1; class_in_second++) {
        buf b;
        header(&b, "JAVA PROFILE 1.0.2", 8);
        str(&b, S_OBJECT, "java/lang/Object");
        str(&b, S_OA, "[Ljava/lang/Object;");
        str(&b, S_FOO, "Foo");
        load_class(&b, C_OBJECT, S_OBJECT);
        load_class(&b, C_OA, S_OA);
        load_class(&b, C_FOO, S_FOO);
        rec_open(&b, 0x1C);
        class_dump(&b, C_OBJECT, 0, 0, 0, 0, NULL, 0);
        class_dump(&b, C_OA, C_OBJECT, 0, 0, 0, NULL, 0);
        u1(&b, 0x21); id(&b, 0x5000); u4(&b, 0); id(&b, C_OBJECT); u4(&b, 0);
        /* an Object[4] at 0x10000: 8-byte references would take it to 0x10030 */
        u1(&b, 0x22); id(&b, 0x10000); u4(&b, 0); u4(&b, 4); id(&b, C_OA);
        for (int i = 0; i < 4; i++)
            id(&b, 0x5000);
        rec_close(&b);
        rec_open(&b, 0x1C);
        if (class_in_second)
            class_dump(&b, C_FOO, C_OBJECT, 0, 0, 0, NULL, 0);
        /* the next array starts inside that extent: references are 4 bytes */
        u1(&b, 0x22); id(&b, 0x10018); u4(&b, 0); u4(&b, 1); id(&b, C_OA); id(&b, 0x5000);
        u1(&b, 0x21); id(&b, 0x5010); u4(&b, 0); id(&b, class_in_second ? C_FOO : C_OBJECT); u4(&b, 0);
        rec_close(&b);
        rec_open(&b, 0x1C);
        u1(&b, 0x01); id(&b, 0x10018); id(&b, 0x77);
        u1(&b, 0x05); id(&b, C_OBJECT);
        u1(&b, 0x01); id(&b, 0x10000); id(&b, 0x78);
        rec_close(&b);
        rec_open(&b, 0x2C);
        rec_close(&b);

        ms_hprof_read_opts one = {.threads = 1}, two = {.threads = 2};
        ms_hgraph *g = read_ok(&b, &one), *h = read_ok(&b, &two);
        assert_int_equal(g->nobj, 6 + class_in_second);
        /* compressed references: Object[4] is 12 + 4 + 4 * 4 = 32 bytes, not 56 */
        assert_int_equal(g->obj_size[ms_hgraph_find(g, 0x10000)], 32);
        assert_int_equal(g->nroot, 3);
        assert_int_equal(g->roots[0].id, 0x10018);
        assert_int_equal(g->roots[2].id, 0x10000);
        assert_int_equal(h->nobj, g->nobj);
        assert_int_equal(h->nedge, g->nedge);
        assert_int_equal(h->nclass, g->nclass);
        assert_memory_equal(h->obj_size, g->obj_size, g->nobj * sizeof *g->obj_size);
        assert_memory_equal(h->obj_class, g->obj_class, g->nobj * sizeof *g->obj_class);
        assert_memory_equal(h->edge_dst, g->edge_dst, g->nedge * sizeof *g->edge_dst);
        assert_int_equal(h->nroot, g->nroot);
        for (uint32_t k = 0; k < g->nroot; k++) {
            assert_int_equal(h->roots[k].id, g->roots[k].id);
            assert_int_equal(h->roots[k].type, g->roots[k].type);
            assert_int_equal(h->roots[k].obj, g->roots[k].obj);
        }
        assert_memory_equal(h->subrecord_count, g->subrecord_count, sizeof g->subrecord_count);
        ms_hgraph_free(g);
        ms_hgraph_free(h);
        free(b.p);
    }
}

/* An Object[40000] (more elements than the reader takes at once, and 320 KB: more than
 * a small window) read from a file through 4 KiB windows, on one thread and two, gives
 * the graph read from memory: the same references with the same element indices, and
 * the same count when counting only. */
static void test_long_array_windows(void **state)
{
    (void)state;
    enum { N = 40000 };
    buf b;
    header(&b, "JAVA PROFILE 1.0.2", 8);
    str(&b, S_OBJECT, "java/lang/Object");
    str(&b, S_OA, "[Ljava/lang/Object;");
    load_class(&b, C_OBJECT, S_OBJECT);
    load_class(&b, C_OA, S_OA);
    rec_open(&b, 0x1C);
    class_dump(&b, C_OBJECT, 0, 0, 0, 0, NULL, 0);
    class_dump(&b, C_OA, C_OBJECT, 0, 0, 0, NULL, 0);
    for (int k = 0; k < 3; k++) {
        u1(&b, 0x21); id(&b, 0x5000 + 16 * k); u4(&b, 0); id(&b, C_OBJECT); u4(&b, 0);
    }
    u1(&b, 0x22); id(&b, 0x100000); u4(&b, 0); u4(&b, N); id(&b, C_OA);
    for (int e = 0; e < N; e++)
        id(&b, e % 4 == 3 ? 0 : 0x5000 + 16 * (e % 3)); /* every fourth null */
    u1(&b, 0x01); id(&b, 0x100000); id(&b, 0x77);
    rec_close(&b);
    rec_open(&b, 0x2C);
    rec_close(&b);

    char path[4096];
    int fd = ms_test_tmp_file("ms-hprof-long", path, sizeof path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.n), (ssize_t)b.n);
    close(fd);
    ms_hprof_read_opts one = {.threads = 1};
    ms_hgraph *m = read_ok(&b, &one);
    assert_int_equal(m->nedge, N - N / 4 + 1); /* and Object[].class to its superclass */
    for (int t = 1; t <= 2; t++) {
        for (int counts = 0; counts <= 1; counts++) {
            ms_hprof_read_opts o = {.threads = t, .window = 4096, .counts_only = counts};
            ms_hgraph *g = NULL;
            char err[512] = "";
            if (ms_hprof_read(path, &o, &g, err, sizeof err))
                fail_msg("%s", err);
            assert_int_equal(g->nobj, m->nobj);
            assert_int_equal(g->nedge, m->nedge);
            if (!counts) {
                assert_memory_equal(g->edge_dst, m->edge_dst, m->nedge * sizeof *m->edge_dst);
                assert_memory_equal(g->edge_label, m->edge_label, m->nedge * sizeof *m->edge_label);
            }
            ms_hgraph_free(g);
        }
    }
    ms_hidx arr = ms_hgraph_find(m, 0x100000);
    uint64_t last = m->edge_off[arr + 1] - 1; /* element N - 2: the last non-null one */
    assert_int_equal(m->edge_label[last], ms_hedge_label(MS_HEDGE_ELEMENT, N - 2));
    ms_hgraph_free(m);
    unlink(path);
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hotspot_ids8),
        cmocka_unit_test(test_hotspot_ids4),
        cmocka_unit_test(test_android),
        cmocka_unit_test(test_two_loaders),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_problems),
        cmocka_unit_test(test_unknown_record_tag),
        cmocka_unit_test(test_made_up_classes),
        cmocka_unit_test(test_pass1_two_threads),
        cmocka_unit_test(test_long_array_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
