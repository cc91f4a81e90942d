/* The bytes of a heap dump as the reader sees them: through a small sliding window that
 * moves forward only, whatever holds them. A plain file is read with pread into the
 * window (the decoder then works on data in the cache, not on a mapping: no page
 * faults, no page tables, no record header waiting on memory); a gzip-compressed one is
 * inflated into it, from the start of the file or from one of the access points a first
 * sequential read records (zlib's zran approach: the input offset at a deflate block
 * boundary, its unused bits and the 32 KiB of output before it), so that later passes,
 * and two threads, can start anywhere; a dump already in memory is one window. The gzip
 * side handles files of several members (what `jcmd GC.heap_dump -gz=N` writes) and
 * ignores data after the last one, as gzip does. Never trusts the file: damage is an
 * error with zlib's reason. */
#ifndef MS_HPROF_INPUT_H
#define MS_HPROF_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ms_hinput ms_hinput;

/* The gzip file open as fd (kept open by the caller while the input lives), with an
 * index of access points, empty until a window opened with build = 1 reads through
 * the file. */
ms_hinput *ms_hinput_gzip(int fd);
/* The plain file open as fd, size bytes long (kept open while the input lives). */
ms_hinput *ms_hinput_file(int fd, uint64_t size);
/* len bytes at data (kept while the input lives): one window over all of them. */
ms_hinput *ms_hinput_mem(const void *data, uint64_t len);
/* Bytes a window reads at once (default 1 MiB; grown for a longer record): the tests
 * make it tiny so that every record crosses a window's end. */
void ms_hinput_set_window(ms_hinput *in, size_t bytes);
int ms_hinput_is_gzip(const ms_hinput *in);
/* A plain file or memory: copies up to n bytes at offset at into buf, without moving
 * any window; returns how many (fewer at the end of the data or on a read error). */
size_t ms_hinput_peek(ms_hinput *in, uint64_t at, void *buf, size_t n);
void ms_hinput_free(ms_hinput *ix);
/* gzip: access points recorded, and the bytes they take (their windows). */
size_t ms_hinput_points(const ms_hinput *ix);
size_t ms_hinput_bytes(const ms_hinput *ix);
/* Size of the file (gzip: compressed), and how much of it a window has consumed: for
 * progress. */
uint64_t ms_hinput_file_size(const ms_hinput *ix);

typedef struct ms_hwin {
    /* the data at offset o of the decompressed stream is base[o], for o in [ws, fill);
     * base moves when the window slides (after every ms_hwin_need that is not
     * answered from the window) */
    const uint8_t *base;
    uint64_t ws, fill;
    int eof;        /* the data ends at fill */
    uint64_t in_used; /* compressed bytes consumed so far (file offset) */
    struct ms_hwin_priv *p;
} ms_hwin;

/* Opens a window that delivers the data from offset at on (gzip: the nearest access
 * point at or before it, then inflating and dropping up to at). build = 1 (gzip, at
 * must be 0): this window records access points in ix as it goes. Returns 0, or -1
 * with a message. */
int ms_hwin_open(ms_hwin *s, ms_hinput *ix, uint64_t at, int build, char *err, size_t errlen);

/* Makes [from, from + n) readable at s->base (from never before the last from asked
 * for). Returns 0; 1 when the data ends before from + n (s->eof set, s->fill the size
 * of the data); -1 on damaged or truncated gzip data, a read error or no memory, with a
 * message ("gzip: ...", "reading the file: ..."). */
int ms_hwin_need_slow(ms_hwin *s, uint64_t from, uint64_t n, char *err, size_t errlen);
static inline int ms_hwin_need(ms_hwin *s, uint64_t from, uint64_t n, char *err, size_t errlen)
{
    if (from >= s->ws && n <= s->fill - from && from <= s->fill)
        return 0;
    return ms_hwin_need_slow(s, from, n, err, errlen);
}

void ms_hwin_close(ms_hwin *s);

#endif
