/* Strip and convert (rewrite.h): one streaming pass over the records; heap-dump records
 * are rewritten sub-record by sub-record with every length checked against its record,
 * and their new length is patched into the output once known. Never trusts the input;
 * writes only into the FILE it is given. */
#include "hprof/rewrite.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <zlib.h>

#include "hprof/errmsg.h"

typedef struct rw {
    gzFile in;
    FILE *out;
    uint64_t off; /* input offset of the next byte */
    uint32_t ids;
    const ms_hrewrite_opts *o;
    int drop_heap; /* app_only and the current heap is zygote or image */
    size_t len, pos;
    uint8_t buf[1 << 16];
    char *err;
    size_t errlen;
} rw;

static int rd(rw *r, void *dst, size_t n)
{
    uint8_t *d = dst;
    while (n) {
        if (r->pos == r->len) {
            int got = gzread(r->in, r->buf, sizeof r->buf);
            if (got <= 0)
                return -1;
            r->len = (size_t)got;
            r->pos = 0;
        }
        size_t k = r->len - r->pos < n ? r->len - r->pos : n;
        memcpy(d, r->buf + r->pos, k);
        r->pos += k;
        r->off += k;
        d += k;
        n -= k;
    }
    return 0;
}

static int wr(rw *r, const void *p, size_t n)
{
    return n && fwrite(p, 1, n, r->out) != n ? -1 : 0;
}

static uint64_t be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t tsize(uint8_t t, uint32_t ids)
{
    switch (t) {
    case 2: return ids;
    case 4: case 8: return 1;
    case 5: case 9: return 2;
    case 6: case 10: return 4;
    case 7: case 11: return 8;
    default: return 0;
    }
}

/* Copies (keep) or skips n bytes of the record (left bytes left in it); zero: write
 * zeros instead of the bytes. */
static int pass(rw *r, uint64_t n, uint64_t *left, int keep, int zero)
{
    if (n > *left)
        return 1; /* crosses the record */
    *left -= n;
    uint8_t tmp[4096];
    while (n) {
        size_t k = n < sizeof tmp ? (size_t)n : sizeof tmp;
        if (rd(r, tmp, k) < 0)
            return 2; /* the file ends */
        if (zero)
            memset(tmp, 0, k);
        if (keep && wr(r, tmp, k) < 0)
            return 3;
        n -= k;
    }
    return 0;
}

static int fail_at(rw *r, uint64_t at, uint8_t tag, uint8_t sub, int why)
{
    static const char *const text[] = {"", "runs past the end of its heap dump record",
                                       "is cut short: the file ends", "could not be written"};
    if (why == 4)
        ms_hprof_set_err(r->err, r->errlen, "offset %" PRIu64 ": unknown heap dump sub-record tag 0x%02x", at, sub);
    else if (why == 5)
        ms_hprof_set_err(r->err, r->errlen, "offset %" PRIu64 ": invalid basic type in sub-record 0x%02x", at, sub);
    else
        ms_hprof_set_err(r->err, r->errlen, "offset %" PRIu64 ": record 0x%02x, sub-record 0x%02x %s", at, tag, sub,
                         text[why]);
    return -1;
}

#define PASS(n, keep, zero)                                                               \
    do {                                                                                  \
        int e_ = pass(r, (n), &left, (keep), (zero));                                    \
        if (e_)                                                                           \
            return fail_at(r, at, tag, t, e_);                                            \
    } while (0)
#define TAKE(dst, n)                                                                      \
    do {                                                                                  \
        if ((uint64_t)(n) > left)                                                         \
            return fail_at(r, at, tag, t, 1);                                             \
        left -= (n);                                                                      \
        if (rd(r, (dst), (n)) < 0)                                                        \
            return fail_at(r, at, tag, t, 2);                                             \
    } while (0)
#define PUT(p, n)                                                                         \
    do {                                                                                  \
        if (wr(r, (p), (n)) < 0)                                                          \
            return fail_at(r, at, tag, t, 3);                                             \
        written += (n);                                                                   \
    } while (0)

