/* The snapshot reader: turns an untrusted .msnap file into the in-memory model of
 * snapshot.h. Every length and count is checked against the bytes that remain; it must
 * never crash, read out of bounds or trust a size before checking it. Tools only. */
#include "core/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/fileio.h"

/* ---------------------------------------------------------------------------
 * A bounded cursor over one chunk payload. Reads fail (and latch an error) instead
 * of going past the end.
 * ------------------------------------------------------------------------- */
typedef struct cursor {
    const uint8_t *p;
    size_t len;
    size_t pos;
    int bad;
} cursor;

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int cur_need(cursor *c, size_t n)
{
    if (c->bad || c->len - c->pos < n) {
        c->bad = 1;
        return 0;
    }
    return 1;
}

static uint64_t cur_u(cursor *c, int n)
{
    if (!cur_need(c, (size_t)n))
        return 0;
    uint64_t v = get_le(c->p + c->pos, n);
    c->pos += (size_t)n;
    return v;
}
#define cur_u8(c) ((uint8_t)cur_u((c), 1))
#define cur_u16(c) ((uint16_t)cur_u((c), 2))
#define cur_u32(c) ((uint32_t)cur_u((c), 4))
#define cur_u64(c) cur_u((c), 8)

static const uint8_t *cur_bytes(cursor *c, size_t n)
{
    if (!cur_need(c, n))
        return NULL;
    const uint8_t *r = c->p + c->pos;
    c->pos += n;
    return r;
}

static size_t cur_left(const cursor *c)
{
    return c->bad ? 0 : c->len - c->pos;
}

/* A count of records each at least `min_size` bytes long must fit in what is left. */
static int cur_count_fits(const cursor *c, uint64_t n, size_t min_size)
{
    return min_size == 0 || n <= cur_left(c) / min_size;
}

/* ---------------------------------------------------------------------------
 * Parser state and error reporting.
 * ------------------------------------------------------------------------- */
typedef struct parser {
    const char *name;
    char *err;
    size_t errlen;
    ms_snapshot *s;
    size_t chunk_off; /* file offset of the chunk header being parsed */
    uint32_t chunk_type;
    /* PEAK records are applied once every stack is known. */
    ms_snap_peak_rec *peaks;
    size_t npeaks;
    ms_snap_peak_rec *temps; /* TEMP records (live_blocks holds the count) */
    size_t ntemps;
} parser;

static void fourcc_str(uint32_t t, char out[16])
{
    char c[4];
    int printable = 1;
    for (int i = 0; i < 4; i++) {
        c[i] = (char)((t >> (8 * i)) & 0xff);
        if (c[i] < 0x20 || c[i] > 0x7e)
            printable = 0;
    }
    if (printable)
        snprintf(out, 16, "'%c%c%c%c'", c[0], c[1], c[2], c[3]);
    else
        snprintf(out, 16, "0x%08x", t);
}

__attribute__((format(printf, 2, 3))) static int fail(parser *ps, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (ps->chunk_type) {
        char t[16];
        fourcc_str(ps->chunk_type, t);
        snprintf(ps->err, ps->errlen, "%s: offset %zu: chunk %s: %s", ps->name, ps->chunk_off, t,
                 why);
    } else {
        snprintf(ps->err, ps->errlen, "%s: %s", ps->name, why);
    }
    return -1;
}

static int fail_short(parser *ps)
{
    return fail(ps, "payload too short for its contents (corrupt snapshot)");
}

static int fail_oom(parser *ps)
{
    return fail(ps, "out of memory");
}

/* Copies a length-prefixed string; embedded NUL bytes (cmdline joins arguments with
 * them) become spaces so that the result is a plain C string. */
static char *cur_str(cursor *c)
{
    uint32_t n = cur_u32(c);
    const uint8_t *b = cur_bytes(c, n);
    if (!b)
        return NULL;
    while (n > 0 && b[n - 1] == 0)
        n--;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        s[i] = b[i] ? (char)b[i] : ' ';
    s[n] = 0;
    return s;
}

