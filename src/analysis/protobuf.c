/* Protocol buffers' wire encoding, by hand, and gzip: what a pprof profile is made of
 * (protobuf.h). Tools only. */
#include "analysis/protobuf.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

void ms_pb_put(ms_pb *b, const void *d, size_t n)
{
    if (b->oom || n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        while (nc < b->n + n)
            nc *= 2;
        uint8_t *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

void ms_pb_varint(ms_pb *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        tmp[n++] = c | (v ? 0x80 : 0);
    } while (v);
    ms_pb_put(b, tmp, n);
}

void ms_pb_key(ms_pb *b, unsigned field, unsigned wt) { ms_pb_varint(b, ((uint64_t)field << 3) | wt); }

/* Fields equal to zero are omitted, as proto3 does. */
void ms_pb_int(ms_pb *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    ms_pb_key(b, field, 0);
    ms_pb_varint(b, v);
}

void ms_pb_bytes(ms_pb *b, unsigned field, const void *d, size_t n)
{
    ms_pb_key(b, field, 2);
    ms_pb_varint(b, n);
    ms_pb_put(b, d, n);
}

void ms_pb_msg(ms_pb *b, unsigned field, ms_pb *sub)
{
    if (sub->oom)
        b->oom = 1;
    ms_pb_bytes(b, field, sub->p, sub->n);
    sub->n = 0;
}

void ms_pb_packed(ms_pb *b, unsigned field, const uint64_t *v, size_t n)
{
    ms_pb tmp = {0};
    for (size_t i = 0; i < n; i++)
        ms_pb_varint(&tmp, v[i]);
    ms_pb_msg(b, field, &tmp);
    free(tmp.p);
}

int ms_gzip_write(FILE *out, const uint8_t *d, size_t n, char *err, size_t errlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        snprintf(err, errlen, "zlib: cannot initialise gzip");
        return -1;
    }
    uint8_t buf[1 << 15];
    z.next_in = (Bytef *)d;
    z.avail_in = 0; /* fed in pieces: a profile may exceed what uInt holds */
    size_t left = n;
    int rc;
    do {
        if (z.avail_in == 0 && left) {
            size_t piece = left > (1u << 30) ? (1u << 30) : left;
            z.avail_in = (uInt)piece;
            left -= piece;
        }
        z.next_out = buf;
        z.avail_out = sizeof buf;
        rc = deflate(&z, left || z.avail_in ? Z_NO_FLUSH : Z_FINISH);
        size_t have = sizeof buf - z.avail_out;
        if (have && fwrite(buf, 1, have, out) != have) {
            deflateEnd(&z);
            snprintf(err, errlen, "write error");
            return -1;
        }
    } while (rc != Z_STREAM_END && rc != Z_STREAM_ERROR);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        snprintf(err, errlen, "zlib: compression failed");
        return -1;
    }
    return 0;
}

