/* Allocation-free snapshot writer (see snapshot_write.h): buffered write() into a file
 * created by safe_file.c (unnamed until finished), chunk headers patched with pwrite(), CRC
 * computed by re-reading each finished chunk. Runs inside the target: no malloc, no stdio,
 * no locks. */
#define _GNU_SOURCE
#include "core/snapshot_write.h"

#include "core/safe_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/crc32.h"

static const unsigned char ms_zero_pad[8];

size_t ms_fmt_u64(char *buf, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = 0;
    return n;
}

static void sw_fail(ms_snap_writer *w, int e)
{
    if (!w->err)
        w->err = e ? e : EIO;
}

static void sw_flush(ms_snap_writer *w)
{
    size_t done = 0;
    while (!w->err && done < w->buflen) {
        ssize_t r = write(w->fd, w->buf + done, w->buflen - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            sw_fail(w, r < 0 ? errno : ENOSPC);
            break;
        }
        done += (size_t)r;
    }
    w->file_off += w->buflen;
    w->buflen = 0;
}

static void sw_raw(ms_snap_writer *w, const void *p, size_t n)
{
    const unsigned char *s = p;
    while (n && !w->err) {
        if (w->buflen == sizeof w->buf)
            sw_flush(w);
        size_t k = sizeof w->buf - w->buflen;
        if (k > n)
            k = n;
        memcpy(w->buf + w->buflen, s, k);
        w->buflen += k;
        s += k;
        n -= k;
    }
}