/* Grows *arr (of *n elements of size sz) by add elements; returns the first new one. */
static void *grow(void *arrp, size_t *n, size_t add, size_t sz)
{
    void **arr = arrp;
    if (add > (SIZE_MAX / sz) - *n)
        return NULL;
    size_t bytes = (*n + add) * sz;
    void *na = realloc(*arr, bytes > 0 ? bytes : 1);
    if (!na)
        return NULL;
    *arr = na;
    void *first = (char *)na + *n * sz;
    memset(first, 0, add * sz);
    *n += add;
    return first;
}

/* ---------------------------------------------------------------------------
 * One function per chunk type.
 * ------------------------------------------------------------------------- */
static int parse_kv_list(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 8))
        return fail(ps, "entry count %u exceeds the payload", n);
    for (uint32_t i = 0; i < n; i++) {
        char *k = cur_str(c);
        char *v = k ? cur_str(c) : NULL;
        if (!k || !v) {
            free(k);
            free(v);
            return c->bad ? fail_short(ps) : fail_oom(ps);
        }
        ms_kv *kv = grow(&s->meta, &s->nmeta, 1, sizeof *kv);
        if (!kv) {
            free(k);
            free(v);
            return fail_oom(ps);
        }
        kv->key = k;
        kv->value = v;
    }
    return 0;
}

static int parse_named_values(parser *ps, cursor *c, ms_health_item **arr, size_t *narr)
{
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 12))
        return fail(ps, "entry count %u exceeds the payload", n);
    for (uint32_t i = 0; i < n; i++) {
        char *name = cur_str(c);
        if (!name)
            return c->bad ? fail_short(ps) : fail_oom(ps);
        uint64_t v = cur_u64(c);
        if (c->bad) {
            free(name);
            return fail_short(ps);
        }
        ms_health_item *it = grow(arr, narr, 1, sizeof *it);
        if (!it) {
            free(name);
            return fail_oom(ps);
        }
        it->name = name;
        it->value = v;
    }
    return 0;
}

static int parse_mods(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 20))
        return fail(ps, "module count %u exceeds the payload", n);
    for (uint32_t i = 0; i < n; i++) {
        ms_module *m = grow(&s->modules, &s->nmodules, 1, sizeof *m);
        if (!m)
            return fail_oom(ps);
        m->load_bias = cur_u64(c);
        m->path = cur_str(c);
        if (!m->path)
            return c->bad ? fail_short(ps) : fail_oom(ps);
        uint32_t bl = cur_u32(c);
        if (c->bad)
            return fail_short(ps);
        if (bl > sizeof m->build_id)
            return fail(ps, "module %u: build-id length %u is larger than %zu", i, bl,
                        sizeof m->build_id);
        const uint8_t *bid = cur_bytes(c, (bl + 3u) & ~3u);
        if (!bid)
            return fail_short(ps);
        memcpy(m->build_id, bid, bl);
        m->build_id_len = bl;
        uint32_t nseg = cur_u32(c);
        if (c->bad || !cur_count_fits(c, nseg, 32))
            return fail(ps, "module %u: segment count %u exceeds the payload", i, nseg);
        m->segs = calloc(nseg ? nseg : 1, sizeof *m->segs);
        if (!m->segs)
            return fail_oom(ps);
        m->nseg = nseg;
        for (uint32_t j = 0; j < nseg; j++) {
            ms_snap_segment *g = &m->segs[j];
            g->vaddr = cur_u64(c);
            g->memsz = cur_u64(c);
            g->offset = cur_u64(c);
            g->flags = cur_u32(c);
            g->reserved = cur_u32(c);
        }
        if (c->bad)
            return fail_short(ps);
    }
    return 0;
}

static void read_counters(cursor *c, ms_snap_counters *k)
{
    k->live_blocks = cur_u64(c);
    k->live_bytes = cur_u64(c);
    k->alloc_blocks = cur_u64(c);
    k->alloc_bytes = cur_u64(c);
    k->free_blocks = cur_u64(c);
    k->free_bytes = cur_u64(c);
}

