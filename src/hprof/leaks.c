/* Leak finding after Shark (LeakCanary): marks objects whose lifecycle ended, reads the
 * primitive fields that decide it with a second, bounds-checked streaming pass over the
 * dump (the graph keeps references only), finds their shortest paths in one search where
 * leaking objects are leaves, and groups them by Shark's SHA-1 leak signature.
 * Never trusts the file; never prints except into the FILE given to the print function. */
#include "hprof/leaks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hprof/errmsg.h"
#include "hprof/sizes.h"

/* ---- SHA-1 (FIPS 180-4), for Shark-compatible signatures ---- */

typedef struct sha1 {
    uint32_t h[5];
    uint64_t len;
    uint8_t blk[64];
    size_t n;
} sha1;

static inline uint32_t rol(uint32_t x, int k) { return x << k | x >> (32 - k); }

static void sha1_block(sha1 *s, const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void sha1_init(sha1 *s)
{
    static const uint32_t h0[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->n = 0;
}

static void sha1_add(sha1 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->len += len;
    while (len) {
        size_t k = 64 - s->n < len ? 64 - s->n : len;
        memcpy(s->blk + s->n, p, k);
        s->n += k;
        p += k;
        len -= k;
        if (s->n == 64) {
            sha1_block(s, s->blk);
            s->n = 0;
        }
    }
}

static void sha1_hex(sha1 *s, char out[41])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, be[8];
    sha1_add(s, &pad, 1);
    while (s->n != 56)
        sha1_add(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha1_add(s, be, 8);
    for (int i = 0; i < 5; i++)
        snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

void ms_hprof_sha1_hex(const void *data, size_t len, char out[41])
{
    sha1 s;
    sha1_init(&s);
    sha1_add(&s, data, len);
    sha1_hex(&s, out);
}

/* ---- primitive field values: a second pass over the file ----
 * Only INSTANCE_DUMP records of candidate objects are read; everything else is skipped by
 * its length, with every length checked against the enclosing record. */

typedef struct cand {
    uint64_t id;
    ms_hidx obj;
    uint32_t off;   /* byte offset of the wanted field in the instance's field data */
    uint8_t size;   /* its size (1..8) */
    uint8_t found;
    uint64_t value; /* big-endian bytes as an unsigned number */
} cand;

typedef struct brd {
    gzFile f;
    uint64_t off; /* file offset (of the uncompressed data) of the next byte */
    size_t len, pos;
    uint8_t buf[1 << 16];
} brd;

static int b_read(brd *b, void *dst, size_t n)
{
    uint8_t *d = dst;
    while (n) {
        if (b->pos == b->len) {
            int got = gzread(b->f, b->buf, sizeof b->buf);
            if (got <= 0)
                return -1;
            b->len = (size_t)got;
            b->pos = 0;
        }
        size_t k = b->len - b->pos < n ? b->len - b->pos : n;
        memcpy(d, b->buf + b->pos, k);
        b->pos += k;
        b->off += k;
        d += k;
        n -= k;
    }
    return 0;
}

static int b_skip(brd *b, uint64_t n)
{
    size_t k = b->len - b->pos < n ? b->len - b->pos : (size_t)n;
    b->pos += k;
    b->off += k;
    n -= k;
    if (n) {
        if (n > INT64_MAX || gzseek(b->f, (z_off_t)n, SEEK_CUR) < 0)
            return -1;
        b->off += n;
    }
    return 0;
}

static uint64_t be_num(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static int cmp_cand(const void *a, const void *b)
{
    uint64_t x = ((const cand *)a)->id, y = ((const cand *)b)->id;
    return x < y ? -1 : x > y;
}

static cand *find_cand(cand *c, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].id == id ? &c[lo] : NULL;
}

/* Size in the file of a value of HPROF basic type t, 0 if t is not one. */
static uint32_t tsize(uint8_t t, uint32_t ids)
{
    if (t != MS_HT_OBJECT && (t < MS_HT_BOOLEAN || t > MS_HT_LONG))
        return 0;
    return ms_hsize_type_in_file(t, ids);
}

#define NEED(n)                                                                           \
    do {                                                                                  \
        if ((uint64_t)(n) > left)                                                         \
            goto crosses;                                                                 \
        left -= (n);                                                                      \
    } while (0)
#define READ(dst, n)                                                                      \
    do {                                                                                  \
        NEED(n);                                                                          \
        if (b_read(b, (dst), (n)) < 0)                                                    \
            goto truncated;                                                               \
    } while (0)
#define SKIP(n)                                                                           \
    do {                                                                                  \
        NEED(n);                                                                          \
        if (b_skip(b, (n)) < 0)                                                           \
            goto truncated;                                                               \
    } while (0)

/* Walks the sub-records of one heap dump record of length left. */
static int heap_records(brd *b, uint64_t left, uint32_t ids, cand *c, size_t nc, char *err,
                        size_t errlen)
{
    uint8_t t[32];
    uint64_t at = b->off;
    uint8_t tag = 0;
    while (left) {
        at = b->off;
        READ(&tag, 1);
        switch (tag) {
        case 0xFF: case 0x05: case 0x07: case 0x89: case 0x8A: case 0x8B: case 0x8C:
        case 0x8D: case 0x90:
            SKIP(ids);
            break;
        case 0x01:
            SKIP(2 * ids);
            break;
        case 0x02: case 0x03: case 0x08: case 0x8E:
            SKIP(ids + 8);
            break;
        case 0x04: case 0x06: case 0xFE:
            SKIP(ids + 4);
            break;
        case 0x20: { /* CLASS_DUMP */
            SKIP(7 * ids + 8);
            uint8_t u2[2];
            READ(u2, 2);
            for (uint32_t k = 0, n = (uint32_t)be_num(u2, 2); k < n; k++) {
                READ(t, 3);
                uint32_t s = tsize(t[2], ids);
                if (!s)
                    goto badtype;
                SKIP(s);
            }
            READ(u2, 2);
            for (uint32_t k = 0, n = (uint32_t)be_num(u2, 2); k < n; k++) {
                READ(t, ids + 1);
                uint32_t s = tsize(t[ids], ids);
                if (!s)
                    goto badtype;
                SKIP(s);
            }
            READ(u2, 2);
            SKIP((uint64_t)be_num(u2, 2) * (ids + 1));
            break;
        }
        case 0x21: { /* INSTANCE_DUMP */
            READ(t, 2 * ids + 8);
            uint64_t id = be_num(t, ids), n = be_num(t + 2 * ids + 4, 4);
            cand *x = nc ? find_cand(c, nc, id) : NULL;
            if (x && (uint64_t)x->off + x->size <= n) {
                uint8_t v[8];
                SKIP(x->off);
                READ(v, x->size);
                SKIP(n - x->off - x->size);
                x->value = be_num(v, x->size);
                x->found = 1;
            } else {
                SKIP(n);
            }
            break;
        }
        case 0x22: { /* OBJECT_ARRAY_DUMP */
            READ(t, ids + 8);
            SKIP(be_num(t + ids + 4, 4) * ids + ids);
            break;
        }
        case 0x23: { /* PRIMITIVE_ARRAY_DUMP */
            READ(t, ids + 9);
            uint32_t s = tsize(t[ids + 8], ids);
            if (!s || t[ids + 8] == MS_HT_OBJECT)
                goto badtype;
            SKIP(be_num(t + ids + 4, 4) * s);
            break;
        }
        case 0xC3: /* PRIMITIVE_ARRAY_NODATA */
            SKIP(ids + 9);
            break;
        default:
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": unknown heap dump sub-record 0x%02x", at, tag);
            return -1;
        }
    }
    return 0;
crosses:
    ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": sub-record 0x%02x runs past its heap dump record",
            at, tag);
    return -1;
truncated:
    ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": file truncated in sub-record 0x%02x", at, tag);
    return -1;
badtype:
    ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": bad basic type in sub-record 0x%02x", at, tag);
    return -1;
}

