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
#include <time.h>

#include "analysis/json_writer.h"
#include "analysis/protobuf.h"
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

static void glist(sb *b, const ms_fleet_opts *o, const char *tail)
{
    for (size_t i = 0; i < o->ngroup; i++)
        sbf(b, "g%zu, ", i);
    sbf(b, "%s", tail);
}

/* The snapshots in play: those in memsight_snapshots (a push's completion mark: half
 * pushed ones never count) that pass --where and were taken in [--since, --until], one
 * row each (a snapshot marked twice is one), with its process key `proc`, its `sid`, and
 * the group values g0, g1... */
static void snaps(sb *b, const ms_fleet_opts *o)
{
    sbf(b, "(SELECT snapshot_id, " MS_FLEET_SID_EXPR " AS sid,"
           " cityHash64(any(s_program), any(s_host), any(s_pid)) AS proc, any(s_ns) AS ns,"
           " max(s_leak) AS leak_scan, max(s_sampled) AS sampled");
    for (size_t i = 0; i < o->ngroup; i++)
        sbf(b, ", any(s_g%zu) AS g%zu", i, i);
    sbf(b, " FROM (SELECT snapshot_id, program AS s_program, host AS s_host, pid AS s_pid,"
           " snapshot_ns AS s_ns, leak_scan AS s_leak, sampled AS s_sampled");
    for (size_t i = 0; i < o->ngroup; i++) {
        sbf(b, ", ");
        keyexpr(b, o->group_by[i]);
        sbf(b, " AS s_g%zu", i);
    }
    sbf(b, " FROM memsight_snapshots WHERE 1");
    if (o->since_ns)
        sbf(b, " AND snapshot_ns >= %" PRIu64, o->since_ns);
    if (o->until_ns)
        sbf(b, " AND snapshot_ns <= %" PRIu64, o->until_ns);
    where(b, o);
    sbf(b, ") GROUP BY snapshot_id)");
}

/* what ClickHouse can skip of memsight_stacks by its partitions and time */
static void time_prune(sb *b, const ms_fleet_opts *o)
{
    if (o->since_ns)
        sbf(b, " AND time >= toDateTime(%" PRIu64 ") AND snapshot_ns >= %" PRIu64,
            (uint64_t)(o->since_ns / 1000000000u), o->since_ns);
    if (o->until_ns)
        sbf(b, " AND time <= toDateTime(%" PRIu64 ") AND snapshot_ns <= %" PRIu64,
            (uint64_t)(o->until_ns / 1000000000u), o->until_ns);
}

/* the newest snapshot in play of every process (with a leak scan: leaks), with the
 * process's group values */
