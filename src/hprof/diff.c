/* Per-class diff of two heap dumps: per-dump class totals folded by name (sorted arrays,
 * no hash table, no per-class malloc), merged, ranked by growth, printed. Never changes
 * the graphs. */
#include "hprof/diff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"

typedef struct agg {
    const char *name;
    uint64_t instances, shallow, retained;
} agg;

static int by_name(const void *x, const void *y)
{
    return strcmp(((const agg *)x)->name, ((const agg *)y)->name);
}

/* Class totals of one dump, one entry per distinct name, sorted by name. */
static agg *class_totals(const ms_hgraph *g, const ms_hprof_domresult *r, size_t *n,
                         char *err, size_t errlen)
{
    agg *t = calloc((size_t)g->nclass + 1, sizeof *t);
    uint64_t *ret = r ? malloc(((size_t)g->nclass + 1) * sizeof *ret) : NULL;
    if (!t || (r && !ret)) {
        free(t);
        free(ret);
        ms_hprof_set_err(err, errlen, "diff: out of memory");
        return NULL;
    }
    if (r && ms_hprof_class_retained(g, r, ret, NULL, err, errlen) < 0) {
        free(t);
        free(ret);
        return NULL;
    }
    for (uint32_t c = 0; c < g->nclass; c++) {
        t[c].name = ms_hgraph_class_name(g, c);
        t[c].retained = ret ? ret[c] : 0;
    }
    free(ret);
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (c < g->nclass) {
            t[c].instances++;
            t[c].shallow += g->obj_size[i];
        }
    }
    qsort(t, g->nclass, sizeof *t, by_name);
    size_t m = 0;
    for (uint32_t c = 0; c < g->nclass; c++) {
        if (m && !strcmp(t[m - 1].name, t[c].name)) {
            t[m - 1].instances += t[c].instances;
            t[m - 1].shallow += t[c].shallow;
            t[m - 1].retained += t[c].retained;
        } else {
            t[m++] = t[c];
        }
    }
    *n = m;
    return t;
}

static int64_t delta(uint64_t a, uint64_t b) { return (int64_t)(b - a); }

static int have_retained_sort;
static int by_growth(const void *x, const void *y)
{
    const ms_hprof_diff_row *a = x, *b = y;
    int64_t da, db;
    if (have_retained_sort) {
        da = delta(a->retained[0], a->retained[1]);
        db = delta(b->retained[0], b->retained[1]);
        if (da != db)
            return da > db ? -1 : 1;
    }
    da = delta(a->shallow[0], a->shallow[1]);
    db = delta(b->shallow[0], b->shallow[1]);
    if (da != db)
        return da > db ? -1 : 1;
    da = delta(a->instances[0], a->instances[1]);
    db = delta(b->instances[0], b->instances[1]);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->name, b->name);
}

int ms_hprof_diff(const ms_hgraph *a, const ms_hprof_domresult *ra, const ms_hgraph *b,
                  const ms_hprof_domresult *rb, ms_hprof_diffresult *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if ((ra == NULL) != (rb == NULL)) {
        ms_hprof_set_err(err, errlen, "diff: retained sizes needed for both dumps or neither");
        return -1;
    }
    size_t na = 0, nb = 0;
    agg *ta = class_totals(a, ra, &na, err, errlen);
    if (!ta)
        return -1;
    agg *tb = class_totals(b, rb, &nb, err, errlen);
    if (!tb) {
        free(ta);
        return -1;
    }
    ms_hprof_diff_row *rows = calloc(na + nb + 1, sizeof *rows);
    if (!rows) {
        free(ta);
        free(tb);
        ms_hprof_set_err(err, errlen, "diff: out of memory");
        return -1;
    }
    size_t i = 0, j = 0, m = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(ta[i].name, tb[j].name);
        ms_hprof_diff_row *row = &rows[m++];
        if (c <= 0) {
            row->name = ta[i].name;
            row->instances[0] = ta[i].instances;
            row->shallow[0] = ta[i].shallow;
            row->retained[0] = ta[i].retained;
            i++;
        }
        if (c >= 0) {
            row->name = tb[j].name;
            row->instances[1] = tb[j].instances;
            row->shallow[1] = tb[j].shallow;
            row->retained[1] = tb[j].retained;
            j++;
        }
    }
    free(ta);
    free(tb);
    have_retained_sort = ra != NULL;
    qsort(rows, m, sizeof *rows, by_growth);
    out->n = m;
    out->rows = rows;
    out->have_retained = ra != NULL;
    return 0;
}

