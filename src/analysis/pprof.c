/* pprof export: a gzip'd profile.proto (github.com/google/pprof/proto/profile.proto)
 * encoded by hand, readable by `go tool pprof` and the profiling backends that ingest
 * pprof. Tools only; writes only to the stream it is given. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analysis/export.h"
#include "analysis/protobuf.h"
#include "analysis/stack_agg.h"
#include "core/labels.h"

/* ---- the profile ------------------------------------------------------------------- */

typedef struct pctab { /* pc -> location id, open addressing */
    uint64_t *pc;
    uint64_t *id;
    size_t cap;
} pctab;

typedef struct prof {
    const ms_snapshot *s;
    ms_symbolizer *sym;
    ms_agg *strings; /* string table: index = string id (0 is "") */
    ms_agg *funcs;   /* "name\x01file" -> function id - 1 */
    pctab locs;
    size_t nlocs;
    ms_pb out;      /* Profile being built */
    ms_pb tmp, tmp2; /* scratch for nested messages */
    uint64_t *mapping_id; /* per module: id of its first mapping (0 = none) */
    uint64_t (*mapranges)[3]; /* lo, hi, id of every mapping */
    size_t nmapranges;
    uint64_t user[MS_LABELS_COUNT_MAX][2]; /* the snapshot's labels: key and value ids */
    size_t nuser;
} prof;

static uint64_t str_id(prof *p, const char *s)
{
    long i = ms_agg_intern(p->strings, s ? s : "");
    if (i < 0) {
        p->out.oom = 1;
        return 0;
    }
    return (uint64_t)i;
}

static void value_type(prof *p, unsigned field, const char *type, const char *unit)
{
    ms_pb vt = {0};
    ms_pb_int(&vt, 1, str_id(p, type));
    ms_pb_int(&vt, 2, str_id(p, unit));
    ms_pb_msg(&p->out, field, &vt);
    free(vt.p);
}

static int pctab_grow(pctab *t)
{
    size_t nc = t->cap ? t->cap * 2 : 1024;
    uint64_t *pc = calloc(nc, sizeof *pc), *id = calloc(nc, sizeof *id);
    if (!pc || !id) {
        free(pc);
        free(id);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->id[i])
            continue;
        size_t h = (t->pc[i] * 0x9e3779b97f4a7c15ull >> 17) & (nc - 1);
        while (id[h])
            h = (h + 1) & (nc - 1);
        pc[h] = t->pc[i];
        id[h] = t->id[i];
    }
    free(t->pc);
    free(t->id);
    t->pc = pc;
    t->id = id;
    t->cap = nc;
    return 0;
}

static uint64_t mapping_for(prof *p, uint64_t pc)
{
    for (size_t i = 0; i < p->nmapranges; i++)
        if (pc >= p->mapranges[i][0] && pc < p->mapranges[i][1])
            return p->mapranges[i][2];
    return 0;
}

static uint64_t function_id(prof *p, const char *name, const char *file, uint64_t *nfuncs)
{
    char *key = NULL;
    if (asprintf(&key, "%s\x01%s", name, file ? file : "") < 0) {
        p->out.oom = 1;
        return 0;
    }
    size_t before = p->funcs->nnames;
    long i = ms_agg_intern(p->funcs, key);
    free(key);
    if (i < 0) {
        p->out.oom = 1;
        return 0;
    }
    if (p->funcs->nnames != before) {
        ms_pb fn = {0};
        ms_pb_int(&fn, 1, (uint64_t)i + 1);
        ms_pb_int(&fn, 2, str_id(p, name));
        ms_pb_int(&fn, 3, str_id(p, name));
        ms_pb_int(&fn, 4, str_id(p, file));
        ms_pb_msg(&p->tmp2, 5, &fn);
        free(fn.p);
        (*nfuncs)++;
    }
    return (uint64_t)i + 1;
}

