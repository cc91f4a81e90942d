/* Trend over a series of snapshots (see trend.h): per-stack live bytes at each snapshot
 * and the leak-suspect ranking. Tools only; writes only to the stream it is given. */
#include "analysis/trend.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t meta_u64(const ms_snapshot *s, const char *k, int *have)
{
    const char *v = ms_agg_meta(s, k);
    if (have)
        *have = v != NULL;
    return v ? strtoull(v, NULL, 10) : 0;
}

static int cmp_series(const void *x, const void *y)
{
    const ms_snapshot *a = *(ms_snapshot *const *)x, *b = *(ms_snapshot *const *)y;
    int ha, hb;
    uint64_t ta = meta_u64(a, "snapshot_ns", &ha), tb = meta_u64(b, "snapshot_ns", &hb);
    if (ha && hb && ta != tb)
        return ta < tb ? -1 : 1;
    uint64_t sa = meta_u64(a, "seq", &ha), sb = meta_u64(b, "seq", &hb);
    if (ha && hb && sa != sb)
        return sa < sb ? -1 : 1;
    return 0;
}

void ms_trend_sort_series(ms_snapshot **series, size_t n)
{
    /* insertion sort: stable, so equal keys keep the given order */
    for (size_t i = 1; i < n; i++) {
        ms_snapshot *x = series[i];
        size_t j = i;
        while (j > 0 && cmp_series(&series[j - 1], &x) > 0) {
            series[j] = series[j - 1];
            j--;
        }
        series[j] = x;
    }
}

int64_t ms_trend_slope_i64(double slope)
{
    if (!(slope == slope))
        return 0;
    if (slope >= 9.2e18)
        return INT64_MAX;
    if (slope <= -9.2e18)
        return INT64_MIN + 1;
    return (int64_t)llround(slope);
}

void ms_trend_free(ms_trend *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nstacks; i++) {
        free(t->stacks[i].bytes);
        free(t->stacks[i].blocks);
    }
    free(t->stacks);
    free(t->rank);
    free(t->paths);
    free(t->t_s);
    free(t->total_bytes);
    free(t->total_blocks);
    ms_agg_free(t->keys);
    free(t);
}

static const ms_trend *g_t;

static int cmp_rank(const void *x, const void *y)
{
    const ms_trend_stack *a = &g_t->stacks[*(const size_t *)x], *b = &g_t->stacks[*(const size_t *)y];
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->growth != b->growth)
        return a->growth > b->growth ? -1 : 1;
    uint64_t la = a->bytes[g_t->nsnap - 1], lb = b->bytes[g_t->nsnap - 1];
    if (la != lb)
        return la > lb ? -1 : 1;
    return strcmp(g_t->keys->stacks[a->id].key, g_t->keys->stacks[b->id].key);
}

