/* gzip input read in passes over a sliding window, with zran-style access points
 * (gzsrc.h). */
#define _GNU_SOURCE
#include "hprof/input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum {
    DICT = 32768,              /* deflate's window: what a point must keep */
    IN_CAP = 256 << 10,        /* compressed bytes read at once */
    WIN_CAP = 1 << 20,         /* window (grown for a longer record) */
    MAX_POINTS = 128,          /* then every other one is dropped and the span doubles */
    FIRST_SPAN = 1 << 20,
};

typedef struct gzpoint {
    uint64_t out;   /* offset in the decompressed data */
    uint64_t in;    /* offset in the file of the first byte not fully consumed */
    uint32_t wlen;  /* bytes of window (fewer than 32 KiB near the start) */
    uint8_t bits;   /* bits of the byte before in still to be used */
    uint8_t *win;
} gzpoint;

enum { IN_GZIP, IN_FILE, IN_MEM };

struct ms_hinput {
    int kind;
    int fd;
    uint64_t csize; /* the file's size (gzip: compressed) */
    const uint8_t *mem; /* IN_MEM: csize bytes */
    size_t win_cap;
    gzpoint *pt;
    size_t n, cap;
    uint64_t span;
    size_t bytes;
};

struct ms_hwin_priv {
    ms_hinput *ix;
    int build;
    int raw; /* resumed at a point: raw deflate up to the end of this member */
    z_stream zs;
    int zinit;
    uint8_t *in;
    uint64_t in_next; /* file offset of the next read */
    int in_eof;
    uint8_t *buf;
    size_t cap;
    uint64_t last_point;
};

static ms_hinput *new_input(int kind, int fd, uint64_t size)
{
    ms_hinput *ix = calloc(1, sizeof *ix);
    if (!ix)
        return NULL;
    ix->kind = kind;
    ix->fd = fd;
    ix->csize = size;
    ix->win_cap = WIN_CAP;
    ix->span = FIRST_SPAN;
    return ix;
}

ms_hinput *ms_hinput_gzip(int fd)
{
    off_t end = lseek(fd, 0, SEEK_END);
    return new_input(IN_GZIP, fd, end > 0 ? (uint64_t)end : 0);
}

ms_hinput *ms_hinput_file(int fd, uint64_t size) { return new_input(IN_FILE, fd, size); }

ms_hinput *ms_hinput_mem(const void *data, uint64_t len)
{
    ms_hinput *ix = new_input(IN_MEM, -1, len);
    if (ix)
        ix->mem = data;
    return ix;
}

void ms_hinput_set_window(ms_hinput *in, size_t bytes)
{
    if (in->kind != IN_MEM && bytes)
        in->win_cap = bytes;
}

int ms_hinput_is_gzip(const ms_hinput *in) { return in->kind == IN_GZIP; }

