/* `memsight report --format json`: the stable, documented JSON report
 * (docs/json-report.md). Names here are a contract: add fields, never rename or
 * remove one. Never prints anything but the document. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "analysis/json_writer.h"
#include "analysis/stack_agg.h"
#include "core/labels.h"
#include "analysis/report_model.h"
#include "analysis/sites.h"
#include "analysis/threads_report.h"

#define JSON_REPORT_VERSION 1
#define JSON_REPORT_VERSION_TABLE 2 /* stacks[].frames are indexes into frame_table */

static void counters(ms_json *j, const char *prefix, const ms_snap_counters *c, int cumulative)
{
    char k[64];
    snprintf(k, sizeof k, "%slive_bytes", prefix);
    ms_json_kv_u64(j, k, c->live_bytes);
    snprintf(k, sizeof k, "%slive_blocks", prefix);
    ms_json_kv_u64(j, k, c->live_blocks);
    if (!cumulative)
        return;
    snprintf(k, sizeof k, "%sallocated_bytes", prefix);
    ms_json_kv_u64(j, k, c->alloc_bytes);
    snprintf(k, sizeof k, "%sallocated_blocks", prefix);
    ms_json_kv_u64(j, k, c->alloc_blocks);
    snprintf(k, sizeof k, "%sfreed_bytes", prefix);
    ms_json_kv_u64(j, k, c->free_bytes);
    snprintf(k, sizeof k, "%sfreed_blocks", prefix);
    ms_json_kv_u64(j, k, c->free_blocks);
}

/* The frame table of the compact form (`--json-frames=table`): every distinct source
 * frame once, its strings in tables of their own; stacks list indexes into it. The same
 * frame interned twice gets the same index, so a second pass over the stacks writes
 * exactly the indexes the first pass put in the tables. */
typedef struct frame_row {
    uint64_t address, module_offset;
    long module, function, file; /* indexes into the string tables, -1 for null */
    int line, inlined;
} frame_row;

/* The rows a recorded pc resolves to, cached: a stack's frames are its pcs' rows in
 * order (as ms_report_frames resolves them), so each distinct pc is resolved and
 * interned once, not once per stack through it. */
typedef struct pc_slot {
    uint64_t key; /* pc << 1 | is_return_address, + 1 (0: empty) */
    uint32_t first, count; /* rows in pool[first .. first + count) */
} pc_slot;

typedef struct frame_table {
    ms_agg *modules, *functions, *files; /* string tables (ms_agg's interned names) */
    ms_agg *keys;                        /* one interned key per frame row */
    frame_row *rows;
    size_t nrows, caprows;
    pc_slot *slots;
    size_t nslots, nused;
    uint32_t *pool;
    size_t npool, cappool;
} frame_table;

static void table_free(frame_table *t)
{
    ms_agg_free(t->modules);
    ms_agg_free(t->functions);
    ms_agg_free(t->files);
    ms_agg_free(t->keys);
    free(t->rows);
    free(t->slots);
    free(t->pool);
}

static int table_init(frame_table *t)
{
    memset(t, 0, sizeof *t);
    t->modules = ms_agg_new();
    t->functions = ms_agg_new();
    t->files = ms_agg_new();
    t->keys = ms_agg_new();
    t->nslots = 4096;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    if (t->modules && t->functions && t->files && t->keys && t->slots)
        return 0;
    table_free(t);
    return -1;
}

/* p (holding *cap elements) with room for need; NULL (p unchanged) on out of memory. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 1024;
    while (c < need)
        c *= 2;
    void *g = realloc(p, c * elem);
    if (g)
        *cap = c;
    return g;
}

static long str_index(ms_agg *tab, const char *s, int *oom)
{
    long i = s ? ms_agg_intern(tab, s) : -1;
    if (s && i < 0)
        *oom = 1;
    return i;
}

/* Index of frame f in the table, added when new; -1 on out of memory. */
static long table_frame(frame_table *t, const ms_frame *f)
{
    int oom = 0;
    frame_row r = {f->address, f->module ? f->module_offset : 0,
                   str_index(t->modules, f->module, &oom),
                   str_index(t->functions, f->function, &oom),
                   str_index(t->files, f->file, &oom),
                   f->line > 0 ? f->line : 0, f->inlined != 0};
    if (oom)
        return -1;
    char key[128];
    snprintf(key, sizeof key, "%" PRIx64 "/%ld/%ld/%ld/%d/%d", r.address, r.module, r.function,
             r.file, r.line, r.inlined);
    size_t before = t->keys->nnames;
    long i = ms_agg_intern(t->keys, key);
    if (i < 0 || t->keys->nnames == before)
        return i;
    frame_row *g = grow(t->rows, &t->caprows, t->nrows + 1, sizeof *g);
    if (!g)
        return -1;
    t->rows = g;
    t->rows[t->nrows++] = r;
    return i;
}

