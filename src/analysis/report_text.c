/* `memsight report` (and the summary of `memsight run`): the text report for a
 * terminal: totals by kind, top stacks by live bytes and by count with symbolized
 * frames, leaks, and a plain warning when data was lost. Writes only to `out`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/export.h"
#include "analysis/report_model.h"
#include "analysis/sites.h"
#include "analysis/threads_report.h"

#define DEFAULT_TOP 10
#define MAX_FRAMES_SHOWN 16

static const char *human(uint64_t v, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024 && u < 5) {
        d /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", v);
    else
        snprintf(buf, len, "%.1f %s", d, unit[u]);
    return buf;
}

/* Strings from the snapshot and from symbol files are untrusted: a control character
 * (a terminal escape sequence) is shown as '?'. Long strings are cut. */
#define SAFE_LEN 1024
static const char *safe(const char *str, char *buf)
{
    if (!str)
        return NULL;
    size_t i = 0;
    for (; str[i] && i < SAFE_LEN - 1; i++) {
        unsigned char c = (unsigned char)str[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    buf[i] = 0;
    return buf;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

static void print_frames_max(FILE *out, const ms_snapshot *s, ms_symbolizer *sym,
                             const ms_stack *st, size_t max_shown)
{
    size_t n = 0;
    ms_frame *f = ms_report_frames(s, sym, st, &n);
    if (!f) {
        fprintf(out, "      (out of memory while symbolizing)\n");
        return;
    }
    if (n == 0)
        fprintf(out, "      (no frames recorded)\n");
    for (size_t i = 0; i < n && i < max_shown; i++) {
        char b[SAFE_LEN];
        fprintf(out, "      %s%s", f[i].inlined ? "(inlined) " : "",
                f[i].function ? safe(f[i].function, b) : "??");
        if (f[i].file)
            fprintf(out, "  %s:%d", safe(f[i].file, b), f[i].line);
        else if (f[i].module)
            fprintf(out, "  %s+0x%" PRIx64, safe(base_name(f[i].module), b), f[i].module_offset);
        else
            fprintf(out, "  0x%" PRIx64, f[i].address);
        fputc('\n', out);
    }
    if (n > max_shown)
        fprintf(out, "      ... %zu more frames\n", n - max_shown);
    if (st->flags & MS_STACKF_TRUNCATED)
        fprintf(out, "      (stack truncated at the maximum depth)\n");
    free(f);
}

static void print_frames(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st)
{
    print_frames_max(out, s, sym, st, MAX_FRAMES_SHOWN);
}

/* "N bytes right of the M-byte block at 0x..." (left of, inside), as the agent says it. */
static void print_guard_where(FILE *out, const ms_snap_guard *g)
{
    if (!g->block_address) {
        fprintf(out, "not in or next to any block of the pool");
        return;
    }
    uint64_t a = g->address, b = g->block_address, e = b + g->block_size;
    if (g->kind == MS_GUARD_KIND_SLACK_OVER)
        fprintf(out, "%" PRIu64 " bytes written past", a + 1 - e);
    else if (g->kind == MS_GUARD_KIND_SLACK_UNDER)
        fprintf(out, "%" PRIu64 " bytes written before", b - a);
    else if (a < b)
        fprintf(out, "%" PRIu64 " bytes left of", b - a);
    else if (a >= e)
        fprintf(out, "%" PRIu64 " bytes right of", a - e);
    else
        fprintf(out, "%" PRIu64 " bytes inside", a - b);
    fprintf(out, " the %" PRIu64 "-byte block at 0x%" PRIx64, g->block_size, b);
}

/* An error caught by guard pages (GARD): what, where, and the three stacks. */
static void print_guard(FILE *out, const ms_snapshot *s, ms_symbolizer *sym)
{
    const ms_guard_error *e = s->guard;
    const ms_snap_guard *g = &e->g;
    int by_free = g->kind == MS_GUARD_KIND_DOUBLE_FREE || g->kind == MS_GUARD_KIND_INVALID_FREE;
    /* the fill around a block: found at free or realloc (the caller's stack), or by a
     * snapshot (no access stack) */
    int fill = g->kind == MS_GUARD_KIND_SLACK_OVER || g->kind == MS_GUARD_KIND_SLACK_UNDER;
    int known = g->kind < MS_GUARD_KIND_COUNT;
    if (known)
        fprintf(out, "guard pages caught: %s %s 0x%" PRIx64 ": ", ms_guard_kind_name(g->kind),
                by_free ? "of" : "at", g->address);
    else /* from a newer minor version (the reader refuses it in any other) */
        fprintf(out,
                "guard pages caught: an error of kind %u, which this memsight does not know "
                "(format %u.%u: a newer memsight names it), at 0x%" PRIx64 ": ",
                g->kind, s->version_major, s->version_minor, g->address);
    print_guard_where(out, g);
    fputc('\n', out);
    if (fill && e->access.depth == 0) {
        fprintf(out, "  found in a snapshot by thread %u (the block is live)\n", g->access_tid);
    } else if (!known) {
        fprintf(out, "  access stack of thread %u:\n", g->access_tid);
        print_frames(out, s, sym, &e->access);
    } else {
        fprintf(out, "  %s by thread %u:\n", by_free || fill ? "free called" : "accessed",
                g->access_tid);
        print_frames(out, s, sym, &e->access);
    }
    if (g->block_address) {
        fprintf(out, "  allocated by thread %u:\n", g->alloc_tid);
        print_frames(out, s, sym, &e->alloc);
    }
    if (g->free_tid) {
        fprintf(out, "  freed by thread %u:\n", g->free_tid);
        print_frames(out, s, sym, &e->freed);
    }
    fputc('\n', out);
}

void ms_report_text_guard(FILE *out, const ms_snapshot *s, ms_symbolizer *sym)
{
    if (s->guard)
        print_guard(out, s, sym);
}

void ms_report_text_frames(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st)
{
    print_frames(out, s, sym, st);
}

static const char *metric_title(ms_metric m)
{
    switch (m) {
    case MS_METRIC_LIVE_BLOCKS: return "live blocks";
    case MS_METRIC_ALLOC_BYTES: return "allocated bytes";
    case MS_METRIC_ALLOC_BLOCKS: return "allocations (churn)";
    default: return "live bytes";
    }
}

static void print_ranked(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, ms_metric m,
                         int top)
{
    size_t n = 0;
    const ms_stack **r = ms_report_ranked(s, m, 0, &n);
    if (!r)
        return;
    size_t shown = (size_t)top < n ? (size_t)top : n;
    fprintf(out, "\nTop %zu of %zu stacks by %s:\n", shown, n, metric_title(m));
    for (size_t i = 0; i < shown; i++) {
        char a[32], b[32];
        const ms_stack *st = r[i];
        fprintf(out, "  #%zu  %s live in %" PRIu64 " blocks (%s)   allocated %s in %" PRIu64
                     " blocks",
                i + 1, human(st->c.live_bytes, a, sizeof a), st->c.live_blocks,
                ms_kind_name(st->kind), human(st->c.alloc_bytes, b, sizeof b),
                st->c.alloc_blocks);
        if (s->has_temp && st->temp_blocks)
            fprintf(out, ", %" PRIu64 " temporary", st->temp_blocks);
        fputc('\n', out);
        print_frames(out, s, sym, st);
    }
    free(r);
}

/* Stacks grouped by allocation site (sites.h): where the program allocated, whatever
 * runtime function (strdup, operator new, std::vector) it went through. */
static void print_sites(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, ms_metric m,
                        int top, ms_site_mode mode)
{
    char err[256];
    ms_agg *a = ms_sites_build(s, sym, mode, err, sizeof err);
    size_t *ord = a ? ms_agg_order(a, m) : NULL;
    if (!ord) {
        fprintf(out, "\n(out of memory while grouping allocation sites)\n");
        ms_agg_free(a);
        return;
    }
    size_t n = 0;
    while (n < a->nstacks && ms_metric_value(&a->stacks[ord[n]].c, m))
        n++;
    size_t shown = (size_t)top < n ? (size_t)top : n;
    fprintf(out, "\nTop %zu of %zu allocation sites by %s:\n  (%s)\n", shown, n,
            metric_title(m),
            mode == MS_SITE_PROGRAM ? "a site is the innermost frame of the program, past libc "
                                      "and the C++ runtime; --sites=caller: the allocator's caller"
                                    : "a site is the allocator's caller");
    for (size_t i = 0; i < shown; i++) {
        const ms_agg_stack *st = &a->stacks[ord[i]];
        char b1[32], b2[32], b[SAFE_LEN];
        fprintf(out, "  #%zu  %s live in %" PRIu64 " blocks   allocated %s in %" PRIu64 " blocks",
                i + 1, human(st->c.live_bytes, b1, sizeof b1), st->c.live_blocks,
                human(st->c.alloc_bytes, b2, sizeof b2), st->c.alloc_blocks);
        if (s->has_temp && st->temps)
            fprintf(out, ", %" PRIu64 " temporary", st->temps);
        fprintf(out, ", %u stack%s\n      %s%s\n", st->nsrc, st->nsrc == 1 ? "" : "s",
                safe(a->names[st->frames[st->nframes - 1]], b),
                st->kind == MS_KIND_HEAP ? "" : st->kind == MS_KIND_MMAP ? "  (mmap)"
                                                                          : "  (thread stacks)");
    }
    free(ord);
    ms_agg_free(a);
}

static void print_header(FILE *out, const ms_snapshot *s)
{
    const char *exe = ms_snapshot_meta(s, "exe");
    const char *pid = ms_snapshot_meta(s, "pid");
    const char *reason = ms_snapshot_meta(s, "reason");
    const char *when = ms_snapshot_meta(s, "snapshot_ns");
    char b[SAFE_LEN];
    fprintf(out, "memsight report: %s\n", safe(s->path, b));
    fprintf(out, "program: %s", exe ? safe(exe, b) : "(unknown)");
    char as[256];
    if (ms_report_started_as(s, as, sizeof as))
        fprintf(out, ", started as %s", safe(as, b));
    if (pid)
        fprintf(out, " (pid %s)", safe(pid, b));
    if (reason)
        fprintf(out, ", snapshot at %s", safe(reason, b));
    if (when) {
        time_t t = (time_t)(strtoull(when, NULL, 10) / 1000000000ull);
        struct tm tm;
        char buf[64];
        if (t > 0 && gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm))
            fprintf(out, ", %s", buf);
    }
    fputc('\n', out);
    const char *cmd = ms_snapshot_meta(s, "cmdline");
    if (cmd)
        fprintf(out, "command: %s\n", safe(cmd, b));
    const char *att = ms_snapshot_meta(s, "attached_ns");
    if (att) { /* memsight attach: nothing from before it was seen */
        time_t t = (time_t)(strtoull(att, NULL, 10) / 1000000000ull);
        struct tm tm;
        char buf[64] = "?";
        if (t > 0 && gmtime_r(&t, &tm))
            strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
        const char *n = ms_snapshot_meta(s, "attach_sessions");
        fprintf(out, "recorded: since memsight attach at %s (session %s); memory allocated "
                     "before the attach, or between sessions, is not in this snapshot\n",
                buf, n ? safe(n, b) : "1");
    }
    if (s->flags & MS_SNAP_F_SAMPLED) {
        const char *iv = ms_snapshot_meta(s, "sample_interval");
        fprintf(out, "sampled: counts are estimates (mean interval %s bytes)\n",
                iv ? safe(iv, b) : "?");
    }
}

static void print_totals(FILE *out, const ms_snapshot *s)
{
    ms_report_totals t;
    ms_report_totals_compute(s, &t);
    char a[32], b[32];
    fprintf(out, "\nLive: %s in %" PRIu64 " blocks\n", human(t.all.live_bytes, a, sizeof a),
            t.all.live_blocks);
    for (unsigned k = 0; k < MS_KIND_COUNT; k++)
        if (k != MS_KIND_RESERVED)
            fprintf(out, "  %-6s %12s in %" PRIu64 " blocks\n", ms_kind_name(k),
                    human(t.kind[k].live_bytes, a, sizeof a), t.kind[k].live_blocks);
    if (t.kind[MS_KIND_RESERVED].live_blocks || t.kind[MS_KIND_RESERVED].alloc_blocks)
        fprintf(out, "Reserved: %s in %" PRIu64 " regions (address space, not memory)\n",
                human(t.kind[MS_KIND_RESERVED].live_bytes, a, sizeof a),
                t.kind[MS_KIND_RESERVED].live_blocks);
    fprintf(out, "Cumulative: allocated %s in %" PRIu64 " blocks, freed %s in %" PRIu64
                 " blocks\n",
            human(t.all.alloc_bytes, a, sizeof a), t.all.alloc_blocks,
            human(t.all.free_bytes, b, sizeof b), t.all.free_blocks);
    if (s->has_peak) {
        fprintf(out, "Peak live: %s", human(s->peak_live_bytes_total, a, sizeof a));
        double after = ms_report_peak_after_start(s);
        if (after >= 0)
            fprintf(out, ", %.2f s after start", after);
        fputc('\n', out);
    }
    if (s->has_temp) {
        uint64_t temps = ms_report_temporaries(s);
        fprintf(out, "Temporary: %" PRIu64 " of %" PRIu64 " allocations (%.1f%%) were freed "
                     "before their thread allocated again\n",
                temps, t.kind[MS_KIND_HEAP].alloc_blocks,
                t.kind[MS_KIND_HEAP].alloc_blocks
                    ? 100.0 * (double)temps / (double)t.kind[MS_KIND_HEAP].alloc_blocks
                    : 0.0);
    }
}

/* The allocation size histogram (heaptrack_print -H): one line per size class. */
static void print_histogram(FILE *out, const ms_snapshot *s)
{
    uint64_t total = 0, maxc = 0;
    for (size_t i = 0; i < s->nhist; i++) {
        total += s->hist[i].count;
        if (s->hist[i].count > maxc)
            maxc = s->hist[i].count;
    }
    if (!total)
        return;
    fprintf(out, "\nAllocation sizes (%" PRIu64 " allocations):\n", total);
    for (size_t i = 0; i < s->nhist; i++) {
        const ms_size_bucket *b = &s->hist[i];
        char lo[32], hi[32], bar[41];
        int w = (int)(40.0 * (double)b->count / (double)maxc + 0.5);
        memset(bar, '#', (size_t)w);
        bar[w] = 0;
        fprintf(out, "  %10s .. %-10s %12" PRIu64 " %5.1f%%  %s\n", human(b->lo, lo, sizeof lo),
                b->hi == UINT64_MAX ? "" : human(b->hi, hi, sizeof hi), b->count,
                100.0 * (double)b->count / (double)total, bar);
    }
}

/* dump_at_peak: the stacks that held the most at the peak of total live bytes. */
static int cmp_peak(const void *a, const void *b)
{
    const ms_stack *x = *(const ms_stack *const *)a, *y = *(const ms_stack *const *)b;
    return x->peak_live_bytes < y->peak_live_bytes ? 1 : x->peak_live_bytes > y->peak_live_bytes ? -1 : 0;
}

static void print_peak(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top)
{
    const ms_stack **r = malloc((s->nstacks ? s->nstacks : 1) * sizeof *r);
    if (!r)
        return;
    size_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        if (s->stacks[i].peak_live_bytes)
            r[n++] = &s->stacks[i];
    qsort(r, n, sizeof *r, cmp_peak);
    size_t shown = (size_t)top < n ? (size_t)top : n;
    char a[32], b[32];
    fprintf(out, "\nTop %zu of %zu stacks at the peak (%s live):\n", shown, n,
            human(s->peak_live_bytes_total, a, sizeof a));
    for (size_t i = 0; i < shown; i++) {
        fprintf(out, "  #%zu  %s in %" PRIu64 " blocks at the peak (%s)   now %s\n", i + 1,
                human(r[i]->peak_live_bytes, a, sizeof a), r[i]->peak_live_blocks,
                ms_kind_name(r[i]->kind), human(r[i]->c.live_bytes, b, sizeof b));
        print_frames(out, s, sym, r[i]);
    }
    free(r);
}

static void print_leaks(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top)
{
    char a[32];
    fprintf(out, "\nLeak scan:\n");
    if (ms_leak_attach_note(s))
        fprintf(out, "  (%s)\n", ms_leak_attach_note(s));
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++)
        fprintf(out, "  %-16s %12s in %" PRIu64 " blocks\n", ms_leak_class_name(c),
                human(s->leak_summary.bytes[c], a, sizeof a), s->leak_summary.blocks[c]);
    ms_report_text_heuristics(out, s, "  ");
    size_t shown = 0;
    for (size_t i = 0; i < s->nleaks && shown < (size_t)top; i++) {
        const ms_snap_leak_rec *r = &s->leaks[i];
        if (r->leak_class == MS_LEAK_REACHABLE)
            continue;
        shown++;
        fprintf(out, "  %s: %s in %" PRIu64 " blocks\n", ms_leak_class_name(r->leak_class),
                human(r->bytes, a, sizeof a), r->blocks);
        const ms_stack *st = ms_snapshot_stack(s, r->stack_id);
        if (st)
            print_frames(out, s, sym, st);
    }
}

/* guard_budget stretched the guard rate (docs/guard-pages.md, "The cost budget"): said
 * plainly, since fewer blocks were guarded than the rate asked. */
static void print_guard_budget(FILE *out, const ms_snapshot *s, const char *prefix)
{
    uint64_t n = 0, rate = 0;
    if (ms_snapshot_health(s, "guard_budget_stretches", &n) != 0 || !n ||
        ms_snapshot_health(s, "guard_rate_now", &rate) != 0)
        return;
    fprintf(out, "%sguard pages went over their cost budget (guard_budget): the rate was "
                 "stretched %" PRIu64 " time(s), one allocation in %" PRIu64
                 " guarded at the end (guard_budget=0 keeps the rate exact)\n",
            prefix, n, rate);
}

static void print_health(FILE *out, const ms_snapshot *s, ms_symbolizer *sym)
{
    if (s->nhealth) {
        fprintf(out, "\nAgent health:");
        int col = 0;
        for (size_t i = 0; i < s->nhealth; i++) {
            if (s->health[i].value == 0)
                continue;
            char b[SAFE_LEN];
            fprintf(out, "%s %s=%" PRIu64, col++ ? "," : "", safe(s->health[i].name, b),
                    s->health[i].value);
        }
        fprintf(out, col ? "\n" : " all counters zero\n");
    }
    print_guard_budget(out, s, "note: ");
    char lost[512], b[SAFE_LEN];
    if (ms_report_lost(s, lost, sizeof lost))
        fprintf(out, "warning: the agent lost records (%s): the numbers above are lower bounds\n",
                safe(lost, b));
    if (s->unknown_chunks)
        fprintf(out, "note: %zu chunk(s) of a newer format version were skipped\n",
                s->unknown_chunks);
    if (ms_report_option_errors(s))
        fprintf(out, "warning: the agent ignored bad options: %s\n",
                safe(ms_report_option_errors(s), b));
    if (sym) {
        const char *const *lines;
        size_t n = ms_symbolizer_warnings(sym, &lines);
        for (size_t i = 0; i < n; i++)
            fprintf(out, "warning: %s\n", safe(lines[i], b));
    }
}

int ms_export_text(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                   char *err, size_t errlen)
{
    int top = o && o->top > 0 ? o->top : DEFAULT_TOP;
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    /* the chosen metric first, its sibling (bytes or count) next, then the other side:
     * what is held (live) and what churns (allocated) */
    static const ms_metric order[4][3] = {
        [MS_METRIC_LIVE_BYTES] = {MS_METRIC_LIVE_BYTES, MS_METRIC_LIVE_BLOCKS, MS_METRIC_ALLOC_BLOCKS},
        [MS_METRIC_LIVE_BLOCKS] = {MS_METRIC_LIVE_BLOCKS, MS_METRIC_LIVE_BYTES, MS_METRIC_ALLOC_BLOCKS},
        [MS_METRIC_ALLOC_BYTES] = {MS_METRIC_ALLOC_BYTES, MS_METRIC_ALLOC_BLOCKS, MS_METRIC_LIVE_BYTES},
        [MS_METRIC_ALLOC_BLOCKS] = {MS_METRIC_ALLOC_BLOCKS, MS_METRIC_ALLOC_BYTES, MS_METRIC_LIVE_BYTES},
    };
    if ((unsigned)m > MS_METRIC_ALLOC_BLOCKS)
        m = MS_METRIC_LIVE_BYTES;
    print_header(out, s);
    if (s->guard)
        print_guard(out, s, sym);
    print_totals(out, s);
    print_sites(out, s, sym, m, top, o && o->site_caller ? MS_SITE_CALLER : MS_SITE_PROGRAM);
    for (int i = 0; i < 3; i++)
        print_ranked(out, s, sym, order[m][i], top);
    if (s->has_peak)
        print_peak(out, s, sym, top);
    if (s->has_leaks)
        print_leaks(out, s, sym, top);
    if (s->hist)
        print_histogram(out, s);
    ms_threads_text(out, s, sym, top);
    print_health(out, s, sym);
    if (ferror(out)) {
        snprintf(err, errlen, "%s: cannot write the report", s->path);
        return -1;
    }
    return 0;
}

/* The k stacks that held the most at the peak, largest first. */
static size_t top_at_peak(const ms_snapshot *s, const ms_stack **out, size_t k)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (!st->peak_live_bytes)
            continue;
        size_t j = n < k ? n++ : k;
        while (j > 0 && out[j - 1]->peak_live_bytes < st->peak_live_bytes) {
            if (j < k)
                out[j] = out[j - 1];
            j--;
        }
        if (j < k)
            out[j] = st;
    }
    return n;
}