size_t ms_hinput_peek(ms_hinput *in, uint64_t at, void *buf, size_t n)
{
    if (in->kind == IN_GZIP || at >= in->csize)
        return 0;
    if (n > in->csize - at)
        n = (size_t)(in->csize - at);
    if (in->kind == IN_MEM) {
        memcpy(buf, in->mem + at, n);
        return n;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(in->fd, (uint8_t *)buf + got, n - got, (off_t)(at + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

void ms_hinput_free(ms_hinput *ix)
{
    if (!ix)
        return;
    for (size_t i = 0; i < ix->n; i++)
        free(ix->pt[i].win);
    free(ix->pt);
    free(ix);
}

size_t ms_hinput_points(const ms_hinput *ix) { return ix->n; }
size_t ms_hinput_bytes(const ms_hinput *ix) { return ix->bytes + ix->cap * sizeof *ix->pt; }
uint64_t ms_hinput_file_size(const ms_hinput *ix) { return ix->csize; }

/* Keeps every other point and doubles the span: the index stays small whatever the
 * size of the data (128 points: 4 MiB at most). */
static void thin(ms_hinput *ix)
{
    size_t w = 0;
    for (size_t i = 0; i < ix->n; i++) {
        if (i % 2) {
            ix->bytes -= ix->pt[i].wlen;
            free(ix->pt[i].win);
        } else {
            ix->pt[w++] = ix->pt[i];
        }
    }
    ix->n = w;
    ix->span *= 2;
}

static void add_point(struct ms_hwin_priv *p, uint64_t out)
{
    ms_hinput *ix = p->ix;
    if (ix->n == MAX_POINTS)
        thin(ix);
    if (ix->n && out - ix->pt[ix->n - 1].out < ix->span)
        return;
    if (ix->n == ix->cap) {
        size_t nc = ix->cap ? ix->cap * 2 : 16;
        gzpoint *q = realloc(ix->pt, nc * sizeof *q);
        if (!q)
            return; /* a point fewer: later passes inflate a little more */
        ix->pt = q;
        ix->cap = nc;
    }
    uint8_t dict[DICT];
    uInt wlen = DICT;
    if (inflateGetDictionary(&p->zs, dict, &wlen) != Z_OK)
        return;
    uint8_t *win = malloc(wlen ? wlen : 1);
    if (!win)
        return;
    memcpy(win, dict, wlen);
    gzpoint *pt = &ix->pt[ix->n++];
    pt->out = out;
    pt->in = p->in_next - p->zs.avail_in;
    pt->bits = (uint8_t)(p->zs.data_type & 7);
    pt->wlen = wlen;
    pt->win = win;
    ix->bytes += wlen;
    p->last_point = out;
}

static int msg(char *err, size_t errlen, const char *fmt, const char *arg)
{
    snprintf(err, errlen, fmt, arg);
    return -1;
}

/* At least k bytes of input at next_in, unless the file ends first (then fewer). */
static int have_in(struct ms_hwin_priv *p, size_t k, char *err, size_t errlen)
{
    z_stream *z = &p->zs;
    while (z->avail_in < k && !p->in_eof) {
        if (z->avail_in && z->next_in != p->in)
            memmove(p->in, z->next_in, z->avail_in);
        z->next_in = p->in;
        ssize_t got;
        do
            got = pread(p->ix->fd, p->in + z->avail_in, IN_CAP - z->avail_in, (off_t)p->in_next);
        while (got < 0 && errno == EINTR);
        if (got < 0)
            return msg(err, errlen, "reading the compressed file: %s", strerror(errno));
        if (got == 0)
            p->in_eof = 1;
        p->in_next += (uint64_t)got;
        z->avail_in += (uInt)got;
    }
    return 0;
}

/* After the end of a member's deflate data: its trailer (checked by zlib unless resumed
 * in its middle), then another member or the end. */
static int member_end(ms_hwin *s, char *err, size_t errlen)
{
    struct ms_hwin_priv *p = s->p;
    z_stream *z = &p->zs;
    if (p->raw) {
        if (have_in(p, 8, err, errlen))
            return -1;
        if (z->avail_in < 8)
            return msg(err, errlen, "gzip: %s", "unexpected end of file (the compressed file is truncated?)");
        z->next_in += 8;
        z->avail_in -= 8;
    }
    if (have_in(p, 2, err, errlen))
        return -1;
    if (z->avail_in < 2 || z->next_in[0] != 0x1f || z->next_in[1] != 0x8b) {
        s->eof = 1; /* the end, or data after the last member: ignored, as gzip does */
        return 0;
    }
    if (inflateReset2(z, 31) != Z_OK)
        return msg(err, errlen, "gzip: %s", "cannot restart the decompressor");
    p->raw = 0;
    return 0;
}

/* Inflates up to room bytes into dst; *got what came (fewer only at the end). */
static int inflate_some(ms_hwin *s, uint8_t *dst, size_t room, size_t *got, char *err, size_t errlen)
{
    struct ms_hwin_priv *p = s->p;
    z_stream *z = &p->zs;
    z->next_out = dst;
    z->avail_out = (uInt)room;
    while (z->avail_out && !s->eof) {
        if (!z->avail_in) {
            if (have_in(p, 1, err, errlen))
                return -1;
            if (!z->avail_in)
                return msg(err, errlen, "gzip: %s", "unexpected end of file (the compressed file is truncated?)");
        }
        int ret = inflate(z, p->build ? Z_BLOCK : Z_NO_FLUSH);
        if (ret == Z_MEM_ERROR)
            return msg(err, errlen, "%s", "out of memory");
        if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR || ret == Z_STREAM_ERROR)
            return msg(err, errlen, "gzip: %s", z->msg ? z->msg : "damaged data");
        if (p->build && (z->data_type & 128) && !(z->data_type & 64) && ret != Z_STREAM_END) {
            uint64_t out = s->fill + (room - z->avail_out);
            if (out - p->last_point >= p->ix->span)
                add_point(p, out);
        }
        if (ret == Z_STREAM_END && member_end(s, err, errlen))
            return -1;
    }
    *got = room - z->avail_out;
    s->in_used = p->in_next - z->avail_in;
    return 0;
}

int ms_hwin_open(ms_hwin *s, ms_hinput *ix, uint64_t at, int build, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    struct ms_hwin_priv *p = calloc(1, sizeof *p);
    if (!p)
        return msg(err, errlen, "%s", "out of memory");
    s->p = p;
    p->ix = ix;
    if (ix->kind == IN_MEM) {
        /* the whole dump is the window */
        s->base = ix->mem;
        s->fill = ix->csize;
        s->in_used = ix->csize;
        s->eof = 1;
        return 0;
    }
    p->buf = malloc(ix->win_cap);
    p->cap = ix->win_cap;
    if (ix->kind == IN_FILE) {
        if (!p->buf) {
            ms_hwin_close(s);
            return msg(err, errlen, "%s", "out of memory");
        }
        s->ws = s->fill = at; /* nothing read before at */
        s->base = (const uint8_t *)((uintptr_t)p->buf - (uintptr_t)s->ws);
        return 0;
    }
    p->build = build;
    p->in = malloc(IN_CAP);
    if (!p->in || !p->buf) {
        ms_hwin_close(s);
        return msg(err, errlen, "%s", "out of memory");
    }
    const gzpoint *pt = NULL;
    if (!build)
        for (size_t i = 0; i < ix->n && ix->pt[i].out <= at; i++)
            pt = &ix->pt[i];
    int zr = inflateInit2(&p->zs, pt ? -15 : 31);
    if (zr != Z_OK) {
        ms_hwin_close(s);
        return msg(err, errlen, "%s", "out of memory");
    }
    p->zinit = 1;
    if (pt) {
        p->raw = 1;
        p->in_next = pt->in - (pt->bits ? 1 : 0);
        if (pt->bits) {
            uint8_t c;
            if (pread(ix->fd, &c, 1, (off_t)p->in_next) != 1) {
                ms_hwin_close(s);
                return msg(err, errlen, "%s", "reading the compressed file: it changed while being read");
            }
            p->in_next++;
            inflatePrime(&p->zs, pt->bits, c >> (8 - pt->bits));
        }
        inflateSetDictionary(&p->zs, pt->win, pt->wlen);
        s->ws = s->fill = pt->out;
    }
    s->base = (const uint8_t *)((uintptr_t)p->buf - (uintptr_t)s->ws);
    if (at > s->fill && ms_hwin_need_slow(s, at, 0, err, errlen) < 0) {
        ms_hwin_close(s);
        return -1;
    }
    return 0;
}

/* Room for a record longer than the window (the data in it stays). */
static int grow_window(struct ms_hwin_priv *p, uint64_t n, char *err, size_t errlen)
{
    if (n > SIZE_MAX / 2)
        return msg(err, errlen, "%s", "out of memory");
    size_t nc = (size_t)n + (size_t)n / 4;
    uint8_t *q = realloc(p->buf, nc);
    if (!q)
        return msg(err, errlen, "%s", "out of memory for the window");
    p->buf = q;
    p->cap = nc;
    return 0;
}

/* A plain file: the window from `from` on, read with pread (what is skipped is never
 * read). */
static int file_fill(ms_hwin *s, uint64_t from, char *err, size_t errlen)
{
    struct ms_hwin_priv *p = s->p;
    if (from > s->fill) {
        s->ws = s->fill = from;
    } else if (from > s->ws) {
        memmove(p->buf, p->buf + (from - s->ws), (size_t)(s->fill - from));
        s->ws = from;
    }
    while (s->fill - s->ws < p->cap && !s->eof) {
        size_t used = (size_t)(s->fill - s->ws);
        size_t room = p->cap - used < (1u << 30) ? p->cap - used : (1u << 30);
        if (s->fill >= p->ix->csize) {
            s->eof = 1; /* the size fstat gave: a file that grows is read as it was */
            break;
        }
        if (room > p->ix->csize - s->fill)
            room = (size_t)(p->ix->csize - s->fill);
        ssize_t got = pread(p->ix->fd, p->buf + used, room, (off_t)s->fill);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return msg(err, errlen, "reading the file: %s", strerror(errno));
        if (got == 0)
            return msg(err, errlen, "%s", "reading the file: it ends before the size it had when opened (truncated while being read?)");
        s->fill += (uint64_t)got;
    }
    s->in_used = s->fill;
    return 0;
}

int ms_hwin_need_slow(ms_hwin *s, uint64_t from, uint64_t n, char *err, size_t errlen)
{
    struct ms_hwin_priv *p = s->p;
    size_t got;
    if (from < s->ws)
        return msg(err, errlen, "%s", "internal: the data was asked for backwards");
    if (p->ix->kind == IN_MEM)
        return from <= s->fill && n <= s->fill - from ? 0 : 1;
    if (p->ix->kind == IN_FILE) {
        if (n > p->cap && grow_window(p, n, err, errlen))
            return -1;
        if (file_fill(s, from, err, errlen))
            return -1;
        s->base = (const uint8_t *)((uintptr_t)p->buf - (uintptr_t)s->ws);
        return from <= s->fill && n <= s->fill - from ? 0 : 1;
    }
    if (from > s->fill) {
        /* skip: inflate and drop */
        while (s->fill < from && !s->eof) {
            uint64_t room = from - s->fill < p->cap ? from - s->fill : p->cap;
            if (inflate_some(s, p->buf, (size_t)room, &got, err, errlen))
                return -1;
            s->fill += got;
        }
        s->ws = s->fill;
    } else if (from > s->ws) {
        memmove(p->buf, p->buf + (from - s->ws), (size_t)(s->fill - from));
        s->ws = from;
    }
    if (n > p->cap && grow_window(p, n, err, errlen))
        return -1;
    while (s->fill - s->ws < p->cap && !s->eof) {
        size_t used = (size_t)(s->fill - s->ws);
        size_t room = p->cap - used < (1u << 30) ? p->cap - used : (1u << 30);
        if (inflate_some(s, p->buf + used, room, &got, err, errlen))
            return -1;
        s->fill += got;
    }
    s->base = (const uint8_t *)((uintptr_t)p->buf - (uintptr_t)s->ws);
    return from <= s->fill && n <= s->fill - from ? 0 : 1;
}

void ms_hwin_close(ms_hwin *s)
{
    struct ms_hwin_priv *p = s->p;
    if (!p)
        return;
    if (p->zinit)
        inflateEnd(&p->zs);
    free(p->in);
    free(p->buf);
    free(p);
    s->p = NULL;
}
