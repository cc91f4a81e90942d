/* libFuzzer target for the HPROF reader: any input must be read or refused with a
 * message, never crash, and a graph it returns must be consistent (indices in range,
 * CSR monotonic) and the same when read on two threads or counting references only;
 * the same gzipped; summary, histogram, leak finding (inspectors, reference matchers, the second pass
 * over the file for primitive values) and KOOM's large objects run over it too; strip and
 * convert must either refuse it or write a dump that reads to the same objects and
 * references (strip) or the same objects (convert). Read from a file through tiny
 * windows (61 bytes, one thread; 4 KiB, two), it gives the same graph, or the same
 * refusal. Test code only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "hprof/histogram.h"
#include "hprof/large.h"
#include "hprof/koom_report.h"
#include "hprof/leaks.h"
#include "hprof/reader.h"
#include "hprof/rewrite.h"
#include "hprof/summary.h"

static FILE *devnull;
static char leak_file[64];

/* h, read from a file, is g: the same objects, classes, sizes and references; on one
 * thread also the same problems at the same offsets. */
static void same_graph(const ms_hgraph *h, const ms_hgraph *g, int one_thread)
{
    if (h->nobj != g->nobj || h->nedge != g->nedge || h->dangling_refs != g->dangling_refs ||
        h->file_size != g->file_size ||
        memcmp(h->obj_class, g->obj_class, g->nobj * sizeof *g->obj_class) ||
        memcmp(h->obj_size, g->obj_size, g->nobj * sizeof *g->obj_size) ||
        memcmp(h->edge_dst, g->edge_dst, g->nedge * sizeof *g->edge_dst) ||
        memcmp(h->edge_off, g->edge_off, ((size_t)g->nobj + 1) * sizeof *g->edge_off))
        __builtin_trap();
    if (one_thread && (h->problem_total != g->problem_total || h->nproblem != g->nproblem ||
                       memcmp(h->problems, g->problems, g->nproblem * sizeof *g->problems)))
        __builtin_trap();
}

/* The input written to a file and read through windows of 61 bytes (one thread) and 4 KiB
 * (two): the same graph as from memory (g), or, when g is NULL (refused), the same
 * message after the file's name. */
static void windowed(const ms_hgraph *g, const char *mem_err, const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_hprof_win.%d", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    size_t w = fwrite(data, 1, size, f);
    if (fclose(f) || w != size) {
        unlink(path);
        return;
    }
    for (int t = 1; t <= 2; t++) {
        ms_hgraph *h = NULL;
        char err[512] = "";
        ms_hprof_read_opts o = {.threads = t, .window = t == 1 ? 61 : 4096};
        int rc = ms_hprof_read(path, &o, &h, err, sizeof err);
        if (!g) {
            /* refused too; on one thread with the same reason (an empty file is refused
             * before any reading, in words of its own; two threads may meet another
             * fault of the same input first) */
            size_t pl = strlen(path);
            if (!rc)
                __builtin_trap();
            if (t == 1 && size && (strncmp(err, path, pl) || err[pl] != ':' || err[pl + 1] != ' ' ||
                                   strncmp(err + pl + 2, mem_err, 300)))
                __builtin_trap();
            continue;
        }
        if (rc)
            __builtin_trap();
        same_graph(h, g, t == 1);
        ms_hgraph_free(h);
    }
    unlink(path);
}

