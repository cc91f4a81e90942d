/* Snapshots into ClickHouse (fleet.h): the schema and `memsight push`. One row per
 * (snapshot, stack) with the frames as (build id, offset) pairs, so that symbols are
 * loaded once per build and joined when a query reads them. Tools only. */
#define _GNU_SOURCE
#include "fleet/fleet.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "analysis/json_writer.h"
#include "analysis/stack_agg.h"
#include "core/fileio.h"
#include "core/labels.h"
#include "core/snapshot.h"

/* ===========================================================================
 * The schema (docs/fleet.md). ClickHouse 18.16 and later: MergeTree with PARTITION BY /
 * ORDER BY, arrays, JSONEachRow over HTTP.
 * ========================================================================= */
#define SID_EXPR MS_FLEET_SID_EXPR

static const char *const schema[] = {
    "CREATE TABLE IF NOT EXISTS memsight_stacks ("
    " snapshot_id String, time DateTime, snapshot_ns UInt64, host String, program String,"
    " pid UInt32, reason String, sampled UInt8,"
    " label_keys Array(String), label_values Array(String),"
    " stack_hash UInt64, kind String, first_is_pc UInt8,"
    " live_bytes UInt64, live_blocks UInt64, alloc_bytes UInt64, alloc_blocks UInt64,"
    " free_bytes UInt64, free_blocks UInt64,"
    " definitely_lost_bytes UInt64, definitely_lost_blocks UInt64,"
    " indirectly_lost_bytes UInt64, indirectly_lost_blocks UInt64,"
    " possibly_lost_bytes UInt64, possibly_lost_blocks UInt64,"
    " still_reachable_bytes UInt64, still_reachable_blocks UInt64,"
    " frame_build_ids Array(String), frame_offsets Array(UInt64), frame_modules Array(String),"
    " sid UInt64 DEFAULT " SID_EXPR
    ") ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time)"
    " ORDER BY (program, snapshot_id, stack_hash)",
    "CREATE TABLE IF NOT EXISTS memsight_snapshots ("
    " snapshot_id String, time DateTime, snapshot_ns UInt64, host String, program String,"
    " pid UInt32, reason String, seq UInt32, sampled UInt8, leak_scan UInt8,"
    " label_keys Array(String), label_values Array(String), stacks UInt32,"
    " live_bytes UInt64, live_blocks UInt64, alloc_bytes UInt64, alloc_blocks UInt64,"
    " file_bytes UInt64, pushed DateTime"
    ") ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time)"
    " ORDER BY (program, host, pid, snapshot_id)",
    "CREATE TABLE IF NOT EXISTS memsight_symbols ("
    " build_id String, offset UInt64, idx UInt8, function String, file String, line UInt32,"
    " inlined UInt8, quality UInt8, loaded UInt64"
    ") ENGINE = ReplacingMergeTree() ORDER BY (build_id, offset, idx)",
};

/* Columns added since the first schema, for tables an older memsight made: ClickHouse
 * adds them without rewriting a part (old rows read the DEFAULT). */
static const char *const added[][3] = {
    {"memsight_stacks", "sid", "UInt64 DEFAULT " SID_EXPR},
    {"memsight_symbols", "quality", "UInt8"},
    {"memsight_symbols", "loaded", "UInt64"},
};

/* Pre-aggregated at insert for `fleet top` and `diff`: per process and stack, the row of
 * the newest snapshot holding it (ReplacingMergeTree by snapshot_ns keeps the newest when
 * it merges). Fed by a materialized view of every insert into memsight_stacks; the
 * queries keep only the rows of each process's newest snapshot (a stack its newest
 * snapshot lacks keeps an older row, which they drop), so they are right before any
 * merge and read ~N times fewer rows after (N snapshots a process). */
static const char latest_table[] =
    "CREATE TABLE IF NOT EXISTS memsight_latest ("
    " program String, host String, pid UInt32, stack_hash UInt64, snapshot_ns UInt64, sid UInt64,"
    " time DateTime, live_bytes UInt64, live_blocks UInt64, alloc_bytes UInt64, alloc_blocks UInt64"
    ") ENGINE = ReplacingMergeTree(snapshot_ns) ORDER BY (program, host, pid, stack_hash)";
#define LATEST_COLS "program, host, pid, stack_hash, snapshot_ns, sid, time, live_bytes, live_blocks," \
                    " alloc_bytes, alloc_blocks"
