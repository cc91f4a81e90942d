/* Totals, rankings, frames and health reading shared by the reports (report_model.h).
 * Never prints. */
#include "analysis/report_model.h"

#include "analysis/stack_agg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *ms_kind_name(unsigned kind)
{
    static const char *const names[] = {"heap", "mmap", "stack", "reserved"};
    return kind < MS_KIND_COUNT ? names[kind] : "unknown";
}

const char *ms_leak_class_name(unsigned cls)
{
    static const char *const names[] = {"definitely_lost", "indirectly_lost", "possibly_lost",
                                        "still_reachable"};
    return cls < MS_LEAK_CLASS_COUNT ? names[cls] : "unknown";
}

const char *const ms_leak_heuristic_names[MS_LEAK_H_COUNT] = {
    "stdstring", "length64", "newarray", "multipleinheritance", "interior"};

void ms_leak_heuristic_list(unsigned set, char *buf, size_t len)
{
    size_t o = 0;
    if (len)
        buf[0] = 0;
    for (unsigned i = 0; i < MS_LEAK_H_COUNT; i++) {
        if (!(set & (1u << i)))
            continue;
        int n = snprintf(buf + o, len > o ? len - o : 0, "%s%s", o ? "," : "",
                         ms_leak_heuristic_names[i]);
        if (n > 0)
            o += (size_t)n;
    }
    if (!o && len)
        snprintf(buf, len, "none");
}

static int leak_stat(const ms_snapshot *s, const char *name, uint64_t *v)
{
    for (size_t i = 0; i < s->nleak_stats; i++)
        if (s->leak_stats[i].name && !strcmp(s->leak_stats[i].name, name)) {
            *v = s->leak_stats[i].value;
            return 1;
        }
    return 0;
}

int ms_leak_heuristics_used(const ms_snapshot *s, uint64_t blocks[MS_LEAK_H_COUNT],
                            uint64_t bytes[MS_LEAK_H_COUNT])
{
    uint64_t set = 0;
    for (unsigned i = 0; i < MS_LEAK_H_COUNT; i++) {
        char name[64];
        blocks[i] = bytes[i] = 0;
        snprintf(name, sizeof name, "heuristic_%s_blocks", ms_leak_heuristic_names[i]);
        leak_stat(s, name, &blocks[i]);
        snprintf(name, sizeof name, "heuristic_%s_bytes", ms_leak_heuristic_names[i]);
        leak_stat(s, name, &bytes[i]);
    }
    if (!leak_stat(s, "heuristics", &set))
        return -1;
    return (int)(set & ((1u << MS_LEAK_H_COUNT) - 1));
}

static void add(ms_snap_counters *a, const ms_snap_counters *b)
{
    a->live_blocks += b->live_blocks;
    a->live_bytes += b->live_bytes;
    a->alloc_blocks += b->alloc_blocks;
    a->alloc_bytes += b->alloc_bytes;
    a->free_blocks += b->free_blocks;
    a->free_bytes += b->free_bytes;
}

void ms_report_totals_compute(const ms_snapshot *s, ms_report_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (st->kind != MS_KIND_RESERVED) /* address space, not memory */
            add(&t->all, &st->c);
        if (st->kind < MS_KIND_COUNT)
            add(&t->kind[st->kind], &st->c);
    }
}

uint64_t ms_report_metric(const ms_stack *st, ms_metric m)
{
    switch (m) {
    case MS_METRIC_LIVE_BLOCKS: return st->c.live_blocks;
    case MS_METRIC_ALLOC_BYTES: return st->c.alloc_bytes;
    case MS_METRIC_ALLOC_BLOCKS: return st->c.alloc_blocks;
    case MS_METRIC_LIVE_BYTES:
    default: return st->c.live_bytes;
    }
}

static ms_metric sort_metric;