static size_t slot_of(const frame_table *t, uint64_t key)
{
    size_t mask = t->nslots - 1, i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
    while (t->slots[i].key && t->slots[i].key != key)
        i = (i + 1) & mask;
    return i;
}

static int slots_grow(frame_table *t)
{
    pc_slot *old = t->slots;
    size_t oldn = t->nslots;
    t->slots = calloc(oldn * 2, sizeof *t->slots);
    if (!t->slots) {
        t->slots = old;
        return -1;
    }
    t->nslots = oldn * 2;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].key)
            t->slots[slot_of(t, old[i].key)] = old[i];
    free(old);
    return 0;
}

/* The rows of one recorded pc (pool[*first .. *first + *count)); -1 on out of memory. */
static int table_pc(frame_table *t, const ms_snapshot *s, ms_symbolizer *sym, uint64_t pc,
                    int is_ret, uint32_t *first, uint32_t *count)
{
    uint64_t key = (pc << 1 | (is_ret ? 1u : 0u)) + 1;
    size_t i = key ? slot_of(t, key) : 0;
    if (key && t->slots[i].key) {
        *first = t->slots[i].first;
        *count = t->slots[i].count;
        return 0;
    }
    ms_frame f[MS_REPORT_MAX_INLINE];
    int n = ms_agg_resolve(s, sym, pc, is_ret, f, MS_REPORT_MAX_INLINE);
    uint32_t *g = grow(t->pool, &t->cappool, t->npool + (size_t)n, sizeof *g);
    if (!g)
        return -1;
    t->pool = g;
    *first = (uint32_t)t->npool;
    *count = (uint32_t)n;
    for (int k = 0; k < n; k++) {
        long r = table_frame(t, &f[k]);
        if (r < 0)
            return -1;
        t->pool[t->npool++] = (uint32_t)r;
    }
    if (!key) /* pc ~0 as a return address: not cached */
        return 0;
    t->slots[i] = (pc_slot){key, *first, *count};
    if (++t->nused * 2 > t->nslots)
        return slots_grow(t);
    return 0;
}

static void string_table(ms_json *j, const char *name, const ms_agg *tab)
{
    ms_json_key(j, name);
    ms_json_array_begin(j);
    int pretty = j->pretty;
    j->pretty = 0;
    for (size_t i = 0; i < tab->nnames; i++)
        ms_json_str(j, tab->names[i]);
    ms_json_array_end(j);
    j->pretty = pretty;
}

static void index_or_null(ms_json *j, const char *key, long i)
{
    ms_json_key(j, key);
    if (i >= 0)
        ms_json_i64(j, i);
    else
        ms_json_null(j);
}

static void table_write(ms_json *j, const frame_table *t)
{
    string_table(j, "modules", t->modules);
    string_table(j, "functions", t->functions);
    string_table(j, "files", t->files);
    ms_json_key(j, "frame_table");
    ms_json_array_begin(j);
    int pretty = j->pretty;
    for (size_t i = 0; i < t->nrows; i++) {
        const frame_row *r = &t->rows[i];
        ms_json_object_begin(j);
        j->pretty = 0;
        ms_json_key(j, "address");
        ms_json_hex(j, r->address);
        index_or_null(j, "module", r->module);
        ms_json_key(j, "module_offset");
        if (r->module >= 0)
            ms_json_hex(j, r->module_offset);
        else
            ms_json_null(j);
        index_or_null(j, "function", r->function);
        index_or_null(j, "file", r->file);
        index_or_null(j, "line", r->line > 0 ? r->line : -1);
        ms_json_key(j, "inlined");
        ms_json_bool(j, r->inlined);
        ms_json_object_end(j);
        j->pretty = pretty;
    }
    ms_json_array_end(j);
}