static const char latest_view[] =
    "CREATE MATERIALIZED VIEW IF NOT EXISTS memsight_latest_mv TO memsight_latest AS SELECT "
    LATEST_COLS " FROM memsight_stacks";

static int latest_schema(ms_ch *ch, int tries, char *err, size_t errlen)
{
    /* memsight_latest: made, with its view, and filled from the rows pushed before it
     * existed (once: a table made by an older memsight) */
    char *had = NULL;
    if (ms_ch_exec_retry(ch, tries, "EXISTS TABLE memsight_latest FORMAT TabSeparated", &had, NULL,
                         err, errlen) != 0)
        return -1;
    int fill = had[0] == '0';
    free(had);
    if (ms_ch_exec_retry(ch, tries, latest_table, NULL, NULL, err, errlen) != 0 ||
        ms_ch_exec_retry(ch, tries, latest_view, NULL, NULL, err, errlen) != 0)
        return -1;
    if (fill && ms_ch_exec(ch, "INSERT INTO memsight_latest SELECT " LATEST_COLS " FROM memsight_stacks",
                           NULL, 0, NULL, NULL, err, errlen) != 0) {
        /* made but not filled: said, and dropped so that the next run fills it again */
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        ms_ch_exec(ch, "DROP TABLE IF EXISTS memsight_latest_mv", NULL, 0, NULL, NULL, err, errlen);
        ms_ch_exec(ch, "DROP TABLE IF EXISTS memsight_latest", NULL, 0, NULL, NULL, err, errlen);
        snprintf(err, errlen, "cannot fill memsight_latest from the rows pushed before: %s", why);
        return -1;
    }
    return 0;
}

int ms_fleet_schema(ms_ch *ch, int tries, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof schema / sizeof schema[0]; i++)
        if (ms_ch_exec_retry(ch, tries, schema[i], NULL, NULL, err, errlen) != 0)
            return -1;
    char *cols = NULL;
    if (ms_ch_exec_retry(ch, tries, "SELECT concat(table, '.', name) FROM system.columns WHERE"
                         " database = currentDatabase() AND table IN ('memsight_stacks',"
                         " 'memsight_symbols') FORMAT TabSeparated", &cols, NULL, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < sizeof added / sizeof added[0] && rc == 0; i++) {
        char want[128], *sql = NULL;
        snprintf(want, sizeof want, "\n%s.%s\n", added[i][0], added[i][1]);
        /* the answer's lines, each between newlines */
        size_t wl = strlen(want);
        int have = 0;
        for (const char *p = cols; !have && p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            have = !strncmp(p, want + 1, wl - 1);
        if (have)
            continue;
        if (asprintf(&sql, "ALTER TABLE %s ADD COLUMN %s %s", added[i][0], added[i][1], added[i][2]) < 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        } else if (ms_ch_exec(ch, sql, NULL, 0, NULL, NULL, err, errlen) != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, errlen, "%s was made by an older memsight and lacks its column %s;"
                     " adding it failed: %s (docs/fleet.md, Upgrading)", added[i][0], added[i][1], why);
            rc = -1;
        }
        free(sql);
    }
    free(cols);
    return rc == 0 ? latest_schema(ch, tries, err, errlen) : rc;
}

/* ===========================================================================
 * Rows
 * ========================================================================= */
typedef struct row {
    uint64_t hash;
    const ms_stack *st;
    ms_snap_counters c;
    uint64_t leak_bytes[MS_LEAK_CLASS_COUNT], leak_blocks[MS_LEAK_CLASS_COUNT];
} row;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void hexs(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef"; /* every frame of every row: no printf */
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* A frame as (build id, offset): the module's build id in hex (or its path when it has
 * none), the pc less the module's load bias; a pc outside every module keeps its
 * address and an empty id. */
static void frame_of(const ms_snapshot *s, uint64_t pc, char *bid, size_t bidlen, uint64_t *off,
                     const char **module)
{
    const ms_module *m = ms_agg_module_for_pc(s, pc);
    *module = "";
    *off = pc;
    bid[0] = 0;
    if (!m)
        return;
    *off = pc - m->load_bias;
    *module = m->path ? m->path : "";
    if (m->build_id_len && m->build_id_len <= 64 && bidlen > 2 * m->build_id_len)
        hexs(m->build_id, m->build_id_len, bid);
    else
        snprintf(bid, bidlen, "path:%s", m->path ? m->path : "");
}