void ms_report_text_heuristics(FILE *out, const ms_snapshot *s, const char *indent)
{
    uint64_t hb[MS_LEAK_H_COUNT], hy[MS_LEAK_H_COUNT];
    int set = ms_leak_heuristics_used(s, hb, hy);
    if (set < 0)
        return;
    int any = 0;
    for (unsigned h = 0; h < MS_LEAK_H_COUNT; h++) {
        if (!hb[h])
            continue;
        char a[32];
        if (!any++)
            fprintf(out, "%s  of which reachable via heuristic:\n", indent);
        fprintf(out, "%s    %-19s %12s in %" PRIu64 " blocks\n", indent,
                ms_leak_heuristic_names[h], human(hy[h], a, sizeof a), hb[h]);
    }
}

/* --leak-check=exit: the verdict first, by class, then the largest lost stacks. */
static void summary_leaks(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top)
{
    const ms_snap_leak_summary *ls = &s->leak_summary;
    char a[32];
    uint64_t lost = ls->blocks[MS_LEAK_DEFINITE] + ls->blocks[MS_LEAK_INDIRECT] +
                    ls->blocks[MS_LEAK_POSSIBLE];
    fprintf(out, "memsight: leak check: %s\n",
            lost ? "memory was lost" : "no leaks: every live block is still reachable");
    static const char *const cls[] = {"definitely lost", "indirectly lost", "possibly lost",
                                      "still reachable"};
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++)
        fprintf(out, "  %-16s %12s in %" PRIu64 " blocks\n", cls[c],
                human(ls->bytes[c], a, sizeof a), ls->blocks[c]);
    ms_report_text_heuristics(out, s, "  ");
    size_t nrec = 0;
    for (size_t i = 0; i < s->nleaks; i++)
        if (s->leaks[i].leak_class != MS_LEAK_REACHABLE)
            nrec++;
    if (!nrec)
        return;
    const ms_snap_leak_rec **r = malloc(nrec * sizeof *r);
    if (!r)
        return;
    nrec = 0;
    for (size_t i = 0; i < s->nleaks; i++)
        if (s->leaks[i].leak_class != MS_LEAK_REACHABLE)
            r[nrec++] = &s->leaks[i];
    /* largest first; definitely lost before the others at equal size */
    for (size_t i = 1; i < nrec; i++)
        for (size_t j = i; j > 0 && (r[j - 1]->bytes < r[j]->bytes ||
                                     (r[j - 1]->bytes == r[j]->bytes &&
                                      r[j - 1]->leak_class > r[j]->leak_class));
             j--) {
            const ms_snap_leak_rec *t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    size_t shown = (size_t)top < nrec ? (size_t)top : nrec;
    fprintf(out, "memsight: top %zu of %zu lost stacks:\n", shown, nrec);
    for (size_t i = 0; i < shown; i++) {
        fprintf(out, "  #%zu  %s: %s in %" PRIu64 " blocks\n", i + 1,
                r[i]->leak_class < MS_LEAK_CLASS_COUNT ? cls[r[i]->leak_class] : "unknown",
                human(r[i]->bytes, a, sizeof a),
                r[i]->blocks);
        const ms_stack *st = ms_snapshot_stack(s, r[i]->stack_id);
        if (st)
            print_frames_max(out, s, sym, st, 6);
    }
    free(r);
}

