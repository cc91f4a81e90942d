/* Merging snapshots of one program and writing the result as a snapshot file (see
 * merge.h and include/memsight/snapshot_format.h), written with the same snapshot writer
 * the agent uses. Tools only; never prints. */
#define _GNU_SOURCE
#include "analysis/merge.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stack_agg.h"
#include "core/fileio.h"
#include "core/labels.h"
#include "core/proc_read.h"
#include "core/snapshot_write.h"

/* ---- merging ------------------------------------------------------------------------ */

static int same_module(const ms_module *a, const ms_module *b)
{
    if (a->build_id_len && b->build_id_len)
        return a->build_id_len == b->build_id_len &&
               !memcmp(a->build_id, b->build_id, a->build_id_len);
    return a->path && b->path && !strcmp(a->path, b->path);
}

static void module_range(const ms_module *m, uint64_t bias, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t j = 0; j < m->nseg; j++) {
        uint64_t a = m->segs[j].vaddr + bias, b = a + m->segs[j].memsz;
        if (a < *lo)
            *lo = a;
        if (b > *hi)
            *hi = b;
    }
    if (*lo > *hi)
        *lo = *hi = bias;
}

static const char *base(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p ? p : "";
}

/* Whether label text `v` holds exactly key=value. */
static int has_label(const char *v, const ms_label *want)
{
    size_t pos = 0;
    ms_label l;
    while (v && ms_labels_next(v, &pos, &l))
        if (l.key_len == want->key_len && l.value_len == want->value_len &&
            !memcmp(l.key, want->key, l.key_len) && !memcmp(l.value, want->value, l.value_len))
            return 1;
    return 0;
}

/* The labels every input carries with the same value (a merged profile of version=2 and
 * version=3 is of neither), in the first input's order, into out (MS_LABELS_MAX bytes).
 * Returns the length. */
static size_t merge_labels(ms_snapshot *const *in, size_t n, char *out)
{
    const char *first = ms_agg_meta(in[0], "labels"), *why;
    size_t pos = 0, len = 0;
    ms_label l;
    out[0] = 0;
    while (first && ms_labels_next(first, &pos, &l)) {
        int all = ms_label_check(l.key, l.key_len + 1 + l.value_len, &why) == 0;
        for (size_t i = 1; i < n && all; i++)
            all = has_label(ms_agg_meta(in[i], "labels"), &l);
        size_t need = l.key_len + 1 + l.value_len + (len ? 1 : 0);
        if (!all || len + need >= MS_LABELS_MAX)
            continue;
        len += (size_t)snprintf(out + len, MS_LABELS_MAX - len, "%s%.*s=%.*s", len ? ";" : "",
                                (int)l.key_len, l.key, (int)l.value_len, l.value);
    }
    return len;
}

static int add_kv(ms_snapshot *s, const char *k, const char *v)
{
    ms_kv *m = realloc(s->meta, (s->nmeta + 1) * sizeof *m);
    if (!m)
        return -1;
    s->meta = m;
    m[s->nmeta].key = strdup(k);
    m[s->nmeta].value = strdup(v ? v : "");
    if (!m[s->nmeta].key || !m[s->nmeta].value) {
        free(m[s->nmeta].key);
        free(m[s->nmeta].value);
        return -1;
    }
    s->nmeta++;
    return 0;
}

/* Function names an importer stored for a pc ("sym.<hex>" keys) follow the pc to its
 * place in the merged address space. Looked up in a table sorted by pc: a lookup of the
 * key per pc took time quadratic in the names (3.75 s for 20000 names in a 1.9 MB file). */
typedef struct symname {
    uint64_t pc;
    size_t seq; /* the first of one pc wins, as in a lookup by key */
    const char *name;
} symname;

typedef struct symtab {
    symname *v;
    size_t n, cap;
} symtab;

static int sym_push(symtab *t, uint64_t pc, const char *name)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        symname *v = realloc(t->v, cap * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n] = (symname){pc, t->n, name};
    t->n++;
    return 0;
}

static int cmp_symname(const void *a, const void *b)
{
    const symname *x = a, *y = b;
    if (x->pc != y->pc)
        return x->pc < y->pc ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts by pc and keeps the first name of each pc. */
static void sym_sort(symtab *t)
{
    if (t->n > 1)
        qsort(t->v, t->n, sizeof *t->v, cmp_symname);
    size_t w = 0;
    for (size_t r = 0; r < t->n; r++)
        if (!w || t->v[w - 1].pc != t->v[r].pc)
            t->v[w++] = t->v[r];
    t->n = w;
}

/* The names of an input: keys that are exactly MS_AGG_SYM_PREFIX and the pc in hex. */
static int input_names(const ms_snapshot *s, symtab *t)
{
    size_t pl = strlen(MS_AGG_SYM_PREFIX);
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < s->nmeta; i++) {
        const char *k = s->meta[i].key;
        if (!k || strncmp(k, MS_AGG_SYM_PREFIX, pl) != 0 || !s->meta[i].value)
            continue;
        char *end, again[40];
        uint64_t pc = strtoull(k + pl, &end, 16);
        snprintf(again, sizeof again, MS_AGG_SYM_PREFIX "%" PRIx64, pc);
        if (!strcmp(again, k) && sym_push(t, pc, s->meta[i].value) != 0)
            return -1;
    }
    sym_sort(t);
    return 0;
}