/* st->depth pcs (the count already checked against the payload). */
static int read_pcs(parser *ps, cursor *c, ms_stack *st)
{
    st->pcs = malloc(st->depth ? (size_t)st->depth * 8 : 1);
    if (!st->pcs)
        return fail_oom(ps);
    for (uint32_t j = 0; j < st->depth; j++)
        st->pcs[j] = cur_u64(c);
    return 0;
}

static int parse_stks(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 64))
        return fail(ps, "stack count %u exceeds the payload", n);
    for (uint32_t i = 0; i < n; i++) {
        ms_stack *st = grow(&s->stacks, &s->nstacks, 1, sizeof *st);
        if (!st)
            return fail_oom(ps);
        st->id = cur_u32(c);
        st->kind = cur_u8(c);
        (void)cur_u8(c);
        st->flags = cur_u16(c);
        st->depth = cur_u32(c);
        (void)cur_u32(c);
        read_counters(c, &st->c);
        if (c->bad)
            return fail_short(ps);
        if (st->kind >= MS_KIND_COUNT)
            return fail(ps, "stack %u: unknown allocation kind %u", st->id, st->kind);
        if (!cur_count_fits(c, st->depth, 8))
            return fail(ps, "stack %u: depth %u exceeds the payload", st->id, st->depth);
        if (read_pcs(ps, c, st) != 0)
            return -1;
    }
    return 0;
}

static int parse_peak(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->has_peak)
        return fail(ps, "second PEAK chunk");
    s->peak_live_bytes_total = cur_u64(c);
    s->peak_ns = cur_u64(c);
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 24))
        return fail(ps, "peak record count %u exceeds the payload", n);
    ps->peaks = calloc(n ? n : 1, sizeof *ps->peaks);
    if (!ps->peaks)
        return fail_oom(ps);
    ps->npeaks = n;
    for (uint32_t i = 0; i < n; i++) {
        ms_snap_peak_rec *r = &ps->peaks[i];
        r->stack_id = cur_u32(c);
        r->reserved = cur_u32(c);
        r->live_blocks = cur_u64(c);
        r->live_bytes = cur_u64(c);
    }
    s->has_peak = 1;
    return c->bad ? fail_short(ps) : 0;
}

static int parse_temp(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->has_temp)
        return fail(ps, "second TEMP chunk");
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 16))
        return fail(ps, "temporary-allocation record count %u exceeds the payload", n);
    ps->temps = calloc(n ? n : 1, sizeof *ps->temps);
    if (!ps->temps)
        return fail_oom(ps);
    ps->ntemps = n;
    for (uint32_t i = 0; i < n; i++) {
        ms_snap_peak_rec *r = &ps->temps[i];
        r->stack_id = cur_u32(c);
        r->reserved = cur_u32(c);
        r->live_blocks = cur_u64(c);
    }
    s->has_temp = 1;
    return c->bad ? fail_short(ps) : 0;
}

static int parse_hist(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->hist)
        return fail(ps, "second HIST chunk");
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 24))
        return fail(ps, "histogram bucket count %u exceeds the payload", n);
    s->hist = calloc(n ? n : 1, sizeof *s->hist);
    if (!s->hist)
        return fail_oom(ps);
    s->nhist = n;
    for (uint32_t i = 0; i < n; i++) {
        ms_size_bucket *b = &s->hist[i];
        b->lo = cur_u64(c);
        b->hi = cur_u64(c);
        b->count = cur_u64(c);
        if (!c->bad && (b->lo > b->hi || (i && b->lo <= s->hist[i - 1].hi)))
            return fail(ps, "histogram bucket %u (%llu..%llu) out of order", i,
                        (unsigned long long)b->lo, (unsigned long long)b->hi);
    }
    return c->bad ? fail_short(ps) : 0;
}