static int sw_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    const unsigned char *s = p;
    while (n) {
        ssize_t r = pwrite(fd, s, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        s += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static size_t sw_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static void sw_reset(ms_snap_writer *w)
{
    w->fd = -1;
    w->dirfd = -1;
    w->owns_fd = 0;
    w->err = 0;
    w->no_sync = 0;
    w->file_off = 0;
    w->buflen = 0;
    w->in_chunk = 0;
    w->nchunks = 0;
    w->tmp_name[0] = 0;
    w->final_path[0] = 0;
    w->dir_link[0] = 0;
    w->dir_link_uid = 0;
}

static void sw_header(ms_snap_writer *w, uint64_t flags)
{
    ms_snap_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MS_SNAP_MAGIC, 8);
    h.version_major = MS_SNAP_VERSION_MAJOR;
    h.version_minor = MS_SNAP_VERSION_MINOR;
    h.header_size = sizeof h;
    h.flags = flags;
    sw_raw(w, &h, sizeof h);
}

/* Index of the first character of path's last component. */
static size_t sw_base(const char *path)
{
    size_t n = sw_strlen(path);
    while (n > 0 && path[n - 1] != '/')
        n--;
    return n;
}

int ms_sw_open(ms_snap_writer *w, const char *final_path, uint64_t flags)
{
    sw_reset(w);
    size_t n = sw_strlen(final_path);
    if (n + MS_SF_TMP_EXTRA >= MS_SW_PATH_MAX)
        return -ENAMETOOLONG;
    size_t slash = sw_base(final_path);
    if (slash == n)
        return -EISDIR;
    memcpy(w->final_path, final_path, n + 1);
    /* The directory, opened once: the file is created and named relative to it. */
    char dir[MS_SW_PATH_MAX];
    if (slash == 0) {
        dir[0] = '.';
        dir[1] = 0;
    } else {
        size_t dl = slash > 1 ? slash - 1 : 1;
        memcpy(dir, final_path, dl);
        dir[dl] = 0;
    }
    /* never into a directory a neighbour's symlink in /tmp leads to: snapshots hold the
     * program's data */
    char work[MS_SW_PATH_MAX];
    uid_t owner = 0;
    w->dirfd = ms_sf_open_dir(dir, work, w->dir_link, sizeof w->dir_link, &owner);
    if (w->dirfd < 0) {
        int e = w->dirfd;
        w->dirfd = -1;
        if (e == -EPERM)
            w->dir_link_uid = (uint32_t)owner;
        else
            w->dir_link[0] = 0;
        return e;
    }
    w->dir_link[0] = 0;
    int fd = ms_sf_create(w->dirfd, final_path + slash, w->tmp_name, sizeof w->tmp_name);
    if (fd < 0) {
        close(w->dirfd);
        w->dirfd = -1;
        return fd;
    }
    w->fd = fd;
    w->owns_fd = 1;
    sw_header(w, flags);
    return 0;
}

int ms_sw_open_fd(ms_snap_writer *w, int fd, uint64_t flags)
{
    sw_reset(w);
    if (fd < 0)
        return -EBADF;
    w->fd = fd;
    sw_header(w, flags);
    return 0;
}

void ms_sw_begin(ms_snap_writer *w, uint32_t type, uint32_t flags)
{
    if (w->in_chunk)
        ms_sw_end(w);
    ms_chunk_header ch;
    memset(&ch, 0, sizeof ch);
    ch.type = type;
    ch.flags = flags;
    w->chunk_hdr_off = w->file_off + w->buflen;
    w->chunk_type = type;
    w->chunk_flags = flags;
    w->chunk_len = 0;
    w->in_chunk = 1;
    sw_raw(w, &ch, sizeof ch);
}

void ms_sw_bytes(ms_snap_writer *w, const void *p, size_t n)
{
    sw_raw(w, p, n);
    w->chunk_len += n;
}

void ms_sw_u8(ms_snap_writer *w, uint8_t v) { ms_sw_bytes(w, &v, 1); }
void ms_sw_u16(ms_snap_writer *w, uint16_t v) { ms_sw_bytes(w, &v, 2); }
void ms_sw_u32(ms_snap_writer *w, uint32_t v) { ms_sw_bytes(w, &v, 4); }
void ms_sw_u64(ms_snap_writer *w, uint64_t v) { ms_sw_bytes(w, &v, 8); }

void ms_sw_str(ms_snap_writer *w, const char *s, size_t n)
{
    if (n > UINT32_MAX)
        n = UINT32_MAX;
    ms_sw_u32(w, (uint32_t)n);
    ms_sw_bytes(w, s, n);
}

void ms_sw_cstr(ms_snap_writer *w, const char *s)
{
    if (!s)
        s = "";
    ms_sw_str(w, s, sw_strlen(s));
}

void ms_sw_kv(ms_snap_writer *w, const char *key, const char *value)
{
    ms_sw_cstr(w, key);
    ms_sw_cstr(w, value);
}

void ms_sw_kv_u64(ms_snap_writer *w, const char *key, uint64_t value)
{
    char b[24];
    ms_fmt_u64(b, value);
    ms_sw_kv(w, key, b);
}

void ms_sw_kv_i64(ms_snap_writer *w, const char *key, int64_t value)
{
    char b[24];
    if (value < 0) {
        b[0] = '-';
        ms_fmt_u64(b + 1, (uint64_t)0 - (uint64_t)value);
    } else {
        ms_fmt_u64(b, (uint64_t)value);
    }
    ms_sw_kv(w, key, b);
}

uint64_t ms_sw_chunk_pos(const ms_snap_writer *w) { return w->chunk_len; }

void ms_sw_named_begin(ms_snap_writer *w, ms_sw_named *c, uint32_t type)
{
    ms_sw_begin(w, type, 0);
    c->count_at = ms_sw_chunk_pos(w);
    c->count = 0;
    ms_sw_u32(w, 0);
}

void ms_sw_named_put(ms_snap_writer *w, ms_sw_named *c, const char *name, uint64_t value)
{
    ms_sw_cstr(w, name);
    ms_sw_u64(w, value);
    c->count++;
}

void ms_sw_named_end(ms_snap_writer *w, ms_sw_named *c)
{
    ms_sw_patch_u32(w, c->count_at, c->count);
    ms_sw_end(w);
}

static void sw_patch(ms_snap_writer *w, uint64_t at, const void *p, size_t n)
{
    if (w->err || !w->in_chunk || at + n > w->chunk_len)
        return;
    uint64_t off = w->chunk_hdr_off + sizeof(ms_chunk_header) + at;
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++, off++) {
        if (off >= w->file_off) {
            w->buf[off - w->file_off] = s[i];
        } else {
            int e = sw_pwrite_all(w->fd, s + i, 1, off);
            if (e)
                sw_fail(w, e);
        }
    }
}

