/* A second streaming pass over a heap dump for the primitive values the graph does not
 * keep: only the INSTANCE_DUMP and PRIMITIVE_ARRAY_DUMP records of requested objects are
 * read, everything else is skipped by its length, every length checked against its
 * enclosing record. Never trusts the file; never writes it. */
#include "hprof/values.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hprof/errmsg.h"
#include "hprof/graph.h"
#include "hprof/sizes.h"

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

static int cmp_req(const void *a, const void *b)
{
    const ms_hvalreq *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    uint32_t p = x->size ? x->off : UINT32_MAX, q = y->size ? y->off : UINT32_MAX;
    return p < q ? -1 : p > q;
}

/* First request for id, or n. */
static size_t first_req(const ms_hvalreq *c, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].id == id ? lo : n;
}

const ms_hvalreq *ms_hprof_value_find(const ms_hvalreq *r, size_t n, uint64_t id, uint32_t off)
{
    for (size_t k = first_req(r, n, id); k < n && r[k].id == id; k++)
        if (off == UINT32_MAX ? r[k].size == 0 : (r[k].size && r[k].off == off))
            return &r[k];
    return NULL;
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
static int heap_records(brd *b, uint64_t left, uint32_t ids, ms_hvalreq *c, size_t nc, char *err,
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
            size_t k = nc ? first_req(c, nc, id) : nc;
            uint64_t pos = 0; /* bytes of the field data consumed; requests ascend by off */
            for (; k < nc && c[k].id == id; k++) {
                ms_hvalreq *x = &c[k];
                if (!x->size || (uint64_t)x->off + x->size > n || x->off < pos)
                    continue;
                uint8_t v[8];
                SKIP(x->off - pos);
                READ(v, x->size);
                pos = (uint64_t)x->off + x->size;
                x->value = be_num(v, x->size);
                x->found = 1;
            }
            SKIP(n - pos);
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
            uint64_t id = be_num(t, ids), len = be_num(t + ids + 4, 4), bytes = len * s, pos = 0;
            const ms_hvalreq *q = nc ? ms_hprof_value_find(c, nc, id, UINT32_MAX) : NULL;
            if (q) {
                ms_hvalreq *x = (ms_hvalreq *)q;
                pos = bytes < MS_HVAL_BYTES ? bytes : MS_HVAL_BYTES;
                READ(x->bytes, pos);
                x->nbytes = (uint8_t)pos;
                x->length = (uint32_t)len;
                x->elem = t[ids + 8];
                x->found = 1;
            }
            SKIP(bytes - pos);
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

int ms_hprof_read_values(const char *path, uint32_t ids, ms_hvalreq *c, size_t nc, char *err,
                         size_t errlen)
{
    if (nc)
        qsort(c, nc, sizeof *c, cmp_req);
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