static uint64_t stack_hash(const ms_snapshot *s, const ms_stack *st)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, &st->kind, 1);
    for (uint32_t i = 0; i < st->depth; i++) {
        char bid[300];
        uint64_t off;
        const char *mod;
        frame_of(s, st->pcs[i], bid, sizeof bid, &off, &mod);
        h = fnv(h, bid, strlen(bid) + 1);
        h = fnv(h, &off, sizeof off);
    }
    return h;
}

static int cmp_row(const void *a, const void *b)
{
    const row *x = a, *y = b;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static const char *kind_name(uint8_t k)
{
    return k == MS_KIND_HEAP ? "heap" : k == MS_KIND_MMAP ? "mmap" : k == MS_KIND_STACK ? "thread_stack"
                                                                                       : "reserved";
}

static void labels_json(ms_json *j, const char *labels)
{
    const char *why;
    for (int pass = 0; pass < 2; pass++) {
        ms_json_key(j, pass ? "label_values" : "label_keys");
        ms_json_array_begin(j);
        size_t pos = 0;
        ms_label l;
        while (labels && ms_labels_next(labels, &pos, &l))
            if (ms_label_check(l.key, l.key_len + 1 + l.value_len, &why) == 0)
                ms_json_str_n(j, pass ? l.value : l.key, pass ? l.value_len : l.key_len);
        ms_json_array_end(j);
    }
}

typedef struct snapinfo {
    char id[64];
    uint64_t sid; /* the FNV-1a 64 the id starts with */
    uint64_t ns, pid, seq, size;
    const char *host, *program, *reason, *labels;
} snapinfo;

static void common(ms_json *j, const snapinfo *si, const ms_snapshot *s)
{
    ms_json_kv_str(j, "snapshot_id", si->id);
    ms_json_kv_u64(j, "time", si->ns / 1000000000ull);
    ms_json_kv_u64(j, "snapshot_ns", si->ns);
    ms_json_kv_str(j, "host", si->host);
    ms_json_kv_str(j, "program", si->program);
    ms_json_kv_u64(j, "pid", si->pid);
    ms_json_kv_str(j, "reason", si->reason);
    ms_json_kv_u64(j, "sampled", (s->flags & MS_SNAP_F_SAMPLED) != 0);
    labels_json(j, si->labels);
}

static const char *const class_col[MS_LEAK_CLASS_COUNT] = {"definitely_lost", "indirectly_lost",
                                                           "possibly_lost", "still_reachable"};

static void stack_row(ms_json *j, const snapinfo *si, const ms_snapshot *s, const row *r)
{
    ms_json_object_begin(j);
    common(j, si, s);
    ms_json_kv_u64(j, "sid", si->sid);
    ms_json_kv_u64(j, "stack_hash", r->hash);
    ms_json_kv_str(j, "kind", kind_name(r->st->kind));
    ms_json_kv_u64(j, "first_is_pc", (r->st->flags & MS_STACKF_FIRST_IS_PC) != 0);
    ms_json_kv_u64(j, "live_bytes", r->c.live_bytes);
    ms_json_kv_u64(j, "live_blocks", r->c.live_blocks);
    ms_json_kv_u64(j, "alloc_bytes", r->c.alloc_bytes);
    ms_json_kv_u64(j, "alloc_blocks", r->c.alloc_blocks);
    ms_json_kv_u64(j, "free_bytes", r->c.free_bytes);
    ms_json_kv_u64(j, "free_blocks", r->c.free_blocks);
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
        char k[64];
        snprintf(k, sizeof k, "%s_bytes", class_col[c]);
        ms_json_kv_u64(j, k, r->leak_bytes[c]);
        snprintf(k, sizeof k, "%s_blocks", class_col[c]);
        ms_json_kv_u64(j, k, r->leak_blocks[c]);
    }
    for (int pass = 0; pass < 3; pass++) {
        static const char *const keys[] = {"frame_build_ids", "frame_offsets", "frame_modules"};
        ms_json_key(j, keys[pass]);
        ms_json_array_begin(j);
        for (uint32_t i = 0; i < r->st->depth; i++) {
            char bid[300];
            uint64_t off;
            const char *mod;
            frame_of(s, r->st->pcs[i], bid, sizeof bid, &off, &mod);
            if (pass == 0)
                ms_json_str(j, bid);
            else if (pass == 1)
                ms_json_u64(j, off);
            else
                ms_json_str(j, mod);
        }
        ms_json_array_end(j);
    }
    ms_json_object_end(j);
    fputc('\n', j->out);
}