/* Fills the values of the candidates (sorted by id) from the dump at path. */
static int read_values(const char *path, uint32_t ids, cand *c, size_t nc, char *err,
                       size_t errlen)
{
    brd *b = calloc(1, sizeof *b);
    if (!b) {
        ms_hprof_set_err(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    b->f = gzopen(path, "rb");
    if (!b->f) {
        ms_hprof_set_err(err, errlen, "cannot open %s again to read field values", path);
        free(b);
        return -1;
    }
    char hdr[32];
    size_t k = 0;
    do {
        if (k == sizeof hdr || b_read(b, &hdr[k], 1) < 0) {
            ms_hprof_set_err(err, errlen, "not an HPROF file");
            goto out;
        }
    } while (hdr[k++]);
    uint8_t h[12];
    if (strncmp(hdr, "JAVA PROFILE", 12) || b_read(b, h, 12) < 0 || be_num(h, 4) != ids) {
        ms_hprof_set_err(err, errlen, "not the HPROF file that was read (header differs)");
        goto out;
    }
    for (;;) {
        uint8_t r[9];
        uint64_t at = b->off;
        if (b_read(b, r, 1) < 0)
            break; /* end of file */
        if (b_read(b, r + 1, 8) < 0) {
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": file truncated in a record header", at);
            goto out;
        }
        uint64_t len = be_num(r + 5, 4);
        if (r[0] == 0x0C || r[0] == 0x1C) {
            if (heap_records(b, len, ids, c, nc, err, errlen) < 0)
                goto out;
        } else if (b_skip(b, len) < 0) {
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": file truncated in record 0x%02x", at, r[0]);
            goto out;
        }
    }
    rc = 0;
out:
    gzclose(b->f);
    free(b);
    return rc;
}

