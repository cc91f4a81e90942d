/* Allocation-free writer of snapshot files (include/memsight/snapshot_format.h).
 * Used inside the target process by the agent: it must never call malloc, stdio or
 * anything that takes a lock the program may hold; it writes with write()/pwrite(). */
#ifndef MS_CORE_SNAPSHOT_WRITE_H
#define MS_CORE_SNAPSHOT_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "memsight/snapshot_format.h"

#define MS_SW_PATH_MAX 512
#define MS_SW_BUF_SIZE 65536

/* The writer keeps its buffer inline (about 65 KiB): callers place it in memory
 * they own (the agent uses an mmap'ed area), not on a small thread stack. */
typedef struct ms_snap_writer {
    int fd;
    int err;               /* first errno seen; once set, every call is a no-op */
    uint64_t file_off;     /* offset of buf[0] in the file */
    size_t buflen;
    int in_chunk;
    uint64_t chunk_hdr_off; /* file offset of the open chunk's header */
    uint64_t chunk_len;
    uint32_t chunk_type, chunk_flags;
    uint32_t crc;
    uint32_t nchunks;
    char tmp_path[MS_SW_PATH_MAX];
    char final_path[MS_SW_PATH_MAX];
    unsigned char buf[MS_SW_BUF_SIZE];
} ms_snap_writer;

/* Creates `final_path`'s temporary sibling (O_EXCL|O_NOFOLLOW, 0600) and writes the
 * file header. Returns 0 or a negative errno (ENAMETOOLONG, EEXIST after retries...). */
int ms_sw_open(ms_snap_writer *w, const char *final_path, uint64_t flags);

/* Chunks: begin, any number of puts, end. Only one chunk is open at a time. */
void ms_sw_begin(ms_snap_writer *w, uint32_t type, uint32_t flags);
void ms_sw_bytes(ms_snap_writer *w, const void *p, size_t n);
void ms_sw_u8(ms_snap_writer *w, uint8_t v);
void ms_sw_u16(ms_snap_writer *w, uint16_t v);
void ms_sw_u32(ms_snap_writer *w, uint32_t v);
void ms_sw_u64(ms_snap_writer *w, uint64_t v);
void ms_sw_str(ms_snap_writer *w, const char *s, size_t n); /* u32 length + bytes */
void ms_sw_cstr(ms_snap_writer *w, const char *s);           /* NULL writes "" */
void ms_sw_kv(ms_snap_writer *w, const char *key, const char *value);
void ms_sw_kv_u64(ms_snap_writer *w, const char *key, uint64_t value); /* decimal text */
void ms_sw_kv_i64(ms_snap_writer *w, const char *key, int64_t value);
/* Overwrites a u32 already written in the open chunk at payload offset `at` (for
 * counts known only at the end). The bytes must still be in the buffer or the file. */
void ms_sw_patch_u32(ms_snap_writer *w, uint64_t at, uint32_t v);
void ms_sw_patch_u64(ms_snap_writer *w, uint64_t at, uint64_t v);
uint64_t ms_sw_chunk_pos(const ms_snap_writer *w); /* payload bytes written so far */
void ms_sw_end(ms_snap_writer *w);

/* Writes END, flushes, fsyncs and renames into place. Returns 0 or a negative errno;
 * on error the temporary file is removed. */
int ms_sw_commit(ms_snap_writer *w);
void ms_sw_abort(ms_snap_writer *w);

/* Formats v in decimal into buf (at least 21 bytes); returns the length. */
size_t ms_fmt_u64(char *buf, uint64_t v);

#endif