ms_trend *ms_trend_build(ms_snapshot *const *series, size_t n, ms_symbolizer *const *syms,
                         ms_agg_key by, char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "trend needs at least one snapshot");
        return NULL;
    }
    ms_trend *t = calloc(1, sizeof *t);
    ms_agg **aggs = calloc(n, sizeof *aggs);
    if (!t || !aggs)
        goto oom;
    t->nsnap = n;
    t->paths = calloc(n, sizeof *t->paths);
    t->t_s = calloc(n, sizeof *t->t_s);
    t->total_bytes = calloc(n, sizeof *t->total_bytes);
    t->total_blocks = calloc(n, sizeof *t->total_blocks);
    t->keys = ms_agg_new();
    if (!t->paths || !t->t_s || !t->total_bytes || !t->total_blocks || !t->keys)
        goto oom;

    t->have_times = 1;
    uint64_t t0 = 0;
    for (size_t i = 0; i < n; i++) {
        int have;
        uint64_t ns = meta_u64(series[i], "snapshot_ns", &have);
        if (!have)
            t->have_times = 0;
        if (i == 0)
            t0 = ns;
        t->t_s[i] = (double)(int64_t)(ns - t0) / 1e9;
        t->paths[i] = series[i]->path ? series[i]->path : "snapshot";
    }
    if (t->have_times && n > 1 && t->t_s[n - 1] <= 0)
        t->have_times = 0; /* all at one instant: use the index */
    if (!t->have_times)
        for (size_t i = 0; i < n; i++)
            t->t_s[i] = (double)i;
    for (size_t i = n; i-- > 0;)
        if (series[i]->has_peak) {
            t->has_peak = 1;
            t->peak_bytes = series[i]->peak_live_bytes_total;
            t->peak_t_s = t->have_times && series[i]->peak_ns >= t0
                              ? (double)(series[i]->peak_ns - t0) / 1e9
                              : -1;
            break;
        }

    for (size_t i = 0; i < n; i++) {
        aggs[i] = ms_agg_build(series[i], syms ? syms[i] : NULL, by, err, errlen);
        if (!aggs[i])
            goto fail;
        t->total_bytes[i] = aggs[i]->total.live_bytes;
        t->total_blocks[i] = aggs[i]->total.live_blocks;
        ms_snap_counters zero = {0};
        for (size_t j = 0; j < aggs[i]->nstacks; j++) {
            const ms_agg_stack *st = &aggs[i]->stacks[j];
            const char *names[st->nframes ? st->nframes : 1];
            for (uint32_t f = 0; f < st->nframes; f++)
                names[f] = aggs[i]->names[st->frames[f]];
            if (ms_agg_add(t->keys, names, st->nframes, st->kind,
                           i == n - 1 ? &st->c : &zero, st->first_id) < 0)
                goto oom;
        }
    }
    t->nstacks = t->keys->nstacks;
    t->stacks = calloc(t->nstacks ? t->nstacks : 1, sizeof *t->stacks);
    t->rank = calloc(t->nstacks ? t->nstacks : 1, sizeof *t->rank);
    if (!t->stacks || !t->rank)
        goto oom;
    for (size_t k = 0; k < t->nstacks; k++) {
        t->stacks[k].id = (long)k;
        t->stacks[k].bytes = calloc(n, sizeof(uint64_t));
        t->stacks[k].blocks = calloc(n, sizeof(uint64_t));
        if (!t->stacks[k].bytes || !t->stacks[k].blocks)
            goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < aggs[i]->nstacks; j++) {
            long k = ms_agg_find(t->keys, aggs[i]->stacks[j].key);
            if (k < 0)
                continue;
            t->stacks[k].bytes[i] = aggs[i]->stacks[j].c.live_bytes;
            t->stacks[k].blocks[i] = aggs[i]->stacks[j].c.live_blocks;
        }
        ms_agg_free(aggs[i]);
        aggs[i] = NULL;
    }

    /* growth statistics */
    double positive = 0;
    size_t intervals = n - 1;
    double tm = 0;
    for (size_t i = 0; i < n; i++)
        tm += t->t_s[i];
    tm /= (double)n;
    double sxx = 0;
    for (size_t i = 0; i < n; i++)
        sxx += (t->t_s[i] - tm) * (t->t_s[i] - tm);
    for (size_t k = 0; k < t->nstacks; k++) {
        ms_trend_stack *st = &t->stacks[k];
        double vm = 0;
        for (size_t i = 0; i < n; i++)
            vm += (double)st->bytes[i];
        vm /= (double)n;
        double sxy = 0;
        for (size_t i = 0; i < n; i++) {
            sxy += (t->t_s[i] - tm) * ((double)st->bytes[i] - vm);
            if (i) {
                st->grew += st->bytes[i] > st->bytes[i - 1];
                st->shrank += st->bytes[i] < st->bytes[i - 1];
            }
        }
        st->slope = sxx > 0 ? sxy / sxx : 0;
        st->growth = (int64_t)(st->bytes[n - 1] - st->bytes[0]);
        if (st->growth > 0)
            positive += (double)st->growth;
        double s = intervals ? ((double)st->grew - (double)st->shrank) / (double)intervals : 0;
        st->steadiness = s < 0 ? 0 : s > 1 ? 1 : s;
    }
    t->total_growth = (int64_t)(t->total_bytes[n - 1] - t->total_bytes[0]);
    for (size_t k = 0; k < t->nstacks; k++) {
        ms_trend_stack *st = &t->stacks[k];
        st->share = positive > 0 && st->growth > 0 ? (double)st->growth / positive : 0;
        st->score = st->growth > 0 ? st->steadiness * st->steadiness * (0.5 + 0.5 * st->share) : 0;
        t->rank[k] = k;
    }
    g_t = t;
    qsort(t->rank, t->nstacks, sizeof *t->rank, cmp_rank);
    for (size_t k = 0; k < t->nstacks && t->stacks[t->rank[k]].score > 0; k++)
        t->nsuspects++;
    free(aggs);
    return t;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    if (aggs)
        for (size_t i = 0; i < n; i++)
            ms_agg_free(aggs[i]);
    free(aggs);
    ms_trend_free(t);
    return NULL;
}

