/* The self-contained HTML report: one file with its styles, scripts and pictures
 * inline, never anything fetched from the network. Totals and health, leak-scan result,
 * a sortable table of top stacks, the flame graph and, for a series, growth charts.
 * Tools only; writes only to the stream it is given. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/export.h"
#include "analysis/report_model.h"
#include "analysis/stack_agg.h"
#include "analysis/threads_report.h"
#include "analysis/trend.h"

static const char css[] =
    "*{box-sizing:border-box}\n"
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "margin:0;background:#f4f5f7;color:#1d2330}\n"
    "header{background:#1d2330;color:#fff;padding:18px 28px}\n"
    "header h1{margin:0;font-size:22px;font-weight:600}\n"
    "header .sub{color:#b8c0d0;font-size:13px;margin-top:4px;word-break:break-all}\n"
    "main{padding:18px 28px;max-width:1500px}\n"
    "section{background:#fff;border-radius:8px;padding:16px 20px;margin:0 0 18px;"
    "box-shadow:0 1px 3px rgba(0,0,0,.08)}\n"
    "h2{font-size:17px;margin:0 0 12px}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".card{background:#f7f8fa;border:1px solid #e3e6eb;border-radius:6px;padding:10px 14px;min-width:150px}\n"
    ".card .v{font-size:20px;font-weight:600}\n"
    ".card .k{font-size:12px;color:#5b6475;text-transform:uppercase;letter-spacing:.03em}\n"
    ".ok{color:#26734d}.warn{color:#b3261e;font-weight:600}.muted{color:#6b7385}\n"
    "table{border-collapse:collapse;width:100%;font-size:13px}\n"
    "th,td{padding:5px 8px;border-bottom:1px solid #eceef2;text-align:left;vertical-align:top}\n"
    "th{background:#f7f8fa;position:sticky;top:0;white-space:nowrap}\n"
    "th.sortable{cursor:pointer;user-select:none}\n"
    "th.sortable:after{content:' \\2195';color:#aab}\n"
    "th.asc:after{content:' \\25B2';color:#333}th.desc:after{content:' \\25BC';color:#333}\n"
    "td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.stack{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:12px}\n"
    "td.stack details summary{cursor:pointer}\n"
    "td.stack ol{margin:4px 0 0;padding-left:22px;color:#394055}\n"
    ".bar{display:inline-block;height:8px;background:#e4572e;border-radius:2px;vertical-align:middle;margin-right:6px}\n"
    ".kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 16px;font-size:13px}\n"
    ".kv div:nth-child(odd){color:#5b6475}\n"
    ".kv.cols{grid-template-columns:repeat(3,max-content 1fr)}\n"
    ".chart text{font-size:11px;fill:#5b6475;font-family:sans-serif}\n"
    ".chart .ctitle{font-size:14px;fill:#1d2330;font-weight:600}\n"
    ".chart .grid{stroke:#e3e6eb}\n"
    ".legend{font-size:12px;font-family:ui-monospace,monospace}\n"
    ".swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:middle}\n"
    "#errors{display:none;background:#fde7e9;color:#b3261e;padding:10px 28px;font-weight:600}\n"
    "input.filter{padding:5px 8px;border:1px solid #ccd;border-radius:4px;width:320px;margin-bottom:8px}\n";

static const char page_js[] =
    "(function(){\n"
    "var box=document.getElementById('errors');\n"
    "function fail(m){box.style.display='block';box.textContent+='script error: '+m+'\\n';"
    "document.body.setAttribute('data-error',(document.body.getAttribute('data-error')||'')+m+';');}\n"
    "window.addEventListener('error',function(e){fail(e.message+' line '+e.lineno);});\n"
    "try{\n"
    "document.querySelectorAll('table.sortable').forEach(function(tbl){\n"
    " var ths=tbl.querySelectorAll('th');\n"
    " ths.forEach(function(th,col){if(!th.classList.contains('sortable'))return;\n"
    "  th.addEventListener('click',function(){\n"
    "   var asc=th.classList.contains('desc')?true:th.classList.contains('asc')?false:"
    "th.getAttribute('data-type')!=='num';\n"
    "   ths.forEach(function(h){h.classList.remove('asc','desc');});\n"
    "   th.classList.add(asc?'asc':'desc');\n"
    "   var body=tbl.tBodies[0],rows=[].slice.call(body.rows);\n"
    "   var num=th.getAttribute('data-type')==='num';\n"
    "   rows.sort(function(a,b){var x=a.cells[col].getAttribute('data-v')||a.cells[col].textContent,"
    "y=b.cells[col].getAttribute('data-v')||b.cells[col].textContent;\n"
    "    var r=num?(+x)-(+y):x.localeCompare(y);return asc?r:-r;});\n"
    "   rows.forEach(function(r){body.appendChild(r);});\n"
    "   tbl.setAttribute('data-sorted',col+(asc?'a':'d'));});});});\n"
    "var f=document.getElementById('filter');\n"
    "if(f)f.addEventListener('input',function(){var q=f.value.toLowerCase();\n"
    " document.querySelectorAll('#stacks tbody tr').forEach(function(r){"
    "r.style.display=!q||r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});\n"
    "document.documentElement.setAttribute('data-ready','1');\n"
    "}catch(e){fail(e&&e.message?e.message:e);}\n"
    "})();\n";

static void esc(FILE *out, const char *s) { ms_xml_escape(out, s ? s : ""); }

static void card(FILE *out, const char *k, const char *v, const char *cls)
{
    fprintf(out, "<div class=\"card\"><div class=\"v%s%s\">", cls ? " " : "", cls ? cls : "");
    esc(out, v);
    fputs("</div><div class=\"k\">", out);
    esc(out, k);
    fputs("</div></div>\n", out);
}

static void card_bytes(FILE *out, const char *k, uint64_t v)
{
    char b[32];
    card(out, k, ms_fmt_bytes(v, b, sizeof b), NULL);
}

static void card_num(FILE *out, const char *k, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    card(out, k, b, NULL);
}

/* Health counters whose non-zero value means data was lost or is incomplete. */
static int health_is_bad(const char *name)
{
    static const char *const words[] = {"drop", "fail", "lost", "overflow", "truncat", "error"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(name, words[i]))
            return 1;
    return 0;
}