void ms_sw_patch_u32(ms_snap_writer *w, uint64_t at, uint32_t v) { sw_patch(w, at, &v, 4); }
void ms_sw_patch_u64(ms_snap_writer *w, uint64_t at, uint64_t v) { sw_patch(w, at, &v, 8); }

void ms_sw_end(ms_snap_writer *w)
{
    if (!w->in_chunk)
        return;
    uint64_t len = w->chunk_len;
    size_t pad = (size_t)((8 - (len & 7)) & 7);
    sw_raw(w, ms_zero_pad, pad);
    sw_flush(w);
    w->in_chunk = 0;
    if (w->err)
        return;
    /* CRC over the payload as it is in the file (patches included). */
    uint32_t crc = 0;
    uint64_t off = w->chunk_hdr_off + sizeof(ms_chunk_header);
    uint64_t left = len;
    while (left) {
        size_t k = left > sizeof w->buf ? sizeof w->buf : (size_t)left;
        ssize_t r = pread(w->fd, w->buf, k, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            sw_fail(w, r < 0 ? errno : EIO);
            return;
        }
        crc = ms_crc32(crc, w->buf, (size_t)r);
        off += (uint64_t)r;
        left -= (uint64_t)r;
    }
    ms_chunk_header ch;
    memset(&ch, 0, sizeof ch);
    ch.type = w->chunk_type;
    ch.flags = w->chunk_flags;
    ch.length = len;
    ch.crc32 = crc;
    int e = sw_pwrite_all(w->fd, &ch, sizeof ch, w->chunk_hdr_off);
    if (e)
        sw_fail(w, e);
    if (w->chunk_type != MS_CHUNK_END)
        w->nchunks++;
}

int ms_sw_finish(ms_snap_writer *w)
{
    if (w->fd < 0)
        return -EBADF;
    if (w->in_chunk)
        ms_sw_end(w);
    uint32_t n = w->nchunks;
    ms_sw_begin(w, MS_CHUNK_END, MS_CHUNKF_REQUIRED);
    ms_sw_u32(w, n);
    ms_sw_end(w);
    if (w->owns_fd && !w->no_sync && !w->err && fsync(w->fd) != 0 && errno != EINVAL)
        sw_fail(w, errno);
    return w->err ? -w->err : 0;
}

int ms_sw_place(ms_snap_writer *w, const char *path)
{
    if (w->fd < 0 || !w->owns_fd)
        return -EBADF;
    if (w->err)
        return -w->err;
    if (path && path != w->final_path) {
        size_t n = sw_strlen(path);
        if (n >= MS_SW_PATH_MAX)
            return -ENAMETOOLONG;
        memcpy(w->final_path, path, n + 1);
    }
    const char *base = w->final_path + sw_base(w->final_path);
    return ms_sf_place(w->dirfd, w->fd, base, w->tmp_name, sizeof w->tmp_name);
}

void ms_sw_close(ms_snap_writer *w)
{
    if (w->owns_fd) {
        if (w->fd >= 0)
            close(w->fd);
        if (w->dirfd >= 0) {
            ms_sf_discard(w->dirfd, w->tmp_name);
            close(w->dirfd);
        }
    }
    w->fd = -1;
    w->dirfd = -1;
    w->owns_fd = 0;
}

void ms_sw_abort(ms_snap_writer *w) { ms_sw_close(w); }

int ms_sw_commit(ms_snap_writer *w)
{
    int rc = ms_sw_finish(w);
    if (rc == 0 && w->owns_fd)
        rc = ms_sw_place(w, NULL);
    ms_sw_close(w);
    return rc;
}