/* The frames of a stack as indexes into t (j NULL: only fills the table). */
static int frame_indexes(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym,
                         const ms_stack *st, frame_table *t)
{
    int pretty = j ? j->pretty : 0, rc = 0;
    if (j) {
        ms_json_key(j, "frames");
        ms_json_array_begin(j);
        j->pretty = 0; /* one line of indexes per stack */
    }
    for (uint32_t d = 0; st && d < st->depth && rc == 0; d++) {
        uint32_t first, count;
        rc = table_pc(t, s, sym, st->pcs[d], ms_agg_is_return_address(st, d), &first, &count);
        for (uint32_t k = 0; j && rc == 0 && k < count; k++)
            ms_json_i64(j, t->pool[first + k]);
    }
    if (j) {
        ms_json_array_end(j);
        j->pretty = pretty;
    }
    return rc;
}

/* The frames of a stack: objects (the full form), or indexes into t when t is given
 * (j NULL: only fills the table). */
static int frames(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st,
                  frame_table *t)
{
    if (t)
        return frame_indexes(j, s, sym, st, t);
    size_t n = 0;
    ms_frame *f = st ? ms_report_frames(s, sym, st, &n) : NULL;
    if (st && !f && st->depth)
        return -1;
    if (j) {
        ms_json_key(j, "frames");
        ms_json_array_begin(j);
    }
    int pretty = j ? j->pretty : 0;
    for (size_t i = 0; i < n && j; i++) {
        ms_json_object_begin(j);
        j->pretty = 0; /* one line per frame: reports of big snapshots stay readable */
        ms_json_key(j, "address");
        ms_json_hex(j, f[i].address);
        ms_json_kv_str(j, "module", f[i].module);
        ms_json_key(j, "module_offset");
        if (f[i].module)
            ms_json_hex(j, f[i].module_offset);
        else
            ms_json_null(j);
        ms_json_kv_str(j, "function", f[i].function);
        ms_json_kv_str(j, "file", f[i].file);
        ms_json_key(j, "line");
        if (f[i].line > 0)
            ms_json_i64(j, f[i].line);
        else
            ms_json_null(j);
        ms_json_key(j, "inlined");
        ms_json_bool(j, f[i].inlined);
        ms_json_object_end(j);
        j->pretty = pretty;
    }
    if (j) {
        ms_json_array_end(j);
        j->pretty = pretty;
    }
    free(f);
    return 0;
}

int ms_report_json_frames(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st)
{
    return frames(j, s, sym, st, NULL); /* full frames, also with a frame table */
}

static void meta(ms_json *j, const ms_snapshot *s)
{
    ms_json_key(j, "meta");
    ms_json_object_begin(j);
    for (size_t i = 0; i < s->nmeta; i++) {
        /* Later duplicates win, as in ms_snapshot_meta; write each key once. */
        int dup = 0;
        for (size_t k = i + 1; k < s->nmeta && !dup; k++)
            dup = !strcmp(s->meta[k].key, s->meta[i].key);
        /* Names an importer stored per pc ("sym.*") belong to frames, not metadata. */
        if (!dup && strncmp(s->meta[i].key, "sym.", 4) != 0)
            ms_json_kv_str(j, s->meta[i].key, s->meta[i].value);
    }
    ms_json_object_end(j);
}

/* The user labels as an object (meta.labels keeps the text as written). Labels that do
 * not pass the check a writer applies are left out: the file may come from anywhere. */
static void labels(ms_json *j, const ms_snapshot *s)
{
    const char *v = ms_agg_meta(s, "labels");
    ms_json_key(j, "labels");
    ms_json_object_begin(j);
    size_t pos = 0;
    ms_label l;
    const char *why;
    while (v && ms_labels_next(v, &pos, &l)) {
        char k[MS_LABEL_KEY_MAX + 1], val[MS_LABEL_VALUE_MAX + 1];
        if (ms_label_check(l.key, l.key_len + 1 + l.value_len, &why) != 0)
            continue;
        memcpy(k, l.key, l.key_len);
        k[l.key_len] = 0;
        memcpy(val, l.value, l.value_len);
        val[l.value_len] = 0;
        ms_json_kv_str(j, k, val);
    }
    ms_json_object_end(j);
}

/* Every stack grouped by allocation site (sites.h), by live bytes: what the text report's
 * sites table shows, all of them. */