static int parse_blks(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    uint64_t n = cur_u64(c);
    if (c->bad || !cur_count_fits(c, n, 40))
        return fail(ps, "block count %llu exceeds the payload", (unsigned long long)n);
    ms_snap_block *b = grow(&s->blocks, &s->nblocks, (size_t)n, sizeof *b);
    if (!b && n)
        return fail_oom(ps);
    for (uint64_t i = 0; i < n; i++) {
        b[i].address = cur_u64(c);
        b[i].size = cur_u64(c);
        b[i].time_ns = cur_u64(c);
        b[i].stack_id = cur_u32(c);
        b[i].tid = cur_u32(c);
        b[i].kind = cur_u8(c);
        (void)cur_u8(c);
        b[i].process = cur_u16(c);
        (void)cur_bytes(c, 4);
        if (!c->bad && b[i].kind >= MS_KIND_COUNT)
            return fail(ps, "block %llu: unknown allocation kind %u", (unsigned long long)i,
                        b[i].kind);
    }
    s->has_blocks = 1;
    return c->bad ? fail_short(ps) : 0;
}

static int parse_guard_stack(parser *ps, cursor *c, ms_stack *st, const char *what)
{
    st->kind = MS_KIND_HEAP;
    st->depth = cur_u32(c);
    st->flags = (uint16_t)cur_u32(c);
    if (c->bad)
        return fail_short(ps);
    if (!cur_count_fits(c, st->depth, 8))
        return fail(ps, "guard error: %s stack depth %u exceeds the payload", what, st->depth);
    return read_pcs(ps, c, st);
}

static int parse_gard(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->guard)
        return fail(ps, "second GARD chunk");
    ms_guard_error *e = s->guard = calloc(1, sizeof *e);
    if (!e)
        return fail_oom(ps);
    ms_snap_guard *g = &e->g;
    g->kind = cur_u32(c);
    g->access_tid = cur_u32(c);
    g->alloc_tid = cur_u32(c);
    g->free_tid = cur_u32(c);
    g->address = cur_u64(c);
    g->block_address = cur_u64(c);
    g->block_size = cur_u64(c);
    g->slot_address = cur_u64(c);
    g->slot_size = cur_u64(c);
    g->alloc_stack_id = cur_u32(c);
    g->free_stack_id = cur_u32(c);
    if (c->bad)
        return fail_short(ps);
    /* A kind this reader does not know: from a newer minor version, the error is kept
     * (its addresses and stacks mean the same; the reports say the kind is unknown to
     * this memsight); in an older or equal one it means a damaged record. Kinds 6 and 7
     * (1.4) are read also from the 1.3 files written before the version said so. */
    if (g->kind >= MS_GUARD_KIND_COUNT && s->version_minor <= MS_SNAP_VERSION_MINOR)
        return fail(ps, "guard error: unknown kind %u in a format %u.%u file (corrupt "
                        "snapshot)",
                    g->kind, s->version_major, s->version_minor);
    if (parse_guard_stack(ps, c, &e->alloc, "allocation") != 0 ||
        parse_guard_stack(ps, c, &e->freed, "free") != 0 ||
        parse_guard_stack(ps, c, &e->access, "access") != 0)
        return -1;
    return 0;
}

static int parse_thrd(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 28))
        return fail(ps, "thread count %u exceeds the payload", n);
    for (uint32_t i = 0; i < n; i++) {
        ms_thread *t = grow(&s->threads, &s->nthreads, 1, sizeof *t);
        if (!t)
            return fail_oom(ps);
        t->tid = cur_u32(c);
        t->flags = cur_u32(c);
        t->stack_lo = cur_u64(c);
        t->stack_hi = cur_u64(c);
        t->name = cur_str(c);
        if (!t->name)
            return c->bad ? fail_short(ps) : fail_oom(ps);
    }
    return 0;
}