/* ---- the rules: which objects are leaking, which are known not to be ---- */

enum { R_NONE = 0, R_ACTIVITY, R_FRAGMENT, R_WATCHED };
static const char *const reason_text[] = {
    "", "Activity#mDestroyed is true", "Fragment#mFragmentManager is null",
    "retained by a LeakCanary KeyedWeakReference"};

/* Byte offset in the instance field data of class cls of field `field` declared by a class
 * named decl; -1 if cls has no such field. *type receives its basic type. */
static long field_offset(const ms_hgraph *g, uint32_t cls, const char *decl, const char *field,
                         uint8_t *type)
{
    uint64_t off = 0;
    for (uint32_t c = cls, depth = 0; c < g->nclass && depth < 1000; c = g->classes[c].super, depth++) {
        const ms_hclass *k = &g->classes[c];
        int here = !strcmp(ms_hgraph_class_name(g, c), decl);
        for (uint32_t f = k->field_first; f < k->field_first + k->field_count && f < g->nfield; f++) {
            if (here && !strcmp(g->strs + g->fields[f].name, field)) {
                *type = g->fields[f].type;
                return off > INT32_MAX ? -1 : (long)off;
            }
            off += ms_hsize_type_in_file(g->fields[f].type, g->id_size);
        }
        if (here)
            return -1;
    }
    return -1;
}

/* Does class cls (or a superclass) have an instance field named field? */
static int has_field(const ms_hgraph *g, uint32_t cls, const char *field)
{
    for (uint32_t c = cls, depth = 0; c < g->nclass && depth < 1000; c = g->classes[c].super, depth++)
        for (uint32_t f = g->classes[c].field_first;
             f < g->classes[c].field_first + g->classes[c].field_count && f < g->nfield; f++)
            if (!strcmp(g->strs + g->fields[f].name, field))
                return 1;
    return 0;
}

/* Target of object i's reference through a field named field (kind FIELD or REFERENT),
 * MS_HIDX_NONE when null or absent. */
static ms_hidx ref_field(const ms_hgraph *g, ms_hidx i, const char *field)
{
    for (uint64_t e = g->edge_off[i]; e < g->edge_off[i + 1]; e++) {
        uint32_t l = g->edge_label[e];
        unsigned kind = ms_hedge_kind_of(l);
        uint32_t v = ms_hedge_value_of(l);
        if ((kind == MS_HEDGE_FIELD || kind == MS_HEDGE_REFERENT) && v < g->nfield &&
            !strcmp(g->strs + g->fields[v].name, field))
            return g->edge_dst[e];
    }
    return MS_HIDX_NONE;
}

