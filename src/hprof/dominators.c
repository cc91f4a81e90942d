/* Retained sizes over the HPROF object graph: builds the edge view (referents of soft,
 * weak, phantom and finalizer references skipped, object -> class added), runs the
 * dominator tree under a virtual root, sums retained sizes bottom-up, aggregates per
 * class and prints. Never modifies the graph; prints only into the FILE it is given. */
#include "hprof/dominators.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/bigmem.h"
#include "hprof/errmsg.h"
#include "hprof/domtree.h"

/* ---- the edges that keep objects alive ---- */

uint8_t *ms_hprof_skip_edges(const ms_hgraph *g)
{
    uint8_t *skip = ms_hbig_calloc((size_t)(g->nedge / 8) + 1, 1);
    if (!skip)
        return NULL;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint64_t b = g->edge_off[i], e = g->edge_off[i + 1];
        for (uint64_t k = b; k < e; k++) {
            if (ms_hedge_kind_of(g->edge_label[k]) != MS_HEDGE_REFERENT)
                continue;
            uint32_t c = g->obj_class[i];
            uint8_t rk = c < g->nclass ? g->classes[c].ref_kind : MS_HREF_NONE;
            if (rk == MS_HREF_SOFT || rk == MS_HREF_WEAK || rk == MS_HREF_PHANTOM ||
                rk == MS_HREF_FINAL)
                skip[k >> 3] |= (uint8_t)(1u << (k & 7));
        }
    }
    return skip;
}

ms_hidx *ms_hprof_class_edges(const ms_hgraph *g)
{
    ms_hidx *x = ms_hbig_malloc(((size_t)g->nobj + 1) * sizeof *x);
    if (!x)
        return NULL;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        x[i] = c < g->nclass ? g->classes[c].obj : MS_HIDX_NONE;
        if (x[i] == i)
            x[i] = MS_HIDX_NONE; /* java.lang.Class's own class object */
    }
    return x;
}

/* ---- dominators and retained sizes ---- */

void ms_hprof_domresult_free(ms_hprof_domresult *r)
{
    if (!r)
        return;
    free(r->idom);
    free(r->retained);
    free(r->dominated);
    free(r->order);
    free(r);
}

int ms_hprof_dominators(const ms_hgraph *g, ms_hprof_domresult **out, char *err, size_t errlen)
{
    *out = NULL;
    if (g->nobj >= UINT32_MAX - 2) {
        ms_hprof_set_err(err, errlen, "dominators: too many objects (%u)", g->nobj);
        return -1;
    }
    uint8_t *skip = ms_hprof_skip_edges(g);
    ms_hidx *extra = malloc(((size_t)g->nclass + 1) * sizeof *extra); /* class -> its object */
    ms_hidx *roots = malloc(((size_t)g->nroot + 1) * sizeof *roots);
    ms_hprof_domresult *r = calloc(1, sizeof *r);
    if (!skip || !extra || !roots || !r) {
        free(skip);
        free(extra);
        free(roots);
        free(r);
        ms_hprof_set_err(err, errlen, "dominators: out of memory for %u objects", g->nobj);
        return -1;
    }
    for (uint32_t c = 0; c < g->nclass; c++)
        extra[c] = g->classes[c].obj;
    size_t nroots = 0;
    for (uint32_t k = 0; k < g->nroot; k++)
        if (g->roots[k].obj < g->nobj)
            roots[nroots++] = g->roots[k].obj;

    ms_csr c = {.n = g->nobj, .off = g->edge_off, .adj = g->edge_dst, .skip = skip,
                .extra_key = g->obj_class, .extra_tab = extra, .extra_ntab = g->nclass};
    ms_domtree dt;
    int rc = ms_domtree_compute_virtual(&c, roots, nroots, &dt, err, errlen);
    free(skip);
    free(extra);
    free(roots);
    if (rc < 0) {
        free(r);
        return -1;
    }
    const uint32_t n = g->nobj; /* the virtual root */
    r->nobj = n;
    r->idom = dt.idom;
    r->order = dt.order;
    r->reachable = dt.reachable - 1;
    r->retained = ms_hbig_calloc((size_t)n + 1, sizeof *r->retained);
    r->dominated = ms_hbig_calloc((size_t)n + 1, sizeof *r->dominated);
    if (!r->retained || !r->dominated) {
        ms_hprof_domresult_free(r);
        ms_hprof_set_err(err, errlen, "dominators: out of memory for %u objects", n);
        return -1;
    }
    for (uint32_t k = 1; k < dt.reachable; k++) {
        ms_hidx v = dt.order[k];
        r->retained[v] = g->obj_size[v];
        r->dominated[v] = 1;
        r->reachable_bytes += g->obj_size[v];
    }
    r->dominated[n] = 1;
    /* Reverse preorder: every object is done before its immediate dominator. */
    for (uint32_t k = dt.reachable; k-- > 1;) {
        ms_hidx v = dt.order[k];
        r->retained[r->idom[v]] += r->retained[v];
        r->dominated[r->idom[v]] += r->dominated[v];
    }
    *out = r;
    return 0;
}