/* One heap-dump record body of length len; *out_len receives the bytes written. */
static int heap(rw *r, uint8_t tag, uint64_t len, uint64_t *out_len)
{
    const uint32_t ids = r->ids;
    const int conv = r->o->mode == MS_HREWRITE_TO_STANDARD, strip = r->o->mode == MS_HREWRITE_STRIP;
    uint64_t left = len, written = 0;
    uint8_t h[64];
    while (left) {
        uint64_t at = r->off;
        uint8_t t = 0;
        TAKE(&t, 1);
        uint8_t nt = t;
        switch (t) {
        case 0xFF: case 0x05: case 0x07:
            PUT(&t, 1);
            PASS(ids, 1, 0);
            written += ids;
            break;
        case 0x01:
            PUT(&t, 1);
            PASS(2 * ids, 1, 0);
            written += 2 * ids;
            break;
        case 0x02: case 0x03: case 0x08:
            PUT(&t, 1);
            PASS(ids + 8, 1, 0);
            written += ids + 8;
            break;
        case 0x04: case 0x06:
            PUT(&t, 1);
            PASS(ids + 4, 1, 0);
            written += ids + 4;
            break;
        case 0x89: case 0x8A: case 0x8B: case 0x8C: case 0x8D: case 0x90: /* Android roots */
            if (conv)
                nt = 0xFF;
            PUT(&nt, 1);
            PASS(ids, 1, 0);
            written += ids;
            break;
        case 0x8E: /* JNI monitor: hprof-conv keeps the id, drops the two u4 */
            if (conv)
                nt = 0xFF;
            PUT(&nt, 1);
            PASS(ids, 1, 0);
            written += ids;
            PASS(8, !conv, 0);
            if (!conv)
                written += 8;
            break;
        case 0xFE: /* heap dump info: which heap the next objects are in */
            TAKE(h, 4 + ids);
            r->drop_heap = r->o->app_only && (h[3] == 'Z' || h[3] == 'I');
            if (!conv) {
                PUT(&t, 1);
                PUT(h, 4 + ids);
            }
            break;
        case 0x20: { /* class dump: copied, its length found by parsing it */
            PUT(&t, 1);
            PASS(7 * ids + 8, 1, 0);
            written += 7 * ids + 8;
            for (int part = 0; part < 3; part++) {
                uint8_t u2[2];
                TAKE(u2, 2);
                PUT(u2, 2);
                for (uint32_t k = 0, n = (uint32_t)be(u2, 2); k < n; k++) {
                    uint32_t head = part == 0 ? 3 : ids + 1;
                    TAKE(h, head);
                    PUT(h, head);
                    if (part == 2)
                        continue;
                    uint32_t s = tsize(h[head - 1], ids);
                    if (!s)
                        return fail_at(r, at, tag, t, 5);
                    PASS(s, 1, 0);
                    written += s;
                }
            }
            break;
        }
        case 0x21: case 0x22: case 0x23: case 0xC3: {
            int drop = r->drop_heap;
            uint32_t head = t == 0x21 ? 2 * ids + 8 : t == 0x22 ? ids + 8 : ids + 9;
            TAKE(h, head);
            uint64_t n = be(h + (t == 0x21 ? 2 * ids + 4 : ids + 4), 4), body;
            if (t == 0x21)
                body = n;
            else if (t == 0x22)
                body = ids + n * ids;
            else {
                uint32_t s = tsize(h[ids + 8], ids);
                if (!s || h[ids + 8] == 2)
                    return fail_at(r, at, tag, t, 5);
                body = t == 0xC3 ? 0 : n * s;
            }
            if (t == 0xC3 && conv) {
                nt = 0x23; /* hprof-conv: an array of length 0 */
                put32(h + ids + 4, 0);
            }
            if (!drop) {
                PUT(&nt, 1);
                PUT(h, head);
            }
            /* strip: element bytes of primitive arrays become zeros */
            PASS(body, !drop, strip && t == 0x23);
            if (!drop)
                written += body;
            break;
        }
        default:
            return fail_at(r, at, tag, t, 4);
        }
    }
    *out_len = written;
    return 0;
}