static const char *sym_find(const symtab *t, uint64_t pc)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->v[mid].pc == pc)
            return t->v[mid].name;
        if (t->v[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Writes the carried names into out's metadata, the first one of each merged pc. */
static int add_names(ms_snapshot *out, symtab *t)
{
    sym_sort(t);
    for (size_t i = 0; i < t->n; i++) {
        char k[40];
        snprintf(k, sizeof k, MS_AGG_SYM_PREFIX "%" PRIx64, t->v[i].pc);
        if (add_kv(out, k, t->v[i].name) != 0)
            return -1;
    }
    return 0;
}

/* Adds every (name, value) of src to the list *dst, summing values of the same name. */
static int sum_named(ms_health_item **dst, size_t *ndst, const ms_health_item *src, size_t nsrc)
{
    for (size_t j = 0; j < nsrc; j++) {
        size_t k;
        for (k = 0; k < *ndst; k++)
            if (!strcmp((*dst)[k].name, src[j].name))
                break;
        if (k == *ndst) {
            ms_health_item *nh = realloc(*dst, (*ndst + 1) * sizeof *nh);
            if (!nh)
                return -1;
            *dst = nh;
            nh[k].name = strdup(src[j].name);
            nh[k].value = 0;
            if (!nh[k].name)
                return -1;
            (*ndst)++;
        }
        if (!strcmp(src[j].name, "heuristics")) /* the leak scan's set: one of each */
            (*dst)[k].value |= src[j].value;
        else
            (*dst)[k].value += src[j].value;
    }
    return 0;
}

/* ---- processes: who each block belongs to ------------------------------------------ */

static const char *const proc_keys[] = {"pid", "hostname", "start_ns", "snapshot_ns", "file"};
#define NPROC_KEYS (sizeof proc_keys / sizeof *proc_keys)
#define PK_PID 0
#define PK_HOST 1
#define PK_START 2

/* The processes of one input: those a merged input lists (process.1 ... process.n, each
 * field as the first entry of its key gives it, like ms_agg_meta), or the input's own
 * process (own, n = 1). Found in two passes over the metadata: a lookup per key would
 * take time cubic in the processes of a merged input (minutes for 2000 in a 110 KB file). */
typedef struct procs {
    size_t n;
    int own;
    const char **v; /* v[(k - 1) * NPROC_KEYS + q]: field q of process k */
} procs;

/* The process number and field of a key "process.<k>.<field>", or 0. */
static size_t proc_key(const char *key, size_t *q)
{
    if (strncmp(key, "process.", 8) != 0 || key[8] < '1' || key[8] > '9')
        return 0;
    char *end;
    unsigned long long k = strtoull(key + 8, &end, 10);
    if (*end != '.' || k > SIZE_MAX / NPROC_KEYS - 1)
        return 0;
    for (*q = 0; *q < NPROC_KEYS; (*q)++)
        if (!strcmp(end + 1, proc_keys[*q]))
            return (size_t)k;
    return 0;
}

static int index_processes(const ms_snapshot *s, procs *p)
{
    size_t npid = 0, q, k;
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < s->nmeta; i++)
        npid += s->meta[i].key && proc_key(s->meta[i].key, &q) && q == PK_PID;
    /* numbered from 1 without a gap, so no number is above the count of pid keys */
    p->v = calloc(npid ? npid * NPROC_KEYS : NPROC_KEYS, sizeof *p->v);
    if (!p->v)
        return -1;
    for (size_t i = 0; i < s->nmeta; i++)
        if (s->meta[i].key && (k = proc_key(s->meta[i].key, &q)) != 0 && k <= npid &&
            !p->v[(k - 1) * NPROC_KEYS + q])
            p->v[(k - 1) * NPROC_KEYS + q] = s->meta[i].value ? s->meta[i].value : "";
    while (p->n < npid && p->v[p->n * NPROC_KEYS + PK_PID])
        p->n++;
    if (p->n == 0) {
        p->own = 1;
        p->n = 1;
        for (q = 0; q < NPROC_KEYS; q++)
            p->v[q] = !strcmp(proc_keys[q], "file") ? s->path : ms_agg_meta(s, proc_keys[q]);
    }
    return 0;
}

/* Writes the fields of an input's process (k from 1) as process `out_k` of out. */
static int add_process(ms_snapshot *out, const procs *p, size_t k, size_t out_k)
{
    for (size_t q = 0; q < NPROC_KEYS; q++) {
        char key[64];
        const char *v = p->v[(k - 1) * NPROC_KEYS + q];
        snprintf(key, sizeof key, "process.%zu.%s", out_k, proc_keys[q]);
        if (v && add_kv(out, key, v) != 0)
            return -1;
    }
    return 0;
}

/* Orders processes by (pid, start time, host); an absent field first. */
static int cmp_field(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) : (a != NULL) - (b != NULL);
}