static int sites(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym, ms_site_mode mode)
{
    char err[256];
    ms_agg *a = ms_sites_build(s, sym, mode, err, sizeof err);
    size_t *ord = a ? ms_agg_order(a, MS_METRIC_LIVE_BYTES) : NULL;
    if (!ord) {
        ms_agg_free(a);
        return -1;
    }
    ms_json_key(j, "sites");
    ms_json_array_begin(j);
    int pretty = j->pretty;
    for (size_t i = 0; i < a->nstacks; i++) {
        const ms_agg_stack *st = &a->stacks[ord[i]];
        ms_json_object_begin(j);
        j->pretty = 0; /* one line per site */
        ms_json_kv_str(j, "site", a->names[st->frames[st->nframes - 1]]);
        ms_json_kv_str(j, "kind", ms_kind_name(st->kind));
        counters(j, "", &st->c, 1);
        if (s->has_peak)
            ms_json_kv_u64(j, "peak_live_bytes", st->peak_bytes);
        if (s->has_temp)
            ms_json_kv_u64(j, "temporary_blocks", st->temps);
        ms_json_kv_u64(j, "stacks", st->nsrc);
        ms_json_object_end(j);
        j->pretty = pretty;
    }
    ms_json_array_end(j);
    free(ord);
    ms_agg_free(a);
    return 0;
}

/* The error guard pages caught (GARD): docs/json-report.md, `guard_error`. */
static int guard_error(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym)
{
    const ms_guard_error *e = s->guard;
    const ms_snap_guard *g = &e->g;
    ms_json_key(j, "guard_error");
    ms_json_object_begin(j);
    ms_json_kv_str(j, "kind", ms_guard_kind_name(g->kind)); /* "unknown-kind": newer format */
    ms_json_kv_u64(j, "kind_value", g->kind);
    ms_json_key(j, "address");
    ms_json_hex(j, g->address);
    ms_json_key(j, "block_address");
    if (g->block_address)
        ms_json_hex(j, g->block_address);
    else
        ms_json_null(j);
    ms_json_kv_u64(j, "block_size", g->block_size);
    /* signed distance from the block's start: negative before it */
    ms_json_kv_i64(j, "offset", g->block_address ? (int64_t)(g->address - g->block_address) : 0);
    static const char *const what[3] = {"access", "allocation", "free"};
    const ms_stack *st[3] = {&e->access, &e->alloc, &e->freed};
    const uint32_t tid[3] = {g->access_tid, g->alloc_tid, g->free_tid};
    for (int i = 0; i < 3; i++) {
        ms_json_key(j, what[i]);
        if (i > 0 && !tid[i]) {
            ms_json_null(j);
            continue;
        }
        ms_json_object_begin(j);
        ms_json_kv_u64(j, "tid", tid[i]);
        if (frames(j, s, sym, st[i], NULL) != 0) /* full frames, also in the compact form */
            return -1;
        ms_json_object_end(j);
    }
    ms_json_object_end(j);
    return 0;
}

static int leaks(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym, frame_table *t)
{
    const ms_snap_leak_summary *ls = &s->leak_summary;
    ms_json_key(j, "leaks");
    ms_json_object_begin(j);
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
        ms_json_key(j, ms_leak_class_name(c));
        ms_json_object_begin(j);
        ms_json_kv_u64(j, "blocks", ls->blocks[c]);
        ms_json_kv_u64(j, "bytes", ls->bytes[c]);
        ms_json_object_end(j);
    }
    ms_json_kv_u64(j, "pause_ns", ls->pause_ns);
    ms_json_kv_u64(j, "scan_ns", ls->scan_ns);
    ms_json_kv_u64(j, "flags", ls->flags);
    ms_json_object_end(j);

    /* apart from "leaks", whose objects are the classes */
    uint64_t hb[MS_LEAK_H_COUNT], hy[MS_LEAK_H_COUNT];
    int set = ms_leak_heuristics_used(s, hb, hy);
    if (set >= 0) {
        char list[128];
        ms_leak_heuristic_list((unsigned)set, list, sizeof list);
        ms_json_key(j, "leak_heuristics");
        ms_json_object_begin(j);
        ms_json_kv_str(j, "in_force", list);
        ms_json_key(j, "reachable_via_heuristic");
        ms_json_object_begin(j);
        for (unsigned h = 0; h < MS_LEAK_H_COUNT; h++) {
            if (!hb[h])
                continue;
            ms_json_key(j, ms_leak_heuristic_names[h]);
            ms_json_object_begin(j);
            ms_json_kv_u64(j, "blocks", hb[h]);
            ms_json_kv_u64(j, "bytes", hy[h]);
            ms_json_object_end(j);
        }
        ms_json_object_end(j);
        ms_json_object_end(j);
    }

    ms_json_key(j, "leak_records");
    ms_json_array_begin(j);
    for (size_t i = 0; i < s->nleaks; i++) {
        const ms_snap_leak_rec *r = &s->leaks[i];
        ms_json_object_begin(j);
        ms_json_kv_str(j, "class", ms_leak_class_name(r->leak_class));
        ms_json_kv_u64(j, "blocks", r->blocks);
        ms_json_kv_u64(j, "bytes", r->bytes);
        ms_json_kv_u64(j, "stack_id", r->stack_id);
        ms_json_key(j, "example_address");
        ms_json_hex(j, r->example_address);
        ms_json_kv_u64(j, "example_size", r->example_size);
        if (r->heuristics) {
            char list[128];
            ms_leak_heuristic_list(r->heuristics, list, sizeof list);
            ms_json_kv_str(j, "reachable_via_heuristic", list);
        }
        char hex[2 * sizeof r->sample + 1];
        size_t n = r->sample_len <= sizeof r->sample ? r->sample_len : sizeof r->sample;
        for (size_t b = 0; b < n; b++)
            snprintf(hex + 2 * b, 3, "%02x", r->sample[b]);
        hex[2 * n] = 0;
        ms_json_kv_str(j, "sample_hex", hex);
        if (frames(j, s, sym, ms_snapshot_stack(s, r->stack_id), t))
            return -1;
        ms_json_object_end(j);
    }
    ms_json_array_end(j);
    return 0;
}