static int parse_thrl(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->has_thread_life)
        return fail(ps, "second THRL chunk");
    s->has_thread_life = 1;
    int rc = parse_named_values(ps, c, &s->thread_counters, &s->nthread_counters);
    if (rc)
        return rc;
    uint32_t rec_size = cur_u32(c), n = cur_u32(c);
    if (c->bad)
        return fail_short(ps);
    if (rec_size < sizeof(ms_snap_thread_life) || rec_size > 4096)
        return fail(ps, "thread record size %u (at least %zu)", rec_size,
                    sizeof(ms_snap_thread_life));
    if (!cur_count_fits(c, n, (size_t)rec_size + 4))
        return fail(ps, "thread record count %u exceeds the payload", n);
    s->thread_lives = calloc(n ? n : 1, sizeof *s->thread_lives);
    if (!s->thread_lives)
        return fail_oom(ps);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = cur_bytes(c, rec_size);
        if (!b)
            return fail_short(ps);
        ms_snap_thread_life *r = &s->thread_lives[i].r;
        cursor rc2 = {b, rec_size, 0, 0};
        r->tid = cur_u32(&rc2);
        r->flags = cur_u32(&rc2);
        r->stack_id = cur_u32(&rc2);
        r->creator_tid = cur_u32(&rc2);
        r->create_ns = cur_u64(&rc2);
        r->exit_ns = cur_u64(&rc2);
        r->stack_size = cur_u64(&rc2);
        r->guard_size = cur_u64(&rc2);
        r->stack_lo = cur_u64(&rc2);
        r->stack_hi = cur_u64(&rc2);
        r->start_routine = cur_u64(&rc2);
        s->thread_lives[i].name = cur_str(c);
        if (!s->thread_lives[i].name)
            return c->bad ? fail_short(ps) : fail_oom(ps);
        s->nthread_lives = i + 1;
    }
    return 0;
}

static int parse_leak(parser *ps, cursor *c)
{
    ms_snapshot *s = ps->s;
    if (s->has_leaks)
        return fail(ps, "second LEAK chunk");
    ms_snap_leak_summary *sum = &s->leak_summary;
    for (int i = 0; i < MS_LEAK_CLASS_COUNT; i++)
        sum->blocks[i] = cur_u64(c);
    for (int i = 0; i < MS_LEAK_CLASS_COUNT; i++)
        sum->bytes[i] = cur_u64(c);
    sum->pause_ns = cur_u64(c);
    sum->scan_ns = cur_u64(c);
    sum->flags = cur_u64(c);
    uint32_t n = cur_u32(c);
    if (c->bad || !cur_count_fits(c, n, 72))
        return fail(ps, "leak record count %u exceeds the payload", n);
    s->leaks = calloc(n ? n : 1, sizeof *s->leaks);
    if (!s->leaks)
        return fail_oom(ps);
    s->nleaks = n;
    s->has_leaks = 1;
    for (uint32_t i = 0; i < n; i++) {
        ms_snap_leak_rec *r = &s->leaks[i];
        r->stack_id = cur_u32(c);
        r->leak_class = cur_u8(c);
        r->sample_len = cur_u8(c);
        r->heuristics = cur_u16(c);
        r->blocks = cur_u64(c);
        r->bytes = cur_u64(c);
        r->example_address = cur_u64(c);
        r->example_size = cur_u64(c);
        const uint8_t *smp = cur_bytes(c, sizeof r->sample);
        if (!smp)
            return fail_short(ps);
        memcpy(r->sample, smp, sizeof r->sample);
        if (r->leak_class >= MS_LEAK_CLASS_COUNT)
            return fail(ps, "leak record %u: unknown class %u", i, r->leak_class);
        if (r->sample_len > sizeof r->sample)
            return fail(ps, "leak record %u: sample length %u is larger than %zu", i,
                        r->sample_len, sizeof r->sample);
    }
    /* The scan's statistics follow the records (absent in the oldest files). */
    if (cur_left(c) > 0)
        return parse_named_values(ps, c, &s->leak_stats, &s->nleak_stats);
    return 0;
}

/* ---------------------------------------------------------------------------
 * Whole file.
 * ------------------------------------------------------------------------- */