static const char *const fragment_classes[] = {
    "android.app.Fragment", "android.support.v4.app.Fragment", "androidx.fragment.app.Fragment"};
static const char *const kwr_classes[] = {
    "leakcanary.KeyedWeakReference", "com.squareup.leakcanary.KeyedWeakReference"};

/* Per object: status in the low 2 bits, reason << 2. */
static int classify(const char *path, const ms_hgraph *g, uint8_t *st, char *err,
                    size_t errlen)
{
    uint8_t *kind = calloc((size_t)g->nclass + 1, 1); /* 1 activity, 2 fragment, 3 KWR */
    if (!kind) {
        ms_hprof_set_err(err, errlen, "out of memory");
        return -1;
    }
    for (uint32_t c = 0; c < g->nclass; c++) {
        if (ms_hgraph_class_is_a(g, c, "android.app.Activity"))
            kind[c] = 1;
        for (size_t k = 0; k < 3; k++)
            if (ms_hgraph_class_is_a(g, c, fragment_classes[k]) && has_field(g, c, "mFragmentManager"))
                kind[c] = 2;
        for (size_t k = 0; k < 2; k++)
            if (ms_hgraph_class_is_a(g, c, kwr_classes[k]))
                kind[c] = 3;
    }
    /* candidates for a primitive field: activities (mDestroyed), watched references
     * (retainedUptimeMillis) */
    size_t nc = 0, cap = 0;
    cand *c = NULL;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t cls = g->obj_class[i];
        if (g->obj_kind[i] != MS_HOBJ_INSTANCE || cls >= g->nclass)
            continue;
        if (kind[cls] == 2) {
            st[i] = ref_field(g, i, "mFragmentManager") == MS_HIDX_NONE
                        ? (uint8_t)(MS_LEAK_LEAKING | R_FRAGMENT << 2)
                        : MS_LEAK_NOT_LEAKING;
            continue;
        }
        if (kind[cls] != 1 && kind[cls] != 3)
            continue;
        uint8_t type = 0;
        long off = kind[cls] == 1
                       ? field_offset(g, cls, "android.app.Activity", "mDestroyed", &type)
                       : -1;
        if (kind[cls] == 3) {
            for (size_t k = 0; k < 2 && off < 0; k++)
                off = field_offset(g, cls, kwr_classes[k], "retainedUptimeMillis", &type);
        }
        if (off < 0 && kind[cls] == 1)
            continue; /* no mDestroyed: status unknown */
        if (nc == cap) {
            cap = cap ? cap * 2 : 64;
            cand *n = realloc(c, cap * sizeof *c);
            if (!n) {
                free(c);
                free(kind);
                ms_hprof_set_err(err, errlen, "out of memory");
                return -1;
            }
            c = n;
        }
        c[nc++] = (cand){.id = ms_hgraph_id(g, i), .obj = i, .off = off < 0 ? UINT32_MAX : (uint32_t)off,
                         .size = off < 0 ? 0 : (uint8_t)ms_hsize_type_in_file(type, g->id_size)};
    }
    int rc = 0;
    if (nc) {
        qsort(c, nc, sizeof *c, cmp_cand);
        /* candidates without a field to read (legacy KeyedWeakReference) need no pass */
        size_t need = 0;
        for (size_t k = 0; k < nc; k++)
            need += c[k].size != 0;
        if (need) {
            for (size_t k = 0; k < nc; k++)
                if (!c[k].size)
                    c[k].off = 0; /* read nothing: size 0 */
            rc = read_values(path, g->id_size, c, nc, err, errlen);
        }
    }
    /* activities first: a watched reference's referent is leaking whatever it says */
    for (size_t k = 0; rc == 0 && k < nc; k++) {
        ms_hidx i = c[k].obj;
        if (kind[g->obj_class[i]] == 1 && c[k].found)
            st[i] = c[k].value ? (uint8_t)(MS_LEAK_LEAKING | R_ACTIVITY << 2) : MS_LEAK_NOT_LEAKING;
    }
    for (size_t k = 0; rc == 0 && k < nc; k++) {
        ms_hidx i = c[k].obj;
        if (kind[g->obj_class[i]] != 3)
            continue;
        /* its referent leaks unless it is only being watched (retainedUptimeMillis == -1) */
        ms_hidx ref = ref_field(g, i, "referent");
        int64_t retained = c[k].size == 8 ? (int64_t)c[k].value : 0;
        if (ref != MS_HIDX_NONE && (!c[k].size || !c[k].found || retained != -1))
            st[ref] = (uint8_t)(MS_LEAK_LEAKING | R_WATCHED << 2);
    }
    free(c);
    free(kind);
    return rc;
}