static int cmp_process(const void *x, const void *y)
{
    const char *const *a = *(const char *const *const *)x, *const *b = *(const char *const *const *)y;
    int c = cmp_field(a[PK_PID], b[PK_PID]);
    if (!c)
        c = cmp_field(a[PK_START], b[PK_START]);
    return c ? c : cmp_field(a[PK_HOST], b[PK_HOST]);
}

/* Processes listed twice (same host, pid and start time): their counters count twice.
 * Each process that another one after it repeats counts once: nproc less the distinct. */
static int repeated_processes(const procs *in, size_t n, size_t nproc, size_t *repeated)
{
    const char *const **all = malloc((nproc ? nproc : 1) * sizeof *all);
    if (!all)
        return -1;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < in[i].n; k++)
            all[m++] = in[i].v + k * NPROC_KEYS;
    qsort(all, m, sizeof *all, cmp_process);
    size_t r = 0;
    for (size_t j = 1; j < m; j++)
        r += cmp_process(&all[j - 1], &all[j]) == 0;
    free(all);
    *repeated = r;
    return 0;
}

/* The merged id of input stack `id` (0 when the input does not list it). Files read
 * back are sorted by id; snapshots built in memory may not be. */
static uint32_t merged_id(const ms_snapshot *s, const uint32_t *ids, int sorted, uint32_t id)
{
    if (sorted) {
        const ms_stack *st = ms_snapshot_stack(s, id);
        return st ? ids[st - s->stacks] : 0;
    }
    for (size_t j = 0; j < s->nstacks; j++)
        if (s->stacks[j].id == id)
            return ids[j];
    return 0;
}

/* ---- leak records: one per (stack, class) ------------------------------------------ */

static int cmp_leak_key(const void *a, const void *b)
{
    const ms_snap_leak_rec *x = a, *y = b;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    if (x->leak_class != y->leak_class)
        return x->leak_class < y->leak_class ? -1 : 1;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes; /* the largest example first */
}