void ms_hprof_diff_free(ms_hprof_diffresult *d)
{
    if (!d)
        return;
    free(d->rows);
    memset(d, 0, sizeof *d);
}

int ms_hprof_diff_print(FILE *fp, const ms_hprof_diffresult *d, size_t top, int all,
                        const char *format, char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt < 0) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' (text, json or csv)", format);
        return -1;
    }
    int R = d->have_retained;
    if (fmt == MS_HPAN_TEXT)
        fprintf(fp, "%12s %16s %16s  %12s %12s  %s\n", "instances", "shallow bytes",
                R ? "retained bytes" : "", "instances A", "instances B", "class");
    else if (fmt == MS_HPAN_JSON)
        fputs("[", fp);
    else
        fprintf(fp, "class,instances_a,instances_b,instances_delta,shallow_bytes_a,"
                    "shallow_bytes_b,shallow_bytes_delta%s\n",
                R ? ",retained_bytes_a,retained_bytes_b,retained_bytes_delta" : "");
    size_t shown = 0;
    for (size_t k = 0; k < d->n && (!top || shown < top); k++) {
        const ms_hprof_diff_row *r = &d->rows[k];
        int64_t di = delta(r->instances[0], r->instances[1]);
        int64_t ds = delta(r->shallow[0], r->shallow[1]);
        int64_t dr = delta(r->retained[0], r->retained[1]);
        if (!all && !di && !ds && (!R || !dr))
            continue;
        if (fmt == MS_HPAN_TEXT) {
            char rbuf[32] = "";
            if (R)
                snprintf(rbuf, sizeof rbuf, "%+" PRId64, dr);
            fprintf(fp, "%+12" PRId64 " %+16" PRId64 " %16s  %12" PRIu64 " %12" PRIu64 "  %s\n",
                    di, ds, rbuf, r->instances[0], r->instances[1], r->name);
        } else if (fmt == MS_HPAN_JSON) {
            fputs(shown ? ",\n  {\"class\": " : "\n  {\"class\": ", fp);
            ms_hprof_json_str(fp, r->name);
            fprintf(fp, ", \"instances_a\": %" PRIu64 ", \"instances_b\": %" PRIu64
                        ", \"instances_delta\": %" PRId64 ", \"shallow_bytes_a\": %" PRIu64
                        ", \"shallow_bytes_b\": %" PRIu64 ", \"shallow_bytes_delta\": %" PRId64,
                    r->instances[0], r->instances[1], di, r->shallow[0], r->shallow[1], ds);
            if (R)
                fprintf(fp, ", \"retained_bytes_a\": %" PRIu64 ", \"retained_bytes_b\": %" PRIu64
                            ", \"retained_bytes_delta\": %" PRId64,
                        r->retained[0], r->retained[1], dr);
            fputs("}", fp);
        } else {
            ms_hpan_csv_str(fp, r->name);
            fprintf(fp, ",%" PRIu64 ",%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64,
                    r->instances[0], r->instances[1], di, r->shallow[0], r->shallow[1], ds);
            if (R)
                fprintf(fp, ",%" PRIu64 ",%" PRIu64 ",%" PRId64, r->retained[0],
                        r->retained[1], dr);
            fputc('\n', fp);
        }
        shown++;
    }
    if (fmt == MS_HPAN_JSON)
        fputs(shown ? "\n]\n" : "]\n", fp);
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
