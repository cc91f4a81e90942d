/* Diff of two snapshots by stack (see diff.h). Stacks are matched by their symbolized
 * frames (or module offsets), so two runs of one program compare despite ASLR.
 * Tools only; writes only to the stream it is given. */
#include "analysis/diff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int64_t meta_i64(const ms_snapshot *s, const char *k)
{
    const char *v = ms_agg_meta(s, k);
    return v ? strtoll(v, NULL, 10) : 0;
}

ms_diff *ms_diff_build(const ms_snapshot *a, ms_symbolizer *sa, const ms_snapshot *b,
                       ms_symbolizer *sb, ms_agg_key by, char *err, size_t errlen)
{
    ms_diff *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->name_a = a->path ? a->path : "A";
    d->name_b = b->path ? b->path : "B";
    int64_t ta = meta_i64(a, "snapshot_ns"), tb = meta_i64(b, "snapshot_ns");
    d->dt_ns = ta && tb ? tb - ta : 0;
    d->a = ms_agg_build(a, sa, by, err, errlen);
    d->b = d->a ? ms_agg_build(b, sb, by, err, errlen) : NULL;
    if (!d->b)
        goto fail;
    d->rows = calloc(d->a->nstacks + d->b->nstacks + 1, sizeof *d->rows);
    if (!d->rows) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < d->b->nstacks; i++) {
        ms_diff_row *r = &d->rows[d->nrows++];
        r->ib = (long)i;
        r->key = d->b->stacks[i].key;
        r->b = d->b->stacks[i].c;
        r->ia = ms_agg_find(d->a, r->key);
        if (r->ia >= 0)
            r->a = d->a->stacks[r->ia].c;
    }
    for (size_t i = 0; i < d->a->nstacks; i++) {
        if (ms_agg_find(d->b, d->a->stacks[i].key) >= 0)
            continue;
        ms_diff_row *r = &d->rows[d->nrows++];
        r->ia = (long)i;
        r->ib = -1;
        r->key = d->a->stacks[i].key;
        r->a = d->a->stacks[i].c;
    }
    ms_diff_sort(d, MS_METRIC_LIVE_BYTES);
    return d;
fail:
    ms_diff_free(d);
    return NULL;
}

void ms_diff_free(ms_diff *d)
{
    if (!d)
        return;
    ms_agg_free(d->a);
    ms_agg_free(d->b);
    free(d->rows);
    free(d);
}

int64_t ms_diff_delta(const ms_diff_row *r, ms_metric m)
{
    return (int64_t)(ms_metric_value(&r->b, m) - ms_metric_value(&r->a, m));
}

static ms_metric g_m;

static int cmp_rows(const void *x, const void *y)
{
    const ms_diff_row *a = x, *b = y;
    int64_t da = ms_diff_delta(a, g_m), db = ms_diff_delta(b, g_m);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->key, b->key);
}

void ms_diff_sort(ms_diff *d, ms_metric m)
{
    g_m = m;
    qsort(d->rows, d->nrows, sizeof *d->rows, cmp_rows);
}

/* "leaf <- caller <- caller" from a root-first key, at most `max` frames. */
static void short_stack(FILE *out, const char *key, int max)
{
    const char *frames[64];
    size_t lens[64];
    int n = 0;
    const char *p = key;
    while (*p && n < 64) {
        const char *e = strchr(p, ';');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        frames[n] = p;
        lens[n++] = l;
        p += l + (e ? 1 : 0);
        if (!e)
            break;
    }
    int shown = 0;
    for (int i = n - 1; i >= 0 && shown < max; i--, shown++)
        fprintf(out, "%s%.*s", shown ? " <- " : "", (int)lens[i], frames[i]);
    if (n > max)
        fputs(" <- ...", out);
}

static void totals(const ms_diff *d, ms_snap_counters *ta, ms_snap_counters *tb)
{
    *ta = d->a->total;
    *tb = d->b->total;
}

int ms_diff_write_text(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                       size_t errlen)
{
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    int top = o && o->top > 0 ? o->top : 20;
    ms_snap_counters ta, tb;
    totals(d, &ta, &tb);
    char b1[32], b2[32], b3[32];
    fprintf(out, "memsight diff\n  A: %s\n  B: %s\n", d->name_a, d->name_b);
    if (d->dt_ns)
        fprintf(out, "  B taken %.3f s after A\n", (double)d->dt_ns / 1e9);
    fprintf(out, "\nlive bytes:  %s -> %s (%s)\n", ms_fmt_bytes(ta.live_bytes, b1, sizeof b1),
            ms_fmt_bytes(tb.live_bytes, b2, sizeof b2),
            ms_fmt_sbytes((int64_t)(tb.live_bytes - ta.live_bytes), b3, sizeof b3));
    fprintf(out, "live blocks: %" PRIu64 " -> %" PRIu64 " (%+" PRId64 ")\n", ta.live_blocks,
            tb.live_blocks, (int64_t)(tb.live_blocks - ta.live_blocks));
    size_t grew = 0, shrank = 0, added = 0, gone = 0;
    for (size_t i = 0; i < d->nrows; i++) {
        int64_t dv = ms_diff_delta(&d->rows[i], m);
        grew += dv > 0;
        shrank += dv < 0;
        added += d->rows[i].ia < 0;
        gone += d->rows[i].ib < 0;
    }
    fprintf(out, "stacks: %zu grew, %zu shrank, %zu new in B, %zu gone from B\n\n", grew, shrank,
            added, gone);
    int bytes = !strcmp(ms_metric_unit(m), "bytes");
    fprintf(out, "Stacks by change of %s, largest growth first:\n", ms_metric_name(m));
    fprintf(out, "%12s %12s %12s %9s  %s\n", "change", "A", "B", "blocks", "stack (innermost first)");
    int shown = 0;
    for (size_t i = 0; i < d->nrows && shown < top; i++) {
        const ms_diff_row *r = &d->rows[i];
        int64_t dv = ms_diff_delta(r, m);
        if (dv == 0)
            continue;
        char c1[32], c2[32], c3[32];
        if (bytes) {
            ms_fmt_sbytes(dv, c1, sizeof c1);
            ms_fmt_bytes(ms_metric_value(&r->a, m), c2, sizeof c2);
            ms_fmt_bytes(ms_metric_value(&r->b, m), c3, sizeof c3);
        } else {
            snprintf(c1, sizeof c1, "%+" PRId64, dv);
            snprintf(c2, sizeof c2, "%" PRIu64, ms_metric_value(&r->a, m));
            snprintf(c3, sizeof c3, "%" PRIu64, ms_metric_value(&r->b, m));
        }
        fprintf(out, "%12s %12s %12s %+9" PRId64 "  ", c1, c2, c3,
                (int64_t)(r->b.live_blocks - r->a.live_blocks));
        short_stack(out, r->key, 6);
        fputs(r->ia < 0 ? "  [new]\n" : r->ib < 0 ? "  [gone]\n" : "\n", out);
        shown++;
    }
    if (!shown)
        fputs("  (no stack changed)\n", out);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}