/* ---- top retainers ---- */

static const ms_hprof_domresult *sort_r;
static int by_retained(const void *a, const void *b)
{
    ms_hidx x = *(const ms_hidx *)a, y = *(const ms_hidx *)b;
    uint64_t rx = sort_r->retained[x], ry = sort_r->retained[y];
    if (rx != ry)
        return rx > ry ? -1 : 1;
    return x < y ? -1 : x > y;
}

size_t ms_hprof_dom_top(const ms_hprof_domresult *r, int all, size_t max, ms_hidx *idx)
{
    if (!max)
        return 0;
    /* Keep a sorted window of the best max candidates: insertion into a small array when
     * max is small, a full sort of the candidates otherwise. */
    size_t cand = 0;
    for (uint32_t k = 1; k <= r->reachable; k++) {
        ms_hidx v = r->order[k];
        if (all || r->idom[v] == r->nobj)
            cand++;
    }
    ms_hidx *buf = malloc((cand ? cand : 1) * sizeof *buf);
    if (!buf)
        return 0;
    size_t m = 0;
    for (uint32_t k = 1; k <= r->reachable; k++) {
        ms_hidx v = r->order[k];
        if (all || r->idom[v] == r->nobj)
            buf[m++] = v;
    }
    sort_r = r;
    qsort(buf, m, sizeof *buf, by_retained);
    sort_r = NULL;
    if (m > max)
        m = max;
    memcpy(idx, buf, m * sizeof *idx);
    free(buf);
    return m;
}

/* ---- dominated size per class ---- */

int ms_hprof_class_retained(const ms_hgraph *g, const ms_hprof_domresult *r, uint64_t *bytes,
                            uint64_t *objects, char *err, size_t errlen)
{
    const uint32_t n = r->nobj, nc = g->nclass;
    memset(bytes, 0, (size_t)nc * sizeof *bytes);
    if (objects)
        memset(objects, 0, (size_t)nc * sizeof *objects);
    /* Children lists of the dominator tree (CSR), then a depth-first walk that keeps,
     * per class, how many instances of it are on the current path. */
    uint32_t *coff = ms_hbig_calloc((size_t)n + 2, sizeof *coff);
    ms_hidx *kids = ms_hbig_malloc(((size_t)r->reachable + 1) * sizeof *kids);
    uint32_t *onpath = calloc((size_t)nc + 1, sizeof *onpath);
    ms_hidx *stack = ms_hbig_malloc(((size_t)r->reachable + 2) * sizeof *stack);
    uint32_t *pos = ms_hbig_malloc(((size_t)r->reachable + 2) * sizeof *pos);
    if (!coff || !kids || !onpath || !stack || !pos) {
        free(coff);
        free(kids);
        free(onpath);
        free(stack);
        free(pos);
        ms_hprof_set_err(err, errlen, "dominators: out of memory for the class aggregation");
        return -1;
    }
    for (uint32_t k = 1; k <= r->reachable; k++)
        coff[r->idom[r->order[k]] + 1]++;
    for (uint32_t v = 0; v <= n; v++)
        coff[v + 1] += coff[v];
    for (uint32_t k = 1; k <= r->reachable; k++) {
        ms_hidx v = r->order[k];
        kids[coff[r->idom[v]]++] = v;
    }
    /* coff[v] is now the end of v's children, the start of v+1's: shift back. */
    for (uint32_t v = n + 1; v > 0; v--)
        coff[v] = coff[v - 1];
    coff[0] = 0;

    /* Depth-first walk: stack[] holds the path from the virtual root, pos[] the next
     * child to visit of each vertex on it. */
    size_t sp = 0;
    stack[sp] = n;
    pos[sp++] = coff[n];
    while (sp) {
        ms_hidx v = stack[sp - 1];
        if (pos[sp - 1] < coff[v + 1]) {
            ms_hidx c = kids[pos[sp - 1]++];
            uint32_t cls = g->obj_class[c] < nc ? g->obj_class[c] : nc;
            if (cls < nc && onpath[cls] == 0) {
                bytes[cls] += r->retained[c];
                if (objects)
                    objects[cls] += r->dominated[c];
            }
            onpath[cls]++;
            stack[sp] = c;
            pos[sp++] = coff[c];
        } else {
            sp--;
            if (v != n) {
                uint32_t cls = g->obj_class[v] < nc ? g->obj_class[v] : nc;
                onpath[cls]--;
            }
        }
    }
    free(coff);
    free(kids);
    free(onpath);
    free(stack);
    free(pos);
    return 0;
}