/* ---- traces and signatures ---- */

static uint8_t base_status(const ms_hgraph *g, const uint8_t *st, ms_hidx v)
{
    if (g->obj_kind[v] == MS_HOBJ_CLASS)
        return MS_LEAK_NOT_LEAKING; /* a class is never leaking */
    return st[v] & 3;
}

/* Shark's status propagation and suspect references (RealLeakTracerFactory, LeakTrace). */
static void trace_status(const ms_hgraph *g, const uint8_t *st, const ms_hprof_path *p,
                         uint8_t *status, uint8_t *suspect)
{
    size_t n = p->len;
    for (size_t k = 0; k < n; k++)
        status[k] = base_status(g, st, p->obj[k]);
    status[n - 1] = MS_LEAK_LEAKING;
    size_t last_not = SIZE_MAX;
    for (size_t k = 0; k + 1 < n; k++)
        if (status[k] == MS_LEAK_NOT_LEAKING)
            last_not = k;
    if (last_not != SIZE_MAX)
        for (size_t k = 0; k < last_not; k++)
            status[k] = MS_LEAK_NOT_LEAKING;
    size_t first_leak = n - 1;
    for (size_t k = last_not == SIZE_MAX ? 0 : last_not + 1; k < n; k++)
        if (status[k] == MS_LEAK_LEAKING) {
            first_leak = k;
            break;
        }
    for (size_t k = first_leak; k < n; k++)
        status[k] = MS_LEAK_LEAKING;
    for (size_t k = 0; k < n; k++) {
        suspect[k] = 0;
        if (k + 1 >= n)
            continue;
        if (status[k] == MS_LEAK_UNKNOWN ||
            (status[k] == MS_LEAK_NOT_LEAKING &&
             (k + 2 == n || status[k + 1] != MS_LEAK_NOT_LEAKING)))
            suspect[k] = 1;
    }
}

static void signature(const ms_hgraph *g, const ms_hprof_path *p, const uint8_t *suspect,
                      char out[41])
{
    sha1 s;
    sha1_init(&s);
    for (size_t k = 0; k + 1 < p->len; k++) {
        if (!suspect[k])
            continue;
        ms_hidx v = p->obj[k];
        const char *cls = g->obj_kind[v] == MS_HOBJ_CLASS
                              ? ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, v))
                              : ms_hgraph_class_name(g, g->obj_class[v]);
        sha1_add(&s, cls, strlen(cls));
        ms_hprof_edge_ref r = ms_hprof_edge_describe(g, p->edge[k + 1]);
        const char *name = r.field ? r.field : "[x]";
        sha1_add(&s, name, strlen(name));
    }
    sha1_hex(&s, out);
}

typedef struct leak {
    char sig[41];
    ms_hidx obj;
    size_t len;
} leak;

static int cmp_leak(const void *a, const void *b)
{
    const leak *x = a, *y = b;
    int c = strcmp(x->sig, y->sig);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static int cmp_group(const void *a, const void *b)
{
    const ms_hprof_leakgroup *x = a, *y = b;
    if (x->retained != y->retained)
        return x->retained > y->retained ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->signature, y->signature);
}