static void json_counters(FILE *out, const ms_snap_counters *c)
{
    fprintf(out,
            "{\"live_bytes\":%" PRIu64 ",\"live_blocks\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64
            ",\"alloc_blocks\":%" PRIu64 ",\"free_bytes\":%" PRIu64 ",\"free_blocks\":%" PRIu64 "}",
            c->live_bytes, c->live_blocks, c->alloc_bytes, c->alloc_blocks, c->free_bytes,
            c->free_blocks);
}

static void json_frames(FILE *out, const ms_agg *a, long idx)
{
    const ms_agg_stack *st = &a->stacks[idx];
    fputc('[', out);
    for (uint32_t i = st->nframes; i-- > 0;) { /* innermost first, as the report does */
        ms_json_string(out, a->names[st->frames[i]]);
        if (i)
            fputc(',', out);
    }
    fputc(']', out);
}

int ms_diff_write_json(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                       size_t errlen)
{
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    ms_snap_counters ta, tb;
    totals(d, &ta, &tb);
    fputs("{\"format\":\"memsight-diff\",\"version\":1,\"a\":", out);
    ms_json_string(out, d->name_a);
    fputs(",\"b\":", out);
    ms_json_string(out, d->name_b);
    fprintf(out, ",\"dt_ns\":%" PRId64 ",\"metric\":\"%s\",\"totals\":{\"a\":", d->dt_ns,
            ms_metric_name(m));
    json_counters(out, &ta);
    fputs(",\"b\":", out);
    json_counters(out, &tb);
    fprintf(out, ",\"delta_live_bytes\":%" PRId64 ",\"delta_live_blocks\":%" PRId64 "},\n\"stacks\":[",
            (int64_t)(tb.live_bytes - ta.live_bytes), (int64_t)(tb.live_blocks - ta.live_blocks));
    for (size_t i = 0; i < d->nrows; i++) {
        const ms_diff_row *r = &d->rows[i];
        fputs(i ? ",\n" : "\n", out);
        fprintf(out, "{\"delta\":%" PRId64 ",\"delta_live_bytes\":%" PRId64
                ",\"delta_live_blocks\":%" PRId64 ",\"status\":\"%s\",\"frames\":",
                ms_diff_delta(r, m), (int64_t)(r->b.live_bytes - r->a.live_bytes),
                (int64_t)(r->b.live_blocks - r->a.live_blocks),
                r->ia < 0 ? "new" : r->ib < 0 ? "gone" : "both");
        if (r->ib >= 0)
            json_frames(out, d->b, r->ib);
        else
            json_frames(out, d->a, r->ia);
        fputs(",\"a\":", out);
        json_counters(out, &r->a);
        fputs(",\"b\":", out);
        json_counters(out, &r->b);
        fputc('}', out);
    }
    fputs("\n]}\n", out);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}

int ms_diff_write_collapsed(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                            size_t errlen)
{
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    for (size_t i = 0; i < d->nrows; i++) {
        const ms_diff_row *r = &d->rows[i];
        uint64_t va = ms_metric_value(&r->a, m), vb = ms_metric_value(&r->b, m);
        if (!va && !vb)
            continue;
        for (const char *p = r->key; *p; p++)
            fputc(*p == '\n' ? '_' : *p, out);
        fprintf(out, " %" PRIu64 " %" PRIu64 "\n", va, vb);
    }
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}

int ms_diff_write_svg(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                      size_t errlen)
{
    char sub[1024];
    const char *ba = strrchr(d->name_a, '/'), *bb = strrchr(d->name_b, '/');
    snprintf(sub, sizeof sub, "%s -> %s", ba ? ba + 1 : d->name_a, bb ? bb + 1 : d->name_b);
    ms_flame_opts fo = {
        .metric = o ? o->metric : MS_METRIC_LIVE_BYTES,
        .title = o && o->title ? o->title : "memsight differential flame graph",
        .subtitle = sub,
    };
    return ms_flame_write(d->b, d->a, &fo, out, err, errlen);
}