int ms_hprof_rewrite(const char *path, FILE *out, const ms_hrewrite_opts *o, char *err, size_t errlen)
{
    rw *r = calloc(1, sizeof *r);
    if (!r) {
        ms_hprof_set_err(err, errlen, "out of memory");
        return -1;
    }
    r->out = out;
    r->o = o;
    r->err = err;
    r->errlen = errlen;
    int rc = -1;
    r->in = gzopen(path, "rb");
    if (!r->in) {
        ms_hprof_set_err(err, errlen, "cannot open the dump");
        free(r);
        return -1;
    }
    char ver[24];
    size_t k = 0;
    do {
        if (k == sizeof ver || rd(r, &ver[k], 1) < 0) {
            ms_hprof_set_err(err, errlen, "not an HPROF file (no \"JAVA PROFILE 1.0.x\" header)");
            goto out;
        }
    } while (ver[k++]);
    uint8_t h12[12];
    if (strcmp(ver, "JAVA PROFILE 1.0.1") && strcmp(ver, "JAVA PROFILE 1.0.2") && strcmp(ver, "JAVA PROFILE 1.0.3")) {
        ms_hprof_set_err(err, errlen, "not an HPROF file (no \"JAVA PROFILE 1.0.x\" header)");
        goto out;
    }
    if (rd(r, h12, 12) < 0) {
        ms_hprof_set_err(err, errlen, "offset %zu: truncated header", k);
        goto out;
    }
    r->ids = (uint32_t)be(h12, 4);
    if (r->ids != 4 && r->ids != 8) {
        ms_hprof_set_err(err, errlen, "unsupported identifier size %u (4 or 8 expected)", r->ids);
        goto out;
    }
    int android = !strcmp(ver, "JAVA PROFILE 1.0.3");
    if (o->mode == MS_HREWRITE_TO_STANDARD && !android) {
        ms_hprof_set_err(err, errlen, "already in the standard format (%s); nothing to convert", ver);
        goto out;
    }
    if (o->mode == MS_HREWRITE_TO_ANDROID && (android || r->ids != 4)) {
        ms_hprof_set_err(err, errlen, android ? "already in Android's format (JAVA PROFILE 1.0.3)"
                                              : "Android's format has 4-byte identifiers; this dump has 8");
        goto out;
    }
    if (o->app_only && !android) {
        ms_hprof_set_err(err, errlen, "--app-only needs an Android dump (heaps are named in 1.0.3 only)");
        goto out;
    }
    if (o->mode == MS_HREWRITE_TO_STANDARD)
        ver[17] = '2';
    else if (o->mode == MS_HREWRITE_TO_ANDROID)
        ver[17] = '3';
    if (wr(r, ver, k) < 0 || wr(r, h12, 12) < 0)
        goto werr;
    for (;;) {
        uint8_t rh[9];
        uint64_t at = r->off;
        if (rd(r, rh, 1) < 0) {
            int e = Z_OK;
            gzerror(r->in, &e);
            if (e == Z_OK)
                break; /* end of file */
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": gzip: %s", at, gzerror(r->in, &e));
            goto out;
        }
        if (rd(r, rh + 1, 8) < 0) {
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": the file ends in a record header", at);
            goto out;
        }
        uint64_t len = be(rh + 5, 4);
        if (rh[0] != 0x0C && rh[0] != 0x1C) {
            if (wr(r, rh, 9) < 0)
                goto werr;
            uint64_t left = len;
            int e = pass(r, len, &left, 1, 0);
            if (e == 2) {
                ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": record 0x%02x is cut short: the file ends", at, rh[0]);
                goto out;
            }
            if (e)
                goto werr;
            continue;
        }
        /* heap dump: the length is written again once the body is */
        off_t start = ftello(out);
        if (start < 0 || wr(r, rh, 9) < 0)
            goto werr;
        uint64_t n = 0;
        if (heap(r, rh[0], len, &n) < 0)
            goto out;
        if (n > UINT32_MAX) {
            ms_hprof_set_err(err, errlen, "offset %" PRIu64 ": the rewritten record is too long", at);
            goto out;
        }
        if (n != len) {
            uint8_t l4[4];
            put32(l4, (uint32_t)n);
            if (fseeko(out, start + 5, SEEK_SET) || wr(r, l4, 4) || fseeko(out, 0, SEEK_END))
                goto werr;
        }
    }
    rc = 0;
    goto out;
werr:
    ms_hprof_set_err(err, errlen, "cannot write the output (disk full? not a seekable file?)");
out:
    gzclose(r->in);
    free(r);
    return rc;
}
