/* Test and benchmark driver for the HPROF analysis code (dominators, paths, diff):
 * exports the graph exactly as the dominator computation sees it, so that scripts can
 * cross-check it with an independent implementation, and runs each analysis alone.
 * A test tool: it prints freely, and must never be installed or used by the product. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hprof/diff.h"
#include "hprof/dominators.h"
#include "hprof/leaks.h"
#include "hprof/paths.h"
#include "hprof/reader.h"
#include "hprof/sizes.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static ms_hgraph *load(const char *path)
{
    char err[512];
    ms_hgraph *g = NULL;
    if (ms_hprof_read(path, NULL, &g, err, sizeof err) < 0) {
        fprintf(stderr, "hprof_an_tool: %s: %s\n", path, err);
        exit(1);
    }
    return g;
}

static ms_hprof_domresult *doms(const ms_hgraph *g)
{
    char err[512];
    ms_hprof_domresult *r = NULL;
    if (ms_hprof_dominators(g, &r, err, sizeof err) < 0) {
        fprintf(stderr, "hprof_an_tool: dominators: %s\n", err);
        exit(1);
    }
    return r;
}

/* Every object with its dominator data, every GC root, every edge the dominator
 * computation follows (class edges included, skipped referents listed apart). */
static int cmd_graph(const char *path)
{
    ms_hgraph *g = load(path);
    ms_hprof_domresult *r = doms(g);
    uint8_t *skip = ms_hprof_skip_edges(g);
    ms_hidx *cls = ms_hprof_class_edges(g);
    uint64_t *cret = malloc(((size_t)g->nclass + 1) * sizeof *cret);
    uint64_t *cobj = malloc(((size_t)g->nclass + 1) * sizeof *cobj);
    char err[256], buf[512];
    if (!skip || !cls || !cret || !cobj ||
        ms_hprof_class_retained(g, r, cret, cobj, err, sizeof err) < 0) {
        fprintf(stderr, "hprof_an_tool: out of memory\n");
        return 1;
    }
    uint32_t jlc = g->class_index_java_lang_class;
    printf("M\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\n", g->model.flavor, g->model.compressed_oops,
           g->model.ref_size, g->model.header, g->model.array_header, g->model.align,
           g->id_size, jlc < g->nclass ? g->classes[jlc].instance_size : 0);
    printf("N\t%u\t%u\t%" PRIu64 "\n", g->nobj, r->reachable, r->reachable_bytes);
    for (uint32_t i = 0; i < g->nobj; i++) {
        long long idom = r->idom[i] == MS_HIDX_NONE ? -1 : (long long)r->idom[i];
        /* bytes of the static values as stored in the file (perflib sizes classes so) */
        uint32_t statics = 0, c = ms_hgraph_class_object_class(g, i);
        if (c < g->nclass)
            for (uint32_t k = 0; k < g->classes[c].static_count; k++)
                statics += ms_hsize_type_in_file(g->statics[g->classes[c].static_first + k].type,
                                                 g->id_size);
        printf("O\t%u\t0x%" PRIx64 "\t%u\t%s\t%s\t%u\t%lld\t%" PRIu64 "\t%u\t%u\n", i,
               ms_hgraph_id(g, i), g->obj_kind[i], ms_hpan_obj_class(g, i, 0, buf, sizeof buf),
               ms_hgraph_heap_name(g, i), g->obj_size[i], idom, r->retained[i],
               r->dominated[i], statics);
    }
    for (uint32_t k = 0; k < g->nroot; k++)
        if (g->roots[k].obj < g->nobj)
            printf("R\t%u\t%s\n", g->roots[k].obj, ms_hroot_type_key(g->roots[k].type));
    for (uint32_t i = 0; i < g->nobj; i++) {
        for (uint64_t e = g->edge_off[i]; e < g->edge_off[i + 1]; e++)
            printf("%s\t%u\t%u\t%s\n", (skip[e >> 3] >> (e & 7)) & 1 ? "S" : "E", i,
                   g->edge_dst[e], ms_hgraph_edge_name(g, e, buf, sizeof buf));
        if (cls[i] != MS_HIDX_NONE)
            printf("E\t%u\t%u\t<class>\n", i, cls[i]);
    }
    for (uint32_t c = 0; c < g->nclass; c++)
        printf("C\t%s\t%" PRIu64 "\t%" PRIu64 "\n", ms_hgraph_class_name(g, c), cret[c], cobj[c]);
    free(skip);
    free(cls);
    free(cret);
    free(cobj);
    ms_hprof_domresult_free(r);
    ms_hgraph_free(g);
    return 0;
}

static int cmd_dominators(int argc, char **argv)
{
    ms_hgraph *g = load(argv[0]);
    ms_hprof_domresult *r = doms(g);
    size_t top = argc > 1 ? strtoul(argv[1], NULL, 10) : 20;
    int by_class = argc > 2 && !strcmp(argv[2], "class");
    char err[256];
    int rc = ms_hprof_dominators_print(stdout, g, r, top, by_class, argc > 3 ? argv[3] : "text",
                                       err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "hprof_an_tool: %s\n", err);
    ms_hprof_domresult_free(r);
    ms_hgraph_free(g);
    return rc < 0;
}