static void short_stack(FILE *out, const ms_agg *a, long id, int max)
{
    const ms_agg_stack *st = &a->stacks[id];
    int shown = 0;
    for (uint32_t i = st->nframes; i-- > 0 && shown < max; shown++)
        fprintf(out, "%s%s", shown ? " <- " : "", a->names[st->frames[i]]);
    if ((int)st->nframes > max)
        fputs(" <- ...", out);
}

/* A time in a unit fitting the whole span: ms for sub-second series. */
static void fmt_time(double t, double span, char *buf, size_t len)
{
    if (span < 1)
        snprintf(buf, len, "%.0fms", t * 1000);
    else if (span < 100)
        snprintf(buf, len, "%.2fs", t);
    else
        snprintf(buf, len, "%.0fs", t);
}

static const char *rate_unit(const ms_trend *t) { return t->have_times ? "/s" : "/snap"; }

int ms_trend_write_text(const ms_trend *t, const ms_export_opts *o, FILE *out, char *err,
                        size_t errlen)
{
    int top = o && o->top > 0 ? o->top : 10;
    size_t n = t->nsnap;
    char b1[32], b2[32], b3[32];
    fprintf(out, "memsight trend: %zu snapshots", n);
    if (t->have_times) {
        char d[32];
        fmt_time(t->t_s[n - 1], t->t_s[n - 1], d, sizeof d);
        fprintf(out, " over %s", d);
    }
    fprintf(out, "\ntotal live: %s -> %s (%s)\n\n", ms_fmt_bytes(t->total_bytes[0], b1, sizeof b1),
            ms_fmt_bytes(t->total_bytes[n - 1], b2, sizeof b2),
            ms_fmt_sbytes(t->total_growth, b3, sizeof b3));
    if (n < 2)
        fputs("(one snapshot: no growth to rank)\n\n", out);
    fprintf(out, "Leak suspects, steady growth first (%zu of %zu stacks grew):\n", t->nsuspects,
            t->nstacks);
    fprintf(out, "%3s %6s %7s %14s %12s %7s  %s\n", "#", "score", "grew", "slope", "growth", "share",
            "stack (innermost first)");
    for (size_t r = 0; r < t->nsuspects && (int)r < top; r++) {
        const ms_trend_stack *st = &t->stacks[t->rank[r]];
        char g[32], sl[48], tmp[32];
        ms_fmt_sbytes(st->growth, g, sizeof g);
        snprintf(sl, sizeof sl, "%s%s", ms_fmt_sbytes(ms_trend_slope_i64(st->slope), tmp, sizeof tmp),
                 rate_unit(t));
        char grew[24];
        snprintf(grew, sizeof grew, "%u/%zu", st->grew, n - 1);
        fprintf(out, "%3zu %6.3f %7s %14s %12s %6.1f%%  ", r + 1, st->score, grew, sl, g,
                100.0 * st->share);
        short_stack(out, t->keys, st->id, 5);
        fputc('\n', out);
    }
    if (!t->nsuspects)
        fputs("  (no stack grew)\n", out);

    /* live bytes per stack at each snapshot; with many snapshots, an even selection */
    size_t cols[12], ncols = 0;
    if (n <= 12)
        for (size_t i = 0; i < n; i++)
            cols[ncols++] = i;
    else
        for (size_t i = 0; i < 12; i++)
            cols[ncols++] = i * (n - 1) / 11;
    fprintf(out, "\nLive bytes per stack at each snapshot%s:\n", n > 12 ? " (12 of them, evenly spaced)" : "");
    fprintf(out, "%4s", "#");
    for (size_t c = 0; c < ncols; c++) {
        char h[40];
        if (t->have_times) {
            char d[24];
            fmt_time(t->t_s[cols[c]], t->t_s[n - 1], d, sizeof d);
            snprintf(h, sizeof h, "t=%s", d);
        }
        else
            snprintf(h, sizeof h, "snap %zu", cols[c] + 1);
        fprintf(out, " %10s", h);
    }
    fputs("\n", out);
    fprintf(out, "%4s", "all");
    for (size_t c = 0; c < ncols; c++)
        fprintf(out, " %10s", ms_fmt_bytes(t->total_bytes[cols[c]], b1, sizeof b1));
    fputc('\n', out);
    size_t rows = t->nstacks < (size_t)top ? t->nstacks : (size_t)top;
    for (size_t r = 0; r < rows; r++) {
        const ms_trend_stack *st = &t->stacks[t->rank[r]];
        fprintf(out, "%4zu", r + 1);
        for (size_t c = 0; c < ncols; c++)
            fprintf(out, " %10s", ms_fmt_bytes(st->bytes[cols[c]], b1, sizeof b1));
        fputs("  ", out);
        short_stack(out, t->keys, st->id, 2);
        fputc('\n', out);
    }
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}

