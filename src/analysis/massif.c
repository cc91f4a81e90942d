/* Valgrind massif's output format (massif.out), for ms_print and massif-visualizer: one
 * massif snapshot per memsight snapshot of a series, each with its allocation tree
 * (callers of the allocator first, then their callers), and the process peak the agent
 * recorded as massif's peak snapshot. Tools only; writes only to the stream given. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"

/* massif leaves out, under each node, the children below 1% of the snapshot's total */
#define MASSIF_THRESHOLD_PCT 1.0
#define MASSIF_MAX_DEPTH 64

typedef struct mnode {
    char *label;
    uint64_t bytes;
    struct mnode *kids;
    size_t nkids, capkids;
} mnode;

static void mnode_free(mnode *n)
{
    for (size_t i = 0; i < n->nkids; i++)
        mnode_free(&n->kids[i]);
    free(n->kids);
    free(n->label);
}

/* The child of n labelled `label`, made if missing; NULL on out-of-memory. */
static mnode *mnode_child(mnode *n, const char *label)
{
    for (size_t i = 0; i < n->nkids; i++)
        if (!strcmp(n->kids[i].label, label))
            return &n->kids[i];
    if (n->nkids == n->capkids) {
        size_t cap = n->capkids ? 2 * n->capkids : 4;
        mnode *k = realloc(n->kids, cap * sizeof *k);
        if (!k)
            return NULL;
        n->kids = k;
        n->capkids = cap;
    }
    mnode *c = &n->kids[n->nkids];
    memset(c, 0, sizeof *c);
    c->label = strdup(label);
    if (!c->label)
        return NULL;
    n->nkids++;
    return c;
}

/* massif's label of a code location: "0xADDR: function (file:line)". Newlines would
 * break the format: any control character becomes '?'. */
static char *frame_label(const ms_frame *f)
{
    char *out = NULL;
    const char *b = f->file ? strrchr(f->file, '/') : NULL;
    int r;
    if (f->function && f->file)
        r = asprintf(&out, "0x%" PRIx64 ": %s (%s:%d)", f->address, f->function, b ? b + 1 : f->file,
                     f->line);
    else if (f->function)
        r = asprintf(&out, "0x%" PRIx64 ": %s (in %s)", f->address, f->function,
                     f->module ? f->module : "???");
    else if (f->module)
        r = asprintf(&out, "0x%" PRIx64 ": ??? (in %s)", f->address, f->module);
    else
        r = asprintf(&out, "0x%" PRIx64 ": ???", f->address);
    if (r < 0)
        return NULL;
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return out;
}

/* Adds `bytes` along the stack's frames, innermost (the allocator's caller) first. */
static int tree_add(mnode *root, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st,
                    uint64_t bytes)
{
    root->bytes += bytes;
    mnode *n = root;
    int depth = 0;
    if (st->kind == MS_KIND_MMAP) {
        n = mnode_child(n, "0x0: [mmap] (regions mapped by the program)");
        if (!n)
            return -1;
        n->bytes += bytes;
    }
    for (uint32_t d = 0; d < st->depth && depth < MASSIF_MAX_DEPTH; d++) {
        ms_frame fr[16];
        int k = ms_agg_resolve(s, sym, st->pcs[d], ms_agg_is_return_address(st, d), fr, 16);
        for (int j = 0; j < k && depth < MASSIF_MAX_DEPTH; j++, depth++) {
            char *label = frame_label(&fr[j]);
            if (!label)
                return -1;
            n = mnode_child(n, label);
            free(label);
            if (!n)
                return -1;
            n->bytes += bytes;
        }
    }
    return 0;
}

static int cmp_bytes_desc(const void *a, const void *b)
{
    const mnode *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->label, y->label);
}

static void tree_write(FILE *out, mnode *n, int indent, uint64_t threshold, int is_root)
{
    qsort(n->kids, n->nkids, sizeof *n->kids, cmp_bytes_desc);
    size_t shown = 0, below = 0;
    uint64_t below_bytes = 0;
    for (size_t i = 0; i < n->nkids; i++) {
        if (n->kids[i].bytes >= threshold && n->kids[i].bytes > 0)
            shown++;
        else {
            below++;
            below_bytes += n->kids[i].bytes;
        }
    }
    fprintf(out, "%*sn%zu: %" PRIu64 " %s\n", indent, "", shown + (below ? 1 : 0), n->bytes,
            is_root ? "(heap allocation functions) malloc/new/new[], --alloc-fns, etc." : n->label);
    for (size_t i = 0; i < shown; i++)
        tree_write(out, &n->kids[i], indent + 1, threshold, 0);
    if (below)
        fprintf(out, "%*sn0: %" PRIu64 " in %zu place%s, below massif's threshold (%.2f%%)\n",
                indent + 1, "", below_bytes, below, below == 1 ? "" : "s", MASSIF_THRESHOLD_PCT);
}