static int cmp_leak_bytes(const void *a, const void *b)
{
    const ms_snap_leak_rec *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Sums records of the same stack and class (keeping the largest one's example), then
 * orders them by bytes. */
static void fold_leaks(ms_snapshot *out)
{
    if (!out->nleaks)
        return;
    qsort(out->leaks, out->nleaks, sizeof *out->leaks, cmp_leak_key);
    size_t w = 0;
    for (size_t r = 0; r < out->nleaks; r++) {
        ms_snap_leak_rec *d = w ? &out->leaks[w - 1] : NULL;
        if (d && d->stack_id == out->leaks[r].stack_id &&
            d->leak_class == out->leaks[r].leak_class) {
            d->blocks += out->leaks[r].blocks;
            d->bytes += out->leaks[r].bytes;
            d->heuristics |= out->leaks[r].heuristics;
            continue;
        }
        out->leaks[w++] = out->leaks[r];
    }
    out->nleaks = w;
    qsort(out->leaks, out->nleaks, sizeof *out->leaks, cmp_leak_bytes);
}

static int cmp_bucket(const void *a, const void *b)
{
    const ms_size_bucket *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The inputs' size histograms summed bucket by bucket. Buckets of equal bounds add up
 * (the agent's power-of-two classes always are); buckets that overlap without being
 * equal cannot be split without knowing the sizes inside, so then none is kept
 * (*kept = 0). -1 on out of memory. */
static int merge_hist(ms_snapshot *out, ms_snapshot *const *in, size_t n, int *kept)
{
    size_t total = 0;
    *kept = 0;
    for (size_t i = 0; i < n; i++)
        total += in[i]->nhist;
    ms_size_bucket *v = malloc((total ? total : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < in[i]->nhist; j++)
            v[k++] = in[i]->hist[j];
    qsort(v, k, sizeof *v, cmp_bucket);
    size_t w = 0;
    for (size_t r = 0; r < k; r++) {
        if (w && v[w - 1].lo == v[r].lo && v[w - 1].hi == v[r].hi) {
            v[w - 1].count = ms_sat_add(v[w - 1].count, v[r].count);
            continue;
        }
        if (w && v[r].lo <= v[w - 1].hi) {
            free(v);
            return 0;
        }
        v[w++] = v[r];
    }
    out->hist = v;
    out->nhist = w;
    *kept = 1;
    return 0;
}

/* merge_process_parts with pr[i], the processes of input i, to fill. */
static int merge_parts(ms_snapshot *out, ms_snapshot *const *in, size_t n, uint32_t *const *ids,
                       procs *pr, ms_merge_info *info)
{
    size_t nblocks = 0, nleaks = 0, nproc = 0;
    for (size_t i = 0; i < n; i++) {
        if (index_processes(in[i], &pr[i]) != 0)
            return -1;
        info->with_blocks += in[i]->has_blocks != 0;
        info->with_leaks += in[i]->has_leaks != 0;
        info->with_peak += in[i]->has_peak != 0;
        info->with_temp += in[i]->has_temp != 0;
        info->with_hist += in[i]->hist != NULL;
        info->with_threads += in[i]->nthreads != 0;
        nblocks += in[i]->nblocks;
        nleaks += in[i]->nleaks;
        nproc += pr[i].n;
    }
    info->processes = nproc;
    info->blocks_kept = info->with_blocks == n && nproc <= UINT16_MAX;
    info->peak_kept = info->with_peak == n;
    /* a count that some inputs lack would be a lower bound passed off as the sum */
    info->temp_kept = info->with_temp == n;
    out->has_temp = info->temp_kept;
    if (info->with_hist == n && merge_hist(out, in, n, &info->hist_kept) != 0)
        return -1;
    if (info->blocks_kept) {
        out->blocks = malloc((nblocks ? nblocks : 1) * sizeof *out->blocks);
        if (!out->blocks)
            return -1;
        out->has_blocks = 1;
    }
    if (info->with_leaks) {
        out->leaks = malloc((nleaks ? nleaks : 1) * sizeof *out->leaks);
        if (!out->leaks)
            return -1;
        out->has_leaks = 1;
    }
    out->has_peak = info->peak_kept;
    uint64_t largest_peak = 0;
    size_t base = 1; /* the merged process number of input i's first process */
    for (size_t i = 0; i < n; i++) {
        const ms_snapshot *s = in[i];
        size_t np = pr[i].n;
        int own = pr[i].own, sorted = 1;
        for (size_t j = 1; j < s->nstacks; j++)
            sorted &= s->stacks[j - 1].id < s->stacks[j].id;
        for (size_t k = 1; k <= np; k++)
            if (add_process(out, &pr[i], k, base + k - 1) != 0)
                return -1;
        for (size_t b = 0; info->blocks_kept && b < s->nblocks; b++) {
            ms_snap_block *d = &out->blocks[out->nblocks++];
            *d = s->blocks[b];
            d->stack_id = merged_id(s, ids[i], sorted, d->stack_id);
            info->unknown_stacks += !d->stack_id;
            size_t k = own ? 1 : d->process; /* 0 in a merged input: no process known */
            d->process = k >= 1 && k <= np ? (uint16_t)(base + k - 1) : 0;
        }
        if (s->has_leaks) {
            ms_snap_leak_summary *ls = &out->leak_summary;
            for (int c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
                ls->blocks[c] += s->leak_summary.blocks[c];
                ls->bytes[c] += s->leak_summary.bytes[c];
            }
            if (s->leak_summary.pause_ns > ls->pause_ns)
                ls->pause_ns = s->leak_summary.pause_ns;
            if (s->leak_summary.scan_ns > ls->scan_ns)
                ls->scan_ns = s->leak_summary.scan_ns;
            ls->flags |= s->leak_summary.flags;
            for (size_t r = 0; r < s->nleaks; r++) {
                ms_snap_leak_rec *d = &out->leaks[out->nleaks++];
                *d = s->leaks[r];
                d->stack_id = merged_id(s, ids[i], sorted, d->stack_id);
                info->unknown_stacks += !d->stack_id;
            }
            if (sum_named(&out->leak_stats, &out->nleak_stats, s->leak_stats, s->nleak_stats))
                return -1;
        }
        if (out->has_peak) {
            out->peak_live_bytes_total += s->peak_live_bytes_total;
            if (s->peak_live_bytes_total >= largest_peak) {
                largest_peak = s->peak_live_bytes_total;
                out->peak_ns = s->peak_ns;
            }
            for (size_t j = 0; j < s->nstacks; j++) {
                ms_stack *d = &out->stacks[ids[i][j] - 1];
                d->peak_live_blocks += s->stacks[j].peak_live_blocks;
                d->peak_live_bytes += s->stacks[j].peak_live_bytes;
            }
        }
        for (size_t j = 0; out->has_temp && j < s->nstacks; j++) {
            ms_stack *d = &out->stacks[ids[i][j] - 1];
            d->temp_blocks = ms_sat_add(d->temp_blocks, s->stacks[j].temp_blocks);
        }
        if (sum_named(&out->health, &out->nhealth, s->health, s->nhealth) != 0 ||
            sum_named(&out->acct, &out->nacct, s->acct, s->nacct) != 0)
            return -1;
        base += np;
    }
    fold_leaks(out);
    if (repeated_processes(pr, n, nproc, &info->repeated) != 0)
        return -1;
    char num[32];
    snprintf(num, sizeof num, "%zu", nproc);
    if (add_kv(out, "processes", num) != 0)
        return -1;
    snprintf(num, sizeof num, "%zu", info->with_leaks);
    if (info->with_leaks && add_kv(out, "leak_scans", num) != 0)
        return -1;
    if (out->has_peak && add_kv(out, "peak", "sum of the per-process peaks") != 0)
        return -1;
    return 0;
}

/* The per-input parts after the stacks are merged: blocks, leaks, peaks, named values.
 * ids[i][j] is the merged id of input i's stack j. */
static int merge_process_parts(ms_snapshot *out, ms_snapshot *const *in, size_t n,
                               uint32_t *const *ids, ms_merge_info *info)
{
    procs *pr = calloc(n, sizeof *pr);
    int rc = pr ? merge_parts(out, in, n, ids, pr, info) : -1;
    for (size_t i = 0; pr && i < n; i++)
        free(pr[i].v);
    free(pr);
    return rc;
}

ms_snapshot *ms_merge(ms_snapshot *const *in, size_t n, const ms_merge_opts *o, char *err,
                      size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "merge needs at least one snapshot");
        return NULL;
    }
    const char *exe0 = ms_agg_meta(in[0], "exe");
    for (size_t i = 1; i < n && !(o && o->allow_different_programs); i++) {
        const char *e = ms_agg_meta(in[i], "exe");
        if (exe0 && e && strcmp(base(exe0), base(e)) != 0) {
            snprintf(err, errlen, "%s: a different program (%s) than %s (%s); "
                     "merge snapshots of one program (--force merges them anyway)",
                     in[i]->path ? in[i]->path : "?", e, in[0]->path ? in[0]->path : "?", exe0);
            return NULL;
        }
    }
    ms_merge_info scratch_info;
    ms_merge_info *info = o && o->info ? o->info : &scratch_info;
    memset(info, 0, sizeof *info);
    ms_snapshot *out = calloc(1, sizeof *out);
    size_t **modmap = calloc(n, sizeof *modmap); /* per input module: output index */
    uint32_t **ids = calloc(n, sizeof *ids);     /* per input stack: merged stack id */
    ms_agg *keys = ms_agg_new();
    symtab names_in = {0}, names_out = {0}; /* function names an importer stored */
    if (!out || !modmap || !ids || !keys)
        goto oom;
    out->version_major = MS_SNAP_VERSION_MAJOR;
    out->version_minor = MS_SNAP_VERSION_MINOR;

    /* modules: united; the first placement wins unless it overlaps one already placed */
    size_t capm = 0;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        modmap[i] = calloc(in[i]->nmodules + 1, sizeof **modmap);
        if (!modmap[i])
            goto oom;
        for (size_t j = 0; j < in[i]->nmodules; j++) {
            const ms_module *m = &in[i]->modules[j];
            size_t k;
            for (k = 0; k < out->nmodules; k++)
                if (same_module(&out->modules[k], m))
                    break;
            if (k == out->nmodules) {
                if (out->nmodules == capm) {
                    capm = capm ? capm * 2 : 16;
                    ms_module *nm = realloc(out->modules, capm * sizeof *nm);
                    if (!nm)
                        goto oom;
                    out->modules = nm;
                }
                ms_module *d = &out->modules[out->nmodules];
                *d = *m;
                d->path = strdup(m->path ? m->path : "");
                d->segs = malloc((m->nseg ? m->nseg : 1) * sizeof *d->segs);
                if (!d->path || !d->segs) {
                    free(d->path);
                    free(d->segs);
                    goto oom;
                }
                memcpy(d->segs, m->segs, m->nseg * sizeof *d->segs);
                out->nmodules++;
                uint64_t lo, hi;
                module_range(d, d->load_bias, &lo, &hi);
                int overlap = 0;
                for (size_t q = 0; q + 1 < out->nmodules; q++) {
                    uint64_t l2, h2;
                    module_range(&out->modules[q], out->modules[q].load_bias, &l2, &h2);
                    if (lo < h2 && l2 < hi)
                        overlap = 1;
                }
                if (overlap) {
                    uint64_t nb = (top + 0xffffffull) & ~0xffffffull;
                    d->load_bias = nb - (lo - d->load_bias);
                    module_range(d, d->load_bias, &lo, &hi);
                }
                if (hi > top)
                    top = hi;
            }
            modmap[i][j] = k;
        }
    }

    /* stacks: key = kind, flags and (module, offset) of every pc */
    size_t caps = 0;
    for (size_t i = 0; i < n; i++) {
        const ms_snapshot *s = in[i];
        ids[i] = calloc(s->nstacks + 1, sizeof **ids);
        free(names_in.v);
        if (!ids[i] || input_names(s, &names_in) != 0)
            goto oom;
        for (size_t j = 0; j < s->nstacks; j++) {
            const ms_stack *st = &s->stacks[j];
            uint64_t *pcs = malloc((st->depth ? st->depth : 1) * sizeof *pcs);
            char *key = malloc((size_t)st->depth * 34 + 16);
            if (!pcs || !key) {
                free(pcs);
                free(key);
                goto oom;
            }
            char *kp = key + sprintf(key, "%u/%u", st->kind, st->flags & MS_STACKF_FIRST_IS_PC);
            for (uint32_t d = 0; d < st->depth; d++) {
                const ms_module *m = ms_agg_module_for_pc(s, st->pcs[d]);
                if (m) {
                    size_t mi = modmap[i][(size_t)(m - s->modules)];
                    uint64_t off = st->pcs[d] - m->load_bias;
                    pcs[d] = out->modules[mi].load_bias + off;
                    const char *name = sym_find(&names_in, st->pcs[d]);
                    if (name && sym_push(&names_out, pcs[d], name) != 0) {
                        free(pcs);
                        free(key);
                        goto oom;
                    }
                    kp += sprintf(kp, ";%zx+%" PRIx64, mi, off);
                } else {
                    pcs[d] = st->pcs[d];
                    kp += sprintf(kp, ";@%" PRIx64, st->pcs[d]);
                }
            }
            size_t before = keys->nnames;
            long idx = ms_agg_intern(keys, key);
            free(key);
            if (idx < 0) {
                free(pcs);
                goto oom;
            }
            ids[i][j] = (uint32_t)idx + 1; /* merged stacks are numbered in interning order */
            if (keys->nnames == before) {
                ms_counters_add(&out->stacks[idx].c, &st->c);
                out->stacks[idx].flags |= st->flags & (MS_STACKF_TRUNCATED | MS_STACKF_UNWIND_FAIL);
                free(pcs);
                continue;
            }
            if (out->nstacks == caps) {
                caps = caps ? caps * 2 : 64;
                ms_stack *ns = realloc(out->stacks, caps * sizeof *ns);
                if (!ns) {
                    free(pcs);
                    goto oom;
                }
                out->stacks = ns;
            }
            ms_stack *d = &out->stacks[out->nstacks];
            memset(d, 0, sizeof *d);
            d->id = (uint32_t)out->nstacks + 1;
            d->kind = st->kind;
            d->flags = st->flags;
            d->depth = st->depth;
            d->pcs = pcs;
            d->c = st->c;
            out->nstacks++;
        }
    }

    if (add_names(out, &names_out) != 0)
        goto oom;

    /* blocks, leaks, peaks, health and accounting values */
    if (merge_process_parts(out, in, n, ids, info) != 0)
        goto oom;

    /* metadata */
    uint64_t last_ns = 0, interval = 0;
    int same_interval = 1, sampled = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = ms_agg_meta(in[i], "snapshot_ns");
        uint64_t t = v ? strtoull(v, NULL, 10) : 0;
        if (t > last_ns)
            last_ns = t;
        v = ms_agg_meta(in[i], "sample_interval");
        uint64_t iv = v ? strtoull(v, NULL, 10) : 0;
        if (i == 0)
            interval = iv;
        else if (iv != interval)
            same_interval = 0;
        sampled |= (in[i]->flags & MS_SNAP_F_SAMPLED) != 0;
    }
    out->flags = sampled ? MS_SNAP_F_SAMPLED : 0;
    char num[32];
    if (exe0 && add_kv(out, "exe", exe0) != 0)
        goto oom;
    snprintf(num, sizeof num, "%" PRIu64, last_ns);
    if (last_ns && add_kv(out, "snapshot_ns", num) != 0)
        goto oom;
    snprintf(num, sizeof num, "%" PRIu64, interval);
    if (same_interval && add_kv(out, "sample_interval", num) != 0)
        goto oom;
    snprintf(num, sizeof num, "%zu", n);
    if (add_kv(out, "reason", "merge") != 0 || add_kv(out, "merged_from", num) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *h = ms_agg_meta(in[i], "hostname");
        if (h && !ms_agg_meta(out, "hostname") && add_kv(out, "hostname", h) != 0)
            goto oom;
    }
    char common[MS_LABELS_MAX];
    if (merge_labels(in, n, common) > 0 && add_kv(out, "labels", common) != 0)
        goto oom;
    out->path = strdup("merged");
    if (!out->path || ms_agg_index_names(out) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        free(modmap[i]);
        free(ids[i]);
    }
    free(modmap);
    free(ids);
    ms_agg_free(keys);
    free(names_in.v);
    free(names_out.v);
    return out;
oom:
    snprintf(err, errlen, "out of memory while merging");
    for (size_t i = 0; i < n; i++) {
        if (modmap)
            free(modmap[i]);
        if (ids)
            free(ids[i]);
    }
    free(modmap);
    free(ids);
    ms_agg_free(keys);
    free(names_in.v);
    free(names_out.v);
    ms_snapshot_free(out);
    return NULL;
}

/* ---- writing ------------------------------------------------------------------------ */

static void named_values(ms_snap_writer *w, const ms_health_item *v, size_t n)
{
    ms_sw_u32(w, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        ms_sw_cstr(w, v[i].name);
        ms_sw_u64(w, v[i].value);
    }
}

static void write_named(ms_snap_writer *w, uint32_t type, const ms_health_item *v, size_t n)
{
    ms_sw_begin(w, type, 0);
    named_values(w, v, n);
    ms_sw_end(w);
}

/* Blocks, peaks, leak summaries and leak records are written as their structs, as the agent
 * does: their layout is the file's (little-endian, no padding). */
_Static_assert(sizeof(ms_snap_block) == 40, "BLKS record");
_Static_assert(sizeof(ms_snap_leak_summary) == 88, "LEAK summary");
_Static_assert(sizeof(ms_snap_leak_rec) == 72, "LEAK record");
_Static_assert(sizeof(ms_snap_peak_rec) == 24, "PEAK record");

static void write_blocks(ms_snap_writer *w, const ms_snapshot *s)
{
    ms_sw_begin(w, MS_CHUNK_BLKS, 0);
    ms_sw_u64(w, s->nblocks);
    for (size_t i = 0; i < s->nblocks; i++) {
        ms_snap_block b = s->blocks[i];
        b.reserved = 0;
        memset(b.reserved2, 0, sizeof b.reserved2);
        ms_sw_bytes(w, &b, sizeof b);
    }
    ms_sw_end(w);
}

static void write_peak(ms_snap_writer *w, const ms_snapshot *s)
{
    uint32_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        n += s->stacks[i].peak_live_blocks || s->stacks[i].peak_live_bytes;
    ms_sw_begin(w, MS_CHUNK_PEAK, 0);
    ms_sw_u64(w, s->peak_live_bytes_total);
    ms_sw_u64(w, s->peak_ns);
    ms_sw_u32(w, n);
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        ms_snap_peak_rec r = {st->id, 0, st->peak_live_blocks, st->peak_live_bytes};
        if (r.live_blocks || r.live_bytes)
            ms_sw_bytes(w, &r, sizeof r);
    }
    ms_sw_end(w);
}