/* Location id of a pc, emitting the Location (and its Functions) the first time. */
static uint64_t location_for(prof *p, uint64_t pc, int is_ret, uint64_t *nfuncs)
{
    if ((p->nlocs + 1) * 2 > p->locs.cap && pctab_grow(&p->locs) != 0) {
        p->out.oom = 1;
        return 0;
    }
    /* The same pc seen as an exact pc and as a return address resolves differently. */
    uint64_t key = pc ^ (is_ret ? 0 : 0x8000000000000000ull);
    size_t h = (key * 0x9e3779b97f4a7c15ull >> 17) & (p->locs.cap - 1);
    while (p->locs.id[h]) {
        if (p->locs.pc[h] == key)
            return p->locs.id[h];
        h = (h + 1) & (p->locs.cap - 1);
    }
    uint64_t id = ++p->nlocs;
    p->locs.pc[h] = key;
    p->locs.id[h] = id;

    ms_frame fr[16];
    int n = ms_agg_resolve(p->s, p->sym, pc, is_ret, fr, 16);
    ms_pb loc = {0}, line = {0};
    ms_pb_int(&loc, 1, id);
    ms_pb_int(&loc, 2, mapping_for(p, pc));
    ms_pb_int(&loc, 3, pc);
    for (int i = 0; i < n; i++) {
        char synth[512];
        const char *name = fr[i].function;
        if (!name) {
            if (fr[i].module) {
                const char *b = strrchr(fr[i].module, '/');
                snprintf(synth, sizeof synth, "%s+0x%" PRIx64, b ? b + 1 : fr[i].module,
                         fr[i].module_offset);
            } else {
                snprintf(synth, sizeof synth, "0x%" PRIx64, pc);
            }
            name = synth;
        }
        ms_pb_int(&line, 1, function_id(p, name, fr[i].file, nfuncs));
        ms_pb_int(&line, 2, fr[i].line > 0 ? (uint64_t)fr[i].line : 0);
        ms_pb_msg(&loc, 4, &line);
    }
    ms_pb_msg(&p->tmp, 4, &loc);
    free(loc.p);
    free(line.p);
    return id;
}

static uint64_t meta_u64(const ms_snapshot *s, const char *key)
{
    const char *v = ms_agg_meta(s, key);
    return v ? strtoull(v, NULL, 10) : 0;
}

static const char *kind_label(uint8_t kind)
{
    return kind == MS_KIND_MMAP ? "mmap" : kind == MS_KIND_STACK ? "thread_stack" : NULL;
}

static void label_str(prof *p, ms_pb *sample, const char *k, const char *v)
{
    ms_pb l = {0};
    ms_pb_int(&l, 1, str_id(p, k));
    ms_pb_int(&l, 2, str_id(p, v));
    ms_pb_msg(sample, 3, &l);
    free(l.p);
}

static void label_num(prof *p, ms_pb *sample, const char *k, uint64_t v)
{
    ms_pb l = {0};
    ms_pb_int(&l, 1, str_id(p, k));
    ms_pb_int(&l, 3, v);
    ms_pb_msg(sample, 3, &l);
    free(l.p);
}

static const char *thread_name(const ms_snapshot *s, uint32_t tid)
{
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].tid == tid)
            return s->threads[i].name;
    return NULL;
}

static void emit_sample(prof *p, const uint64_t *locs, size_t nlocs, const uint64_t v[4], uint8_t kind,
                        int has_tid, uint32_t tid)
{
    ms_pb smp = {0};
    ms_pb_packed(&smp, 1, locs, nlocs);
    ms_pb_packed(&smp, 2, v, 4);
    /* Every sample carries the user labels: backends group and filter by sample labels
     * (Pyroscope, Parca), not by the profile's comments. */
    for (size_t i = 0; i < p->nuser; i++) {
        ms_pb l = {0};
        ms_pb_int(&l, 1, p->user[i][0]);
        ms_pb_int(&l, 2, p->user[i][1]);
        ms_pb_msg(&smp, 3, &l);
        free(l.p);
    }
    const char *kl = kind_label(kind);
    if (kl)
        label_str(p, &smp, "kind", kl);
    if (has_tid) {
        label_num(p, &smp, "thread_id", tid);
        const char *tn = thread_name(p->s, tid);
        if (tn && *tn)
            label_str(p, &smp, "thread", tn);
    }
    ms_pb_msg(&p->out, 2, &smp);
    free(smp.p);
}

typedef struct tidsum {
    uint32_t stack_id, tid;
    uint64_t blocks, bytes;
} tidsum;