/* Leak finding reads the dump's file again: the input is written to one scratch file. */
static void leaks(const ms_hgraph *g, const uint8_t *data, size_t size)
{
    if (!leak_file[0]) {
        snprintf(leak_file, sizeof leak_file, "/tmp/fuzz_hprof_leaks.%d", (int)getpid());
    }
    FILE *f = fopen(leak_file, "wb");
    if (!f)
        return;
    size_t w = fwrite(data, 1, size, f);
    if (fclose(f) || w != size)
        return;
    ms_hprof_leaks l;
    char err[512];
    if (ms_hprof_find_leaks(leak_file, g, NULL, &l, err, sizeof err) == 0) {
        for (size_t k = 0; k < l.ngroups; k++)
            if (!l.groups[k].count || l.groups[k].trace.len == 0)
                __builtin_trap();
        ms_hprof_leaks_print(devnull, g, &l, "json", err, sizeof err);
        ms_hprof_leaks_print(devnull, g, &l, "text", err, sizeof err);
        ms_hprof_leaks_free(&l);
    } else if (!err[0]) {
        __builtin_trap();
    }
    ms_hprof_large_opts lo = {1000, 64, 1};
    ms_hprof_large big;
    if (ms_hprof_find_large(leak_file, g, NULL, &lo, &big, err, sizeof err) == 0) {
        ms_hprof_large_print(devnull, g, &big, "json", err, sizeof err);
        ms_hkoom_opts ko = {lo.bitmap_pixels, lo.array_bytes};
        if (ms_hprof_find_leaks_koom(leak_file, g, NULL, &ko, &l, err, sizeof err) == 0) {
            ms_hprof_koom_print(devnull, g, &l, &big, err, sizeof err);
            ms_hprof_leaks_free(&l);
        } else if (!err[0]) {
            __builtin_trap();
        }
        ms_hprof_large_free(&big);
    }
    for (int mode = MS_HREWRITE_STRIP; mode <= MS_HREWRITE_TO_ANDROID; mode++) {
        char out[80];
        snprintf(out, sizeof out, "%s.out", leak_file);
        FILE *f2 = fopen(out, "w+b");
        if (!f2)
            break;
        ms_hrewrite_opts ro = {.mode = mode};
        int rc = ms_hprof_rewrite(leak_file, f2, &ro, err, sizeof err);
        if (fclose(f2) || (rc && !err[0]))
            __builtin_trap();
        ms_hgraph *h = NULL;
        ms_hprof_read_opts one = {.threads = 1};
        /* what was read once reads again after stripping, to the same graph */
        if (!rc && mode == MS_HREWRITE_STRIP) {
            if (ms_hprof_read(out, &one, &h, err, sizeof err))
                __builtin_trap();
            if (h->nobj != g->nobj || h->nedge != g->nedge ||
                memcmp(h->edge_dst, g->edge_dst, g->nedge * sizeof *g->edge_dst))
                __builtin_trap();
            ms_hgraph_free(h);
        } else if (!rc && ms_hprof_read(out, &one, &h, err, sizeof err) == 0) {
            ms_hgraph_free(h);
        }
        unlink(out);
    }
    unlink(leak_file);
}

/* The input gzipped in two members (as jcmd -gz writes several) reads, on one thread and
 * on two, to the same graph as the plain bytes. */
static void gzipped(const ms_hgraph *g, const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_hprof_gz.%d", (int)getpid());
    for (int m = 0; m < 2; m++) {
        gzFile z = gzopen(path, m ? "ab1" : "wb1");
        if (!z)
            return;
        size_t from = m ? size / 2 : 0, n = m ? size - size / 2 : size / 2;
        if (n && gzwrite(z, data + from, (unsigned)n) != (int)n) {
            gzclose(z);
            return;
        }
        if (gzclose(z) != Z_OK)
            return;
    }
    char err[512];
    for (int t = 1; t <= 2; t++) {
        ms_hgraph *h = NULL;
        ms_hprof_read_opts o = {.threads = t};
        if (ms_hprof_read(path, &o, &h, err, sizeof err))
            __builtin_trap();
        same_graph(h, g, t == 1);
        ms_hgraph_free(h);
    }
    unlink(path);
}