static void write_temp(ms_snap_writer *w, const ms_snapshot *s)
{
    uint32_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++)
        n += s->stacks[i].temp_blocks != 0;
    ms_sw_begin(w, MS_CHUNK_TEMP, 0);
    ms_sw_u32(w, n);
    for (size_t i = 0; i < s->nstacks; i++) {
        if (!s->stacks[i].temp_blocks)
            continue;
        ms_sw_u32(w, s->stacks[i].id);
        ms_sw_u32(w, 0);
        ms_sw_u64(w, s->stacks[i].temp_blocks);
    }
    ms_sw_end(w);
}

static void write_hist(ms_snap_writer *w, const ms_snapshot *s)
{
    ms_sw_begin(w, MS_CHUNK_HIST, 0);
    ms_sw_u32(w, (uint32_t)s->nhist);
    for (size_t i = 0; i < s->nhist; i++) {
        ms_sw_u64(w, s->hist[i].lo);
        ms_sw_u64(w, s->hist[i].hi);
        ms_sw_u64(w, s->hist[i].count);
    }
    ms_sw_end(w);
}

static void write_leaks(ms_snap_writer *w, const ms_snapshot *s)
{
    ms_sw_begin(w, MS_CHUNK_LEAK, 0);
    ms_sw_bytes(w, &s->leak_summary, sizeof s->leak_summary);
    ms_sw_u32(w, (uint32_t)s->nleaks);
    for (size_t i = 0; i < s->nleaks; i++) {
        ms_snap_leak_rec r = s->leaks[i];
        ms_sw_bytes(w, &r, sizeof r);
    }
    named_values(w, s->leak_stats, s->nleak_stats);
    ms_sw_end(w);
}