static int cmp_stack_id(const void *a, const void *b)
{
    const ms_stack *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int finish(parser *ps)
{
    ms_snapshot *s = ps->s;
    if (s->nstacks > 1)
        qsort(s->stacks, s->nstacks, sizeof *s->stacks, cmp_stack_id);
    for (size_t i = 1; i < s->nstacks; i++)
        if (s->stacks[i].id == s->stacks[i - 1].id)
            return fail(ps, "stack id %u appears twice (corrupt snapshot)", s->stacks[i].id);
    for (size_t i = 0; i < ps->npeaks; i++) {
        ms_stack *st = (ms_stack *)ms_snapshot_stack(s, ps->peaks[i].stack_id);
        if (st) {
            st->peak_live_blocks = ps->peaks[i].live_blocks;
            st->peak_live_bytes = ps->peaks[i].live_bytes;
        }
    }
    for (size_t i = 0; i < ps->ntemps; i++) {
        ms_stack *st = (ms_stack *)ms_snapshot_stack(s, ps->temps[i].stack_id);
        if (st)
            st->temp_blocks = ps->temps[i].live_blocks;
    }
    return 0;
}

static int parse_all(parser *ps, const uint8_t *data, size_t len)
{
    ms_snapshot *s = ps->s;
    if (len == 0)
        return fail(ps, "empty file, not a memsight snapshot");
    if (len < 8 || memcmp(data, MS_SNAP_MAGIC, 8) != 0)
        return fail(ps, "not a memsight snapshot (bad magic)");
    if (len < sizeof(ms_snap_header))
        return fail(ps, "truncated inside the file header (%zu bytes)", len);
    s->version_major = (uint16_t)get_le(data + 8, 2);
    s->version_minor = (uint16_t)get_le(data + 10, 2);
    uint32_t header_size = (uint32_t)get_le(data + 12, 4);
    s->flags = get_le(data + 16, 8);
    if (s->version_major > MS_SNAP_VERSION_MAJOR)
        return fail(ps,
                    "snapshot format version %u.%u is newer than this memsight reads "
                    "(%u.x); use a newer memsight to read it",
                    s->version_major, s->version_minor, MS_SNAP_VERSION_MAJOR);
    if (s->version_major == 0)
        return fail(ps, "unknown snapshot format version %u.%u", s->version_major,
                    s->version_minor);
    if (header_size < sizeof(ms_snap_header) || header_size > len || (header_size & 7))
        return fail(ps, "bad header size %u", header_size);

    size_t off = header_size;
    uint32_t nchunks = 0;
    int seen_end = 0;
    while (off < len) {
        ps->chunk_off = off;
        ps->chunk_type = 0;
        if (len - off < sizeof(ms_chunk_header))
            return fail(ps, "offset %zu: truncated inside a chunk header (file ends after %zu "
                            "bytes)",
                        off, len);
        const uint8_t *h = data + off;
        uint32_t type = (uint32_t)get_le(h, 4);
        uint32_t flags = (uint32_t)get_le(h + 4, 4);
        uint64_t clen = get_le(h + 8, 8);
        uint32_t crc = (uint32_t)get_le(h + 16, 4);
        ps->chunk_type = type;
        size_t avail = len - off - sizeof(ms_chunk_header);
        if (clen > avail)
            return fail(ps, "payload of %llu bytes runs past the end of the file (%zu left): "
                            "the snapshot is truncated",
                        (unsigned long long)clen, avail);
        const uint8_t *payload = h + sizeof(ms_chunk_header);
        uint64_t padded = (clen + 7) & ~(uint64_t)7;
        if (padded > avail)
            padded = avail; /* the last chunk's padding may be cut; END checks the rest */
        uLong want = crc32(0L, Z_NULL, 0);
        /* zlib's crc32 takes a uInt length: feed large payloads in pieces. */
        for (uint64_t done = 0; done < clen;) {
            uint64_t piece = clen - done > (1u << 30) ? (1u << 30) : clen - done;
            want = crc32(want, payload + done, (uInt)piece);
            done += piece;
        }
        if ((uint32_t)want != crc)
            return fail(ps, "checksum mismatch (stored %08x, computed %08x): the snapshot is "
                            "corrupted",
                        crc, (uint32_t)want);
        cursor c = {payload, (size_t)clen, 0, 0};
        int rc = 0;
        switch (type) {
        case MS_CHUNK_META: rc = parse_kv_list(ps, &c); break;
        case MS_CHUNK_MODS: rc = parse_mods(ps, &c); break;
        case MS_CHUNK_STKS: rc = parse_stks(ps, &c); break;
        case MS_CHUNK_PEAK: rc = parse_peak(ps, &c); break;
        case MS_CHUNK_TEMP: rc = parse_temp(ps, &c); break;
        case MS_CHUNK_HIST: rc = parse_hist(ps, &c); break;
        case MS_CHUNK_BLKS: rc = parse_blks(ps, &c); break;
        case MS_CHUNK_THRD: rc = parse_thrd(ps, &c); break;
        case MS_CHUNK_THRL: rc = parse_thrl(ps, &c); break;
        case MS_CHUNK_HLTH: rc = parse_named_values(ps, &c, &s->health, &s->nhealth); break;
        case MS_CHUNK_LEAK: rc = parse_leak(ps, &c); break;
        case MS_CHUNK_ACCT: rc = parse_named_values(ps, &c, &s->acct, &s->nacct); break;
        case MS_CHUNK_GARD: rc = parse_gard(ps, &c); break;
        case MS_CHUNK_END: {
            uint32_t before = cur_u32(&c);
            if (c.bad)
                return fail_short(ps);
            if (before != nchunks)
                return fail(ps, "END says %u chunks precede it, found %u (corrupt snapshot)",
                            before, nchunks);
            seen_end = 1;
            break;
        }
        default:
            if (flags & MS_CHUNKF_REQUIRED)
                return fail(ps, "required chunk type unknown to this memsight (format %u.%u, "
                                "this reader knows %u.%u); use a newer memsight",
                            s->version_major, s->version_minor, MS_SNAP_VERSION_MAJOR,
                            MS_SNAP_VERSION_MINOR);
            /* Only a newer minor version may carry chunk types this reader does not
             * know; in an older or equal one an unknown type means a damaged header. */
            if (s->version_minor <= MS_SNAP_VERSION_MINOR)
                return fail(ps, "unknown chunk type in a format %u.%u file (corrupt snapshot)",
                            s->version_major, s->version_minor);
            s->unknown_chunks++;
            break;
        }
        if (rc)
            return rc;
        off += sizeof(ms_chunk_header) + (size_t)padded;
        if (seen_end) {
            ps->chunk_type = 0;
            if (off != len)
                return fail(ps, "offset %zu: %zu bytes of unexpected data after the END chunk",
                            off, len - off);
            break;
        }
        nchunks++;
    }
    ps->chunk_type = 0;
    if (!seen_end)
        return fail(ps, "no END chunk: the snapshot is truncated (%zu bytes, %u whole chunks)",
                    len, nchunks);
    return finish(ps);
}

ms_snapshot *ms_snapshot_parse(const uint8_t *data, size_t len, const char *name, char *err,
                               size_t errlen)
{
    parser ps = {0};
    ps.name = name ? name : "(memory)";
    ps.err = err;
    ps.errlen = errlen;
    ps.s = calloc(1, sizeof *ps.s);
    if (!ps.s) {
        snprintf(err, errlen, "%s: out of memory", ps.name);
        return NULL;
    }
    ps.s->path = strdup(ps.name);
    int rc = ps.s->path ? parse_all(&ps, data, len) : fail_oom(&ps);
    free(ps.peaks);
    free(ps.temps);
    if (rc) {
        ms_snapshot_free(ps.s);
        return NULL;
    }
    return ps.s;
}

static ms_snapshot *read_fd(int fd, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a snapshot", path);
        close(fd);
        return NULL;
    }
    ms_snapshot *s = NULL;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        size_t len = (size_t)st.st_size;
        void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED) {
            snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
            return NULL;
        }
        s = ms_snapshot_parse(map, len, path, err, errlen);
        munmap(map, len);
        return s;
    }
    /* Pipes, /dev/stdin and empty files: read them whole. */
    size_t len = 0;
    char *buf = ms_read_fd(fd, path, &len, err, errlen);
    if (!buf)
        return NULL;
    s = ms_snapshot_parse((const uint8_t *)buf, len, path, err, errlen);
    free(buf);
    return s;
}