static void consistent(const ms_hgraph *g)
{
    for (uint32_t i = 0; i < g->nobj; i++) {
        if (g->obj_class[i] >= g->nclass || g->obj_heap[i] >= g->nheap || g->obj_kind[i] > 3)
            __builtin_trap();
        if (g->edge_off[i] > g->edge_off[i + 1] || ms_hgraph_find(g, ms_hgraph_id(g, i)) != i)
            __builtin_trap();
    }
    if (g->edge_off[g->nobj] != g->nedge)
        __builtin_trap();
    for (uint64_t e = 0; e < g->nedge; e++) {
        char name[64];
        if (g->edge_dst[e] >= g->nobj)
            __builtin_trap();
        ms_hgraph_edge_name(g, e, name, sizeof name);
    }
    for (uint32_t r = 0; r < g->nroot; r++)
        if (g->roots[r].obj != MS_HIDX_NONE && g->roots[r].obj >= g->nobj)
            __builtin_trap();
    for (uint32_t k = 0; k < g->nclass; k++) {
        if (g->classes[k].name >= g->strs_len)
            __builtin_trap();
        if (g->classes[k].obj != MS_HIDX_NONE && ms_hgraph_class_object_class(g, g->classes[k].obj) != k)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!devnull)
        devnull = fopen("/dev/null", "w");
    ms_hgraph *g = NULL;
    char err[512];
    if (ms_hprof_read_mem(data, size, NULL, &g, err, sizeof err)) {
        if (!err[0] || memchr(err, '\0', sizeof err) == NULL)
            __builtin_trap();
        windowed(NULL, err, data, size);
        return 0;
    }
    consistent(g);
    windowed(g, NULL, data, size);
    /* the same input read on two threads gives the same graph */
    ms_hgraph *g2 = NULL;
    ms_hprof_read_opts two = {.threads = 2};
    if (ms_hprof_read_mem(data, size, &two, &g2, err, sizeof err))
        __builtin_trap();
    if (g2->nobj != g->nobj || g2->nedge != g->nedge || g2->dangling_refs != g->dangling_refs ||
        memcmp(g2->obj_class, g->obj_class, g->nobj * sizeof *g->obj_class) ||
        memcmp(g2->edge_dst, g->edge_dst, g->nedge * sizeof *g->edge_dst) ||
        memcmp(g2->edge_off, g->edge_off, ((size_t)g->nobj + 1) * sizeof *g->edge_off))
        __builtin_trap();
    ms_hgraph_free(g2);
    gzipped(g, data, size);
    /* counts only (summary, histogram without retained sizes), on one and two threads:
     * the same objects, reference count and problems, no references stored */
    for (int t = 1; t <= 2; t++) {
        ms_hprof_read_opts co = {.threads = t, .counts_only = 1};
        if (ms_hprof_read_mem(data, size, &co, &g2, err, sizeof err))
            __builtin_trap();
        if (g2->nobj != g->nobj || g2->nedge != g->nedge || g2->dangling_refs != g->dangling_refs ||
            g2->edge_off || g2->edge_dst ||
            /* two threads report up to 8 dangling references each, as a full read does */
            (t == 1 && (g2->problem_total != g->problem_total || g2->nproblem != g->nproblem ||
                        memcmp(g2->problems, g->problems, g->nproblem * sizeof *g->problems))) ||
            memcmp(g2->obj_class, g->obj_class, g->nobj * sizeof *g->obj_class) ||
            memcmp(g2->obj_size, g->obj_size, g->nobj * sizeof *g->obj_size))
            __builtin_trap();
        ms_hgraph_free(g2);
    }
    ms_hsummary s;
    ms_hsummary_compute(g, &s);
    ms_hsummary_print(devnull, "fuzz", g, &s, "json", err, sizeof err);
    ms_hhist h;
    if (!ms_hhist_build(g, NULL, &h, err, sizeof err)) {
        ms_hhist_sort(&h, g, MS_HHIST_SORT_NAME);
        ms_hhist_print(devnull, g, &h, 0, "text", err, sizeof err);
        ms_hhist_free(&h);
    }
    leaks(g, data, size);
    ms_hgraph_free(g);
    return 0;
}