static int cmp_blk(const void *a, const void *b)
{
    const ms_snap_block *x = a, *y = b;
    if (x->stack_id != y->stack_id)
        return x->stack_id < y->stack_id ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Live blocks per (stack, thread), when every live block is in the snapshot. */
static tidsum *thread_split(const ms_snapshot *s, size_t *n)
{
    *n = 0;
    if (!s->has_blocks || !s->nblocks || (s->flags & MS_SNAP_F_SAMPLED))
        return NULL;
    ms_snap_block *b = malloc(s->nblocks * sizeof *b);
    tidsum *t = malloc(s->nblocks * sizeof *t);
    if (!b || !t) {
        free(b);
        free(t);
        return NULL;
    }
    memcpy(b, s->blocks, s->nblocks * sizeof *b);
    qsort(b, s->nblocks, sizeof *b, cmp_blk);
    size_t k = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        if (k && t[k - 1].stack_id == b[i].stack_id && t[k - 1].tid == b[i].tid) {
            t[k - 1].blocks++;
            t[k - 1].bytes += b[i].size;
        } else {
            t[k++] = (tidsum){b[i].stack_id, b[i].tid, 1, b[i].size};
        }
    }
    free(b);
    *n = k;
    return t;
}

static void hex(char *out, const uint8_t *d, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = 0;
}

static int build(prof *p)
{
    const ms_snapshot *s = p->s;
    uint64_t nfuncs = 0;
    value_type(p, 1, "inuse_objects", "count");
    value_type(p, 1, "inuse_space", "bytes");
    value_type(p, 1, "alloc_objects", "count");
    value_type(p, 1, "alloc_space", "bytes");

    /* Mappings: one per executable segment of each module (or per segment when no
     * segment says it is executable, as for imported maps without flags). */
    size_t nseg = 0;
    for (size_t i = 0; i < s->nmodules; i++)
        nseg += s->modules[i].nseg;
    p->mapranges = calloc(nseg ? nseg : 1, sizeof *p->mapranges);
    if (!p->mapranges)
        return -1;
    uint64_t mid = 0;
    ms_pb maps = {0};
    for (size_t i = 0; i < s->nmodules; i++) {
        const ms_module *m = &s->modules[i];
        int any_x = 0;
        for (uint32_t j = 0; j < m->nseg; j++)
            any_x |= (m->segs[j].flags & 1) != 0;
        char bid[129];
        hex(bid, m->build_id, m->build_id_len > 64 ? 64 : m->build_id_len);
        for (uint32_t j = 0; j < m->nseg; j++) {
            const ms_snap_segment *g = &m->segs[j];
            if (any_x && !(g->flags & 1))
                continue;
            ms_pb mp = {0};
            uint64_t lo = g->vaddr + m->load_bias;
            ms_pb_int(&mp, 1, ++mid);
            ms_pb_int(&mp, 2, lo);
            ms_pb_int(&mp, 3, lo + g->memsz);
            ms_pb_int(&mp, 4, g->offset);
            ms_pb_int(&mp, 5, str_id(p, m->path));
            ms_pb_int(&mp, 6, str_id(p, bid));
            for (unsigned f = 7; f <= 10; f++)
                ms_pb_int(&mp, f, 1);
            ms_pb_msg(&maps, 3, &mp);
            free(mp.p);
            p->mapranges[p->nmapranges][0] = lo;
            p->mapranges[p->nmapranges][1] = lo + g->memsz;
            p->mapranges[p->nmapranges][2] = mid;
            p->nmapranges++;
        }
    }

    size_t nts = 0;
    tidsum *ts = thread_split(s, &nts);
    size_t ti = 0;
    uint64_t *locs = NULL;
    size_t caplocs = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (st->kind == MS_KIND_RESERVED) /* address space, not memory */
            continue;
        if (st->depth + 1 > caplocs) {
            caplocs = st->depth + 1;
            uint64_t *nl = realloc(locs, caplocs * sizeof *nl);
            if (!nl) {
                free(locs);
                free(ts);
                free(maps.p);
                return -1;
            }
            locs = nl;
        }
        size_t nl = 0;
        for (uint32_t d = 0; d < st->depth; d++)
            locs[nl++] = location_for(p, st->pcs[d], ms_agg_is_return_address(st, d), &nfuncs);
        if (nl == 0) /* pprof needs a location: a pseudo frame */
            locs[nl++] = location_for(p, 0, 0, &nfuncs);
        /* per-thread live values when every block of this stack is present */
        while (ti < nts && ts[ti].stack_id < st->id)
            ti++;
        size_t tj = ti;
        uint64_t bsum = 0, bbytes = 0;
        while (tj < nts && ts[tj].stack_id == st->id) {
            bsum += ts[tj].blocks;
            bbytes += ts[tj].bytes;
            tj++;
        }
        if (tj > ti && bsum == st->c.live_blocks && bbytes == st->c.live_bytes) {
            for (size_t k = ti; k < tj; k++) {
                uint64_t v[4] = {ts[k].blocks, ts[k].bytes, 0, 0};
                emit_sample(p, locs, nl, v, st->kind, 1, ts[k].tid);
            }
            uint64_t v[4] = {0, 0, st->c.alloc_blocks, st->c.alloc_bytes};
            if (v[2] || v[3])
                emit_sample(p, locs, nl, v, st->kind, 0, 0);
        } else {
            uint64_t v[4] = {st->c.live_blocks, st->c.live_bytes, st->c.alloc_blocks,
                             st->c.alloc_bytes};
            emit_sample(p, locs, nl, v, st->kind, 0, 0);
        }
        ti = tj;
    }
    free(locs);
    free(ts);

    ms_pb_put(&p->out, maps.p, maps.n);
    free(maps.p);
    ms_pb_put(&p->out, p->tmp.p, p->tmp.n);   /* locations */
    ms_pb_put(&p->out, p->tmp2.p, p->tmp2.n); /* functions */

    uint64_t snap_ns = meta_u64(s, "snapshot_ns"), start_ns = meta_u64(s, "start_ns");
    ms_pb_int(&p->out, 9, snap_ns);
    if (start_ns && snap_ns > start_ns)
        ms_pb_int(&p->out, 10, snap_ns - start_ns);
    uint64_t interval = meta_u64(s, "sample_interval");
    if (interval && (s->flags & MS_SNAP_F_SAMPLED)) {
        /* counters are already estimates (scaled by the agent): the period says how */
        ms_pb vt = {0};
        ms_pb_int(&vt, 1, str_id(p, "space"));
        ms_pb_int(&vt, 2, str_id(p, "bytes"));
        ms_pb_msg(&p->out, 11, &vt);
        free(vt.p);
        ms_pb_int(&p->out, 12, interval);
    }
    const char *comments[] = {"exe", "pid", "reason", "hostname", "labels", "source"};
    for (size_t i = 0; i < sizeof comments / sizeof comments[0]; i++) {
        const char *v = ms_agg_meta(s, comments[i]);
        if (!v || !*v)
            continue;
        char *c = NULL;
        if (asprintf(&c, "%s=%s", comments[i], v) < 0)
            return -1;
        ms_pb_int(&p->out, 13, str_id(p, c));
        free(c);
    }
    ms_pb_int(&p->out, 14, str_id(p, "inuse_space"));

    /* the string table goes last: every id is known now */
    ms_pb strs = {0};
    for (size_t i = 0; i < p->strings->nnames; i++)
        ms_pb_bytes(&strs, 6, p->strings->names[i], strlen(p->strings->names[i]));
    ms_pb_put(&p->out, strs.p, strs.n);
    free(strs.p);
    (void)nfuncs;
    return p->out.oom || strs.oom ? -1 : 0;
}