/* ---- output helpers ---- */

int ms_hpan_format(const char *format)
{
    if (!format || !strcmp(format, "text"))
        return MS_HPAN_TEXT;
    if (!strcmp(format, "json"))
        return MS_HPAN_JSON;
    if (!strcmp(format, "csv"))
        return MS_HPAN_CSV;
    return -1;
}

void ms_hpan_csv_str(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', fp);
        fputc(*p, fp);
    }
    fputc('"', fp);
}

const char *ms_hpan_obj_class(const ms_hgraph *g, ms_hidx i, int for_json, char *buf,
                              size_t len)
{
    if (g->obj_kind[i] == MS_HOBJ_CLASS) {
        if (for_json)
            return "java.lang.Class";
        snprintf(buf, len, "class %s",
                 ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, i)));
        return buf;
    }
    return ms_hgraph_class_name(g, g->obj_class[i]);
}

/* ---- `memsight hprof dominators` ---- */

static int print_objects(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                         size_t top, int all, int fmt, char *err, size_t errlen)
{
    size_t max = top ? top : r->reachable;
    ms_hidx *idx = malloc((max ? max : 1) * sizeof *idx);
    if (!idx) {
        ms_hprof_set_err(err, errlen, "dominators: out of memory");
        return -1;
    }
    size_t m = ms_hprof_dom_top(r, all, max, idx);
    char buf[512];
    if (fmt == MS_HPAN_TEXT) {
        fprintf(fp, "reachable: %" PRIu32 " of %" PRIu32 " objects, %" PRIu64
                    " bytes retained by the GC roots\n",
                r->reachable, r->nobj, r->retained[r->nobj]);
        fprintf(fp, "%16s %12s %10s  %-18s  %s\n", "retained", "shallow", "objects",
                "object_id", "class");
    } else if (fmt == MS_HPAN_JSON) {
        fputs("[", fp);
    } else {
        fputs("object_id,class,shallow_bytes,retained_bytes,dominated_objects,heap\n", fp);
    }
    for (size_t k = 0; k < m; k++) {
        ms_hidx v = idx[k];
        const char *heap = ms_hgraph_heap_name(g, v);
        if (fmt == MS_HPAN_TEXT) {
            fprintf(fp, "%16" PRIu64 " %12" PRIu32 " %10" PRIu32 "  0x%016" PRIx64 "  %s\n",
                    r->retained[v], g->obj_size[v], r->dominated[v], ms_hgraph_id(g, v),
                    ms_hpan_obj_class(g, v, 0, buf, sizeof buf));
        } else if (fmt == MS_HPAN_JSON) {
            fprintf(fp, "%s\n  {\"object_id\": \"0x%" PRIx64 "\", \"class\": ", k ? "," : "",
                    ms_hgraph_id(g, v));
            ms_hprof_json_str(fp, ms_hpan_obj_class(g, v, 1, buf, sizeof buf));
            if (g->obj_kind[v] == MS_HOBJ_CLASS) {
                fputs(", \"class_object_of\": ", fp);
                ms_hprof_json_str(fp, ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, v)));
            }
            fprintf(fp, ", \"shallow_bytes\": %" PRIu32 ", \"retained_bytes\": %" PRIu64
                        ", \"dominated_objects\": %" PRIu32 ", \"heap\": ",
                    g->obj_size[v], r->retained[v], r->dominated[v]);
            ms_hprof_json_str(fp, heap);
            fputs("}", fp);
        } else {
            fprintf(fp, "0x%" PRIx64 ",", ms_hgraph_id(g, v));
            ms_hpan_csv_str(fp, ms_hpan_obj_class(g, v, 0, buf, sizeof buf));
            fprintf(fp, ",%" PRIu32 ",%" PRIu64 ",%" PRIu32 ",", g->obj_size[v],
                    r->retained[v], r->dominated[v]);
            ms_hpan_csv_str(fp, heap);
            fputc('\n', fp);
        }
    }
    if (fmt == MS_HPAN_JSON)
        fputs(m ? "\n]\n" : "]\n", fp);
    free(idx);
    return 0;
}

