/* Class histogram of a heap dump (see histogram.h): one row per class object, so two
 * classes of the same name from different loaders stay apart. Never prints anywhere but
 * the given FILE. */
#define _GNU_SOURCE /* qsort_r */
#include "hprof/histogram.h"
#include "hprof/json_out.h"

#include <stdlib.h>
#include <string.h>

int ms_hhist_build(const ms_hgraph *g, const uint64_t *class_retained, ms_hhist *out,
                   char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t *cnt = calloc((size_t)g->nclass + 1, sizeof *cnt);
    uint64_t *sh = calloc((size_t)g->nclass + 1, sizeof *sh);
    if (!cnt || !sh) {
        free(cnt);
        free(sh);
        snprintf(err, errlen, "histogram: out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (c >= g->nclass)
            continue;
        cnt[c]++;
        sh[c] += g->obj_size[i];
    }
    size_t n = 0;
    for (uint32_t c = 0; c < g->nclass; c++)
        if (cnt[c])
            n++;
    out->rows = calloc(n ? n : 1, sizeof *out->rows);
    if (!out->rows) {
        free(cnt);
        free(sh);
        snprintf(err, errlen, "histogram: out of memory");
        return -1;
    }
    for (uint32_t c = 0; c < g->nclass; c++) {
        if (!cnt[c])
            continue;
        ms_hhist_row *r = &out->rows[out->n++];
        r->cls = c;
        r->instances = cnt[c];
        r->shallow = sh[c];
        r->retained = class_retained ? class_retained[c] : 0;
        out->total_instances += cnt[c];
        out->total_shallow += sh[c];
    }
    out->have_retained = class_retained != NULL;
    free(cnt);
    free(sh);
    return 0;
}

int ms_hhist_sort_key(const char *s)
{
    if (!strcmp(s, "shallow"))
        return MS_HHIST_SORT_SHALLOW;
    if (!strcmp(s, "retained"))
        return MS_HHIST_SORT_RETAINED;
    if (!strcmp(s, "instances") || !strcmp(s, "count"))
        return MS_HHIST_SORT_INSTANCES;
    if (!strcmp(s, "name"))
        return MS_HHIST_SORT_NAME;
    return -1;
}

typedef struct {
    const ms_hgraph *g;
    int key;
} sort_ctx;

static int cmp_rows(const void *a, const void *b, void *arg)
{
    const sort_ctx *sc = arg;
    const ms_hgraph *sort_g = sc->g;
    const ms_hhist_row *x = a, *y = b;
    uint64_t vx = 0, vy = 0;
    switch (sc->key) {
    case MS_HHIST_SORT_SHALLOW: vx = x->shallow; vy = y->shallow; break;
    case MS_HHIST_SORT_RETAINED: vx = x->retained; vy = y->retained; break;
    case MS_HHIST_SORT_INSTANCES: vx = x->instances; vy = y->instances; break;
    default: break;
    }
    if (vx != vy)
        return vx > vy ? -1 : 1;
    int c = strcmp(ms_hgraph_class_name(sort_g, x->cls), ms_hgraph_class_name(sort_g, y->cls));
    if (c)
        return c;
    return x->cls < y->cls ? -1 : x->cls > y->cls;
}

void ms_hhist_sort(ms_hhist *h, const ms_hgraph *g, int key)
{
    sort_ctx sc = {g, key};
    if (h->n)
        qsort_r(h->rows, h->n, sizeof *h->rows, cmp_rows, &sc);
}

static void csv_str(FILE *fp, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

/* A class name shared by several classes (several loaders) is shown with its loader:
 * flags[i] set for such rows. NULL when out of memory (then no loader is shown). */
static int cmp_name_idx(const void *a, const void *b, void *arg)
{
    const ms_hgraph *name_g = arg;
    const ms_hhist_row *x = *(const ms_hhist_row *const *)a, *y = *(const ms_hhist_row *const *)b;
    return strcmp(ms_hgraph_class_name(name_g, x->cls), ms_hgraph_class_name(name_g, y->cls));
}

static uint8_t *shared_names(const ms_hgraph *g, const ms_hhist *h)
{
    uint8_t *flags = calloc(h->n ? h->n : 1, 1);
    const ms_hhist_row **v = malloc((h->n ? h->n : 1) * sizeof *v);
    if (!flags || !v) {
        free(flags);
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < h->n; i++)
        v[i] = &h->rows[i];
    if (h->n)
        qsort_r(v, h->n, sizeof *v, cmp_name_idx, (void *)g);
    for (size_t i = 1; i < h->n; i++)
        if (!strcmp(ms_hgraph_class_name(g, v[i]->cls), ms_hgraph_class_name(g, v[i - 1]->cls))) {
            flags[v[i] - h->rows] = 1;
            flags[v[i - 1] - h->rows] = 1;
        }
    free(v);
    return flags;
}

int ms_hhist_print(FILE *fp, const ms_hgraph *g, const ms_hhist *h, size_t top,
                   const char *format, char *err, size_t errlen)
{
    size_t n = top && top < h->n ? top : h->n;
    if (!format || !strcmp(format, "text")) {
        uint8_t *shared = shared_names(g, h);
        if (h->have_retained)
            fprintf(fp, "%12s %16s %16s  %s\n", "instances", "shallow bytes", "retained bytes", "class");
        else
            fprintf(fp, "%12s %16s  %s\n", "instances", "shallow bytes", "class");
        for (size_t i = 0; i < n; i++) {
            const ms_hhist_row *r = &h->rows[i];
            if (h->have_retained)
                fprintf(fp, "%12llu %16llu %16llu  %s", (unsigned long long)r->instances,
                        (unsigned long long)r->shallow, (unsigned long long)r->retained,
                        ms_hgraph_class_name(g, r->cls));
            else
                fprintf(fp, "%12llu %16llu  %s", (unsigned long long)r->instances,
                        (unsigned long long)r->shallow, ms_hgraph_class_name(g, r->cls));
            if (shared && shared[i])
                fprintf(fp, " (loader 0x%llx)", (unsigned long long)g->classes[r->cls].loader_id);
            fputc('\n', fp);
        }
        free(shared);
        fprintf(fp, "%12llu %16llu  total (%zu classes%s)\n", (unsigned long long)h->total_instances,
                (unsigned long long)h->total_shallow, h->n, n < h->n ? ", first rows shown" : "");
    } else if (!strcmp(format, "json")) {
        fputc('[', fp);
        for (size_t i = 0; i < n; i++) {
            const ms_hhist_row *r = &h->rows[i];
            fprintf(fp, "%s\n  {\"class\": ", i ? "," : "");
            ms_hprof_json_str(fp, ms_hgraph_class_name(g, r->cls));
            fprintf(fp, ", \"loader\": \"0x%llx\", \"instances\": %llu, \"shallow_bytes\": %llu, \"retained_bytes\": ",
                    (unsigned long long)g->classes[r->cls].loader_id, (unsigned long long)r->instances,
                    (unsigned long long)r->shallow);
            if (h->have_retained)
                fprintf(fp, "%llu}", (unsigned long long)r->retained);
            else
                fprintf(fp, "null}");
        }
        fprintf(fp, "%s]\n", n ? "\n" : "");
    } else if (!strcmp(format, "csv")) {
        fprintf(fp, "class,loader,instances,shallow_bytes,retained_bytes\n");
        for (size_t i = 0; i < n; i++) {
            const ms_hhist_row *r = &h->rows[i];
            csv_str(fp, ms_hgraph_class_name(g, r->cls));
            fprintf(fp, ",0x%llx,%llu,%llu,", (unsigned long long)g->classes[r->cls].loader_id,
                    (unsigned long long)r->instances, (unsigned long long)r->shallow);
            if (h->have_retained)
                fprintf(fp, "%llu", (unsigned long long)r->retained);
            fputc('\n', fp);
        }
    } else {
        snprintf(err, errlen, "histogram: unknown format '%s' (text, json or csv)", format);
        return -1;
    }
    if (ferror(fp)) {
        snprintf(err, errlen, "histogram: write error");
        return -1;
    }
    return 0;
}

void ms_hhist_free(ms_hhist *h)
{
    free(h->rows);
    memset(h, 0, sizeof *h);
}