int ms_export_pprof(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                    char *err, size_t errlen)
{
    (void)o;
    prof p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.sym = sym;
    p.strings = ms_agg_new();
    p.funcs = ms_agg_new();
    int rc = -1;
    if (!p.strings || !p.funcs || ms_agg_intern(p.strings, "") != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    const char *lv = ms_agg_meta(s, "labels"), *why;
    size_t pos = 0;
    ms_label l;
    while (lv && p.nuser < MS_LABELS_COUNT_MAX && ms_labels_next(lv, &pos, &l)) {
        char k[MS_LABEL_KEY_MAX + 1], v[MS_LABEL_VALUE_MAX + 1];
        if (ms_label_check(l.key, l.key_len + 1 + l.value_len, &why) != 0)
            continue; /* a file from elsewhere: only labels a writer would accept */
        snprintf(k, sizeof k, "%.*s", (int)l.key_len, l.key);
        snprintf(v, sizeof v, "%.*s", (int)l.value_len, l.value);
        p.user[p.nuser][0] = str_id(&p, k);
        p.user[p.nuser][1] = str_id(&p, v);
        p.nuser++;
    }
    if (build(&p) != 0) {
        snprintf(err, errlen, "out of memory while encoding the profile");
        goto done;
    }
    rc = ms_gzip_write(out, p.out.p, p.out.n, err, errlen);
done:
    ms_agg_free(p.strings);
    ms_agg_free(p.funcs);
    free(p.locs.pc);
    free(p.locs.id);
    free(p.out.p);
    free(p.tmp.p);
    free(p.tmp2.p);
    free(p.mapping_id);
    free(p.mapranges);
    return rc;
}