static int cmp_ranked(const void *a, const void *b)
{
    const ms_stack *x = *(const ms_stack *const *)a, *y = *(const ms_stack *const *)b;
    int rx = x->kind == MS_KIND_RESERVED, ry = y->kind == MS_KIND_RESERVED;
    if (rx != ry) /* reserved address space after the stacks holding memory */
        return rx - ry;
    uint64_t vx = ms_report_metric(x, sort_metric), vy = ms_report_metric(y, sort_metric);
    if (vx != vy)
        return vx > vy ? -1 : 1;
    if (x->c.alloc_bytes != y->c.alloc_bytes)
        return x->c.alloc_bytes > y->c.alloc_bytes ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

const ms_stack **ms_report_ranked(const ms_snapshot *s, ms_metric m, int include_zero,
                                  size_t *n)
{
    *n = 0;
    const ms_stack **r = malloc((s->nstacks ? s->nstacks : 1) * sizeof *r);
    if (!r)
        return NULL;
    for (size_t i = 0; i < s->nstacks; i++)
        if (include_zero || ms_report_metric(&s->stacks[i], m) > 0)
            r[(*n)++] = &s->stacks[i];
    sort_metric = m;
    qsort(r, *n, sizeof *r, cmp_ranked);
    return r;
}

ms_frame *ms_report_frames(const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st,
                           size_t *n)
{
    *n = 0;
    size_t cap = (size_t)st->depth * 2 + 1;
    ms_frame *out = malloc(cap * sizeof *out);
    if (!out)
        return NULL;
    for (uint32_t i = 0; i < st->depth; i++) {
        uint64_t pc = st->pcs[i];
        int is_ret = i > 0 || !(st->flags & MS_STACKF_FIRST_IS_PC);
        ms_frame tmp[MS_REPORT_MAX_INLINE];
        /* Shared with the exporters: symbolizer, then names an imported dump carries,
         * then the module holding the call site. */
        int k = ms_agg_resolve(s, sym, pc, is_ret, tmp, MS_REPORT_MAX_INLINE);
        if (*n + (size_t)k > cap) {
            cap = (*n + (size_t)k) * 2;
            ms_frame *g = realloc(out, cap * sizeof *out);
            if (!g) {
                free(out);
                *n = 0;
                return NULL;
            }
            out = g;
        }
        memcpy(out + *n, tmp, (size_t)k * sizeof *tmp);
        *n += (size_t)k;
    }
    return out;
}

const char *ms_report_option_errors(const ms_snapshot *s)
{
    const char *e = ms_snapshot_meta(s, "option_errors");
    return e && *e ? e : NULL;
}

const char *ms_report_started_as(const ms_snapshot *s, char *buf, size_t cap)
{
    const char *exe = ms_snapshot_meta(s, "exe"), *cmd = ms_snapshot_meta(s, "cmdline");
    if (!exe || !cmd || !*cmd || !cap)
        return NULL;
    /* argv[0], up to its first space (a program may rewrite it: "redis-server *:6379") */
    size_t n = strcspn(cmd, " ");
    const char *b = cmd;
    for (size_t i = 0; i < n; i++)
        if (cmd[i] == '/')
            b = cmd + i + 1;
    n -= (size_t)(b - cmd);
    const char *e = strrchr(exe, '/');
    e = e ? e + 1 : exe;
    if (!n || (strlen(e) == n && !memcmp(e, b, n)))
        return NULL;
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, b, n);
    buf[n] = 0;
    return buf;
}

uint64_t ms_report_lost(const ms_snapshot *s, char *buf, size_t len)
{
    uint64_t sum = 0;
    size_t o = 0;
    if (len)
        buf[0] = 0;
    for (size_t i = 0; i < s->nhealth; i++) {
        const ms_health_item *h = &s->health[i];
        if (h->value == 0)
            continue;
        if (strncmp(h->name, "dropped_", 8) && strncmp(h->name, "lost_", 5) &&
            strcmp(h->name, "snapshot_errors") && strcmp(h->name, "table_grow_failures"))
            continue;
        sum += h->value;
        if (o < len) {
            int w = snprintf(buf + o, len - o, "%s%s=%" PRIu64, o ? ", " : "", h->name, h->value);
            if (w > 0)
                o += (size_t)w;
        }
        /* why the last snapshot was not written (a Linux errno number) */
        const char *why = NULL;
        for (size_t j = 0; j < s->nhealth && !strcmp(h->name, "snapshot_errors"); j++)
            if (!strcmp(s->health[j].name, "snapshot_last_errno") && s->health[j].value &&
                s->health[j].value < 4096)
                why = strerror((int)s->health[j].value);
        if (why && o < len) {
            int w = snprintf(buf + o, len - o, " (the last: %s)", why);
            if (w > 0)
                o += (size_t)w;
        }
    }
    return sum;
}

uint64_t ms_report_temporaries(const ms_snapshot *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        n += s->stacks[i].temp_blocks;
    return n;
}

double ms_report_peak_after_start(const ms_snapshot *s)
{
    const char *start = ms_snapshot_meta(s, "start_ns");
    uint64_t st = start ? strtoull(start, NULL, 10) : 0;
    if (!s->has_peak || !st || s->peak_ns < st)
        return -1;
    return (double)(s->peak_ns - st) / 1e9;
}

const char *ms_leak_attach_note(const ms_snapshot *s)
{
    if (!ms_snapshot_meta(s, "attached_ns"))
        return NULL;
    return "after memsight attach: covers the blocks recorded since the attach; the memory the "
           "program had before (its blocks cannot be enumerated) was read as roots, so a block "
           "it points to is reachable, and stale pointers in freed memory may hide a leak";
}