int ms_trend_write_json(const ms_trend *t, const ms_export_opts *o, FILE *out, char *err,
                        size_t errlen)
{
    (void)o;
    size_t n = t->nsnap;
    fprintf(out, "{\"format\":\"memsight-trend\",\"version\":1,\"have_times\":%s,\"snapshots\":[",
            t->have_times ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", out);
        fputs("{\"path\":", out);
        ms_json_string(out, t->paths[i]);
        fprintf(out, ",\"t_s\":%.6f,\"live_bytes\":%" PRIu64 ",\"live_blocks\":%" PRIu64 "}",
                t->t_s[i], t->total_bytes[i], t->total_blocks[i]);
    }
    fprintf(out, "\n],\"total_growth\":%" PRId64 ",\"suspects\":%zu,\"stacks\":[", t->total_growth,
            t->nsuspects);
    for (size_t r = 0; r < t->nstacks; r++) {
        const ms_trend_stack *st = &t->stacks[t->rank[r]];
        const ms_agg_stack *ks = &t->keys->stacks[st->id];
        fputs(r ? ",\n" : "\n", out);
        fprintf(out, "{\"rank\":%zu,\"suspect\":%s,\"score\":%.6f,\"grew\":%u,\"shrank\":%u,"
                "\"steadiness\":%.6f,\"slope_bytes_per_%s\":%.3f,\"growth\":%" PRId64
                ",\"share\":%.6f,\"frames\":[",
                r + 1, st->score > 0 ? "true" : "false", st->score, st->grew, st->shrank,
                st->steadiness, t->have_times ? "s" : "snapshot", st->slope, st->growth, st->share);
        for (uint32_t i = ks->nframes; i-- > 0;) {
            ms_json_string(out, t->keys->names[ks->frames[i]]);
            if (i)
                fputc(',', out);
        }
        fputs("],\"live_bytes\":[", out);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%" PRIu64, i ? "," : "", st->bytes[i]);
        fputs("],\"live_blocks\":[", out);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%" PRIu64, i ? "," : "", st->blocks[i]);
        fputs("]}", out);
    }
    fputs("\n]}\n", out);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}