/* The identity of a snapshot is its content: the same file pushed twice is the same
 * snapshot, wherever it was copied. */
static uint64_t content_id(const char *data, size_t n, char *out)
{
    uint64_t h = fnv(0xcbf29ce484222325ull, data, n);
    uLong crc = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < n;) {
        uInt k = n - off > (1u << 30) ? (1u << 30) : (uInt)(n - off);
        crc = crc32(crc, (const Bytef *)data + off, k);
        off += k;
    }
    snprintf(out, 64, "%016" PRIx64 "%08lx%" PRIx64, h, (unsigned long)crc, (uint64_t)n);
    return h;
}

/* One prepared snapshot: its id, its rows and its completion row as JSON lines. */
typedef struct prepared {
    char id[64];
    char *rows, *mark;
    size_t rows_len, mark_len, nrows;
} prepared;

static int render(FILE **f, char **buf, size_t *len)
{
    *f = open_memstream(buf, len);
    return *f ? 0 : -1;
}

static int prepare(const char *path, prepared *pr, char *err, size_t errlen)
{
    memset(pr, 0, sizeof *pr);
    size_t flen;
    char *data = ms_read_file(path, &flen, err, errlen);
    if (!data)
        return -1;
    snapinfo si = {0};
    si.sid = content_id(data, flen, si.id);
    memcpy(pr->id, si.id, sizeof pr->id);
    free(data);
    si.size = flen;
    ms_snapshot *s = ms_snapshot_load(path, err, errlen);
    if (!s)
        return -1;
    int rc = -1;
    row *r = NULL;
    FILE *f = NULL;
    const char *v = ms_agg_meta(s, "snapshot_ns");
    si.ns = v ? strtoull(v, NULL, 10) : 0;
    if (!si.ns) {
        snprintf(err, errlen, "the snapshot has no time (snapshot_ns): ClickHouse rows need one");
        goto done;
    }
    if (si.ns / 1000000000ull < MS_FLEET_TIME_MIN || si.ns / 1000000000ull > MS_FLEET_TIME_MAX) {
        snprintf(err, errlen, "its time (snapshot_ns %" PRIu64 ") is outside what ClickHouse's DateTime"
                 " holds (1970-01-01T00:00:01Z to 2105-12-31T23:59:59Z): refused rather than stored"
                 " as another date", si.ns);
        goto done;
    }
    v = ms_agg_meta(s, "pid");
    si.pid = v ? strtoull(v, NULL, 10) : 0;
    v = ms_agg_meta(s, "seq");
    si.seq = v ? strtoull(v, NULL, 10) : 0;
    if (si.pid > UINT32_MAX || si.seq > UINT32_MAX) {
        snprintf(err, errlen, "its pid %" PRIu64 " or sequence number %" PRIu64 " does not fit 32 bits:"
                 " no process has it", si.pid, si.seq);
        goto done;
    }
    si.host = ms_agg_meta(s, "hostname");
    si.host = si.host ? si.host : "";
    si.reason = ms_agg_meta(s, "reason");
    si.reason = si.reason ? si.reason : "";
    si.labels = ms_agg_meta(s, "labels");
    const char *exe = ms_agg_meta(s, "exe");
    const char *slash = exe ? strrchr(exe, '/') : NULL;
    si.program = exe ? (slash ? slash + 1 : exe) : "";

    /* one row per distinct (build id, offset) stack: stacks equal that way are summed */
    r = calloc(s->nstacks ? s->nstacks : 1, sizeof *r);
    if (!r)
        goto oom;
    size_t n = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (st->kind == MS_KIND_RESERVED) /* address space, not memory */
            continue;
        r[n].st = st;
        r[n].hash = stack_hash(s, st);
        r[n].c = st->c;
        n++;
    }
    qsort(r, n, sizeof *r, cmp_row);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && r[m - 1].hash == r[i].hash) {
            ms_snap_counters *a = &r[m - 1].c;
            const ms_snap_counters *b = &r[i].c;
            a->live_bytes += b->live_bytes, a->live_blocks += b->live_blocks;
            a->alloc_bytes += b->alloc_bytes, a->alloc_blocks += b->alloc_blocks;
            a->free_bytes += b->free_bytes, a->free_blocks += b->free_blocks;
        } else {
            r[m++] = r[i];
        }
    }
    /* counters no process can have: more live bytes (or blocks) than any address space
     * holds, in one stack or summed (a forged or corrupt file) */
    uint64_t sum = 0;
    for (size_t i = 0; i < m; i++) {
        const ms_snap_counters *c = &r[i].c;
        if (c->live_bytes > MS_FLEET_BYTES_MAX || c->live_blocks > MS_FLEET_BYTES_MAX ||
            (sum += c->live_bytes) > MS_FLEET_BYTES_MAX) {
            snprintf(err, errlen, "a stack holds %" PRIu64 " live bytes in %" PRIu64 " blocks (%" PRIu64
                     " summed so far): more than any address space (2^57 bytes) holds; refused",
                     c->live_bytes, c->live_blocks, sum);
            goto done;
        }
    }
    for (size_t i = 0; i < s->nleaks; i++) {
        const ms_snap_leak_rec *lr = &s->leaks[i];
        const ms_stack *st = ms_snapshot_stack(s, lr->stack_id);
        if (!st || lr->leak_class >= MS_LEAK_CLASS_COUNT)
            continue;
        row key = {.hash = stack_hash(s, st)};
        row *hit = bsearch(&key, r, m, sizeof *r, cmp_row);
        if (hit) {
            hit->leak_bytes[lr->leak_class] += lr->bytes;
            hit->leak_blocks[lr->leak_class] += lr->blocks;
        }
    }
    if (render(&f, &pr->rows, &pr->rows_len) != 0)
        goto oom;
    ms_json j;
    for (size_t i = 0; i < m; i++) {
        ms_json_init(&j, f, 0);
        stack_row(&j, &si, s, &r[i]);
    }
    int bad = fclose(f) != 0;
    f = NULL;
    if (bad)
        goto oom;
    pr->nrows = m;

    ms_snap_counters tot = {0};
    for (size_t i = 0; i < m; i++) {
        tot.live_bytes += r[i].c.live_bytes, tot.live_blocks += r[i].c.live_blocks;
        tot.alloc_bytes += r[i].c.alloc_bytes, tot.alloc_blocks += r[i].c.alloc_blocks;
    }
    if (render(&f, &pr->mark, &pr->mark_len) != 0)
        goto oom;
    ms_json_init(&j, f, 0);
    ms_json_object_begin(&j);
    common(&j, &si, s);
    ms_json_kv_u64(&j, "seq", si.seq);
    ms_json_kv_u64(&j, "leak_scan", s->has_leaks != 0);
    ms_json_kv_u64(&j, "stacks", m);
    ms_json_kv_u64(&j, "live_bytes", tot.live_bytes);
    ms_json_kv_u64(&j, "live_blocks", tot.live_blocks);
    ms_json_kv_u64(&j, "alloc_bytes", tot.alloc_bytes);
    ms_json_kv_u64(&j, "alloc_blocks", tot.alloc_blocks);
    ms_json_kv_u64(&j, "file_bytes", si.size);
    ms_json_kv_u64(&j, "pushed", (uint64_t)time(NULL));
    ms_json_object_end(&j);
    fputc('\n', f);
    bad = fclose(f) != 0;
    f = NULL;
    if (bad)
        goto oom;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    if (f)
        fclose(f);
    if (rc != 0) {
        free(pr->rows);
        free(pr->mark);
        pr->rows = pr->mark = NULL;
    }
    free(r);
    ms_snapshot_free(s);
    return rc;
}