static uint64_t meta_u64(const ms_snapshot *s, const char *key)
{
    const char *v = ms_agg_meta(s, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

/* One massif snapshot: totals and, with a tree, the allocation tree of `at_peak` values
 * (the PEAK chunk's) or of the live values. */
static int write_snapshot(FILE *out, int index, uint64_t time_ms, const ms_snapshot *s,
                          ms_symbolizer *sym, int at_peak)
{
    mnode root;
    memset(&root, 0, sizeof root);
    root.label = NULL;
    uint64_t stacks_b = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        uint64_t b = at_peak ? st->peak_live_bytes : st->c.live_bytes;
        if (!b || st->kind == MS_KIND_RESERVED)
            continue;
        if (st->kind == MS_KIND_STACK) {
            stacks_b += b;
            continue;
        }
        if (tree_add(&root, s, sym, st, b) != 0) {
            mnode_free(&root);
            return -1;
        }
    }
    fprintf(out, "#-----------\nsnapshot=%d\n#-----------\ntime=%" PRIu64 "\nmem_heap_B=%" PRIu64
                 "\nmem_heap_extra_B=0\nmem_stacks_B=%" PRIu64 "\n",
            index, time_ms, root.bytes, stacks_b);
    if (!root.bytes)
        fputs("heap_tree=empty\n", out);
    else {
        fprintf(out, "heap_tree=%s\n", at_peak ? "peak" : "detailed");
        uint64_t thr = (uint64_t)((double)root.bytes * MASSIF_THRESHOLD_PCT / 100.0);
        tree_write(out, &root, 0, thr ? thr : 1, 1);
    }
    mnode_free(&root);
    return 0;
}

int ms_export_massif(ms_snapshot *const *series, size_t n, ms_symbolizer *const *syms, FILE *out,
                     char *err, size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "no snapshot to export");
        return -1;
    }
    const ms_snapshot *last = series[n - 1];
    const char *cmd = ms_agg_meta(last, "cmdline");
    fputs("desc: memsight snapshots (live bytes per call stack)\ncmd: ", out);
    for (const char *p = cmd ? cmd : "(unknown)"; *p; p++)
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, out);
    fputs("\ntime_unit: ms\n", out);
    /* times from the agent's start (start_ns), else from the first snapshot */
    uint64_t t0 = meta_u64(series[0], "start_ns");
    if (!t0)
        t0 = meta_u64(series[0], "snapshot_ns");
    /* the peak goes in its place in time, before the first snapshot taken after it */
    const ms_snapshot *pk = NULL;
    ms_symbolizer *pksym = NULL;
    for (size_t i = n; i-- > 0;)
        if (series[i]->has_peak) {
            pk = series[i];
            pksym = syms ? syms[i] : NULL;
            break;
        }
    int idx = 0, peak_done = pk == NULL;
    for (size_t i = 0; i < n; i++) {
        uint64_t ns = meta_u64(series[i], "snapshot_ns");
        uint64_t ms = ns > t0 ? (ns - t0) / 1000000 : 0;
        /* never after the snapshot that recorded it: its time comes from a coarse clock
         * (a few ms behind or ahead of the snapshots' at worst) */
        if (!peak_done && (pk->peak_ns <= ns || !ns || series[i] == pk)) {
            uint64_t pms = pk->peak_ns > t0 ? (pk->peak_ns - t0) / 1000000 : 0;
            if (pms > ms && ns)
                pms = ms;
            if (write_snapshot(out, idx++, pms, pk, pksym, 1) != 0)
                goto oom;
            peak_done = 1;
        }
        if (write_snapshot(out, idx++, ms, series[i], syms ? syms[i] : NULL, 0) != 0)
            goto oom;
    }
    if (!peak_done) {
        uint64_t pms = pk->peak_ns > t0 ? (pk->peak_ns - t0) / 1000000 : 0;
        if (write_snapshot(out, idx++, pms, pk, pksym, 1) != 0)
            goto oom;
    }
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of memory while building the massif trees");
    return -1;
}