void ms_hprof_leaks_free(ms_hprof_leaks *l)
{
    if (!l)
        return;
    for (size_t k = 0; k < l->ngroups; k++) {
        free(l->groups[k].objs);
        ms_hprof_path_free(&l->groups[k].trace);
        free(l->groups[k].status);
        free(l->groups[k].suspect);
    }
    free(l->groups);
    memset(l, 0, sizeof *l);
}

int ms_hprof_find_leaks(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                        ms_hprof_leaks *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint8_t *st = calloc((size_t)g->nobj + 1, 1);
    uint8_t *leaves = calloc((size_t)g->nobj / 8 + 1, 1);
    leak *lk = NULL;
    ms_hidx *parent = NULL;
    uint32_t *pedge = NULL;
    uint8_t *status = NULL, *suspect = NULL;
    int rc = -1;
    if (!st || !leaves) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    if (classify(path, g, st, err, errlen) < 0)
        goto out;
    size_t nleak = 0;
    for (uint32_t i = 0; i < g->nobj; i++)
        if ((st[i] & 3) == MS_LEAK_LEAKING) {
            leaves[i >> 3] |= (uint8_t)(1u << (i & 7));
            nleak++;
        }
    out->leaking = nleak;
    if (!nleak) {
        rc = 0;
        goto out;
    }
    if (ms_hprof_path_tree(g, MS_HIDX_NONE, leaves, &parent, &pedge, err, errlen) < 0)
        goto out;
    lk = calloc(nleak, sizeof *lk);
    if (!lk) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < g->nobj; i++) {
        if ((st[i] & 3) != MS_LEAK_LEAKING)
            continue;
        if (parent[i] == MS_HIDX_NONE) {
            out->unreachable++;
            continue;
        }
        ms_hprof_path p;
        if (ms_hprof_path_from_tree(g, parent, pedge, i, &p, err, errlen) < 0)
            goto out;
        free(status);
        free(suspect);
        status = malloc(p.len);
        suspect = malloc(p.len);
        if (!status || !suspect) {
            ms_hprof_path_free(&p);
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        trace_status(g, st, &p, status, suspect);
        signature(g, &p, suspect, lk[n].sig);
        lk[n].obj = i;
        lk[n].len = p.len;
        n++;
        ms_hprof_path_free(&p);
    }
    qsort(lk, n, sizeof *lk, cmp_leak);
    size_t ng = 0;
    for (size_t k = 0; k < n; k++)
        ng += k == 0 || strcmp(lk[k].sig, lk[k - 1].sig) != 0;
    out->groups = calloc(ng ? ng : 1, sizeof *out->groups);
    if (!out->groups) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    for (size_t k = 0; k < n;) {
        size_t e = k;
        while (e < n && !strcmp(lk[e].sig, lk[k].sig))
            e++;
        ms_hprof_leakgroup *grp = &out->groups[out->ngroups++];
        memcpy(grp->signature, lk[k].sig, 41);
        grp->count = e - k;
        grp->objs = malloc(grp->count * sizeof *grp->objs);
        if (!grp->objs) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        for (size_t j = k; j < e; j++) {
            grp->objs[j - k] = lk[j].obj;
            if (r)
                grp->retained += r->retained[lk[j].obj];
        }
        grp->reason = reason_text[st[lk[k].obj] >> 2 & 3];
        if (ms_hprof_path_from_tree(g, parent, pedge, lk[k].obj, &grp->trace, err, errlen) < 0)
            goto out;
        grp->status = malloc(grp->trace.len);
        grp->suspect = malloc(grp->trace.len);
        if (!grp->status || !grp->suspect) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        trace_status(g, st, &grp->trace, grp->status, grp->suspect);
        k = e;
    }
    qsort(out->groups, out->ngroups, sizeof *out->groups, cmp_group);
    rc = 0;
out:
    if (rc < 0)
        ms_hprof_leaks_free(out);
    free(st);
    free(leaves);
    free(lk);
    free(parent);
    free(pedge);
    free(status);
    free(suspect);
    return rc;
}

/* ---- output ---- */

