/* Reading a gzip-compressed heap dump without a decompressed copy: the data is inflated
 * into a small sliding window, from the start of the file or from one of the access
 * points a first sequential read records (zlib's zran approach: the input offset at a
 * deflate block boundary, its unused bits and the 32 KiB of output before it), so that
 * later passes, and two threads, can start anywhere. Handles files of several gzip
 * members (what `jcmd GC.heap_dump -gz=N` writes) and ignores data after the last one,
 * as gzip does. Never trusts the file: damage is an error with zlib's reason. */
#ifndef MS_HPROF_GZSRC_H
#define MS_HPROF_GZSRC_H

#include <stddef.h>
#include <stdint.h>

typedef struct ms_gzindex ms_gzindex;

/* An index over the gzip file open as fd (kept open by the caller while the index
 * lives); empty until a stream opened with build = 1 reads through the file. */
ms_gzindex *ms_gzindex_new(int fd);
void ms_gzindex_free(ms_gzindex *ix);
/* Access points recorded, and the bytes they take (their windows). */
size_t ms_gzindex_points(const ms_gzindex *ix);
size_t ms_gzindex_bytes(const ms_gzindex *ix);
/* Size of the compressed file, and how much of it a stream has consumed: for progress. */
uint64_t ms_gzindex_file_size(const ms_gzindex *ix);

typedef struct ms_gzsrc {
    /* the data at offset o of the decompressed stream is base[o], for o in [ws, fill);
     * base moves when the window slides (after every ms_gzsrc_need that is not
     * answered from the window) */
    const uint8_t *base;
    uint64_t ws, fill;
    int eof;        /* the data ends at fill */
    uint64_t in_used; /* compressed bytes consumed so far (file offset) */
    struct ms_gzsrc_priv *p;
} ms_gzsrc;

/* Opens a stream that delivers the data from offset at on (the nearest access point at
 * or before it, then inflating and dropping up to at). build = 1 (at must be 0): this
 * stream records access points in ix as it goes. Returns 0, or -1 with a message. */
int ms_gzsrc_open(ms_gzsrc *s, ms_gzindex *ix, uint64_t at, int build, char *err, size_t errlen);

/* Makes [from, from + n) readable at s->base (from never before the last from asked
 * for). Returns 0; 1 when the data ends before from + n (s->eof set, s->fill the size
 * of the data); -1 on damaged or truncated gzip data, a read error or no memory, with a
 * message ("gzip: ..."). */
int ms_gzsrc_need_slow(ms_gzsrc *s, uint64_t from, uint64_t n, char *err, size_t errlen);
static inline int ms_gzsrc_need(ms_gzsrc *s, uint64_t from, uint64_t n, char *err, size_t errlen)
{
    if (from >= s->ws && n <= s->fill - from && from <= s->fill)
        return 0;
    return ms_gzsrc_need_slow(s, from, n, err, errlen);
}

void ms_gzsrc_close(ms_gzsrc *s);

#endif