ms_snapshot *ms_snapshot_read(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    return read_fd(fd, path, err, errlen);
}

ms_snapshot *ms_snapshot_read_awaited(const char *path, uid_t owner, char *err, size_t errlen)
{
    int fd = ms_open_awaited(path, owner, err, errlen);
    return fd < 0 ? NULL : read_fd(fd, path, err, errlen);
}

static void free_named(ms_health_item *arr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(arr[i].name);
    free(arr);
}

void ms_snapshot_free(ms_snapshot *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->hist);
    if (s->guard) {
        free(s->guard->alloc.pcs);
        free(s->guard->freed.pcs);
        free(s->guard->access.pcs);
        free(s->guard);
    }
    for (size_t i = 0; i < s->nmeta; i++) {
        free(s->meta[i].key);
        free(s->meta[i].value);
    }
    free(s->meta);
    for (size_t i = 0; i < s->nmodules; i++) {
        free(s->modules[i].path);
        free(s->modules[i].segs);
    }
    free(s->modules);
    for (size_t i = 0; i < s->nstacks; i++)
        free(s->stacks[i].pcs);
    free(s->stacks);
    free(s->blocks);
    for (size_t i = 0; i < s->nthreads; i++)
        free(s->threads[i].name);
    free(s->threads);
    free_named(s->health, s->nhealth);
    free(s->leaks);
    free_named(s->leak_stats, s->nleak_stats);
    free_named(s->acct, s->nacct);
    free_named(s->thread_counters, s->nthread_counters);
    for (size_t i = 0; i < s->nthread_lives; i++)
        free(s->thread_lives[i].name);
    free(s->thread_lives);
    free(s);
}