int ms_export_json(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                   char *err, size_t errlen)
{
    ms_json j;
    ms_json_init(&j, out, 1);
    ms_json_object_begin(&j);
    ms_json_kv_str(&j, "format", "memsight-report");
    frame_table table, *ft = NULL;
    if (o && o->frame_table) {
        if (table_init(&table) != 0) {
            snprintf(err, errlen, "%s: out of memory", s->path);
            return -1;
        }
        ft = &table;
    }
    ms_json_kv_i64(&j, "version", ft ? JSON_REPORT_VERSION_TABLE : JSON_REPORT_VERSION);
    if (ft)
        ms_json_kv_str(&j, "frames", "table");
    ms_json_kv_str(&j, "file", s->path);
    char ver[32];
    snprintf(ver, sizeof ver, "%u.%u", s->version_major, s->version_minor);
    ms_json_kv_str(&j, "snapshot_version", ver);
    ms_json_key(&j, "sampled");
    ms_json_bool(&j, (s->flags & MS_SNAP_F_SAMPLED) != 0);
    meta(&j, s);
    labels(&j, s);

    ms_report_totals t;
    ms_report_totals_compute(s, &t);
    ms_json_key(&j, "totals");
    ms_json_object_begin(&j);
    counters(&j, "", &t.all, 1);
    counters(&j, "heap_", &t.kind[MS_KIND_HEAP], 1);
    counters(&j, "mmap_", &t.kind[MS_KIND_MMAP], 1);
    counters(&j, "stack_", &t.kind[MS_KIND_STACK], 1);
    counters(&j, "reserved_", &t.kind[MS_KIND_RESERVED], 1); /* not in the totals above */
    ms_json_kv_u64(&j, "stacks", s->nstacks);
    if (s->has_blocks)
        ms_json_kv_u64(&j, "blocks_recorded", s->nblocks);
    if (s->has_peak) {
        ms_json_kv_u64(&j, "peak_live_bytes", s->peak_live_bytes_total);
        ms_json_kv_u64(&j, "peak_ns", s->peak_ns);
    }
    if (s->has_temp)
        ms_json_kv_u64(&j, "temporary_blocks", ms_report_temporaries(s));
    ms_json_object_end(&j);

    if (s->hist) {
        ms_json_key(&j, "size_histogram");
        ms_json_array_begin(&j);
        for (size_t i = 0; i < s->nhist; i++) {
            int pretty = j.pretty;
            j.pretty = 0;
            ms_json_object_begin(&j);
            ms_json_kv_u64(&j, "min_size", s->hist[i].lo);
            ms_json_kv_u64(&j, "max_size", s->hist[i].hi);
            ms_json_kv_u64(&j, "allocations", s->hist[i].count);
            ms_json_object_end(&j);
            j.pretty = pretty;
        }
        ms_json_array_end(&j);
    }

    ms_json_key(&j, "health");
    ms_json_object_begin(&j);
    for (size_t i = 0; i < s->nhealth; i++)
        ms_json_kv_u64(&j, s->health[i].name, s->health[i].value);
    ms_json_object_end(&j);

    char lost[512];
    uint64_t nlost = ms_report_lost(s, lost, sizeof lost);
    ms_json_key(&j, "warnings");
    ms_json_array_begin(&j);
    if (nlost) {
        char w[700];
        snprintf(w, sizeof w, "the agent lost records (%s): totals are lower bounds", lost);
        ms_json_str(&j, w);
    }
    if (ms_report_option_errors(s)) {
        char w[700];
        snprintf(w, sizeof w, "the agent ignored bad options: %s", ms_report_option_errors(s));
        ms_json_str(&j, w);
    }
    if (s->guard && s->guard->g.kind >= MS_GUARD_KIND_COUNT) {
        char w[160];
        snprintf(w, sizeof w,
                 "guard error kind %u is unknown to this memsight (format %u.%u is newer)",
                 s->guard->g.kind, s->version_major, s->version_minor);
        ms_json_str(&j, w);
    }
    if (s->unknown_chunks) {
        char w[160];
        snprintf(w, sizeof w, "%zu chunk(s) of a newer format version were skipped",
                 s->unknown_chunks);
        ms_json_str(&j, w);
    }

    size_t n = 0;
    const ms_stack **ranked = ms_report_ranked(s, MS_METRIC_LIVE_BYTES, 1, &n);
    if (!ranked) {
        snprintf(err, errlen, "%s: out of memory", s->path);
        if (ft)
            table_free(ft);
        return -1;
    }
    size_t top = (o && o->top > 0 && (size_t)o->top < n) ? (size_t)o->top : n;
    /* Symbolize first so that symbolizer warnings (changed files) are in the list; the
     * same pass fills the frame table of the compact form. */
    int rc = 0;
    for (size_t i = 0; i < top && (sym || ft) && rc == 0; i++)
        rc = frames(NULL, s, sym, ranked[i], ft);
    for (size_t i = 0; ft && s->has_leaks && i < s->nleaks && rc == 0; i++)
        rc = frames(NULL, s, sym, ms_snapshot_stack(s, s->leaks[i].stack_id), ft);
    if (sym) {
        const char *const *lines;
        size_t nw = ms_symbolizer_warnings(sym, &lines);
        for (size_t i = 0; i < nw; i++)
            ms_json_str(&j, lines[i]);
    }
    ms_json_array_end(&j);

    if (s->nacct) {
        ms_json_key(&j, "accounting_kb");
        ms_json_object_begin(&j);
        for (size_t i = 0; i < s->nacct; i++)
            ms_json_kv_u64(&j, s->acct[i].name, s->acct[i].value);
        ms_json_object_end(&j);
    }

    if (ft && rc == 0)
        table_write(&j, ft);

    ms_json_key(&j, "stacks");
    ms_json_array_begin(&j);
    for (size_t i = 0; i < top && rc == 0; i++) {
        const ms_stack *st = ranked[i];
        ms_json_object_begin(&j);
        ms_json_kv_u64(&j, "id", st->id);
        ms_json_kv_str(&j, "kind", ms_kind_name(st->kind));
        counters(&j, "", &st->c, 1);
        if (s->has_peak) {
            ms_json_kv_u64(&j, "peak_live_bytes", st->peak_live_bytes);
            ms_json_kv_u64(&j, "peak_live_blocks", st->peak_live_blocks);
        }
        if (s->has_temp)
            ms_json_kv_u64(&j, "temporary_blocks", st->temp_blocks);
        ms_json_key(&j, "truncated");
        ms_json_bool(&j, (st->flags & MS_STACKF_TRUNCATED) != 0);
        ms_json_key(&j, "unwind_failed");
        ms_json_bool(&j, (st->flags & MS_STACKF_UNWIND_FAIL) != 0);
        rc = frames(&j, s, sym, st, ft);
        ms_json_object_end(&j);
    }
    ms_json_array_end(&j);
    free(ranked);
    if (rc == 0)
        rc = sites(&j, s, sym, o && o->site_caller ? MS_SITE_CALLER : MS_SITE_PROGRAM);
    if (rc == 0 && s->has_leaks)
        rc = leaks(&j, s, sym, ft);
    if (rc == 0 && s->guard)
        rc = guard_error(&j, s, sym);
    if (rc == 0)
        rc = ms_threads_json(&j, s, sym);
    ms_json_object_end(&j);
    if (ft)
        table_free(ft);
    if (rc != 0) {
        snprintf(err, errlen, "%s: out of memory", s->path);
        return -1;
    }
    if (ms_json_finish(&j) != 0) {
        snprintf(err, errlen, "%s: cannot write the JSON report", s->path);
        return -1;
    }
    return 0;
}