typedef struct idset {
    char (*id)[64];
    size_t n, cap;
} idset;

static int on_id(void *ctx, char **f, size_t n)
{
    idset *s = ctx;
    if (n < 1)
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        char (*p)[64] = realloc(s->id, cap * sizeof *p);
        if (!p)
            return -1;
        s->id = p;
        s->cap = cap;
    }
    snprintf(s->id[s->n++], 64, "%s", f[0]);
    return 0;
}

static int in_set(const idset *s, const char *id)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->id[i], id))
            return 1;
    return 0;
}

static void fail_all(ms_push_item *it, size_t lo, size_t hi, const char *why, int transient)
{
    for (size_t i = lo; i < hi; i++)
        if (it[i].status == MS_PUSH_PENDING) {
            it[i].status = MS_PUSH_FAILED;
            it[i].transient = transient;
            snprintf(it[i].err, sizeof it[i].err, "%s", why);
        }
}

/* Which of the batch ClickHouse already has: complete (a row in memsight_snapshots) or
 * with its stacks only (a push that failed before its completion row). */
static int ask(ms_ch *ch, const char *table, const char *ids, idset *out, char *err, size_t errlen)
{
    char *sql = NULL, *text = NULL;
    if (asprintf(&sql, "SELECT DISTINCT snapshot_id FROM %s WHERE snapshot_id IN (%s)"
                       " FORMAT TabSeparated", table, ids) < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = ms_ch_exec(ch, sql, NULL, 0, &text, NULL, err, errlen);
    free(sql);
    if (rc == 0 && ms_ch_tsv(text, on_id, out) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    }
    free(text);
    return rc;
}

static int append(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 1 << 16;
        while (c < *len + n + 1)
            c *= 2;
        char *p = realloc(*b, c);
        if (!p)
            return -1;
        *b = p;
        *cap = c;
    }
    memcpy(*b + *len, s, n);
    *len += n;
    (*b)[*len] = 0;
    return 0;
}