/* Through the snapshot writer the agent uses, so the format has one encoder, into the
 * output file of every tool (ms_outfile: a new file renamed into place, or written through
 * into a device or FIFO). The writer patches and re-reads what it wrote, so output that
 * cannot seek is first written to a scratch file and then copied. */
int ms_merge_write(const ms_snapshot *s, const char *path, char *err, size_t errlen)
{
    ms_outfile of;
    if (ms_outfile_open(&of, path, err, errlen) != 0)
        return -1;
    FILE *scratch = of.through ? tmpfile() : NULL;
    ms_snap_writer *w = malloc(sizeof *w);
    if (!w || (of.through && !scratch)) {
        snprintf(err, errlen, "%s: %s", path, w ? "cannot create a scratch file" : "out of memory");
        free(w);
        if (scratch)
            fclose(scratch);
        ms_outfile_abort(&of);
        return -1;
    }
    int rc = ms_sw_open_fd(w, scratch ? fileno(scratch) : of.fd, s->flags);
    ms_sw_begin(w, MS_CHUNK_META, 0);
    ms_sw_u32(w, (uint32_t)s->nmeta);
    for (size_t i = 0; i < s->nmeta; i++)
        ms_sw_kv(w, s->meta[i].key, s->meta[i].value);
    ms_sw_end(w);

    ms_sw_begin(w, MS_CHUNK_MODS, 0);
    ms_sw_u32(w, (uint32_t)s->nmodules);
    for (size_t i = 0; i < s->nmodules; i++) {
        const ms_module *m = &s->modules[i];
        static const uint8_t zero[4];
        ms_sw_u64(w, m->load_bias);
        ms_sw_cstr(w, m->path);
        ms_sw_u32(w, m->build_id_len);
        ms_sw_bytes(w, m->build_id, m->build_id_len);
        ms_sw_bytes(w, zero, (4 - m->build_id_len % 4) % 4);
        ms_sw_u32(w, m->nseg);
        for (uint32_t j = 0; j < m->nseg; j++) {
            ms_sw_u64(w, m->segs[j].vaddr);
            ms_sw_u64(w, m->segs[j].memsz);
            ms_sw_u64(w, m->segs[j].offset);
            ms_sw_u32(w, m->segs[j].flags);
            ms_sw_u32(w, 0);
        }
    }
    ms_sw_end(w);

    ms_sw_begin(w, MS_CHUNK_STKS, MS_CHUNKF_REQUIRED);
    ms_sw_u32(w, (uint32_t)s->nstacks);
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        ms_sw_u32(w, st->id);
        ms_sw_u8(w, st->kind);
        ms_sw_u8(w, 0);
        ms_sw_u16(w, st->flags);
        ms_sw_u32(w, st->depth);
        ms_sw_u32(w, 0);
        ms_sw_u64(w, st->c.live_blocks);
        ms_sw_u64(w, st->c.live_bytes);
        ms_sw_u64(w, st->c.alloc_blocks);
        ms_sw_u64(w, st->c.alloc_bytes);
        ms_sw_u64(w, st->c.free_blocks);
        ms_sw_u64(w, st->c.free_bytes);
        for (uint32_t d = 0; d < st->depth; d++)
            ms_sw_u64(w, st->pcs[d]);
    }
    ms_sw_end(w);

    if (s->has_blocks)
        write_blocks(w, s);
    if (s->has_peak)
        write_peak(w, s);
    if (s->has_temp)
        write_temp(w, s);
    if (s->hist)
        write_hist(w, s);
    if (s->has_leaks)
        write_leaks(w, s);
    if (s->nacct)
        write_named(w, MS_CHUNK_ACCT, s->acct, s->nacct);
    if (s->nhealth)
        write_named(w, MS_CHUNK_HLTH, s->health, s->nhealth);
    if (rc == 0)
        rc = ms_sw_finish(w);
    free(w);
    if (rc == 0 && scratch) {
        char buf[65536];
        size_t n;
        rewind(scratch);
        while ((n = fread(buf, 1, sizeof buf, scratch)) > 0)
            if (fwrite(buf, 1, n, of.fp) != n)
                break;
        if (ferror(scratch) || ferror(of.fp))
            rc = -(errno ? errno : EIO);
    }
    if (scratch)
        fclose(scratch);
    if (rc != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
        ms_outfile_abort(&of);
        return -1;
    }
    return ms_outfile_commit(&of, err, errlen);
}
