/* `memsight fleet top|trend|leaks`: the aggregation runs inside ClickHouse (one statement
 * per query); the client then fetches the frames of the stacks it prints and their
 * symbols (memsight_symbols, joined by build id and offset) and writes text or JSON.
 * Tools only. */
#define _GNU_SOURCE
#include "fleet/fleet.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/json_writer.h"
#include "analysis/stack_agg.h"
#include "core/labels.h"

/* ===========================================================================
 * SQL text
 * ========================================================================= */
typedef struct sb {
    char *p;
    size_t n, cap;
    int oom;
} sb;

static void sbf(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sbf(sb *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int k = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (k < 0) {
        b->oom = 1;
        return;
    }
    if (b->n + (size_t)k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + (size_t)k + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            free(s);
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, (size_t)k + 1);
    b->n += (size_t)k;
    free(s);
}

static void sbq(sb *b, const char *s)
{
    if (!b->oom && ms_ch_quote(&b->p, &b->n, &b->cap, s) != 0)
        b->oom = 1;
}

static int builtin(const char *k)
{
    return !strcmp(k, "host") || !strcmp(k, "program") || !strcmp(k, "reason");
}

int ms_fleet_check_key(const char *key, char *err, size_t errlen)
{
    if (builtin(key))
        return 0;
    char probe[MS_LABEL_KEY_MAX + 8];
    const char *why;
    if (strlen(key) > MS_LABEL_KEY_MAX || snprintf(probe, sizeof probe, "%s=x", key) < 0 ||
        ms_label_check(probe, strlen(probe), &why) != 0) {
        snprintf(err, errlen, "'%s' is not a label key, host, program or reason", key);
        return -1;
    }
    return 0;
}

/* The value of key in a row: a column, or the label of that name ('' when absent). */
static void keyexpr(sb *b, const char *key)
{
    if (builtin(key)) {
        sbf(b, "%s", key);
        return;
    }
    sbf(b, "label_values[indexOf(label_keys, ");
    sbq(b, key);
    sbf(b, ")]");
}

static void where(sb *b, const ms_fleet_opts *o)
{
    for (size_t i = 0; i < o->nwhere; i++) {
        const char *eq = strchr(o->where[i], '=');
        char key[MS_LABEL_KEY_MAX + 1];
        snprintf(key, sizeof key, "%.*s", (int)(eq - o->where[i]), o->where[i]);
        sbf(b, " AND ");
        keyexpr(b, key);
        sbf(b, " = ");
        sbq(b, eq + 1);
    }
}

/* g0, g1...: the group keys, as columns of the statement's result */
static void groups(sb *b, const ms_fleet_opts *o, int with_any)
{
    for (size_t i = 0; i < o->ngroup; i++) {
        sbf(b, "%s", with_any ? "any(" : "");
        keyexpr(b, o->group_by[i]);
        sbf(b, "%s AS g%zu, ", with_any ? ")" : "", i);
    }
}

static void glist(sb *b, const ms_fleet_opts *o, const char *tail)
{
    for (size_t i = 0; i < o->ngroup; i++)
        sbf(b, "g%zu, ", i);
    sbf(b, "%s", tail);
}

/* the newest snapshot of every process (program, host, pid) that passes --where */
static void latest(sb *b, const ms_fleet_opts *o, int leak_scan)
{
    sbf(b, "snapshot_id IN (SELECT argMax(snapshot_id, snapshot_ns) FROM memsight_snapshots"
           " WHERE 1%s", leak_scan ? " AND leak_scan = 1" : "");
    where(b, o);
    sbf(b, " GROUP BY program, host, pid)");
}

static void limit_by(sb *b, const ms_fleet_opts *o)
{
    if (o->ngroup) {
        sbf(b, " LIMIT %d BY ", o->top);
        for (size_t i = 0; i < o->ngroup; i++)
            sbf(b, "%sg%zu", i ? ", " : "", i);
    } else {
        sbf(b, " LIMIT %d", o->top);
    }
}

/* Result columns after the groups: stack_hash, then the query's numbers (NNUM). */
#define NNUM 8
static void build_sql(sb *b, const ms_fleet_opts *o)
{
    if (o->query == MS_FLEET_TOP) {
        /* numbers: live bytes, live blocks, alloc bytes, alloc blocks, processes */
        sbf(b, "SELECT ");
        groups(b, o, 0);
        sbf(b, "stack_hash, sum(live_bytes) AS lb, sum(live_blocks), sum(alloc_bytes),"
               " sum(alloc_blocks), uniqExact(program, host, pid), 0, 0, 0, any(program), any(snapshot_id)"
               " FROM memsight_stacks WHERE ");
        latest(b, o, 0);
        where(b, o);
        sbf(b, " GROUP BY ");
        glist(b, o, "stack_hash HAVING lb > 0 ORDER BY ");
        glist(b, o, "lb DESC, stack_hash");
        limit_by(b, o);
    } else if (o->query == MS_FLEET_LEAKS) {
        /* numbers: definitely, indirectly, possibly lost (bytes, blocks), processes */
        sbf(b, "SELECT ");
        groups(b, o, 0);
        sbf(b, "stack_hash, sum(definitely_lost_bytes) AS d, sum(definitely_lost_blocks),"
               " sum(indirectly_lost_bytes) AS i, sum(indirectly_lost_blocks),"
               " sum(possibly_lost_bytes) AS p, sum(possibly_lost_blocks),"
               " uniqExact(program, host, pid), 0, any(program), any(snapshot_id) FROM memsight_stacks WHERE ");
        latest(b, o, 1);
        where(b, o);
        sbf(b, " GROUP BY ");
        glist(b, o, "stack_hash HAVING d + i + p > 0 ORDER BY ");
        glist(b, o, "d + i DESC, p DESC, stack_hash");
        limit_by(b, o);
    } else {
        /* As `memsight trend` scores one series, per process (program, host, pid): its
         * snapshots in time order, each stack's live bytes at each (0 where absent),
         * steadiness = (grew - shrank) / intervals clipped to [0, 1], growth = last -
         * first, share = growth / the process's positive growth, score = steadiness^2 x
         * (0.5 + 0.5 share) for a stack that grew. Then across the fleet: processes in
         * which the stack is a suspect, the sum of its scores (the rank) and growth.
         * numbers: score sum x 1e6, suspects, processes seen, growth, max score x 1e6,
         * mean steadiness x 1e6 */
        sbf(b, "SELECT ");
        glist(b, o, "");
        sbf(b, "stack_hash, toUInt64(sum(score) * 1000000) AS rank, countIf(score > 0) AS suspects,"
               " count(), toUInt64(sumIf(growth, score > 0)), toUInt64(max(score) * 1000000),"
               " toUInt64(avg(steadiness) * 1000000), 0, 0, any(program), any(sid) FROM ("
               " SELECT program, host, pid, ");
        glist(b, o, "");
        sbf(b, "tupleElement(r, 1) AS stack_hash, tupleElement(r, 2) AS steadiness,"
               " tupleElement(r, 3) AS growth, tupleElement(r, 4) AS sid,"
               " if(growth > 0 AND sumpos > 0, steadiness * steadiness * (0.5 + 0.5 * growth / sumpos),"
               " 0) AS score FROM ("
               " SELECT program, host, pid, ");
        glist(b, o, "");
        sbf(b, "sum(greatest(growth, 0)) AS sumpos,"
               " groupArray((stack_hash, steadiness, growth, sid)) AS rows FROM ("
               " SELECT program, host, pid, ");
        glist(b, o, "");
        /* No lambda captures a column: ClickHouse 18.16 drops columns that only a lambda
         * names before it evaluates the lambda. ids and vals are repeated to the length of
         * snaps and passed as arguments instead. */
        sbf(b, "stack_hash, arrayMap((s, i, v) -> toInt64(v[indexOf(i, s)]), snaps,"
               " arrayResize([ids], length(snaps), ids), arrayResize([vals], length(snaps), vals))"
               " AS series,"
               " length(series) AS n, arrayDifference(series) AS d,"
               " greatest(0, (arrayCount(x -> x > 0, d) - arrayCount(x -> x < 0, d)) / (n - 1))"
               " AS steadiness, series[n] - series[1] AS growth, ids[1] AS sid FROM ("
               " SELECT program, host, pid, ");
        groups(b, o, 1);
        sbf(b, "stack_hash, groupArray(snapshot_id) AS ids, groupArray(live_bytes) AS vals"
               " FROM memsight_stacks WHERE 1");
        where(b, o);
        sbf(b, " GROUP BY program, host, pid, stack_hash)"
               " ANY INNER JOIN (SELECT program, host, pid, arrayMap(t -> tupleElement(t, 2),"
               " arraySort(groupArray((snapshot_ns, snapshot_id)))) AS snaps FROM memsight_snapshots"
               " WHERE 1");
        where(b, o);
        sbf(b, " GROUP BY program, host, pid HAVING length(snaps) >= 2) USING (program, host, pid))"
               " GROUP BY program, host, pid, ");
        glist(b, o, "");
        sbf(b, "1) ARRAY JOIN rows AS r) GROUP BY ");
        glist(b, o, "stack_hash HAVING suspects > 0 ORDER BY ");
        glist(b, o, "rank DESC, stack_hash");
        limit_by(b, o);
    }
    sbf(b, " FORMAT TabSeparated");
}

/* ===========================================================================
 * Results, frames and symbols
 * ========================================================================= */
typedef struct rrow {
    char *g[8];
    uint64_t hash;
    uint64_t num[NNUM];
    char *program, *sid; /* a snapshot holding the stack: its frames are read from there */
} rrow;

typedef struct frames {
    uint64_t hash;
    char **bid, **mod;
    uint64_t *off;
    size_t n;
    int first_is_pc;
} frames;

typedef struct sym {
    char *bid;
    uint64_t off;
    unsigned idx;
    char *function, *file;
    unsigned line;
    int inlined;
} sym;

typedef struct res {
    const ms_fleet_opts *o;
    rrow *rows;
    size_t nrows, caprows;
    frames *fr;
    size_t nfr, capfr;
    sym *sy;
    size_t nsy, capsy;
    int oom, bad;
} res;

#define GROW(arr, n, cap)                                                    \
    do {                                                                     \
        if ((n) == (cap)) {                                                  \
            size_t c_ = (cap) ? 2 * (cap) : 64;                              \
            void *p_ = realloc((arr), c_ * sizeof *(arr));                   \
            if (!p_)                                                         \
                return r->oom = 1, -1;                                       \
            (arr) = p_;                                                      \
            (cap) = c_;                                                      \
        }                                                                    \
    } while (0)

static int on_row(void *ctx, char **f, size_t n)
{
    res *r = ctx;
    size_t ng = r->o->ngroup;
    if (n != ng + 1 + NNUM + 2)
        return r->bad = 1, -1;
    GROW(r->rows, r->nrows, r->caprows);
    rrow *x = &r->rows[r->nrows];
    memset(x, 0, sizeof *x);
    for (size_t i = 0; i < ng; i++)
        if (!(x->g[i] = strdup(f[i])))
            return r->oom = 1, -1;
    r->nrows++;
    x->hash = strtoull(f[ng], NULL, 10);
    for (size_t i = 0; i < NNUM; i++)
        x->num[i] = strtoull(f[ng + 1 + i], NULL, 10);
    x->program = strdup(f[ng + 1 + NNUM]);
    x->sid = strdup(f[ng + 2 + NNUM]);
    return x->program && x->sid ? 0 : (r->oom = 1, -1);
}

/* splits "a\x01b\x01c" into a malloc'ed array of strdup'ed parts */
static char **split(const char *s, size_t *n)
{
    size_t k = 1;
    for (const char *p = s; *p; p++)
        k += *p == '\x01';
    char **a = calloc(k, sizeof *a);
    if (!a)
        return NULL;
    *n = 0;
    if (!*s)
        return a;
    const char *p = s;
    for (;;) {
        const char *e = strchr(p, '\x01');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (!(a[(*n)++] = strndup(p, l)))
            return NULL;
        if (!e)
            break;
        p = e + 1;
    }
    return a;
}

static int on_frames(void *ctx, char **f, size_t n)
{
    res *r = ctx;
    if (n != 5)
        return r->bad = 1, -1;
    GROW(r->fr, r->nfr, r->capfr);
    frames *x = &r->fr[r->nfr];
    memset(x, 0, sizeof *x);
    x->hash = strtoull(f[0], NULL, 10);
    x->first_is_pc = f[4][0] == '1';
    size_t nb, no, nm;
    char **offs = split(f[2], &no);
    x->bid = split(f[1], &nb);
    x->mod = split(f[3], &nm);
    if (!offs || !x->bid || !x->mod)
        return r->oom = 1, -1;
    r->nfr++;
    x->n = nb < no ? nb : no;
    x->n = x->n < nm ? x->n : nm;
    x->off = calloc(x->n ? x->n : 1, sizeof *x->off);
    for (size_t i = 0; x->off && i < x->n; i++)
        x->off[i] = strtoull(offs[i], NULL, 10);
    for (size_t i = 0; i < no; i++)
        free(offs[i]);
    free(offs);
    return x->off ? 0 : (r->oom = 1, -1);
}

static int on_sym(void *ctx, char **f, size_t n)
{
    res *r = ctx;
    if (n != 7)
        return r->bad = 1, -1;
    GROW(r->sy, r->nsy, r->capsy);
    sym *x = &r->sy[r->nsy];
    x->bid = strdup(f[0]);
    x->off = strtoull(f[1], NULL, 10);
    x->idx = (unsigned)strtoul(f[2], NULL, 10);
    x->function = strdup(f[3]);
    x->file = strdup(f[4]);
    x->line = (unsigned)strtoul(f[5], NULL, 10);
    x->inlined = f[6][0] == '1';
    r->nsy++;
    return x->bid && x->function && x->file ? 0 : (r->oom = 1, -1);
}

static int cmp_sym(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    int c = strcmp(x->bid, y->bid);
    if (c)
        return c;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static const frames *frames_of(const res *r, uint64_t hash)
{
    for (size_t i = 0; i < r->nfr; i++)
        if (r->fr[i].hash == hash)
            return &r->fr[i];
    return NULL;
}

/* the symbols of (bid, off), innermost first: a run of r->sy */
static const sym *syms_of(const res *r, const char *bid, uint64_t off, size_t *n)
{
    sym key = {.bid = (char *)bid, .off = off, .idx = 0};
    size_t lo = 0, hi = r->nsy;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_sym(&r->sy[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *n = 0;
    while (lo + *n < r->nsy && !strcmp(r->sy[lo + *n].bid, bid) && r->sy[lo + *n].off == off)
        (*n)++;
    return *n ? &r->sy[lo] : NULL;
}

static int fetch_details(ms_ch *ch, res *r, char *err, size_t errlen)
{
    if (!r->nrows)
        return 0;
    sb b = {0};
    sbf(&b, "SELECT stack_hash, arrayStringConcat(any(frame_build_ids), '\\x01'),"
            " arrayStringConcat(arrayMap(x -> toString(x), any(frame_offsets)), '\\x01'),"
            " arrayStringConcat(any(frame_modules), '\\x01'), any(first_is_pc)"
            " FROM memsight_stacks WHERE (program, snapshot_id, stack_hash) IN (");
    /* by the table's whole key: the frames of one row each, not of every snapshot */
    for (size_t i = 0; i < r->nrows; i++) {
        sbf(&b, "%s(", i ? ", " : "");
        sbq(&b, r->rows[i].program);
        sbf(&b, ", ");
        sbq(&b, r->rows[i].sid);
        sbf(&b, ", %" PRIu64 ")", r->rows[i].hash);
    }
    sbf(&b, ") GROUP BY stack_hash FORMAT TabSeparated");
    char *out = NULL;
    int rc = -1;
    if (b.oom)
        goto oom;
    if (ms_ch_exec(ch, b.p, NULL, 0, &out, NULL, err, errlen) != 0)
        goto done;
    if (ms_ch_tsv(out, on_frames, r) != 0)
        goto bad;
    free(out);
    out = NULL;
    /* their symbols, joined here by (build id, offset) */
    b.n = 0;
    sbf(&b, "SELECT build_id, offset, idx, any(function), any(file), any(line), any(inlined)"
            " FROM memsight_symbols WHERE (build_id, offset) IN (");
    size_t k = 0;
    for (size_t i = 0; i < r->nfr; i++)
        for (size_t j = 0; j < r->fr[i].n; j++) {
            sbf(&b, "%s(", k++ ? ", " : "");
            sbq(&b, r->fr[i].bid[j]);
            sbf(&b, ", %" PRIu64 ")", r->fr[i].off[j]);
        }
    sbf(&b, ") GROUP BY build_id, offset, idx FORMAT TabSeparated");
    if (b.oom)
        goto oom;
    if (k) {
        if (ms_ch_exec(ch, b.p, NULL, 0, &out, NULL, err, errlen) != 0)
            goto done;
        if (ms_ch_tsv(out, on_sym, r) != 0)
            goto bad;
        qsort(r->sy, r->nsy, sizeof *r->sy, cmp_sym);
    }
    rc = 0;
    goto done;
bad:
    if (r->oom)
        goto oom;
    snprintf(err, errlen, "ClickHouse answered rows of an unexpected shape");
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    free(out);
    free(b.p);
    return rc;
}

/* ===========================================================================
 * Output
 * ========================================================================= */
static const char *const qname[] = {"top", "trend", "leaks"};

static void frame_out(FILE *out, ms_json *j, const char *bid, uint64_t off, const char *mod,
                      const sym *s)
{
    const char *base = strrchr(mod, '/');
    base = base ? base + 1 : mod;
    if (j) {
        ms_json_object_begin(j);
        ms_json_kv_str(j, "function", s && s->function[0] ? s->function : NULL);
        ms_json_kv_str(j, "file", s && s->file[0] ? s->file : NULL);
        ms_json_kv_u64(j, "line", s ? s->line : 0);
        ms_json_kv_str(j, "module", mod);
        ms_json_kv_u64(j, "module_offset", off);
        ms_json_kv_str(j, "build_id", bid);
        ms_json_key(j, "inlined");
        ms_json_bool(j, s && s->inlined);
        ms_json_object_end(j);
        return;
    }
    if (s && s->function[0]) {
        fprintf(out, "      %s", s->function);
        if (s->file[0])
            fprintf(out, "  %s:%u", s->file, s->line);
        fprintf(out, "%s\n", s->inlined ? " (inlined)" : "");
    } else {
        fprintf(out, "      %s+0x%" PRIx64 "\n", base[0] ? base : "?", off);
    }
}

static void stack_frames(FILE *out, ms_json *j, const res *r, uint64_t hash)
{
    const frames *f = frames_of(r, hash);
    if (j) {
        ms_json_key(j, "frames");
        ms_json_array_begin(j);
    }
    for (size_t i = 0; f && i < f->n; i++) {
        size_t ns;
        const sym *s = syms_of(r, f->bid[i], f->off[i], &ns);
        if (!s)
            frame_out(out, j, f->bid[i], f->off[i], f->mod[i], NULL);
        for (size_t k = 0; k < ns; k++)
            frame_out(out, j, f->bid[i], f->off[i], f->mod[i], &s[k]);
    }
    if (j)
        ms_json_array_end(j);
}

static int same_group(const res *r, size_t a, size_t b)
{
    for (size_t i = 0; i < r->o->ngroup; i++)
        if (strcmp(r->rows[a].g[i], r->rows[b].g[i]))
            return 0;
    return 1;
}

static void write_text(FILE *out, const res *r)
{
    const ms_fleet_opts *o = r->o;
    char b1[32], b2[32], b3[32];
    static const char *const what[] = {
        "stacks by live bytes, summed over the newest snapshot of every process",
        "stacks that grow across each process's snapshots, by summed trend score",
        "leaked bytes by stack, summed over the newest leak scan of every process"};
    fprintf(out, "memsight fleet %s: %s\n", qname[o->query], what[o->query]);
    if (!r->nrows)
        fprintf(out, "\n(nothing)\n");
    for (size_t i = 0, rank = 0; i < r->nrows; i++) {
        const rrow *x = &r->rows[i];
        if (i == 0 || !same_group(r, i, i - 1)) {
            rank = 0;
            fprintf(out, "\n");
            if (o->ngroup) {
                fprintf(out, "==");
                for (size_t g = 0; g < o->ngroup; g++)
                    fprintf(out, " %s=%s", o->group_by[g], x->g[g][0] ? x->g[g] : "(none)");
                fprintf(out, "\n");
            }
        }
        rank++;
        if (o->query == MS_FLEET_TOP)
            fprintf(out, "  #%zu %s live in %" PRIu64 " blocks (%s allocated), %" PRIu64
                         " process%s\n", rank, ms_fmt_bytes(x->num[0], b1, sizeof b1), x->num[1],
                    ms_fmt_bytes(x->num[2], b2, sizeof b2), x->num[4], x->num[4] == 1 ? "" : "es");
        else if (o->query == MS_FLEET_LEAKS)
            fprintf(out, "  #%zu definitely lost %s in %" PRIu64 " blocks, indirectly %s, possibly %s;"
                         " %" PRIu64 " process%s\n", rank, ms_fmt_bytes(x->num[0], b1, sizeof b1),
                    x->num[1], ms_fmt_bytes(x->num[2], b2, sizeof b2),
                    ms_fmt_bytes(x->num[4], b3, sizeof b3), x->num[6], x->num[6] == 1 ? "" : "es");
        else
            fprintf(out, "  #%zu score %.3f: a suspect in %" PRIu64 " of %" PRIu64
                         " processes, grew %s there (max score %.3f, mean steadiness %.2f)\n",
                    rank, x->num[0] / 1e6, x->num[1], x->num[2],
                    ms_fmt_bytes(x->num[3], b1, sizeof b1), x->num[4] / 1e6, x->num[5] / 1e6);
        stack_frames(out, NULL, r, x->hash);
    }
}

static void write_json(FILE *out, const res *r)
{
    const ms_fleet_opts *o = r->o;
    ms_json j;
    ms_json_init(&j, out, 1);
    ms_json_object_begin(&j);
    char fmt[32];
    snprintf(fmt, sizeof fmt, "memsight-fleet-%s", qname[o->query]);
    ms_json_kv_str(&j, "format", fmt);
    ms_json_kv_u64(&j, "version", 1);
    ms_json_key(&j, "group_by");
    ms_json_array_begin(&j);
    for (size_t g = 0; g < o->ngroup; g++)
        ms_json_str(&j, o->group_by[g]);
    ms_json_array_end(&j);
    ms_json_key(&j, "groups");
    ms_json_array_begin(&j);
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *x = &r->rows[i];
        if (i == 0 || !same_group(r, i, i - 1)) {
            if (i) {
                ms_json_array_end(&j);
                ms_json_object_end(&j);
            }
            ms_json_object_begin(&j);
            ms_json_key(&j, "group");
            ms_json_object_begin(&j);
            for (size_t g = 0; g < o->ngroup; g++)
                ms_json_kv_str(&j, o->group_by[g], x->g[g]);
            ms_json_object_end(&j);
            ms_json_key(&j, "stacks");
            ms_json_array_begin(&j);
        }
        ms_json_object_begin(&j);
        char h[24];
        snprintf(h, sizeof h, "%016" PRIx64, x->hash);
        ms_json_kv_str(&j, "stack_hash", h);
        if (o->query == MS_FLEET_TOP) {
            ms_json_kv_u64(&j, "live_bytes", x->num[0]);
            ms_json_kv_u64(&j, "live_blocks", x->num[1]);
            ms_json_kv_u64(&j, "allocated_bytes", x->num[2]);
            ms_json_kv_u64(&j, "allocated_blocks", x->num[3]);
            ms_json_kv_u64(&j, "processes", x->num[4]);
        } else if (o->query == MS_FLEET_LEAKS) {
            static const char *const cls[] = {"definitely_lost", "indirectly_lost", "possibly_lost"};
            for (int c = 0; c < 3; c++) {
                ms_json_key(&j, cls[c]);
                ms_json_object_begin(&j);
                ms_json_kv_u64(&j, "bytes", x->num[2 * c]);
                ms_json_kv_u64(&j, "blocks", x->num[2 * c + 1]);
                ms_json_object_end(&j);
            }
            ms_json_kv_u64(&j, "processes", x->num[6]);
        } else {
            ms_json_key(&j, "score");
            ms_json_double(&j, x->num[0] / 1e6);
            ms_json_kv_u64(&j, "suspect_in", x->num[1]);
            ms_json_kv_u64(&j, "processes", x->num[2]);
            ms_json_kv_u64(&j, "growth", x->num[3]);
            ms_json_key(&j, "max_score");
            ms_json_double(&j, x->num[4] / 1e6);
            ms_json_key(&j, "mean_steadiness");
            ms_json_double(&j, x->num[5] / 1e6);
        }
        stack_frames(out, &j, r, x->hash);
        ms_json_object_end(&j);
    }
    if (r->nrows) {
        ms_json_array_end(&j);
        ms_json_object_end(&j);
    }
    ms_json_array_end(&j);
    ms_json_object_end(&j);
    ms_json_finish(&j);
}

int ms_fleet_query(ms_ch *ch, const ms_fleet_opts *o, FILE *out, char *err, size_t errlen)
{
    for (size_t i = 0; i < o->ngroup; i++)
        if (ms_fleet_check_key(o->group_by[i], err, errlen) != 0)
            return -1;
    for (size_t i = 0; i < o->nwhere; i++) {
        const char *eq = strchr(o->where[i], '=');
        char key[MS_LABEL_KEY_MAX + 2];
        if (!eq || (size_t)(eq - o->where[i]) > MS_LABEL_KEY_MAX) {
            snprintf(err, errlen, "--where '%s': KEY=VALUE", o->where[i]);
            return -1;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - o->where[i]), o->where[i]);
        if (ms_fleet_check_key(key, err, errlen) != 0)
            return -1;
    }
    sb b = {0};
    build_sql(&b, o);
    res r = {.o = o};
    char *text = NULL;
    int rc = -1;
    if (b.oom) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (ms_ch_exec(ch, b.p, NULL, 0, &text, NULL, err, errlen) != 0)
        goto done;
    if (ms_ch_tsv(text, on_row, &r) != 0) {
        snprintf(err, errlen, r.oom ? "out of memory" : "ClickHouse answered rows of an unexpected shape");
        goto done;
    }
    if (fetch_details(ch, &r, err, errlen) != 0)
        goto done;
    if (o->json)
        write_json(out, &r);
    else
        write_text(out, &r);
    rc = 0;
done:
    free(text);
    free(b.p);
    for (size_t i = 0; i < r.nrows; i++) {
        for (size_t g = 0; g < o->ngroup; g++)
            free(r.rows[i].g[g]);
        free(r.rows[i].program);
        free(r.rows[i].sid);
    }
    free(r.rows);
    for (size_t i = 0; i < r.nfr; i++) {
        for (size_t k = 0; k < r.fr[i].n; k++) {
            free(r.fr[i].bid[k]);
            free(r.fr[i].mod[k]);
        }
        free(r.fr[i].bid);
        free(r.fr[i].mod);
        free(r.fr[i].off);
    }
    free(r.fr);
    for (size_t i = 0; i < r.nsy; i++) {
        free(r.sy[i].bid);
        free(r.sy[i].function);
        free(r.sy[i].file);
    }
    free(r.sy);
    return rc;
}