/* ids (of items [lo, hi) that are still pending) as a ClickHouse IN list; "" when none */
static char *id_list(ms_push_item *it, prepared *pr, size_t lo, size_t hi)
{
    size_t len = 0, cap = 0;
    char *b = NULL;
    for (size_t i = lo; i < hi; i++) {
        if (it[i].status != MS_PUSH_PENDING)
            continue;
        if ((len && append(&b, &len, &cap, ",", 1) != 0) ||
            ms_ch_quote(&b, &len, &cap, pr[i].id) != 0) {
            free(b);
            return NULL;
        }
    }
    return b ? b : strdup("");
}

static void flush(ms_ch *ch, ms_push_item *it, prepared *pr, size_t lo, size_t hi)
{
    char err[512];
    idset done = {0}, started = {0};
    char *ids = id_list(it, pr, lo, hi), *body = NULL;
    size_t len = 0, cap = 0;
    if (!ids) {
        fail_all(it, lo, hi, "out of memory", 0);
        return;
    }
    if (!ids[0])
        goto out;
    if (ask(ch, "memsight_snapshots", ids, &done, err, sizeof err) != 0 ||
        ask(ch, "memsight_stacks", ids, &started, err, sizeof err) != 0) {
        fail_all(it, lo, hi, err, ms_ch_last_transient(ch));
        goto out;
    }
    for (size_t i = lo; i < hi; i++)
        if (it[i].status == MS_PUSH_PENDING && in_set(&done, pr[i].id))
            it[i].status = MS_PUSH_ALREADY;
    /* the stacks of every snapshot not there at all, in one INSERT: one block per
     * partition (the batch stays below max_insert_block_size), so each snapshot's rows
     * land whole or not at all */
    for (size_t i = lo; i < hi; i++)
        if (it[i].status == MS_PUSH_PENDING && !in_set(&started, pr[i].id) &&
            append(&body, &len, &cap, pr[i].rows, pr[i].rows_len) != 0) {
            fail_all(it, lo, hi, "out of memory", 0);
            goto out;
        }
    if (len && ms_ch_exec(ch, "INSERT INTO memsight_stacks FORMAT JSONEachRow", body, len, NULL,
                          NULL, err, sizeof err) != 0) {
        fail_all(it, lo, hi, err, ms_ch_last_transient(ch));
        goto out;
    }
    len = 0;
    for (size_t i = lo; i < hi; i++)
        if (it[i].status == MS_PUSH_PENDING &&
            append(&body, &len, &cap, pr[i].mark, pr[i].mark_len) != 0) {
            fail_all(it, lo, hi, "out of memory", 0);
            goto out;
        }
    if (len && ms_ch_exec(ch, "INSERT INTO memsight_snapshots FORMAT JSONEachRow", body, len, NULL,
                          NULL, err, sizeof err) != 0) {
        fail_all(it, lo, hi, err, ms_ch_last_transient(ch));
        goto out;
    }
    for (size_t i = lo; i < hi; i++)
        if (it[i].status == MS_PUSH_PENDING) {
            it[i].status = MS_PUSH_DONE;
            it[i].rows = pr[i].nrows;
        }
out:
    free(ids);
    free(body);
    free(done.id);
    free(started.id);
}