/* ---------------------------------------------------------------------------
 * Lookups.
 * ------------------------------------------------------------------------- */
const char *ms_snapshot_meta(const ms_snapshot *s, const char *key)
{
    for (size_t i = s->nmeta; i-- > 0;)
        if (!strcmp(s->meta[i].key, key))
            return s->meta[i].value;
    return NULL;
}

const ms_stack *ms_snapshot_stack(const ms_snapshot *s, uint32_t id)
{
    size_t lo = 0, hi = s->nstacks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->stacks[mid].id == id)
            return &s->stacks[mid];
        if (s->stacks[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const ms_module *ms_snapshot_module_for_pc(const ms_snapshot *s, uint64_t pc)
{
    for (size_t i = 0; i < s->nmodules; i++) {
        const ms_module *m = &s->modules[i];
        for (uint32_t j = 0; j < m->nseg; j++) {
            uint64_t lo = m->load_bias + m->segs[j].vaddr;
            if (pc >= lo && pc - lo < m->segs[j].memsz)
                return m;
        }
    }
    return NULL;
}

static int named_value(const ms_health_item *arr, size_t n, const char *name, uint64_t *value)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(arr[i].name, name)) {
            if (value)
                *value = arr[i].value;
            return 0;
        }
    return -1;
}

int ms_snapshot_health(const ms_snapshot *s, const char *name, uint64_t *value)
{
    return named_value(s->health, s->nhealth, name, value);
}

int ms_snapshot_thread_counter(const ms_snapshot *s, const char *name, uint64_t *value)
{
    return named_value(s->thread_counters, s->nthread_counters, name, value);
}