static int cmd_path(int argc, char **argv)
{
    ms_hgraph *g = load(argv[0]);
    char err[256];
    ms_hidx target;
    ms_hprof_domresult *r = NULL;
    int rc;
    if (!strcmp(argv[1], "--class")) {
        r = doms(g);
        rc = ms_hprof_largest_instance(g, r, argv[2], &target, err, sizeof err);
        argv++;
        argc--;
    } else {
        rc = ms_hprof_parse_object_id(g, argv[1], &target, err, sizeof err);
    }
    ms_hprof_path p = {0};
    if (rc == 0)
        rc = ms_hprof_path_to(g, target, &p, err, sizeof err);
    if (rc == 0)
        rc = ms_hprof_path_print(stdout, g, &p, argc > 2 ? argv[2] : "text", err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "hprof_an_tool: %s\n", err);
    ms_hprof_path_free(&p);
    ms_hprof_domresult_free(r);
    ms_hgraph_free(g);
    return rc < 0 ? 1 : 0;
}

static int cmd_diff(int argc, char **argv)
{
    ms_hgraph *a = load(argv[0]), *b = load(argv[1]);
    ms_hprof_domresult *ra = doms(a), *rb = doms(b);
    ms_hprof_diffresult d;
    char err[256];
    int rc = ms_hprof_diff(a, ra, b, rb, &d, err, sizeof err);
    if (rc == 0)
        rc = ms_hprof_diff_print(stdout, &d, 0, 0, argc > 2 ? argv[2] : "text", err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "hprof_an_tool: %s\n", err);
    ms_hprof_diff_free(&d);
    ms_hprof_domresult_free(ra);
    ms_hprof_domresult_free(rb);
    ms_hgraph_free(a);
    ms_hgraph_free(b);
    return rc < 0;
}

static int cmd_leaks(int argc, char **argv)
{
    ms_hgraph *g = load(argv[0]);
    ms_hprof_domresult *r = doms(g);
    ms_hprof_leaks l;
    char err[256];
    int rc = ms_hprof_find_leaks(argv[0], g, r, &l, err, sizeof err);
    if (rc == 0)
        rc = ms_hprof_leaks_print(stdout, g, &l, argc > 1 ? argv[1] : "text", err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "hprof_an_tool: %s\n", err);
    ms_hprof_leaks_free(&l);
    ms_hprof_domresult_free(r);
    ms_hgraph_free(g);
    return rc < 0;
}

/* Times read, dominators, class aggregation and one path; prints key=value lines. */
static int cmd_time(const char *path)
{
    double t0 = now();
    ms_hgraph *g = load(path);
    double t1 = now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long rss_read = ru.ru_maxrss;
    ms_hprof_domresult *r = doms(g);
    double t2 = now();
    getrusage(RUSAGE_SELF, &ru);
    long rss_dom = ru.ru_maxrss;
    uint64_t *cret = malloc(((size_t)g->nclass + 1) * sizeof *cret);
    char err[256];
    if (!cret || ms_hprof_class_retained(g, r, cret, NULL, err, sizeof err) < 0)
        return 1;
    double t3 = now();
    ms_hidx last = r->order[r->reachable];
    ms_hprof_path p;
    if (ms_hprof_path_to(g, last, &p, err, sizeof err) < 0)
        return 1;
    double t4 = now();
    ms_hprof_leaks l;
    if (ms_hprof_find_leaks(path, g, r, &l, err, sizeof err) < 0)
        return 1;
    double t5 = now();
    getrusage(RUSAGE_SELF, &ru);
    printf("objects=%u\nedges=%" PRIu64 "\nreachable=%u\nread_s=%.3f\ndominators_s=%.3f\n"
           "class_retained_s=%.3f\npath_s=%.3f\npath_len=%zu\nleaks_s=%.3f\nleak_groups=%zu\n"
           "maxrss_after_read_kb=%ld\nmaxrss_after_dominators_kb=%ld\nmaxrss_kb=%ld\n",
           g->nobj, g->nedge, r->reachable, t1 - t0, t2 - t1, t3 - t2, t4 - t3, p.len, t5 - t4,
           l.ngroups, rss_read, rss_dom, ru.ru_maxrss);
    ms_hprof_leaks_free(&l);
    ms_hprof_path_free(&p);
    free(cret);
    ms_hprof_domresult_free(r);
    ms_hgraph_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "graph"))
        return cmd_graph(argv[2]);
    if (argc >= 3 && !strcmp(argv[1], "dominators"))
        return cmd_dominators(argc - 2, argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "path"))
        return cmd_path(argc - 2, argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "diff"))
        return cmd_diff(argc - 2, argv + 2);
    if (argc >= 3 && !strcmp(argv[1], "jsonstr")) { /* the JSON string writer alone */
        ms_hprof_json_str(stdout, argv[2]);
        putchar('\n');
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "leaks"))
        return cmd_leaks(argc - 2, argv + 2);
    if (argc >= 3 && !strcmp(argv[1], "time"))
        return cmd_time(argv[2]);
    fprintf(stderr, "usage: hprof_an_tool graph FILE | dominators FILE [TOP [class|objects "
                    "[FORMAT]]] | path FILE ID|--class NAME [FORMAT] | diff A B [FORMAT] | "
                    "leaks FILE [FORMAT] | time FILE | jsonstr TEXT\n");
    return 2;
}