#define BATCH_ROWS 500000        /* below max_insert_block_size (1048576) */
/* of JSON held at once (twice while flush joins it): 256 MiB took push to 530 MiB of RSS
 * for 4,000 snapshots and pushed ~10% faster than 32 MiB (docs/fleet.md) */
#define BATCH_BYTES (32u << 20)

/* A batch, tried again while its failure is the transport's (or a 5xx): flush asks
 * first what ClickHouse already holds, so a try whose INSERT landed although its answer
 * was lost sends nothing twice. */
static void flush_tries(ms_ch *ch, ms_push_item *it, prepared *pr, size_t lo, size_t hi, int tries)
{
    unsigned wait = 1;
    for (int t = 1;; t++) {
        flush(ch, it, pr, lo, hi);
        int again = 0;
        for (size_t k = lo; k < hi; k++)
            again |= it[k].status == MS_PUSH_FAILED && it[k].transient;
        if (!again || t >= tries)
            return;
        sleep(wait);
        wait = wait < 32 ? wait * 2 : 64;
        for (size_t k = lo; k < hi; k++)
            if (it[k].status == MS_PUSH_FAILED && it[k].transient) {
                it[k].status = MS_PUSH_PENDING;
                it[k].transient = 0;
            }
    }
}

void ms_fleet_push(ms_ch *ch, ms_push_item *it, size_t n, int tries,
                   void (*progress)(void *ctx, const ms_push_item *item), void *ctx)
{
    prepared *pr = calloc(n ? n : 1, sizeof *pr);
    if (!pr) {
        fail_all(it, 0, n, "out of memory", 0);
        return;
    }
    /* First which files ClickHouse already holds, by their ids alone (a read and a
     * digest): pushing a directory again costs no parsing and no rows. */
    for (size_t i = 0; i < n; i++) {
        size_t flen;
        char *data = ms_read_file(it[i].path, &flen, it[i].err, sizeof it[i].err);
        it[i].status = data ? MS_PUSH_PENDING : MS_PUSH_FAILED;
        if (data)
            (void)content_id(data, flen, pr[i].id);
        free(data);
    }
    for (size_t lo = 0; lo < n; lo += 2000) {
        size_t hi = lo + 2000 < n ? lo + 2000 : n;
        char *ids = id_list(it, pr, lo, hi), err[512];
        idset done = {0};
        if (ids && ids[0] && ask(ch, "memsight_snapshots", ids, &done, err, sizeof err) == 0)
            for (size_t i = lo; i < hi; i++)
                if (it[i].status == MS_PUSH_PENDING && in_set(&done, pr[i].id))
                    it[i].status = MS_PUSH_ALREADY;
        free(ids);
        free(done.id); /* a failure here is met again, and said, by the batch's own check */
    }
    size_t lo = 0, rows = 0, bytes = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && it[i].status == MS_PUSH_PENDING) {
            if (prepare(it[i].path, &pr[i], it[i].err, sizeof it[i].err) != 0)
                it[i].status = MS_PUSH_FAILED;
            if (pr[i].nrows >= BATCH_ROWS) {
                it[i].status = MS_PUSH_FAILED;
                snprintf(it[i].err, sizeof it[i].err, "%zu stacks: more than one insert block holds",
                         pr[i].nrows);
            }
        }
        int full = i < n && (rows + pr[i].nrows >= BATCH_ROWS || bytes + pr[i].rows_len >= BATCH_BYTES);
        if (i == n || full) {
            flush_tries(ch, it, pr, lo, i, tries);
            for (size_t k = lo; k < i; k++) {
                free(pr[k].rows);
                free(pr[k].mark);
                pr[k].rows = pr[k].mark = NULL;
                if (progress)
                    progress(ctx, &it[k]);
            }
            lo = i;
            rows = bytes = 0;
        }
        if (i < n && it[i].status == MS_PUSH_PENDING) {
            rows += pr[i].nrows;
            bytes += pr[i].rows_len;
        }
    }
    free(pr);
}