static void latest(sb *b, const ms_fleet_opts *o, int leak_scan, int with_groups)
{
    sbf(b, "(SELECT argMax(sid, ns) AS sid, proc");
    for (size_t i = 0; with_groups && i < o->ngroup; i++)
        sbf(b, ", argMax(g%zu, ns) AS g%zu", i, i);
    sbf(b, " FROM ");
    snaps(b, o);
    sbf(b, "%s GROUP BY proc)", leak_scan ? " WHERE leak_scan = 1" : "");
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

/* The newest snapshots' rows: joined by sid (a number) to the processes' newest
 * snapshots, which also gives their group values. Without --until (and for all but
 * leaks, whose snapshot is the newest with a scan) from memsight_latest, where each
 * process keeps about one row per stack (push.c); else from memsight_stacks. (A PREWHERE
 * sid IN the same set first was slower: the set is made twice, and the rows of the
 * newest snapshots are in most granules of memsight_stacks.) */
static void latest_rows(sb *b, const ms_fleet_opts *o, int leak_scan)
{
    sbf(b, " FROM %s ANY INNER JOIN ", !leak_scan && !o->until_ns ? "memsight_latest" : "memsight_stacks");
    latest(b, o, leak_scan, 1);
    sbf(b, " USING sid WHERE 1");
    time_prune(b, o);
}

/* Per process with at least two snapshots in play: proc, n (its snapshots), their sids
 * and times in time order, its group values. */
static void procs(sb *b, const ms_fleet_opts *o)
{
    sbf(b, "(SELECT proc, ");
    for (size_t i = 0; i < o->ngroup; i++)
        sbf(b, "any(g%zu) AS g%zu, ", i, i);
    sbf(b, "arraySort(groupArray((ns, sid))) AS ts, length(ts) AS n,"
           " arrayMap(t -> tupleElement(t, 1), ts) AS times,"
           " arrayMap(t -> tupleElement(t, 2), ts) AS sids FROM ");
    snaps(b, o);
    sbf(b, " GROUP BY proc HAVING n >= 2)");
}

/* Trend's series: per process and stack in play, proc, stack_hash, growth (its bytes in
 * the process's last snapshot in play less those in its first, 0 where absent), and
 * with `grown` (not NULL): n (the process's snapshots in play), xsid (a snapshot holding
 * the stack), rs0 (the ranks 1..n, in the process's time order, of the snapshots
 * holding it) and vs0 (its bytes there). Each row of memsight_stacks is joined to its
 * process and rank by sid, then grouped by one 64-bit key of (process, stack),
 * ClickHouse's fastest grouping ((proc, n, stack_hash) took it 3 to 4 times the CPU; two
 * pairs with the same key, about 1 in 10^8 at a million pairs, would be summed).
 *
 * Without `grown`, the first pass: only the rows of each process's first and last
 * snapshot in play (PREWHERE: the others are dropped as they are read), all that growth
 * needs. It tells which stacks grew in some process: only those can be suspects, and
 * `grown` lists them for the second pass ("" when too many to list: every stack), which
 * reads only their rows, in every process (the share's divisor sums the process's series
 * that grew, all among them; `processes` counts where the stack is). The list is given
 * as numbers: as a subquery, ClickHouse 18.16 took about ten times the CPU for the pass.
 * (A push landing between the two statements can be seen by the second only.) */
static void series(sb *b, const ms_fleet_opts *o, const char *grown)
{
    sbf(b, "SELECT xproc AS proc, xstack AS stack_hash, growth%s FROM (SELECT"
           " cityHash64(proc, stack_hash) AS k, any(proc) AS xproc, any(stack_hash) AS xstack,"
           " toInt64(sumIf(live_bytes, rank = n)) - toInt64(sumIf(live_bytes, rank = 1)) AS growth",
        grown ? ", xn AS n, xsid, rs0, vs0" : "");
    if (grown)
        sbf(b, ", any(n) AS xn, any(sid) AS xsid, groupArray(rank) AS rs0, groupArray(live_bytes) AS vs0");
    sbf(b, " FROM memsight_stacks ANY INNER JOIN (SELECT sid, proc, n, toUInt32(rk) AS rank FROM ");
    procs(b, o);
    if (grown) {
        sbf(b, " ARRAY JOIN sids AS sid, arrayEnumerate(sids) AS rk) USING sid");
        if (grown[0])
            sbf(b, " PREWHERE stack_hash IN (%s)", grown);
    } else {
        sbf(b, " ARRAY JOIN [sids[1], sids[n]] AS sid, [1, n] AS rk) USING sid PREWHERE sid IN"
               " (SELECT arrayJoin([sids[1], sids[n]]) FROM ");
        procs(b, o);
        sbf(b, ")");
    }
    sbf(b, " WHERE 1");
    time_prune(b, o);
    sbf(b, " GROUP BY k)");
}

/* At most this many stacks are named in the second pass of trend (about 21 bytes each,
 * under ClickHouse's default max_query_size of 256 KiB); more, and it reads every stack.
 * MEMSIGHT_FLEET_GROWN_MAX (digits) changes it: for a server whose max_query_size is
 * smaller, and for the tests, which take the every-stack path on a small fleet with 0. */
#define GROWN_LIST_MAX 8000
static size_t grown_list_max(void)
{
    const char *e = getenv("MEMSIGHT_FLEET_GROWN_MAX");
    if (!e || !*e || strlen(e) > 9 || strspn(e, "0123456789") != strlen(e))
        return GROWN_LIST_MAX;
    return (size_t)strtoul(e, NULL, 10);
}

/* Result columns after the groups: stack_hash, then the query's numbers (NNUM), then
 * the sid of a snapshot holding the stack (its frames are read from there). */
#define NNUM 8
static void build_sql(sb *b, const ms_fleet_opts *o, const char *grown)
{
    if (o->query == MS_FLEET_TOP) {
        /* numbers: live bytes, live blocks, alloc bytes, alloc blocks, processes */
        sbf(b, "SELECT ");
        glist(b, o, "");
        sbf(b, "stack_hash, sum(live_bytes) AS lb, sum(live_blocks), sum(alloc_bytes),"
               " sum(alloc_blocks), uniqExact(proc), 0, 0, 0, any(sid)");
        latest_rows(b, o, 0);
        sbf(b, " GROUP BY ");
        glist(b, o, "stack_hash HAVING lb > 0 ORDER BY ");
        glist(b, o, "lb DESC, stack_hash");
        limit_by(b, o);
    } else if (o->query == MS_FLEET_LEAKS) {
        /* numbers: definitely, indirectly, possibly lost (bytes, blocks), processes */
        sbf(b, "SELECT ");
        glist(b, o, "");
        sbf(b, "stack_hash, sum(definitely_lost_bytes) AS d, sum(definitely_lost_blocks),"
               " sum(indirectly_lost_bytes) AS i, sum(indirectly_lost_blocks),"
               " sum(possibly_lost_bytes) AS p, sum(possibly_lost_blocks),"
               " uniqExact(proc), 0, any(sid)");
        latest_rows(b, o, 1);
        sbf(b, " GROUP BY ");
        glist(b, o, "stack_hash HAVING d + i + p > 0 ORDER BY ");
        glist(b, o, "d + i DESC, p DESC, stack_hash");
        limit_by(b, o);
    } else if (o->query == MS_FLEET_DIFF) {
        /* numbers: live bytes in A's and B's newest snapshots, processes of each holding
         * the stack; ranked by the change of bytes per process (B's count x A's sum
         * against A's count x B's sum: no division in the ranking) */
        sbf(b, "SELECT stack_hash, sumIf(live_bytes, g0 = ");
        sbq(b, o->diff_a);
        sbf(b, ") AS a, sumIf(live_bytes, g0 = ");
        sbq(b, o->diff_b);
        sbf(b, ") AS bb, uniqExactIf(proc, g0 = ");
        sbq(b, o->diff_a);
        sbf(b, "), uniqExactIf(proc, g0 = ");
        sbq(b, o->diff_b);
        sbf(b, "), 0, 0, 0, 0, any(sid)");
        latest_rows(b, o, 0);
        sbf(b, " GROUP BY stack_hash HAVING a + bb > 0 ORDER BY abs(toFloat64(bb) * {NA} -"
               " toFloat64(a) * {NB}) DESC, stack_hash LIMIT %d", o->top);
    } else {
        /* As `memsight trend` scores one series, per process: its snapshots in time order
         * (rank 1..n), each stack's live bytes at each (0 where absent), steadiness =
         * (rises - falls) / (n - 1) clipped to [0, 1], growth = last - first, share =
         * growth / the process's positive growth, score = steadiness^2 x (0.5 + 0.5 share)
         * for a stack that grew. Each (process, stack) holds only the ranks where the
         * stack is (rs, ascending) and its bytes there (vs): a gap of ranks is a fall to
         * 0 and a rise from it; no series is made dense, no snapshot id is carried.
         * The onset is the time of the first snapshot after the series' last lowest
         * point (low). Then across the fleet per stack: processes in which it is a
         * suspect, the sum of its scores (the rank), growth, the earliest onset.
         * numbers: score sum x 1e6, suspects, processes seen, growth, max score x 1e6,
         * mean steadiness x 1e6, earliest onset (ns) */
        sbf(b, "SELECT ");
        glist(b, o, "");
        sbf(b, "stack_hash, toUInt64(sum(score) * 1000000) AS score_rank, countIf(score > 0) AS suspects,"
               " count(), toUInt64(sumIf(growth, score > 0)), toUInt64(max(score) * 1000000),"
               " toUInt64(avgIf(steadiness, score > 0) * 1000000),"
               " minIf(if(low < n, times[low + 1], 0), score > 0), 0, any(xsid) FROM ("
               " SELECT proc, tupleElement(r, 1) AS stack_hash, tupleElement(r, 2) AS steadiness,"
               " tupleElement(r, 3) AS growth, tupleElement(r, 4) AS low, tupleElement(r, 5) AS xsid,"
               " if(growth > 0 AND sumpos > 0, steadiness * steadiness * (0.5 + 0.5 * growth / sumpos),"
               " 0) AS score FROM ("
               " SELECT proc, sum(greatest(growth, 0)) AS sumpos,"
               " groupArray((stack_hash, steadiness, growth, low, xsid)) AS rows FROM ("
               /* only a stack that grew can be a suspect: the others' series are emptied
                * before the array work, which then costs only what grew */
               " SELECT proc, stack_hash, xsid, growth,"
               " if(growth > 0, rs0, emptyArrayUInt32()) AS rs1, if(growth > 0, vs0, emptyArrayUInt64()) AS vs1,"
               " arraySort(rs1) AS rs, arraySort((v, r) -> r, vs1, rs1) AS vs, length(rs) AS m,"
               " arrayPopFront(arrayDifference(arrayPushFront(rs, toUInt32(0)))) AS gp,"
               " arrayPopBack(arrayPushFront(vs, if(rs[1] = 1, vs[1], 0))) AS pv,"
               /* rises - falls in one pass: a gap of ranks falls to 0 and rises from it */
               " arraySum(arrayMap((g, v, p) -> if(g = 1, (v > p) - (v < p), (v > 0) - (p > 0)), gp, vs, pv))"
               " - (m > 0 AND rs[m] < n AND vs[m] > 0) AS net,"
               " greatest(0, net / (n - 1)) AS steadiness,"
               " if(m > 0 AND m < n, 0, arrayReduce('min', vs)) AS lowest,"
               " indexOf(arrayReverse(vs), lowest) AS lp,"
               " if(m > 0 AND m < n, if(rs[m] < n, toInt64(n),"
               " toInt64(rs[m + 1 - indexOf(arrayReverse(arrayMap(g -> g > 1, gp)), 1)]) - 1), 0) AS la,"
               " greatest(if(lp > 0, toInt64(rs[m + 1 - lp]), 0), la) AS low FROM ("
               );
        series(b, o, grown);
        sbf(b, ")) GROUP BY proc) ARRAY JOIN rows AS r)"
               " ANY INNER JOIN (SELECT proc, n, times");
        for (size_t i = 0; i < o->ngroup; i++)
            sbf(b, ", g%zu", i);
        sbf(b, " FROM ");
        procs(b, o);
        sbf(b, ") USING proc GROUP BY ");
        glist(b, o, "stack_hash HAVING suspects > 0 ORDER BY ");
        glist(b, o, "score_rank DESC, stack_hash");
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
    uint64_t sid; /* a snapshot holding the stack: its frames are read from there */
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
    unsigned quality;
    uint64_t loaded;
} sym;

typedef struct snapkey {
    uint64_t sid;
    char *program, *id;
} snapkey;

typedef struct res {
    const ms_fleet_opts *o;
    size_t ng; /* group columns in the result (diff: none) */
    rrow *rows;
    size_t nrows, caprows;
    frames *fr;
    size_t nfr, capfr;
    sym *sy;
    size_t nsy, capsy;
    snapkey *sk;
    size_t nsk, capsk;
    uint64_t na, nb;             /* diff: processes of A and of B */
    uint64_t sampled, scanned;   /* leaks: processes in sampled mode without a scan, with one */
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
    size_t ng = r->ng;
    if (n != ng + 1 + NNUM + 1)
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
    x->sid = strtoull(f[ng + 1 + NNUM], NULL, 10);
    return 0;
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
    if (n != 9)
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
    x->quality = (unsigned)strtoul(f[7], NULL, 10);
    x->loaded = strtoull(f[8], NULL, 10);
    r->nsy++;
    return x->bid && x->function && x->file ? 0 : (r->oom = 1, -1);
}

static int on_snapkey(void *ctx, char **f, size_t n)
{
    res *r = ctx;
    if (n != 3)
        return r->bad = 1, -1;
    GROW(r->sk, r->nsk, r->capsk);
    snapkey *x = &r->sk[r->nsk++];
    x->sid = strtoull(f[0], NULL, 10);
    x->program = strdup(f[1]);
    x->id = strdup(f[2]);
    return x->program && x->id ? 0 : (r->oom = 1, -1);
}

/* by build id, offset, then the best result first (quality, then the newest), idx */
static int cmp_sym(const void *a, const void *b)
{
    const sym *x = a, *y = b;
    int c = strcmp(x->bid, y->bid);
    if (c)
        return c;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->quality != y->quality)
        return x->quality > y->quality ? -1 : 1;
    if (x->loaded != y->loaded)
        return x->loaded > y->loaded ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static const frames *frames_of(const res *r, uint64_t hash)
{
    for (size_t i = 0; i < r->nfr; i++)
        if (r->fr[i].hash == hash)
            return &r->fr[i];
    return NULL;
}

/* the symbols of (bid, off), innermost first: the rows of its best result (a later,
 * better symbolize wins over an earlier one until ClickHouse merges them away) */
static const sym *syms_of(const res *r, const char *bid, uint64_t off, size_t *n)
{
    size_t lo = 0, hi = r->nsy;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const sym *m = &r->sy[mid];
        int c = strcmp(m->bid, bid);
        if (c < 0 || (c == 0 && m->off < off))
            lo = mid + 1;
        else
            hi = mid;
    }
    *n = 0;
    const sym *first = lo < r->nsy ? &r->sy[lo] : NULL;
    while (lo + *n < r->nsy && !strcmp(r->sy[lo + *n].bid, bid) && r->sy[lo + *n].off == off &&
           r->sy[lo + *n].quality == first->quality && r->sy[lo + *n].loaded == first->loaded &&
           r->sy[lo + *n].idx == *n)
        (*n)++;
    return *n ? first : NULL;
}

static int fetch_details(ms_ch *ch, res *r, char *err, size_t errlen)
{
    if (!r->nrows)
        return 0;
    sb b = {0};
    char *out = NULL;
    int rc = -1;
    /* the key of a snapshot holding each stack, to read its frames by the table's key */
    sbf(&b, "SELECT DISTINCT " MS_FLEET_SID_EXPR " AS sid, program, snapshot_id FROM memsight_snapshots"
            " WHERE sid IN (");
    for (size_t i = 0; i < r->nrows; i++)
        sbf(&b, "%s%" PRIu64, i ? ", " : "", r->rows[i].sid);
    sbf(&b, ") FORMAT TabSeparated");
    if (b.oom)
        goto oom;
    if (ms_ch_exec_retry(ch, 3, b.p, &out, NULL, err, errlen) != 0)
        goto done;
    if (ms_ch_tsv(out, on_snapkey, r) != 0)
        goto bad;
    free(out);
    out = NULL;
    b.n = 0;
    sbf(&b, "SELECT stack_hash, arrayStringConcat(any(frame_build_ids), '\\x01'),"
            " arrayStringConcat(arrayMap(x -> toString(x), any(frame_offsets)), '\\x01'),"
            " arrayStringConcat(any(frame_modules), '\\x01'), any(first_is_pc)"
            " FROM memsight_stacks WHERE (program, snapshot_id, stack_hash) IN (");
    /* by the table's whole key: the frames of one row each, not of every snapshot; once
     * per stack (a stack's hash is its frames': every group's row has the same) */
    size_t k = 0;
    for (size_t i = 0; i < r->nrows; i++) {
        int seen = 0;
        for (size_t e = 0; e < i && !seen; e++)
            seen = r->rows[e].hash == r->rows[i].hash;
        if (seen)
            continue;
        for (size_t j = 0; j < r->nsk; j++)
            if (r->sk[j].sid == r->rows[i].sid) {
                sbf(&b, "%s(", k++ ? ", " : "");
                sbq(&b, r->sk[j].program);
                sbf(&b, ", ");
                sbq(&b, r->sk[j].id);
                sbf(&b, ", %" PRIu64 ")", r->rows[i].hash);
                break;
            }
    }
    sbf(&b, ") GROUP BY stack_hash FORMAT TabSeparated");
    if (b.oom)
        goto oom;
    if (k) {
        if (ms_ch_exec_retry(ch, 3, b.p, &out, NULL, err, errlen) != 0)
            goto done;
        if (ms_ch_tsv(out, on_frames, r) != 0)
            goto bad;
        free(out);
        out = NULL;
    }
    /* their symbols, joined here by (build id, offset): every stored result, the best
     * is chosen when printing */
    b.n = 0;
    sbf(&b, "SELECT build_id, offset, idx, any(function), any(file), any(line), any(inlined),"
            " quality, loaded FROM memsight_symbols WHERE (build_id, offset) IN (");
    k = 0;
    for (size_t i = 0; i < r->nfr; i++)
        for (size_t j = 0; j < r->fr[i].n; j++) {
            sbf(&b, "%s(", k++ ? ", " : "");
            sbq(&b, r->fr[i].bid[j]);
            sbf(&b, ", %" PRIu64 ")", r->fr[i].off[j]);
        }
    sbf(&b, ") AND function != '' GROUP BY build_id, offset, quality, loaded, idx FORMAT TabSeparated");
    if (b.oom)
        goto oom;
    if (k) {
        if (ms_ch_exec_retry(ch, 3, b.p, &out, NULL, err, errlen) != 0)
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
static const char *const qname[] = {"top", "trend", "leaks", "diff"};

static void put_time(FILE *out, uint64_t ns)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    char buf[40];
    if (gmtime_r(&t, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
        fputs(buf, out);
}

static void json_time(ms_json *j, const char *key, uint64_t ns)
{
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    if (f) {
        put_time(f, ns);
        fclose(f);
    }
    ms_json_kv_str(j, key, ns && p ? p : NULL);
    free(p);
}

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
    /* names and paths come from snapshots and the symbols table: escaped */
    fputs("      ", out);
    if (s && s->function[0]) {
        ms_fleet_put(out, s->function);
        if (s->file[0]) {
            fputs("  ", out);
            ms_fleet_put(out, s->file);
            fprintf(out, ":%u", s->line);
        }
        fprintf(out, "%s\n", s->inlined ? " (inlined)" : "");
    } else {
        ms_fleet_put(out, base[0] ? base : "?");
        fprintf(out, "+0x%" PRIx64 "\n", off);
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
    for (size_t i = 0; i < r->ng; i++)
        if (strcmp(r->rows[a].g[i], r->rows[b].g[i]))
            return 0;
    return 1;
}

/* per process, as a signed number of bytes: the diff's means */
static double per_proc(uint64_t bytes, uint64_t procs)
{
    return procs ? (double)bytes / (double)procs : 0;
}

static void write_text(FILE *out, const res *r)
{
    const ms_fleet_opts *o = r->o;
    char b1[32], b2[32], b3[32];
    static const char *const what[] = {
        "stacks by live bytes, summed over the newest snapshot of every process",
        "stacks that grow across each process's snapshots, by summed trend score",
        "leaked bytes by stack, summed over the newest leak scan of every process",
        "live bytes per process by stack, newest snapshot of every process"};
    fprintf(out, "memsight fleet %s: %s\n", qname[o->query], what[o->query]);
    if (o->since_ns || o->until_ns) {
        fputs("snapshots taken from ", out);
        if (o->since_ns)
            put_time(out, o->since_ns);
        else
            fputs("the first", out);
        fputs(" to ", out);
        if (o->until_ns)
            put_time(out, o->until_ns);
        else
            fputs("the last", out);
        fputs(" (processes not seen then do not count)\n", out);
    }
    if (o->query == MS_FLEET_DIFF) {
        fprintf(out, "%s: ", o->group_by[0]);
        ms_fleet_put(out, o->diff_a);
        fprintf(out, " (%" PRIu64 " processes) -> ", r->na);
        ms_fleet_put(out, o->diff_b);
        fprintf(out, " (%" PRIu64 " processes)\n", r->nb);
    }
    if (!r->nrows)
        fprintf(out, "\n(nothing)\n");
    if (o->query == MS_FLEET_LEAKS && r->sampled)
        fprintf(out, "\n%" PRIu64 " process%s ran in sampled mode, which does no leak scans: %s not"
                     " counted here (%" PRIu64 " with a leak scan)\n", r->sampled,
                r->sampled == 1 ? "" : "es", r->sampled == 1 ? "it is" : "they are", r->scanned);
    for (size_t i = 0, rank = 0; i < r->nrows; i++) {
        const rrow *x = &r->rows[i];
        if (i == 0 || !same_group(r, i, i - 1)) {
            rank = 0;
            fprintf(out, "\n");
            if (r->ng) {
                fprintf(out, "==");
                for (size_t g = 0; g < r->ng; g++) {
                    fprintf(out, " %s=", o->group_by[g]);
                    ms_fleet_put(out, x->g[g][0] ? x->g[g] : "(none)");
                }
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
        else if (o->query == MS_FLEET_DIFF) {
            double a = per_proc(x->num[0], r->na), bb = per_proc(x->num[1], r->nb);
            fprintf(out, "  #%zu %s per process (%s: %s in %" PRIu64 " of %" PRIu64 ", %s: %s in %" PRIu64
                         " of %" PRIu64 ")\n", rank,
                    ms_fmt_sbytes((int64_t)(bb - a), b1, sizeof b1), o->diff_a,
                    ms_fmt_bytes((uint64_t)a, b2, sizeof b2), x->num[2], r->na, o->diff_b,
                    ms_fmt_bytes((uint64_t)bb, b3, sizeof b3), x->num[3], r->nb);
        } else {
            fprintf(out, "  #%zu score %.3f: a suspect in %" PRIu64 " of %" PRIu64
                         " processes, grew %s there (max score %.3f, mean steadiness %.2f)",
                    rank, x->num[0] / 1e6, x->num[1], x->num[2],
                    ms_fmt_bytes(x->num[3], b1, sizeof b1), x->num[4] / 1e6, x->num[5] / 1e6);
            if (x->num[6]) {
                fputs("; grows since ", out);
                put_time(out, x->num[6]);
            }
            fputc('\n', out);
        }
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
    json_time(&j, "since", o->since_ns);
    json_time(&j, "until", o->until_ns);
    if (o->query == MS_FLEET_LEAKS) {
        ms_json_kv_u64(&j, "sampled_processes_without_scan", r->sampled);
        ms_json_kv_u64(&j, "processes_with_scan", r->scanned);
    }
    if (o->query == MS_FLEET_DIFF) {
        for (int side = 0; side < 2; side++) {
            ms_json_key(&j, side ? "target" : "base");
            ms_json_object_begin(&j);
            ms_json_kv_str(&j, "value", side ? o->diff_b : o->diff_a);
            ms_json_kv_u64(&j, "processes", side ? r->nb : r->na);
            ms_json_object_end(&j);
        }
    }
    ms_json_key(&j, o->query == MS_FLEET_DIFF ? "stacks" : "groups");
    ms_json_array_begin(&j);
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *x = &r->rows[i];
        if (o->query != MS_FLEET_DIFF && (i == 0 || !same_group(r, i, i - 1))) {
            if (i) {
                ms_json_array_end(&j);
                ms_json_object_end(&j);
            }
            ms_json_object_begin(&j);
            ms_json_key(&j, "group");
            ms_json_object_begin(&j);
            for (size_t g = 0; g < r->ng; g++)
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
        } else if (o->query == MS_FLEET_DIFF) {
            ms_json_kv_u64(&j, "base_live_bytes", x->num[0]);
            ms_json_kv_u64(&j, "target_live_bytes", x->num[1]);
            ms_json_kv_u64(&j, "base_processes", x->num[2]);
            ms_json_kv_u64(&j, "target_processes", x->num[3]);
            ms_json_key(&j, "delta_bytes_per_process");
            ms_json_double(&j, per_proc(x->num[1], r->nb) - per_proc(x->num[0], r->na));
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
            json_time(&j, "onset", x->num[6]);
            ms_json_kv_u64(&j, "onset_ns", x->num[6]);
        }
        stack_frames(out, &j, r, x->hash);
        ms_json_object_end(&j);
    }
    if (r->nrows && o->query != MS_FLEET_DIFF) {
        ms_json_array_end(&j);
        ms_json_object_end(&j);
    }
    ms_json_array_end(&j);
    ms_json_object_end(&j);
    ms_json_finish(&j);
}

/* ---- pprof ------------------------------------------------------------------------
 * One sample per (group, stack), its locations leaf first, the group values as string
 * labels (what pprof -tagfocus, Pyroscope and Grafana group by), "processes" as a
 * numeric one. A location per (build id, offset), its lines the stored symbols
 * (innermost inlined first, as profile.proto orders them), else "module+0xoff". */
typedef struct pprof_b {
    ms_agg *str, *fn, *loc;
    ms_pb out, tmp;
    uint64_t nfn;
} pprof_b;

static uint64_t pstr(pprof_b *p, const char *s)
{
    long i = ms_agg_intern(p->str, s ? s : "");
    if (i < 0)
        p->out.oom = 1;
    return i < 0 ? 0 : (uint64_t)i;
}

static uint64_t pfunc(pprof_b *p, const char *name, const char *file)
{
    char *key = NULL;
    if (asprintf(&key, "%s\x01%s", name, file) < 0) {
        p->out.oom = 1;
        return 0;
    }
    size_t before = p->fn->nnames;
    long i = ms_agg_intern(p->fn, key);
    free(key);
    if (i < 0) {
        p->out.oom = 1;
        return 0;
    }
    if (p->fn->nnames != before) { /* new: its Function message */
        ms_pb f = {0};
        ms_pb_int(&f, 1, (uint64_t)i + 1);
        ms_pb_int(&f, 2, pstr(p, name));
        ms_pb_int(&f, 3, pstr(p, name));
        ms_pb_int(&f, 4, pstr(p, file));
        ms_pb_msg(&p->out, 5, &f);
        free(f.p);
    }
    return (uint64_t)i + 1;
}

static uint64_t ploc(pprof_b *p, const res *r, const char *bid, uint64_t off, const char *mod)
{
    char *key = NULL;
    if (asprintf(&key, "%s\x01%" PRIx64, bid, off) < 0) {
        p->out.oom = 1;
        return 0;
    }
    size_t before = p->loc->nnames;
    long i = ms_agg_intern(p->loc, key);
    free(key);
    if (i < 0) {
        p->out.oom = 1;
        return 0;
    }
    if (p->loc->nnames != before) {
        ms_pb l = {0}, line = {0};
        ms_pb_int(&l, 1, (uint64_t)i + 1);
        ms_pb_int(&l, 3, off);
        size_t ns;
        const sym *s = syms_of(r, bid, off, &ns);
        for (size_t k = 0; k < ns; k++) {
            ms_pb_int(&line, 1, pfunc(p, s[k].function, s[k].file));
            ms_pb_int(&line, 2, s[k].line);
            ms_pb_msg(&l, 4, &line);
        }
        if (!ns) {
            const char *base = strrchr(mod, '/');
            char name[400];
            snprintf(name, sizeof name, "%s+0x%" PRIx64, base ? base + 1 : mod[0] ? mod : "?", off);
            ms_pb_int(&line, 1, pfunc(p, name, ""));
            ms_pb_msg(&l, 4, &line);
        }
        ms_pb_msg(&p->out, 4, &l);
        free(l.p);
        free(line.p);
    }
    return (uint64_t)i + 1;
}

static void pvalue_type(pprof_b *p, unsigned field, const char *type, const char *unit)
{
    ms_pb vt = {0};
    ms_pb_int(&vt, 1, pstr(p, type));
    ms_pb_int(&vt, 2, pstr(p, unit));
    ms_pb_msg(&p->out, field, &vt);
    free(vt.p);
}

static void plabel(pprof_b *p, ms_pb *smp, const char *k, const char *v, uint64_t num)
{
    ms_pb l = {0};
    ms_pb_int(&l, 1, pstr(p, k));
    if (v)
        ms_pb_int(&l, 2, pstr(p, v));
    else
        ms_pb_int(&l, 3, num);
    ms_pb_msg(smp, 3, &l);
    free(l.p);
}

static int write_pprof(FILE *out, const res *r, char *err, size_t errlen)
{
    const ms_fleet_opts *o = r->o;
    pprof_b p = {.str = ms_agg_new(), .fn = ms_agg_new(), .loc = ms_agg_new()};
    int rc = -1;
    if (!p.str || !p.fn || !p.loc || ms_agg_intern(p.str, "") != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* sample types, the default view last (pprof shows the last one) */
    static const char *const types[][4][2] = {
        {{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
        {{"suspect_processes", "count"}, {"score", "millionths"}, {"growth", "bytes"}, {NULL, NULL}},
        {{"lost_objects", "count"}, {"possibly_lost_space", "bytes"}, {"lost_space", "bytes"}, {NULL, NULL}},
        {{"base_space", "bytes"}, {"target_space", "bytes"}, {"delta_space", "bytes"}, {NULL, NULL}},
    };
    size_t nv = 0;
    for (; nv < 4 && types[o->query][nv][0]; nv++)
        pvalue_type(&p, 1, types[o->query][nv][0], types[o->query][nv][1]);
    for (size_t i = 0; i < r->nrows; i++) {
        const rrow *x = &r->rows[i];
        const frames *f = frames_of(r, x->hash);
        uint64_t locs[256];
        size_t nl = 0;
        for (size_t k = 0; f && k < f->n && nl < 256; k++)
            locs[nl++] = ploc(&p, r, f->bid[k], f->off[k], f->mod[k]);
        int64_t v[4] = {0};
        uint64_t procs = 0;
        if (o->query == MS_FLEET_TOP) {
            v[0] = (int64_t)x->num[3], v[1] = (int64_t)x->num[2], v[2] = (int64_t)x->num[1];
            v[3] = (int64_t)x->num[0], procs = x->num[4];
        } else if (o->query == MS_FLEET_TREND) {
            v[0] = (int64_t)x->num[1], v[1] = (int64_t)x->num[0], v[2] = (int64_t)x->num[3];
            procs = x->num[2];
        } else if (o->query == MS_FLEET_LEAKS) {
            v[0] = (int64_t)(x->num[1] + x->num[3]), v[1] = (int64_t)x->num[4];
            v[2] = (int64_t)(x->num[0] + x->num[2]), procs = x->num[6];
        } else {
            double a = per_proc(x->num[0], r->na), bb = per_proc(x->num[1], r->nb);
            v[0] = (int64_t)a, v[1] = (int64_t)bb, v[2] = (int64_t)(bb - a);
            procs = x->num[2] + x->num[3];
        }
        ms_pb smp = {0};
        ms_pb_packed(&smp, 1, locs, nl);
        uint64_t uv[4];
        for (size_t k = 0; k < nv; k++)
            uv[k] = (uint64_t)v[k]; /* int64 on the wire: two's complement as a varint */
        ms_pb_packed(&smp, 2, uv, nv);
        for (size_t g = 0; g < r->ng; g++)
            plabel(&p, &smp, o->group_by[g], x->g[g], 0);
        plabel(&p, &smp, "processes", NULL, procs);
        ms_pb_msg(&p.out, 2, &smp);
        free(smp.p);
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    ms_pb_int(&p.out, 9, (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec);
    /* the string table last: every string is in by now */
    for (size_t i = 0; i < p.str->nnames; i++)
        ms_pb_bytes(&p.out, 6, p.str->names[i], strlen(p.str->names[i]));
    if (p.out.oom) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    rc = ms_gzip_write(out, p.out.p, p.out.n, err, errlen);
done:
    ms_agg_free(p.str);
    ms_agg_free(p.fn);
    ms_agg_free(p.loc);
    free(p.out.p);
    free(p.tmp.p);
    return rc;
}

/* ---- side questions ---------------------------------------------------------------- */
static int on_counts(void *ctx, char **f, size_t n)
{
    uint64_t *v = ctx;
    if (n != 2)
        return -2;
    v[0] = strtoull(f[0], NULL, 10);
    v[1] = strtoull(f[1], NULL, 10);
    return 0;
}

/* Two numbers from one statement into v[0], v[1]. */
static int counts(ms_ch *ch, sb *b, uint64_t v[2], char *err, size_t errlen)
{
    char *text = NULL;
    if (b->oom) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = ms_ch_exec_retry(ch, 3, b->p, &text, NULL, err, errlen);
    if (rc == 0 && ms_ch_tsv(text, on_counts, v) != 0) {
        snprintf(err, errlen, "ClickHouse answered rows of an unexpected shape");
        rc = -1;
    }
    free(text);
    return rc;
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
    if (o->query == MS_FLEET_DIFF && (o->ngroup != 1 || !o->diff_a || !o->diff_b)) {
        snprintf(err, errlen, "diff compares two values of one --group-by key");
        return -1;
    }
    sb b = {0}, grown = {0};
    res r = {.o = o, .ng = o->query == MS_FLEET_DIFF ? 0 : o->ngroup};
    char *text = NULL;
    int rc = -1;
    /* tables an older memsight made lack what the queries read: said, not a SQL error */
    sbf(&b, "SELECT count(), 0 FROM system.columns WHERE database = currentDatabase() AND"
            " ((table = 'memsight_stacks' AND name = 'sid') OR (table = 'memsight_latest' AND"
            " name = 'sid') OR (table = 'memsight_symbols' AND name = 'quality')) FORMAT TabSeparated");
    uint64_t have[2] = {0, 0};
    if (counts(ch, &b, have, err, errlen) != 0)
        goto done;
    if (have[0] != 3) {
        snprintf(err, errlen, "the memsight tables of this database were made by an older memsight"
                 " (or by none): run 'memsight push' or 'memsight symbolize' on it once, which add"
                 " what is missing (docs/fleet.md, Upgrading)");
        goto done;
    }
    b.n = 0;
    if (o->query == MS_FLEET_DIFF) {
        /* how many processes each side has: the per-process means' divisors */
        sbf(&b, "SELECT countIf(g0 = ");
        sbq(&b, o->diff_a);
        sbf(&b, "), countIf(g0 = ");
        sbq(&b, o->diff_b);
        sbf(&b, ") FROM ");
        latest(&b, o, 0, 1);
        sbf(&b, " FORMAT TabSeparated");
        uint64_t v[2] = {0, 0};
        if (counts(ch, &b, v, err, errlen) != 0)
            goto done;
        r.na = v[0], r.nb = v[1];
        b.n = 0;
    }
    if (o->query == MS_FLEET_LEAKS) {
        /* processes whose snapshots in play come from sampled mode and have no scan */
        sbf(&b, "SELECT countIf(s = 1 AND l = 0), countIf(l = 1) FROM (SELECT proc, max(sampled) AS s,"
                " max(leak_scan) AS l FROM ");
        snaps(&b, o);
        sbf(&b, " GROUP BY proc) FORMAT TabSeparated");
        uint64_t v[2] = {0, 0};
        if (counts(ch, &b, v, err, errlen) != 0)
            goto done;
        r.sampled = v[0], r.scanned = v[1];
        b.n = 0;
    }
    int none_grew = 0;
    if (o->query == MS_FLEET_TREND) {
        /* the first pass (series()): the stacks that grew in some process */
        sbf(&b, "SELECT DISTINCT stack_hash FROM (");
        series(&b, o, NULL);
        sbf(&b, ") WHERE growth > 0 FORMAT TabSeparated");
        if (b.oom) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        if (ms_ch_exec_retry(ch, 2, b.p, &text, NULL, err, errlen) != 0)
            goto done;
        size_t n = 0;
        sbf(&grown, "%s", "");
        for (char *p = text; p && *p;) {
            char *e = strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l == 0 || l > 20 || strspn(p, "0123456789") != l) {
                snprintf(err, errlen, "ClickHouse answered rows of an unexpected shape");
                goto done;
            }
            sbf(&grown, "%s%.*s", n++ ? ", " : "", (int)l, p);
            p = e ? e + 1 : NULL;
        }
        if (grown.oom) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        if (n > grown_list_max()) /* too long a statement: the second pass reads every stack */
            grown.p[grown.n = 0] = 0;
        none_grew = n == 0;
        free(text);
        text = NULL;
        b.n = 0;
    }
    build_sql(&b, o, grown.p);
    if (b.oom) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (o->query == MS_FLEET_DIFF) { /* the divisors, cross-multiplied into the ranking */
        char *na = strstr(b.p, "{NA}"), *nb = strstr(b.p, "{NB}");
        char *sql = NULL;
        if (!na || !nb || nb < na ||
            asprintf(&sql, "%.*s%" PRIu64 "%.*s%" PRIu64 "%s", (int)(na - b.p), b.p, r.na,
                     (int)(nb - na - 4), na + 4, r.nb, nb + 4) < 0) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        free(b.p);
        b.p = sql;
    }
    if (!none_grew) { /* else no stack grew anywhere: no suspect, nothing to ask */
        if (ms_ch_exec_retry(ch, 2, b.p, &text, NULL, err, errlen) != 0)
            goto done;
        if (ms_ch_tsv(text, on_row, &r) != 0) {
            snprintf(err, errlen, r.oom ? "out of memory" : "ClickHouse answered rows of an unexpected shape");
            goto done;
        }
    }
    if (fetch_details(ch, &r, err, errlen) != 0)
        goto done;
    if (o->format == MS_FLEET_PPROF) {
        if (write_pprof(out, &r, err, errlen) != 0)
            goto done;
    } else if (o->format == MS_FLEET_JSON) {
        write_json(out, &r);
    } else {
        write_text(out, &r);
    }
    rc = 0;
done:
    free(text);
    free(b.p);
    free(grown.p);
    for (size_t i = 0; i < r.nrows; i++)
        for (size_t g = 0; g < r.ng; g++)
            free(r.rows[i].g[g]);
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
    for (size_t i = 0; i < r.nsk; i++) {
        free(r.sk[i].program);
        free(r.sk[i].id);
    }
    free(r.sk);
    return rc;
}

/* ---- time ------------------------------------------------------------------------ */
int ms_fleet_parse_time(const char *text, uint64_t now_ns, uint64_t *out, char *err, size_t errlen)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *e;
    if ((e = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm)) || (memset(&tm, 0, sizeof tm),
        e = strptime(text, "%Y-%m-%dT%H:%M", &tm)) || (memset(&tm, 0, sizeof tm),
        e = strptime(text, "%Y-%m-%d", &tm))) {
        int date_only = strlen(text) == 10;
        if (!(*e == 'Z' && e[1] == 0) && !(*e == 0 && date_only) && strcmp(e, "+00:00")) {
            snprintf(err, errlen, "'%s': a time in UTC ends with Z (2026-12-05T15:00:00Z)", text);
            return -1;
        }
        time_t t = timegm(&tm);
        if (t < (time_t)MS_FLEET_TIME_MIN || (uint64_t)t > MS_FLEET_TIME_MAX) {
            snprintf(err, errlen, "'%s' is outside 1970-01-01..2105-12-31", text);
            return -1;
        }
        *out = (uint64_t)t * 1000000000ull;
        return 0;
    }
    /* a duration before now: 2h, 90m, 1d12h, 30s, 2w */
    uint64_t total = 0;
    const char *p = text;
    if (!*p)
        goto bad;
    while (*p) {
        if (*p < '0' || *p > '9')
            goto bad;
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (uint64_t)(*p++ - '0');
            if (v > 1000000000ull)
                goto bad;
        }
        uint64_t unit = *p == 's' ? 1 : *p == 'm' ? 60 : *p == 'h' ? 3600 : *p == 'd' ? 86400
                      : *p == 'w' ? 604800 : 0;
        if (!unit)
            goto bad;
        p++;
        total += v * unit;
        if (total > 200ull * 365 * 86400)
            goto bad;
    }
    if (total * 1000000000ull > now_ns)
        goto bad;
    *out = now_ns - total * 1000000000ull;
    return 0;
bad:
    snprintf(err, errlen, "'%s' is neither a UTC time (2026-12-05T15:00:00Z, 2026-12-05) nor a"
             " duration before now (2h, 90m, 1d12h, 30s, 2w)", text);
    return -1;
}