static const uint64_t *sort_bytes;
static int by_bytes(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sort_bytes[x] != sort_bytes[y])
        return sort_bytes[x] > sort_bytes[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int print_classes(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                         size_t top, int fmt, char *err, size_t errlen)
{
    const uint32_t nc = g->nclass;
    uint64_t *bytes = malloc(((size_t)nc + 1) * sizeof *bytes);
    uint64_t *objs = malloc(((size_t)nc + 1) * sizeof *objs);
    uint64_t *count = calloc((size_t)nc + 1, sizeof *count);
    uint64_t *shallow = calloc((size_t)nc + 1, sizeof *shallow);
    uint32_t *idx = malloc(((size_t)nc + 1) * sizeof *idx);
    int rc = -1;
    if (!bytes || !objs || !count || !shallow || !idx) {
        ms_hprof_set_err(err, errlen, "dominators: out of memory");
        goto out;
    }
    if (ms_hprof_class_retained(g, r, bytes, objs, err, errlen) < 0)
        goto out;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (c < nc) {
            count[c]++;
            shallow[c] += g->obj_size[i];
        }
    }
    size_t m = 0;
    for (uint32_t c = 0; c < nc; c++)
        if (count[c])
            idx[m++] = c;
    sort_bytes = bytes;
    qsort(idx, m, sizeof *idx, by_bytes);
    sort_bytes = NULL;
    if (top && m > top)
        m = top;
    if (fmt == MS_HPAN_TEXT)
        fprintf(fp, "%16s %10s %12s %12s  %s\n", "dominated", "objects", "instances",
                "shallow", "class");
    else if (fmt == MS_HPAN_JSON)
        fputs("[", fp);
    else
        fputs("class,instances,shallow_bytes,retained_bytes,dominated_objects\n", fp);
    for (size_t k = 0; k < m; k++) {
        uint32_t c = idx[k];
        const char *name = ms_hgraph_class_name(g, c);
        if (fmt == MS_HPAN_TEXT) {
            fprintf(fp, "%16" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s\n",
                    bytes[c], objs[c], count[c], shallow[c], name);
        } else if (fmt == MS_HPAN_JSON) {
            fputs(k ? ",\n  {\"class\": " : "\n  {\"class\": ", fp);
            ms_hprof_json_str(fp, name);
            fprintf(fp, ", \"instances\": %" PRIu64 ", \"shallow_bytes\": %" PRIu64
                        ", \"retained_bytes\": %" PRIu64 ", \"dominated_objects\": %" PRIu64
                        "}",
                    count[c], shallow[c], bytes[c], objs[c]);
        } else {
            ms_hpan_csv_str(fp, name);
            fprintf(fp, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", count[c],
                    shallow[c], bytes[c], objs[c]);
        }
    }
    if (fmt == MS_HPAN_JSON)
        fputs(m ? "\n]\n" : "]\n", fp);
    rc = 0;
out:
    free(bytes);
    free(objs);
    free(count);
    free(shallow);
    free(idx);
    return rc;
}

int ms_hprof_dominators_print(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                              size_t top, int by_class, const char *format, char *err,
                              size_t errlen)
{
    return ms_hprof_dominators_print_ex(fp, g, r, top, by_class, 0, format, err, errlen);
}

int ms_hprof_dominators_print_ex(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                                 size_t top, int by_class, int all, const char *format,
                                 char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt < 0) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' (text, json or csv)", format);
        return -1;
    }
    int rc = by_class ? print_classes(fp, g, r, top, fmt, err, errlen)
                      : print_objects(fp, g, r, top, all, fmt, err, errlen);
    if (rc == 0 && ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return rc;
}