int ms_report_summary(const ms_snapshot *s, ms_symbolizer *sym, int top, FILE *out)
{
    ms_report_totals t;
    ms_report_totals_compute(s, &t);
    char a[32], b[32], c[32], d[32];
    if (s->guard)
        print_guard(out, s, sym);
    print_guard_budget(out, s, "memsight: ");
    fprintf(out, "memsight: live at exit: %s in %" PRIu64 " blocks (heap %s, mmap %s, stack %s)\n",
            human(t.all.live_bytes, a, sizeof a), t.all.live_blocks,
            human(t.kind[MS_KIND_HEAP].live_bytes, b, sizeof b),
            human(t.kind[MS_KIND_MMAP].live_bytes, c, sizeof c),
            human(t.kind[MS_KIND_STACK].live_bytes, d, sizeof d));
    if (t.kind[MS_KIND_RESERVED].live_blocks)
        fprintf(out, "memsight: reserved: %s in %" PRIu64
                     " regions (address space, not memory)\n",
                human(t.kind[MS_KIND_RESERVED].live_bytes, a, sizeof a),
                t.kind[MS_KIND_RESERVED].live_blocks);
    fprintf(out, "memsight: allocated %s in %" PRIu64 " blocks, freed %s in %" PRIu64 " blocks\n",
            human(t.all.alloc_bytes, a, sizeof a), t.all.alloc_blocks,
            human(t.all.free_bytes, b, sizeof b), t.all.free_blocks);
    if (s->has_peak) {
        fprintf(out, "memsight: peak %s", human(s->peak_live_bytes_total, a, sizeof a));
        double after = ms_report_peak_after_start(s);
        if (after >= 0)
            fprintf(out, " at %.2f s", after);
        const ms_stack *pk[3];
        size_t npk = top_at_peak(s, pk, top < 3 ? (size_t)top : 3);
        fprintf(out, "%s\n", npk ? ", held by:" : "");
        for (size_t i = 0; i < npk; i++) {
            fprintf(out, "  #%zu  %s in %" PRIu64 " blocks at the peak (%s), %s at exit\n",
                    i + 1, human(pk[i]->peak_live_bytes, a, sizeof a), pk[i]->peak_live_blocks,
                    ms_kind_name(pk[i]->kind), human(pk[i]->c.live_bytes, b, sizeof b));
            print_frames_max(out, s, sym, pk[i], 3);
        }
    }
    if (s->has_temp) {
        uint64_t temps = ms_report_temporaries(s);
        if (temps)
            fprintf(out, "memsight: %" PRIu64 " temporary allocations (freed before their "
                         "thread allocated again)\n",
                    temps);
    }
    if (s->has_leaks)
        summary_leaks(out, s, sym, top);
    size_t n = 0;
    const ms_stack **r = ms_report_ranked(s, MS_METRIC_LIVE_BYTES, 0, &n);
    if (r) {
        size_t shown = (size_t)top < n ? (size_t)top : n;
        if (shown)
            fprintf(out, "memsight: top %zu of %zu stacks by live bytes:\n", shown, n);
        for (size_t i = 0; i < shown; i++) {
            fprintf(out, "  #%zu  %s in %" PRIu64 " blocks (%s)\n", i + 1,
                    human(r[i]->c.live_bytes, a, sizeof a), r[i]->c.live_blocks,
                    ms_kind_name(r[i]->kind));
            print_frames_max(out, s, sym, r[i], 6);
        }
        free(r);
    }
    char lost[512], sb[SAFE_LEN];
    if (ms_report_lost(s, lost, sizeof lost))
        fprintf(out, "memsight: warning: the agent lost records (%s): the numbers are lower "
                     "bounds\n",
                safe(lost, sb));
    return ferror(out) ? -1 : 0;
}
