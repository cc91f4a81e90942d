/* Android malloc-debug native heap dump importer (format: bionic's malloc_debug
 * README, "Backtrace Heap Dump Format"). Tools only. The text is untrusted: lines are
 * parsed with explicit bounds, numbers checked for overflow, errors name the line. */
#include "analysis/android_dump.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stack_agg.h"

#define MAX_FRAMES 256 /* malloc debug's own maximum backtrace size */

int ms_android_dump_sniff(const void *data, size_t len)
{
    size_t m = strlen(MS_ANDROID_DUMP_MAGIC);
    return len >= m && memcmp(data, MS_ANDROID_DUMP_MAGIC, m) == 0;
}

/* ---- a cursor over one line -------------------------------------------------------- */

typedef struct cur {
    const char *p, *end;
} cur;

static void skip_ws(cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int word(cur *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
        return 0;
    if (c->p + n < c->end && !isspace((unsigned char)c->p[n]))
        return 0;
    c->p += n;
    return 1;
}

static int number(cur *c, int base, uint64_t *out)
{
    skip_ws(c);
    uint64_t v = 0;
    const char *start = c->p;
    if (base == 16 && c->end - c->p > 2 && c->p[0] == '0' && (c->p[1] == 'x' || c->p[1] == 'X'))
        c->p += 2, start = c->p;
    while (c->p < c->end) {
        int d;
        char ch = *c->p;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (base == 16 && ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else if (base == 16 && ch >= 'A' && ch <= 'F')
            d = ch - 'A' + 10;
        else
            break;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return -1; /* overflow */
        v = v * (uint64_t)base + (uint64_t)d;
        c->p++;
    }
    if (c->p == start)
        return -1;
    if (c->p < c->end && !isspace((unsigned char)*c->p) && *c->p != '}' && *c->p != '-')
        return -1;
    *out = v;
    return 0;
}

static int at_end(cur *c)
{
    skip_ws(c);
    return c->p >= c->end;
}

/* ---- the snapshot being built ----------------------------------------------------- */

typedef struct builder {
    ms_snapshot *s;
    size_t capmeta, capmods, capstacks;
    ms_agg *keys; /* backtrace key -> stack index (same order) */
    ms_agg *named; /* "sym.<pc>" keys already added: the first name of a pc wins */
    const char *name;
    char *err;
    size_t errlen;
    size_t line;
} builder;

static int fail(builder *b, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->line)
        snprintf(b->err, b->errlen, "%s: line %zu: %s", b->name, b->line, msg);
    else
        snprintf(b->err, b->errlen, "%s: %s", b->name, msg);
    return -1;
}

static int grow(void **p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    void *np = realloc(*p, nc * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = nc;
    return 0;
}

/* Keeps printable ASCII and UTF-8 bytes; control characters become '?'. */
static char *dup_clean(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++)
        s[i] = ((unsigned char)p[i] < 0x20 || p[i] == 0x7f) ? '?' : p[i];
    s[n] = 0;
    return s;
}

static int add_meta_new(builder *b, const char *k, const char *v, size_t vlen);

static int add_meta(builder *b, const char *k, const char *v, size_t vlen)
{
    ms_snapshot *s = b->s;
    for (size_t i = 0; i < s->nmeta; i++)
        if (!strcmp(s->meta[i].key, k))
            return 0; /* first wins */
    return add_meta_new(b, k, v, vlen);
}

/* Adds a key known to be new (no scan of what is there). */
static int add_meta_new(builder *b, const char *k, const char *v, size_t vlen)
{
    ms_snapshot *s = b->s;
    if (grow((void **)&s->meta, &b->capmeta, s->nmeta, sizeof *s->meta) != 0)
        return fail(b, "out of memory");
    char *key = strdup(k), *val = dup_clean(v, vlen);
    if (!key || !val) {
        free(key);
        free(val);
        return fail(b, "out of memory");
    }
    s->meta[s->nmeta].key = key;
    s->meta[s->nmeta].value = val;
    s->nmeta++;
    return 0;
}

static int add_meta_u64(builder *b, const char *k, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return add_meta(b, k, buf, strlen(buf));
}

/* z Z sz SIZE num NUM bt PC...  */
static int parse_record(builder *b, cur *c, int minor, ms_stack **last)
{
    uint64_t z, sz, num, pcs[MAX_FRAMES];
    uint32_t depth = 0;
    uint16_t flags = 0;
    if (!word(c, "z") || number(c, 10, &z) != 0)
        return fail(b, "expected 'z <0|1>'");
    if (!word(c, "sz") || number(c, 10, &sz) != 0)
        return fail(b, "expected 'sz <size>'");
    if (!word(c, "num") || number(c, 10, &num) != 0)
        return fail(b, "expected 'num <count>'");
    if (minor == 0)
        num = 1; /* v1.0 writers set num wrongly; the README says to read it as 1 */
    if (!word(c, "bt"))
        return fail(b, "expected 'bt'");
    while (!at_end(c)) {
        uint64_t pc;
        if (number(c, 16, &pc) != 0)
            return fail(b, "bad frame address");
        if (depth == MAX_FRAMES) {
            flags |= MS_STACKF_TRUNCATED;
            continue;
        }
        pcs[depth++] = pc;
    }
    if (num && sz > UINT64_MAX / num)
        return fail(b, "size x count overflows");

    /* key: the backtrace */
    char *key = malloc((size_t)depth * 17 + 2);
    if (!key)
        return fail(b, "out of memory");
    char *kp = key;
    for (uint32_t i = 0; i < depth; i++)
        kp += sprintf(kp, "%" PRIx64 ",", pcs[i]);
    *kp = 0;
    size_t before = b->keys->nnames;
    long idx = ms_agg_intern(b->keys, key);
    free(key);
    if (idx < 0)
        return fail(b, "out of memory");
    ms_snapshot *s = b->s;
    ms_stack *st;
    if (b->keys->nnames == before) {
        st = &s->stacks[idx];
    } else {
        if (grow((void **)&s->stacks, &b->capstacks, s->nstacks, sizeof *s->stacks) != 0)
            return fail(b, "out of memory");
        st = &s->stacks[s->nstacks];
        memset(st, 0, sizeof *st);
        st->id = (uint32_t)s->nstacks + 1;
        st->kind = MS_KIND_HEAP;
        st->flags = flags;
        st->depth = depth;
        st->pcs = malloc((depth ? depth : 1) * sizeof *st->pcs);
        if (!st->pcs)
            return fail(b, "out of memory");
        memcpy(st->pcs, pcs, depth * sizeof *pcs);
        s->nstacks++;
    }
    if (st->c.live_bytes > UINT64_MAX - sz * num)
        return fail(b, "totals overflow");
    st->c.live_blocks += num;
    st->c.live_bytes += sz * num;
    (void)z;
    *last = st;
    return 0;
}

/* bt_info {"MAP" RELPC "FUNCTION" OFFSET} ...: one element per frame of the record. */
static int parse_bt_info(builder *b, cur *c, const ms_stack *st)
{
    uint32_t i = 0;
    if (!st)
        return fail(b, "bt_info without a record before it");
    word(c, "bt_info");
    while (!at_end(c)) {
        if (*c->p != '{')
            return fail(b, "bt_info: expected '{'");
        c->p++;
        /* "MAP" */
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"')
            return fail(b, "bt_info: expected a quoted map name");
        const char *q = memchr(c->p + 1, '"', (size_t)(c->end - c->p - 1));
        if (!q)
            return fail(b, "bt_info: unterminated map name");
        c->p = q + 1;
        uint64_t rel, off;
        if (number(c, 16, &rel) != 0)
            return fail(b, "bt_info: bad relative pc");
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"')
            return fail(b, "bt_info: expected a quoted function name");
        /* the name may hold quotes, spaces and braces: it ends at '" <hex>}' */
        const char *fn = c->p + 1, *fe = NULL;
        for (const char *x = fn; x < c->end; x++) {
            if (*x != '"')
                continue;
            const char *y = x + 1;
            while (y < c->end && *y == ' ')
                y++;
            const char *h = y;
            while (y < c->end && isxdigit((unsigned char)*y))
                y++;
            if (y > h && y < c->end && *y == '}') {
                fe = x;
                break;
            }
        }
        if (!fe)
            return fail(b, "bt_info: unterminated function name");
        c->p = fe + 1;
        if (number(c, 16, &off) != 0)
            return fail(b, "bt_info: bad function offset");
        skip_ws(c);
        if (c->p >= c->end || *c->p != '}')
            return fail(b, "bt_info: expected '}'");
        c->p++;
        if (i < st->depth && fe > fn) {
            char k[40];
            snprintf(k, sizeof k, MS_AGG_SYM_PREFIX "%" PRIx64, st->pcs[i]);
            size_t before = b->named->nnames;
            if (ms_agg_intern(b->named, k) < 0)
                return fail(b, "out of memory");
            if (b->named->nnames != before && add_meta_new(b, k, fn, (size_t)(fe - fn)) != 0)
                return -1;
        }
        (void)rel;
        i++;
    }
    return 0;
}

/* /proc/PID/maps line: start-end perms offset dev inode [path] */
static int parse_map(builder *b, cur *c)
{
    uint64_t lo, hi, off, inode;
    if (number(c, 16, &lo) != 0 || c->p >= c->end || *c->p != '-')
        return fail(b, "MAPS: bad address range");
    c->p++;
    if (number(c, 16, &hi) != 0 || hi < lo)
        return fail(b, "MAPS: bad address range");
    skip_ws(c);
    const char *perm = c->p;
    while (c->p < c->end && !isspace((unsigned char)*c->p))
        c->p++;
    if (c->p - perm < 3)
        return fail(b, "MAPS: bad permissions");
    if (number(c, 16, &off) != 0)
        return fail(b, "MAPS: bad offset");
    skip_ws(c);
    while (c->p < c->end && !isspace((unsigned char)*c->p)) /* dev */
        c->p++;
    if (number(c, 10, &inode) != 0)
        return fail(b, "MAPS: bad inode");
    skip_ws(c);
    const char *path = c->p;
    size_t plen = (size_t)(c->end - c->p);
    while (plen && isspace((unsigned char)path[plen - 1]))
        plen--;
    if (!plen || path[0] != '/')
        return 0; /* anonymous or special mapping: no module */
    uint32_t flags = (perm[0] == 'r' ? 4 : 0) | (perm[1] == 'w' ? 2 : 0) | (perm[2] == 'x' ? 1 : 0);

    ms_snapshot *s = b->s;
    ms_module *m = s->nmodules ? &s->modules[s->nmodules - 1] : NULL;
    if (!m || strlen(m->path) != plen || memcmp(m->path, path, plen) != 0 || lo < m->load_bias ||
        off < m->segs[m->nseg - 1].offset) {
        if (grow((void **)&s->modules, &b->capmods, s->nmodules, sizeof *s->modules) != 0)
            return fail(b, "out of memory");
        m = &s->modules[s->nmodules];
        memset(m, 0, sizeof *m);
        m->path = dup_clean(path, plen);
        if (!m->path)
            return fail(b, "out of memory");
        m->load_bias = lo >= off ? lo - off : 0;
        s->nmodules++;
    }
    ms_snap_segment *ns = realloc(m->segs, (m->nseg + 1) * sizeof *ns);
    if (!ns)
        return fail(b, "out of memory");
    m->segs = ns;
    ms_snap_segment *g = &m->segs[m->nseg++];
    memset(g, 0, sizeof *g);
    g->vaddr = lo - m->load_bias;
    g->memsz = hi - lo;
    g->offset = off;
    g->flags = flags;
    return 0;
}

ms_snapshot *ms_android_dump_parse(const char *data, size_t len, const char *name, char *err,
                                   size_t errlen)
{
    builder b;
    memset(&b, 0, sizeof b);
    b.name = name ? name : "android heap dump";
    b.err = err;
    b.errlen = errlen;
    if (!ms_android_dump_sniff(data, len)) {
        fail(&b, "not an Android native heap dump (no '%s' header)", MS_ANDROID_DUMP_MAGIC);
        return NULL;
    }
    b.s = calloc(1, sizeof *b.s);
    b.keys = ms_agg_new();
    b.named = ms_agg_new();
    if (!b.s || !b.keys || !b.named || !(b.s->path = strdup(b.name))) {
        fail(&b, "out of memory");
        goto bad;
    }
    b.s->version_major = MS_SNAP_VERSION_MAJOR;
    b.s->version_minor = MS_SNAP_VERSION_MINOR;

    enum { HEADER, RECORDS, MAPS, DONE } state = HEADER;
    int minor = -1;
    uint64_t hdr_total = 0, hdr_records = 0, bt_size = 0, nrecords = 0;
    int have_total = 0, have_records = 0;
    ms_stack *last = NULL;
    const char *p = data, *end = data + len;
    while (p < end && state != DONE) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        cur c = {p, le};
        b.line++;
        p = nl ? nl + 1 : end;
        if (b.line == 1) {
            c.p += strlen(MS_ANDROID_DUMP_MAGIC);
            uint64_t maj = 0, mnr = 0;
            int nd = 0;
            while (c.p < c.end && isdigit((unsigned char)*c.p) && nd < 6)
                maj = maj * 10 + (uint64_t)(*c.p++ - '0'), nd++;
            if (!nd || c.p >= c.end || *c.p != '.')
                goto bad_version;
            c.p++;
            if (number(&c, 10, &mnr) != 0 || maj != 1)
                goto bad_version;
            minor = mnr > 2 ? 2 : (int)mnr; /* a newer minor is read as the latest known */
            char v[64];
            snprintf(v, sizeof v, "android-native-heap-dump v1.%" PRIu64, mnr);
            if (add_meta(&b, "source", v, strlen(v)) != 0)
                goto bad;
            continue;
        bad_version:
            fail(&b, "unsupported dump version (this reader knows v1.0 to v1.2)");
            goto bad;
        }
        if (at_end(&c))
            continue;
        if (state == MAPS) {
            cur line = c;
            if (word(&c, "END") && at_end(&c)) {
                state = DONE;
                continue;
            }
            if (parse_map(&b, &line) != 0)
                goto bad;
            continue;
        }
        cur save = c;
        if (word(&c, "z")) {
            c = save;
            if (parse_record(&b, &c, minor, &last) != 0)
                goto bad;
            nrecords++;
            state = RECORDS;
            continue;
        }
        c = save;
        if (word(&c, "bt_info")) {
            c = save;
            if (parse_bt_info(&b, &c, last) != 0)
                goto bad;
            continue;
        }
        c = save;
        if (word(&c, "MAPS")) {
            state = MAPS;
            continue;
        }
        c = save;
        if (state == HEADER) {
            static const char fp[] = "Build fingerprint:";
            if ((size_t)(c.end - c.p) > sizeof fp - 1 && !memcmp(c.p, fp, sizeof fp - 1)) {
                cur v = {c.p + sizeof fp - 1, c.end};
                skip_ws(&v);
                const char *ve = v.end;
                while (ve > v.p && isspace((unsigned char)ve[-1]))
                    ve--;
                if (ve - v.p >= 2 && *v.p == '\'' && ve[-1] == '\'')
                    v.p++, ve--;
                if (add_meta(&b, "build_fingerprint", v.p, (size_t)(ve - v.p)) != 0)
                    goto bad;
                continue;
            }
            if (word(&c, "Total") && word(&c, "memory:")) {
                if (number(&c, 10, &hdr_total) != 0) {
                    fail(&b, "bad 'Total memory'");
                    goto bad;
                }
                have_total = 1;
                continue;
            }
            c = save;
            if (word(&c, "Allocation") && word(&c, "records:")) {
                if (number(&c, 10, &hdr_records) != 0) {
                    fail(&b, "bad 'Allocation records'");
                    goto bad;
                }
                have_records = 1;
                continue;
            }
            c = save;
            if (word(&c, "Backtrace") && word(&c, "size:")) {
                if (number(&c, 10, &bt_size) != 0) {
                    fail(&b, "bad 'Backtrace size'");
                    goto bad;
                }
                continue;
            }
            continue; /* other header lines are informational */
        }
        fail(&b, "unexpected line in the allocation records");
        goto bad;
    }
    b.line = 0;
    if (state != DONE && state != MAPS && nrecords == 0 && !have_total) {
        fail(&b, "truncated: no allocation records and no MAPS section");
        goto bad;
    }
    if (state == MAPS) {
        if (add_meta(&b, "android.truncated", "maps section has no END", 23) != 0)
            goto bad;
    }
    uint64_t total = 0, blocks = 0;
    for (size_t i = 0; i < b.s->nstacks; i++) {
        total += b.s->stacks[i].c.live_bytes;
        blocks += b.s->stacks[i].c.live_blocks;
    }
    if ((have_total && add_meta_u64(&b, "android.total_memory", hdr_total) != 0) ||
        (have_records && add_meta_u64(&b, "android.allocation_records", hdr_records) != 0) ||
        (bt_size && add_meta_u64(&b, "android.backtrace_size", bt_size) != 0) ||
        add_meta_u64(&b, "android.records_read", nrecords) != 0 ||
        add_meta_u64(&b, "sample_interval", 0) != 0 || add_meta(&b, "reason", "api", 3) != 0)
        goto bad;
    (void)blocks;
    /* the executable: the first mapped file that is executable */
    for (size_t i = 0; i < b.s->nmodules; i++) {
        const ms_module *m = &b.s->modules[i];
        int x = 0;
        for (uint32_t j = 0; j < m->nseg; j++)
            x |= m->segs[j].flags & 1;
        if (x) {
            if (add_meta(&b, "exe", m->path, strlen(m->path)) != 0)
                goto bad;
            break;
        }
    }
    if (ms_agg_index_names(b.s) != 0) {
        fail(&b, "out of memory");
        goto bad;
    }
    ms_agg_free(b.keys);
    ms_agg_free(b.named);
    return b.s;
bad:
    ms_agg_free(b.keys);
    ms_agg_free(b.named);
    ms_snapshot_free(b.s); /* what is built so far: the reader's own free */
    return NULL;
}