static const char *const status_key[] = {"UNKNOWN", "NOT_LEAKING", "LEAKING"};

int ms_hprof_leaks_print(FILE *fp, const ms_hgraph *g, const ms_hprof_leaks *l,
                         const char *format, char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt != MS_HPAN_TEXT && fmt != MS_HPAN_JSON) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' for leaks (text or json)", format);
        return -1;
    }
    char buf[512];
    if (fmt == MS_HPAN_TEXT) {
        size_t shown = 0;
        for (size_t k = 0; k < l->ngroups; k++)
            shown += l->groups[k].count;
        fprintf(fp, "%zu leaking object%s in %zu group%s", shown, shown == 1 ? "" : "s",
                l->ngroups, l->ngroups == 1 ? "" : "s");
        if (l->unreachable)
            fprintf(fp, " (%zu more no longer strongly reachable: not leaks)", l->unreachable);
        fputs("\n", fp);
    } else {
        fputs("[", fp);
    }
    for (size_t k = 0; k < l->ngroups; k++) {
        const ms_hprof_leakgroup *grp = &l->groups[k];
        ms_hidx o = grp->objs[0];
        const char *cls = ms_hpan_obj_class(g, o, 0, buf, sizeof buf);
        if (fmt == MS_HPAN_TEXT) {
            fprintf(fp, "\n%zu x %s, retained %" PRIu64 " bytes: %s\n  signature %s\n",
                    grp->count, cls, grp->retained, grp->reason, grp->signature);
            fprintf(fp, "  GC root: %s\n", ms_hroot_type_name(grp->trace.root_type));
            for (size_t s = 0; s < grp->trace.len; s++) {
                ms_hidx v = grp->trace.obj[s];
                const char *name = ms_hpan_obj_class(g, v, 0, buf, sizeof buf);
                if (s == 0) {
                    fprintf(fp, "  %s 0x%" PRIx64 " [%s]\n", name, ms_hgraph_id(g, v),
                            status_key[grp->status[s]]);
                    continue;
                }
                ms_hprof_edge_ref r = ms_hprof_edge_describe(g, grp->trace.edge[s]);
                char ref[300];
                if (r.field)
                    snprintf(ref, sizeof ref, "%s%s", r.is_static ? "static " : ".", r.field);
                else
                    snprintf(ref, sizeof ref, "[%" PRIu32 "]", r.index);
                fprintf(fp, "  %s %s -> %s 0x%" PRIx64 " [%s]\n", grp->suspect[s - 1] ? "~~" : "  ",
                        ref, name, ms_hgraph_id(g, v), status_key[grp->status[s]]);
            }
        } else {
            fputs(k ? ",\n  {\"signature\": " : "\n  {\"signature\": ", fp);
            ms_hprof_json_str(fp, grp->signature);
            fputs(", \"class\": ", fp);
            ms_hprof_json_str(fp, ms_hpan_obj_class(g, o, 1, buf, sizeof buf));
            fputs(", \"reason\": ", fp);
            ms_hprof_json_str(fp, grp->reason);
            fprintf(fp, ", \"count\": %zu, \"retained_bytes\": %" PRIu64 ", \"objects\": [",
                    grp->count, grp->retained);
            for (size_t j = 0; j < grp->count; j++)
                fprintf(fp, "%s\"0x%" PRIx64 "\"", j ? ", " : "", ms_hgraph_id(g, grp->objs[j]));
            fputs("], \"trace\": [", fp);
            for (size_t s = 0; s < grp->trace.len; s++) {
                fputs(s ? ",\n    " : "\n    ", fp);
                char extra[64];
                snprintf(extra, sizeof extra, ", \"status\": \"%s\"%s", status_key[grp->status[s]],
                         grp->suspect[s] ? ", \"suspect\": true" : "");
                ms_hprof_path_step_json(fp, g, &grp->trace, s, extra);
            }
            fputs("]}", fp);
        }
    }
    if (fmt == MS_HPAN_JSON)
        fputs(l->ngroups ? "\n]\n" : "]\n", fp);
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