/* ---- charts ------------------------------------------------------------------------ */

static const char *palette[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#17becf"};

/* Axis top and tick step in binary units, so ticks read 0, 512 KiB, 1 MiB, 1.5 MiB. */
static void nice_axis(double v, double *top, double *step)
{
    double unit = 1;
    while (v >= unit * 1024 && unit < 1099511627776.0)
        unit *= 1024;
    double x = v / unit, raw = x / 4;
    if (raw <= 0)
        raw = 0.25;
    double p = pow(10, floor(log10(raw))), st = 10 * p;
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i] * p >= raw) {
            st = m[i] * p;
            break;
        }
    if (unit == 1 && st < 1)
        st = 1;
    double n = ceil(x / st - 1e-9);
    if (n < 1)
        n = 1;
    *step = st * unit;
    *top = n * st * unit;
}

/* A round step for an axis: 1, 2, 2.5 or 5 times a power of ten, about v/5. */
static double nice_step(double v)
{
    double raw = v / 5;
    if (raw <= 0)
        return 1;
    double p = pow(10, floor(log10(raw)));
    static const double m[] = {1, 2, 2.5, 5, 10};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i] * p >= raw)
            return m[i] * p;
    return 10 * p;
}

/* A line chart of series over the snapshots' times. Each polyline carries its values in
 * data-values (bytes, one per snapshot) so that a test or a script can read them back;
 * with_peak marks the recorded process peak (a dashed line at its time, data-peak-*). */
