/* The threads section of the HTML report: counters, then leaked and alive threads by
 * creation stack (threads_report.h has the model). Tools only; writes to `out`. */
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/report_model.h"
#include "analysis/stack_agg.h"
#include "analysis/threads_report.h"

static void html_list(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_thr_list *l,
                      int leaked, int top, uint64_t now)
{
    char b[32];
    fprintf(out, "<table><thead><tr><th>threads</th><th>stacks held</th><th>%s</th>"
                 "<th>names and start routines</th><th>created at</th></tr></thead><tbody>\n",
            leaked ? "ended (s ago)" : "running for (s)");
    size_t shown = (size_t)top < l->ng ? (size_t)top : l->ng;
    for (size_t i = 0; i < shown; i++) {
        const ms_thr_group *g = &l->g[i];
        const ms_thread_life *first = l->t[g->first], *last = l->t[g->first + g->n - 1];
        fprintf(out, "<tr><td class=\"n\">%zu</td><td class=\"n\">%s</td><td class=\"n\">", g->n,
                ms_fmt_bytes(g->stack_bytes, b, sizeof b));
        double a = leaked ? ms_thr_secs(first->r.exit_ns, now) : ms_thr_secs(first->r.create_ns, now);
        double z = leaked ? ms_thr_secs(last->r.exit_ns, now) : ms_thr_secs(last->r.create_ns, now);
        if (a >= 0)
            fprintf(out, g->n > 1 ? "%.2f&ndash;%.2f" : "%.2f", g->n > 1 ? z : a, a);
        fputs("</td><td>", out);
        for (size_t k = 0; k < g->n && k < 8; k++) {
            const ms_thread_life *t = l->t[g->first + k];
            char *fn = ms_thr_start_name(s, sym, t->r.start_routine);
            fprintf(out, "%s%" PRIu32 " ", k ? "<br>" : "", t->r.tid);
            ms_xml_escape(out, t->name ? t->name : "");
            if (fn) {
                fputs(" <span class=\"muted\">", out);
                ms_xml_escape(out, fn);
                fputs("</span>", out);
            }
            const char *end = ms_thread_end_name(t->r.flags);
            if (end)
                fprintf(out, " <span class=\"muted\">(%s)</span>", end);
            free(fn);
        }
        if (g->n > 8)
            fprintf(out, "<br>&hellip; %zu more", g->n - 8);
        fputs("</td><td class=\"stack\">", out);
        ms_report_html_frames(out, s, sym, g->stack_id ? ms_snapshot_stack(s, g->stack_id) : NULL);
        fputs("</td></tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
}

void ms_threads_html(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top)
{
    if (!s->has_thread_life)
        return;
    uint64_t created, joined, detached, alive, leaked;
    created = ms_thr_counter(s, "created");
    joined = ms_thr_counter(s, "joined");
    detached = ms_thr_counter(s, "detached");
    alive = ms_thr_counter(s, "alive");
    leaked = ms_thr_counter(s, "leaked");
    fprintf(out, "<section id=\"threads\"><h2>Threads</h2><p>%" PRIu64 " created, %" PRIu64
                 " joined, %" PRIu64 " detached; now %" PRIu64 " alive, <b>%" PRIu64
                 " leaked</b> (ended, never joined nor detached: stack and descriptor kept)."
                 "</p>\n",
            created, joined, detached, alive, leaked);
    uint64_t now = ms_thr_snapshot_ns(s);
    ms_thr_list l;
    for (int leaked_list = 1; leaked_list >= 0; leaked_list--) {
        if (ms_thr_list_make(s, leaked_list, &l) != 0)
            break;
        if (l.n) {
            fprintf(out, "<h3>%s threads by creation stack</h3>\n", leaked_list ? "Leaked" : "Alive");
            html_list(out, s, sym, &l, leaked_list, top, now);
        }
        ms_thr_list_free(&l);
    }
    fputs("</section>\n", out);
}