static void section_overview(FILE *out, const ms_snapshot *s, const ms_agg *a, ms_symbolizer *sym)
{
    fputs("<section id=\"totals\"><h2>Totals</h2><div class=\"cards\">\n", out);
    card_bytes(out, "live bytes", a->total.live_bytes);
    card_num(out, "live blocks", a->total.live_blocks);
    int cumulative = a->total.alloc_blocks != 0 || a->total.live_blocks == 0;
    if (cumulative) {
        card_bytes(out, "allocated (total)", a->total.alloc_bytes);
        card_num(out, "allocations", a->total.alloc_blocks);
        card_bytes(out, "freed (total)", a->total.free_bytes);
    }
    if (s->has_peak)
        card_bytes(out, "peak live", s->peak_live_bytes_total);
    card_num(out, "distinct stacks", a->nstacks);
    if (s->nthreads)
        card_num(out, "threads", s->nthreads);
    if (s->flags & MS_SNAP_F_SAMPLED) {
        const char *iv = ms_agg_meta(s, "sample_interval");
        char b[64];
        snprintf(b, sizeof b, "sampled, every %s B", iv ? iv : "?");
        card(out, "mode", b, NULL);
    }
    fputs("</div>\n", out);
    if (!cumulative)
        fputs("<p class=\"muted\">This snapshot holds live allocations only (no cumulative "
              "counters), as an imported heap dump does.</p>\n", out);

    /* process metadata */
    static const char *const keys[] = {"exe", "pid", "hostname", "reason", "seq", "unwinder",
                                       "options", "labels", "source", "build_fingerprint"};
    fputs("<div class=\"kv\" style=\"margin-top:14px\">\n", out);
    char as[256];
    if (ms_report_started_as(s, as, sizeof as)) { /* the name its users know it by */
        fputs("<div>started as</div><div>", out);
        esc(out, as);
        fputs("</div>\n", out);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = ms_agg_meta(s, keys[i]);
        if (!v || !*v)
            continue;
        fprintf(out, "<div>%s</div><div>", keys[i]);
        esc(out, v);
        fputs("</div>\n", out);
    }
    const char *ns = ms_agg_meta(s, "snapshot_ns");
    if (ns) {
        time_t tt = (time_t)(strtoull(ns, NULL, 10) / 1000000000ull);
        struct tm tm;
        char b[64];
        if (gmtime_r(&tt, &tm) && strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(out, "<div>taken</div><div>%s</div>\n", b);
    }
    fputs("</div></section>\n", out);

    /* health */
    fputs("<section id=\"health\"><h2>Health</h2>\n", out);
    int bad = 0;
    for (size_t i = 0; i < s->nhealth; i++)
        if (s->health[i].value && health_is_bad(s->health[i].name))
            bad++;
    if (!s->nhealth)
        fputs("<p class=\"muted\">The snapshot carries no agent health counters "
              "(an imported dump, or an agent that did not record them).</p>\n", out);
    else if (bad)
        fprintf(out, "<p class=\"warn\">%d counter(s) say data was lost: the numbers below "
                "may be incomplete.</p>\n", bad);
    else
        fputs("<p class=\"ok\">No data lost: every allocation was recorded.</p>\n", out);
    if (s->nhealth || s->nacct) {
        fputs("<div class=\"kv cols\">\n", out);
        for (size_t i = 0; i < s->nhealth; i++) {
            int b = s->health[i].value && health_is_bad(s->health[i].name);
            fputs("<div>", out);
            esc(out, s->health[i].name);
            fprintf(out, "</div><div%s>%" PRIu64 "</div>\n", b ? " class=\"warn\"" : "",
                    s->health[i].value);
        }
        for (size_t i = 0; i < s->nacct; i++) {
            fputs("<div>", out);
            esc(out, s->acct[i].name);
            fprintf(out, " (/proc)</div><div>%" PRIu64 " kB</div>\n", s->acct[i].value);
        }
        fputs("</div>\n", out);
    }
    if (s->unknown_chunks)
        fprintf(out, "<p class=\"muted\">%zu chunk(s) from a newer format were skipped.</p>\n",
                s->unknown_chunks);
    const char *const *warn = NULL;
    size_t nw = sym ? ms_symbolizer_warnings(sym, &warn) : 0;
    if (nw) {
        fputs("<p class=\"warn\">Some frames are not symbolized:</p><ul class=\"muted\">\n", out);
        for (size_t i = 0; i < nw && i < 20; i++) {
            fputs("<li>", out);
            esc(out, warn[i]);
            fputs("</li>\n", out);
        }
        fputs("</ul>\n", out);
    }
    fputs("</section>\n", out);
}

/* Symbolized frames of one recorded stack, innermost first, as list items. */
static void stack_items(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st)
{
    fputs("<ol>", out);
    for (uint32_t d = 0; d < st->depth; d++) {
        ms_frame fr[16];
        int k = ms_agg_resolve(s, sym, st->pcs[d], ms_agg_is_return_address(st, d), fr, 16);
        for (int j = 0; j < k; j++) {
            fputs("<li>", out);
            /* as the text report: an unnamed frame is module+offset (the same in every
             * run of the program), an absolute address only without a module */
            if (fr[j].function) {
                esc(out, fr[j].function);
            } else if (fr[j].module && !fr[j].file) {
                const char *b = strrchr(fr[j].module, '/');
                fputs("?? ", out);
                esc(out, b ? b + 1 : fr[j].module);
                fprintf(out, "+0x%" PRIx64 "</li>", fr[j].module_offset);
                continue;
            } else {
                fprintf(out, "0x%" PRIx64, fr[j].address);
            }
            if (fr[j].file) {
                const char *b = strrchr(fr[j].file, '/');
                fputs(" <span class=\"muted\">", out);
                esc(out, b ? b + 1 : fr[j].file);
                fprintf(out, ":%d</span>", fr[j].line);
            } else if (fr[j].module) {
                const char *b = strrchr(fr[j].module, '/');
                fputs(" <span class=\"muted\">", out);
                esc(out, b ? b + 1 : fr[j].module);
                fprintf(out, "+0x%" PRIx64 "</span>", fr[j].module_offset);
            }
            if (fr[j].inlined)
                fputs(" <span class=\"muted\">(inlined)</span>", out);
            fputs("</li>", out);
        }
    }
    fputs("</ol>", out);
}

void ms_report_html_frames(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st)
{
    if (st)
        stack_items(out, s, sym, st);
    else
        fputs("<span class=\"muted\">no stack</span>", out);
}

static const char *leak_class_name(unsigned c)
{
    static const char *const n[] = {"definitely lost", "indirectly lost", "possibly lost",
                                     "still reachable"};
    return c < MS_LEAK_CLASS_COUNT ? n[c] : "unknown";
}

static void section_leaks(FILE *out, const ms_snapshot *s, ms_symbolizer *sym)
{
    if (!s->has_leaks)
        return;
    const ms_snap_leak_summary *ls = &s->leak_summary;
    char b[32];
    fputs("<section id=\"leaks\"><h2>Leak scan</h2><div class=\"cards\">\n", out);
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
        char v[64];
        snprintf(v, sizeof v, "%s in %" PRIu64, ms_fmt_bytes(ls->bytes[c], b, sizeof b), ls->blocks[c]);
        card(out, leak_class_name(c), v, c == MS_LEAK_DEFINITE && ls->bytes[c] ? "warn" : NULL);
    }
    fprintf(out, "</div><p class=\"muted\">Program paused %.2f ms; scan took %.2f ms.</p>\n",
            (double)ls->pause_ns / 1e6, (double)ls->scan_ns / 1e6);
    if (s->nleaks) {
        fputs("<table class=\"sortable\" id=\"leaktable\"><thead><tr><th class=\"sortable\">class</th>"
              "<th class=\"sortable\" data-type=\"num\">bytes</th><th class=\"sortable\" "
              "data-type=\"num\">blocks</th><th>example</th><th>allocated at</th></tr></thead><tbody>\n",
              out);
        for (size_t i = 0; i < s->nleaks; i++) {
            const ms_snap_leak_rec *r = &s->leaks[i];
            fputs("<tr><td>", out);
            esc(out, leak_class_name(r->leak_class));
            fprintf(out, "</td><td class=\"n\" data-v=\"%" PRIu64 "\">%s</td><td class=\"n\" "
                    "data-v=\"%" PRIu64 "\">%" PRIu64 "</td><td class=\"stack\">0x%" PRIx64
                    " (%" PRIu64 " B)</td><td class=\"stack\">",
                    r->bytes, ms_fmt_bytes(r->bytes, b, sizeof b), r->blocks, r->blocks,
                    r->example_address, r->example_size);
            const ms_stack *st = NULL;
            for (size_t k = 0; k < s->nstacks; k++)
                if (s->stacks[k].id == r->stack_id) {
                    st = &s->stacks[k];
                    break;
                }
            ms_report_html_frames(out, s, sym, st);
            fputs("</td></tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
    }
    fputs("</section>\n", out);
}

static void section_stacks(FILE *out, const ms_snapshot *s, const ms_agg *a, ms_metric m, int top)
{
    size_t *ord = ms_agg_order(a, m);
    if (!ord)
        return;
    size_t n = a->nstacks < (size_t)top ? a->nstacks : (size_t)top;
    uint64_t total = ms_metric_value(&a->total, m), maxv = n ? ms_metric_value(&a->stacks[ord[0]].c, m) : 0;
    fprintf(out, "<section id=\"top\"><h2>Top %zu stacks by %s</h2>\n", n, ms_metric_name(m));
    fputs("<input class=\"filter\" id=\"filter\" placeholder=\"Filter stacks by function or file:line\">\n", out);
    fputs("<table class=\"sortable\" id=\"stacks\"><thead><tr>"
          "<th class=\"sortable\" data-type=\"num\">#</th>"
          "<th class=\"sortable\" data-type=\"num\">live bytes</th>"
          "<th class=\"sortable\" data-type=\"num\">live blocks</th>"
          "<th class=\"sortable\" data-type=\"num\">allocated bytes</th>"
          "<th class=\"sortable\" data-type=\"num\">allocations</th>",
          out);
    if (s->has_temp)
        fputs("<th class=\"sortable\" data-type=\"num\">temporary</th>", out);
    if (s->has_peak)
        fputs("<th class=\"sortable\" data-type=\"num\">at peak</th>", out);
    fputs("<th class=\"sortable\" data-type=\"num\">share</th>"
          "<th>stack (innermost first)</th></tr></thead><tbody>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        const ms_agg_stack *st = &a->stacks[ord[i]];
        uint64_t v = ms_metric_value(&st->c, m);
        char b1[32], b2[32];
        double pct = total ? 100.0 * (double)v / (double)total : 0;
        fprintf(out, "<tr><td class=\"n\" data-v=\"%zu\">%zu</td>"
                "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>"
                "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>"
                "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>"
                "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>",
                i + 1, i + 1, st->c.live_bytes, ms_fmt_bytes(st->c.live_bytes, b1, sizeof b1),
                st->c.live_blocks, st->c.live_blocks, st->c.alloc_bytes,
                ms_fmt_bytes(st->c.alloc_bytes, b2, sizeof b2), st->c.alloc_blocks,
                st->c.alloc_blocks);
        if (s->has_temp)
            fprintf(out, "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", st->temps,
                    st->temps);
        if (s->has_peak)
            fprintf(out, "<td class=\"n\" data-v=\"%" PRIu64 "\">%s</td>", st->peak_bytes,
                    ms_fmt_bytes(st->peak_bytes, b1, sizeof b1));
        fprintf(out, "<td class=\"n\" data-v=\"%.4f\"><span class=\"bar\" style=\"width:%dpx\"></span>%.1f%%</td>"
                "<td class=\"stack\"><details><summary>",
                pct, maxv ? (int)(60.0 * (double)v / (double)maxv) : 0, pct);
        /* summary: the three innermost frames */
        int shown = 0;
        for (uint32_t f = st->nframes; f-- > 0 && shown < 3; shown++) {
            if (shown)
                fputs(" &larr; ", out);
            esc(out, a->names[st->frames[f]]);
        }
        if (st->nframes > 3)
            fputs(" &larr; &hellip;", out);
        fputs("</summary><ol>", out);
        for (uint32_t f = st->nframes; f-- > 0;) {
            fputs("<li>", out);
            esc(out, a->names[st->frames[f]]);
            fputs("</li>", out);
        }
        fputs("</ol></details></td></tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
    free(ord);
}

static void section_trend(FILE *out, const ms_trend *t, int top)
{
    fprintf(out, "<section id=\"series\"><h2>Series of %zu snapshots</h2>\n", t->nsnap);
    ms_trend_write_charts(t, 5, out);
    fputs("<h2 style=\"margin-top:16px\">Leak suspects (steady growth first)</h2>\n", out);
    if (!t->nsuspects) {
        fputs("<p class=\"ok\">No stack grew over the series.</p></section>\n", out);
        return;
    }
    fputs("<table class=\"sortable\" id=\"suspects\"><thead><tr>"
          "<th class=\"sortable\" data-type=\"num\">#</th>"
          "<th class=\"sortable\" data-type=\"num\">score</th>"
          "<th class=\"sortable\" data-type=\"num\">grew in</th>"
          "<th class=\"sortable\" data-type=\"num\">slope</th>"
          "<th class=\"sortable\" data-type=\"num\">growth</th>"
          "<th class=\"sortable\" data-type=\"num\">share</th>"
          "<th>stack (innermost first)</th></tr></thead><tbody>\n",
          out);
    for (size_t r = 0; r < t->nsuspects && (int)r < top; r++) {
        const ms_trend_stack *st = &t->stacks[t->rank[r]];
        const ms_agg_stack *ks = &t->keys->stacks[st->id];
        char g[32], sl[32];
        fprintf(out, "<tr><td class=\"n\" data-v=\"%zu\">%zu</td><td class=\"n\" data-v=\"%.6f\">%.3f</td>"
                "<td class=\"n\" data-v=\"%u\">%u of %zu</td><td class=\"n\" data-v=\"%.3f\">%s%s</td>"
                "<td class=\"n\" data-v=\"%" PRId64 "\">%s</td><td class=\"n\" data-v=\"%.6f\">%.1f%%</td>"
                "<td class=\"stack\">",
                r + 1, r + 1, st->score, st->score, st->grew, st->grew, t->nsnap - 1, st->slope,
                ms_fmt_sbytes(ms_trend_slope_i64(st->slope), sl, sizeof sl), t->have_times ? "/s" : "/snapshot",
                st->growth, ms_fmt_sbytes(st->growth, g, sizeof g), st->share, 100 * st->share);
        int shown = 0;
        for (uint32_t f = ks->nframes; f-- > 0 && shown < 6; shown++) {
            if (shown)
                fputs(" &larr; ", out);
            esc(out, t->keys->names[ks->frames[f]]);
        }
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

int ms_export_html(ms_snapshot *const *series, size_t n, ms_symbolizer *sym,
                   const ms_export_opts *o, FILE *out, char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "no snapshot to report");
        return -1;
    }
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    int top = o && o->top > 0 ? o->top : 50;
    const ms_snapshot *s = series[n - 1];
    ms_agg *a = ms_agg_build(s, sym, MS_AGG_BY_LINES, err, errlen);
    if (!a)
        return -1;
    ms_trend *t = NULL;
    if (n > 1) {
        ms_symbolizer **syms = calloc(n, sizeof *syms);
        if (!syms) {
            ms_agg_free(a);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        for (size_t i = 0; i + 1 < n; i++)
            syms[i] = ms_symbolizer_new(series[i]);
        syms[n - 1] = sym;
        t = ms_trend_build(series, n, syms, MS_AGG_BY_LINES, err, errlen);
        for (size_t i = 0; i + 1 < n; i++)
            ms_symbolizer_free(syms[i]);
        free(syms);
        if (!t) {
            ms_agg_free(a);
            return -1;
        }
    }

    const char *exe = ms_agg_meta(s, "exe");
    const char *title = o && o->title ? o->title : "memsight report";
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          out);
    esc(out, title);
    if (exe) {
        fputs(" \xe2\x80\x94 ", out);
        const char *b = strrchr(exe, '/');
        esc(out, b ? b + 1 : exe);
    }
    fprintf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", css);
    fputs("<div id=\"errors\"></div>\n<header><h1>", out);
    esc(out, title);
    fputs("</h1><div class=\"sub\">", out);
    esc(out, exe ? exe : s->path);
    const char *pid = ms_agg_meta(s, "pid");
    if (pid) {
        fputs(" &middot; pid ", out);
        esc(out, pid);
    }
    fputs(" &middot; ", out);
    esc(out, s->path ? s->path : "");
    if (n > 1)
        fprintf(out, " (last of %zu snapshots)", n);
    fputs("</div></header>\n<main>\n", out);

    section_overview(out, s, a, sym);
    section_leaks(out, s, sym);
    ms_threads_html(out, s, sym, top);
    if (t)
        section_trend(out, t, top);
    section_stacks(out, s, a, m, top);

    fputs("<section id=\"flame\"><h2>Flame graph</h2>\n<p class=\"muted\">Click a frame to zoom, "
          "click the top bar (all) or press Esc to reset; Search highlights matching frames "
          "and gives their share.</p>\n",
          out);
    ms_flame_opts fo = {.metric = m, .title = "Flame graph", .subtitle = exe ? exe : s->path,
                        .embedded = 1};
    int rc = ms_flame_write(a, NULL, &fo, out, err, errlen);
    fputs("</section>\n", out);
    fprintf(out, "</main>\n<script>\n%s</script>\n</body></html>\n", page_js);
    ms_trend_free(t);
    ms_agg_free(a);
    if (rc == 0 && ferror(out)) {
        snprintf(err, errlen, "write error");
        rc = -1;
    }
    return rc;
}
