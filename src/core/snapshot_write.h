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
    int dirfd;             /* directory of final_path; -1 when writing into a caller's fd */
    int owns_fd;           /* ms_sw_open created fd (closed and named by the writer) */
    int err;               /* first errno seen; once set, every call is a no-op */
    int no_sync;           /* ms_sw_finish does not fsync (set after ms_sw_open) */
    uint64_t file_off;     /* offset of buf[0] in the file */
    size_t buflen;
    int in_chunk;
    uint64_t chunk_hdr_off; /* file offset of the open chunk's header */
    uint64_t chunk_len;
    uint32_t chunk_type, chunk_flags;
    uint32_t crc;
    uint32_t nchunks;
    char tmp_name[MS_SW_PATH_MAX]; /* temporary name in dirfd, "" while unnamed (O_TMPFILE) */
    char final_path[MS_SW_PATH_MAX];
    /* ms_sw_open refused the directory (-EPERM): the symlink on the way that another
     * user planted in a shared directory, and its owner; "" otherwise */
    char dir_link[MS_SW_PATH_MAX];
    uint32_t dir_link_uid;
    unsigned char buf[MS_SW_BUF_SIZE];
} ms_snap_writer;

/* Creates the file that becomes `final_path` (ms_sf_create: unnamed, or a random
 * temporary name, 0600) and writes the file header. The directory is walked with
 * ms_sf_open_dir: -EPERM with w->dir_link set for a symlink on the way that another user
 * planted in a shared directory. Returns 0 or a negative errno. */
int ms_sw_open(ms_snap_writer *w, const char *final_path, uint64_t flags);
/* Writes into `fd`, which must be seekable (pwrite/pread patch and check chunks), from its
 * current start; the caller keeps and closes it. For output that is not a file of its own. */
int ms_sw_open_fd(ms_snap_writer *w, int fd, uint64_t flags);

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
/* A chunk of name/value pairs (HLTH: u32 count, then per pair a string and a u64), its
 * count patched at the end: no writer keeps the count by hand, so that a pair added
 * without changing a number cannot make the chunk unreadable. */
typedef struct ms_sw_named {
    uint64_t count_at;
    uint32_t count;
} ms_sw_named;
void ms_sw_named_begin(ms_snap_writer *w, ms_sw_named *c, uint32_t type);
void ms_sw_named_put(ms_snap_writer *w, ms_sw_named *c, const char *name, uint64_t value);
void ms_sw_named_end(ms_snap_writer *w, ms_sw_named *c);
/* Overwrites a u32 already written in the open chunk at payload offset `at` (for
 * counts known only at the end). The bytes must still be in the buffer or the file. */
void ms_sw_patch_u32(ms_snap_writer *w, uint64_t at, uint32_t v);
void ms_sw_patch_u64(ms_snap_writer *w, uint64_t at, uint64_t v);
uint64_t ms_sw_chunk_pos(const ms_snap_writer *w); /* payload bytes written so far */
void ms_sw_end(ms_snap_writer *w);

/* Writes END, flushes and (for its own file) fsyncs. Returns 0 or the first negative
 * errno any write met (ENOSPC, EFBIG, EDQUOT...). */
int ms_sw_finish(ms_snap_writer *w);
/* Names the finished file `path` (NULL: the final_path given to ms_sw_open; another path
 * must be in the same directory), replacing what is there. Returns 0 or a negative errno;
 * ms_sf_name_taken() tells whether another name may succeed. */
int ms_sw_place(ms_snap_writer *w, const char *path);
/* ms_sw_finish, then ms_sw_place(w, NULL) for its own file, then ms_sw_close. Returns 0 or
 * a negative errno; on error nothing is left under any name. */
int ms_sw_commit(ms_snap_writer *w);
/* Closes its own file; a file not yet placed is removed. Safe to call twice. */
void ms_sw_close(ms_snap_writer *w);
void ms_sw_abort(ms_snap_writer *w); /* ms_sw_close */

/* Formats v in decimal into buf (at least 21 bytes); returns the length. */
size_t ms_fmt_u64(char *buf, uint64_t v);

#endif