static void chart(const ms_trend *t, FILE *out, const char *title, const uint64_t *const *series,
                  const char *const *labels, size_t nseries, const char *cls, int with_peak)
{
    const int W = 900, H = 280, L = 80, R = 20, T = 34, B = 40;
    size_t n = t->nsnap;
    double ymax = 0, xspan = t->t_s[n - 1] > 0 ? t->t_s[n - 1] : 1, ystep;
    int peak = with_peak && t->has_peak;
    double peak_x = peak && t->peak_t_s >= 0 && t->peak_t_s <= xspan ? t->peak_t_s : -1;
    for (size_t s = 0; s < nseries; s++)
        for (size_t i = 0; i < n; i++)
            if ((double)series[s][i] > ymax)
                ymax = (double)series[s][i];
    if (peak && (double)t->peak_bytes > ymax)
        ymax = (double)t->peak_bytes;
    nice_axis(ymax, &ymax, &ystep);
    int nticks = (int)(ymax / ystep + 0.5);
    /* time ticks on round values (0.5 s, not 0.72 s); snapshot numbers when no times */
    double xstep = t->have_times ? nice_step(xspan) : (n > 5 ? ceil((double)(n - 1) / 5) : 1);
    double xmax = ceil(xspan / xstep - 1e-9) * xstep;
    if (xmax <= 0)
        xmax = xstep;
    fprintf(out, "<svg class=\"chart %s\" viewBox=\"0 0 %d %d\" width=\"100%%\" "
            "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\"", cls, W, H);
    if (peak)
        fprintf(out, " data-peak-bytes=\"%" PRIu64 "\" data-peak-t=\"%.6f\"", t->peak_bytes,
                t->peak_t_s);
    fputs(">\n", out);
    fprintf(out, "<text x=\"%d\" y=\"20\" class=\"ctitle\">", L);
    ms_xml_escape(out, title);
    fputs("</text>\n", out);
    for (int k = 0; k <= nticks; k++) {
        double v = ystep * k;
        int y = H - B - (int)((H - T - B) * (double)k / nticks);
        char lb[32];
        ms_fmt_bytes((uint64_t)v, lb, sizeof lb);
        fprintf(out, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" class=\"grid\"/>"
                "<text x=\"%d\" y=\"%d\" class=\"axis\" text-anchor=\"end\">%s</text>\n",
                L, W - R, y, y, L - 6, y + 4, lb);
    }
    for (double v = 0; v <= xmax + xstep / 1000; v += xstep) {
        int x = L + (int)((W - L - R) * v / xmax);
        char tl[32];
        if (t->have_times)
            fmt_time(v, xmax, tl, sizeof tl);
        else
            snprintf(tl, sizeof tl, "%.0f", v + 1);
        fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"axis xtick\" text-anchor=\"middle\">%s</text>\n",
                x, H - B + 16, tl);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"axis\" text-anchor=\"middle\">%s</text>\n",
            L + (W - L - R) / 2, H - 6, t->have_times ? "time since the first snapshot" : "snapshot");
    if (peak) {
        char lb[32], tl[32] = "";
        ms_fmt_bytes(t->peak_bytes, lb, sizeof lb);
        double py = H - B - (H - T - B) * ((double)t->peak_bytes / ymax);
        if (peak_x >= 0) {
            double px = L + (W - L - R) * (peak_x / xmax);
            fmt_time(peak_x, xmax, tl, sizeof tl);
            fprintf(out, "<g class=\"peak\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                    "stroke=\"#b3261e\" stroke-dasharray=\"4 3\"/><circle cx=\"%.1f\" cy=\"%.1f\" "
                    "r=\"5\" fill=\"#b3261e\"><title>peak %s at %s</title></circle>"
                    "<text x=\"%.1f\" y=\"%.1f\" fill=\"#b3261e\" text-anchor=\"%s\">peak %s</text></g>\n",
                    px, px, T, H - B, px, py, lb, tl, px + (px > W / 2 ? -8 : 8), py - 8,
                    px > W / 2 ? "end" : "start", lb);
        } else {
            /* the peak fell outside the series: a dashed level with its value */
            fprintf(out, "<g class=\"peak\"><line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#b3261e\" stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%.1f\" "
                    "fill=\"#b3261e\" text-anchor=\"end\">peak %s (outside the series)</text></g>\n",
                    L, W - R, py, py, W - R, py - 6, lb);
        }
    }
    for (size_t s = 0; s < nseries; s++) {
        const char *col = palette[s % (sizeof palette / sizeof palette[0])];
        fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" data-label=\"", col);
        ms_xml_escape(out, labels[s] ? labels[s] : "");
        fputs("\" data-values=\"", out);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "%s%" PRIu64, i ? " " : "", series[s][i]);
        fputs("\" points=\"", out);
        for (size_t i = 0; i < n; i++) {
            double x = L + (W - L - R) * (t->t_s[i] / xmax);
            double y = H - B - (H - T - B) * ((double)series[s][i] / ymax);
            fprintf(out, "%.1f,%.1f ", x, y);
        }
        fputs("\"/>\n", out);
        for (size_t i = 0; i < n; i++) {
            double x = L + (W - L - R) * (t->t_s[i] / xmax);
            double y = H - B - (H - T - B) * ((double)series[s][i] / ymax);
            char lb[32];
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", x, y, col);
            if (labels[s]) {
                ms_xml_escape(out, labels[s]);
                fputs(": ", out);
            }
            char tl[32];
            if (t->have_times)
                fmt_time(t->t_s[i], xmax, tl, sizeof tl);
            else
                snprintf(tl, sizeof tl, "snapshot %zu", i + 1);
            fprintf(out, "%s at %s</title></circle>\n", ms_fmt_bytes(series[s][i], lb, sizeof lb), tl);
        }
    }
    fputs("</svg>\n", out);
}

static int is_allocator(const char *name)
{
    static const char *const fns[] = {"malloc", "calloc", "realloc", "reallocarray", "memalign",
                                      "posix_memalign", "aligned_alloc", "valloc", "pvalloc",
                                      "strdup", "strndup", "mmap", "mmap64"};
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (!strcmp(name, fns[i]))
            return 1;
    return !strncmp(name, "operator new", 12);
}

/* The innermost frame that is not an allocator entry tells a stack apart. */
static const char *stack_leaf(const ms_trend *t, long id)
{
    const ms_agg_stack *ks = &t->keys->stacks[id];
    const char *leaf = "?";
    for (uint32_t f = ks->nframes; f-- > 0;) {
        leaf = t->keys->names[ks->frames[f]];
        if (!is_allocator(leaf))
            break;
    }
    return leaf;
}

/* heaptrack's consumption over time: the stacks that held the most at any snapshot. */
static void top_stacks_chart(const ms_trend *t, int top, FILE *out)
{
    size_t k = (size_t)top < 8 ? (size_t)top : 8, nk = 0;
    const ms_trend_stack *best[8];
    uint64_t bmax[8];
    for (size_t i = 0; i < t->nstacks; i++) {
        const ms_trend_stack *st = &t->stacks[i];
        uint64_t m = 0;
        for (size_t j = 0; j < t->nsnap; j++)
            if (st->bytes[j] > m)
                m = st->bytes[j];
        if (!m)
            continue;
        size_t p = nk < k ? nk++ : k;
        while (p > 0 && bmax[p - 1] < m) {
            if (p < k) {
                best[p] = best[p - 1];
                bmax[p] = bmax[p - 1];
            }
            p--;
        }
        if (p < k) {
            best[p] = st;
            bmax[p] = m;
        }
    }
    if (!nk)
        return;
    const uint64_t *ser[8];
    const char *lab[8];
    for (size_t i = 0; i < nk; i++) {
        ser[i] = best[i]->bytes;
        lab[i] = stack_leaf(t, best[i]->id);
    }
    chart(t, out, "Top stacks by live bytes over time", ser, lab, nk, "chart-top", 0);
    fputs("<ol class=\"legend\">\n", out);
    for (size_t i = 0; i < nk; i++) {
        char b[32];
        fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                palette[i % (sizeof palette / sizeof palette[0])]);
        ms_xml_escape(out, lab[i]);
        fprintf(out, " <span class=\"muted\">(at most %s)</span></li>\n",
                ms_fmt_bytes(bmax[i], b, sizeof b));
    }
    fputs("</ol>\n", out);
}

void ms_trend_write_charts(const ms_trend *t, int top, FILE *out)
{
    const uint64_t *tot[1] = {t->total_bytes};
    const char *tl[1] = {"total live"};
    chart(t, out, "Total live bytes", tot, tl, 1, "chart-total", 1);
    top_stacks_chart(t, top, out);
    size_t k = t->nsuspects < (size_t)top ? t->nsuspects : (size_t)top;
    if (!k)
        return;
    const uint64_t *ser[16];
    const char *lab[16];
    if (k > 16)
        k = 16;
    for (size_t i = 0; i < k; i++) {
        const ms_trend_stack *st = &t->stacks[t->rank[i]];
        ser[i] = st->bytes;
        lab[i] = stack_leaf(t, st->id);
    }
    chart(t, out, "Top growing stacks (live bytes)", ser, lab, k, "chart-growth", 0);
    fputs("<ol class=\"legend\">\n", out);
    for (size_t i = 0; i < k; i++) {
        const ms_trend_stack *st = &t->stacks[t->rank[i]];
        fprintf(out, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
                palette[i % (sizeof palette / sizeof palette[0])]);
        FILE *mem = NULL;
        char *buf = NULL;
        size_t len = 0;
        mem = open_memstream(&buf, &len);
        if (mem) {
            short_stack(mem, t->keys, st->id, 6);
            fclose(mem);
            ms_xml_escape(out, buf);
            free(buf);
        }
        char g[32];
        fprintf(out, " <span class=\"muted\">(%s, grew in %u of %zu intervals)</span></li>\n",
                ms_fmt_sbytes(st->growth, g, sizeof g), st->grew, t->nsnap - 1);
    }
    fputs("</ol>\n", out);
}
