/* Output files, safe directory walks, awaited files and whole-file reads for the tools
 * (see fileio.h). The allocation-free parts shared with the agent are in safe_file.c. */
#define _GNU_SOURCE
#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safe_file.h"

/* ===========================================================================
 * Directories: followed through symlinks only when ms_sf_trusted.
 * ========================================================================= */
int ms_open_dir_safe(const char *dir, char *err, size_t errlen)
{
    char work[2 * PATH_MAX], walked[2 * PATH_MAX];
    uid_t owner = 0;
    int fd = ms_sf_open_dir(dir, work, walked, sizeof work, &owner);
    if (fd >= 0)
        return fd;
    if (fd == -EPERM)
        snprintf(err, errlen,
                 "%s: %s is a symlink that belongs to uid %u in a shared directory "
                 "(sticky, writable by all): not following it",
                 dir, walked, (unsigned)owner);
    else if (walked[0])
        snprintf(err, errlen, "%s: %s: %s", dir, walked, strerror(-fd));
    else
        snprintf(err, errlen, "%s: %s", dir, strerror(-fd));
    return -1;
}

/* ===========================================================================
 * Output files (-o).
 * ========================================================================= */
static void outfile_release(ms_outfile *of)
{
    if (of->fp)
        fclose(of->fp);
    else if (of->fd >= 0)
        close(of->fd);
    if (of->dirfd >= 0) {
        if (of->tmp)
            ms_sf_discard(of->dirfd, of->tmp);
        close(of->dirfd);
    }
    free(of->final_path);
    free(of->base);
    free(of->tmp);
    memset(of, 0, sizeof *of);
    of->fd = of->dirfd = -1;
}

static int same_file(int fd, const struct stat *st)
{
    struct stat o;
    return fstat(fd, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* Our stdout or stderr when st is the same file (/dev/stdout with stdout redirected to a
 * file), else -1. */
static int std_stream_of(const struct stat *st)
{
    return same_file(1, st) ? 1 : same_file(2, st) ? 2 : -1;
}

/* What to write through into, when `base` in dirfd is not a regular file or a new name:
 * returns fd, -2 for "create a new file", or -1 with a message. */
static int open_existing(ms_outfile *of, const char *path, char *err, size_t errlen)
{
    struct stat st, dst, got;
    if (fstatat(of->dirfd, of->base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT)
            return -2;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode))
        return -2;
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: is a directory", path);
        return -1;
    }
    if (fstat(of->dirfd, &dst) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int trusted = ms_sf_trusted(&dst, st.st_uid);
    int fd;
    if (S_ISLNK(st.st_mode)) {
        /* A link is followed only to what cannot be replaced by a rename (a device, a
         * FIFO, a terminal or pipe behind /dev/stdout) or to our own stdout or stderr,
         * and only when trusted; otherwise the link itself is replaced. */
        struct stat tst;
        if (!trusted || fstatat(of->dirfd, of->base, &tst, 0) != 0 || S_ISDIR(tst.st_mode))
            return -2;
        int std = std_stream_of(&tst);
        if (S_ISREG(tst.st_mode) && std < 0)
            return -2;
        if (std >= 0) {
            fd = fcntl(std, F_DUPFD_CLOEXEC, 3); /* continues its offset and append mode */
            if (fd < 0)
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return fd < 0 ? -1 : fd;
        }
        fd = openat(of->dirfd, of->base, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0 && (fstat(fd, &got) != 0 || got.st_ino != tst.st_ino ||
                        got.st_dev != tst.st_dev)) {
            snprintf(err, errlen, "%s: changed while being opened", path);
            close(fd);
            return -1;
        }
    } else {
        if (!trusted) {
            snprintf(err, errlen,
                     "%s: a %s that belongs to uid %u in a shared directory (sticky, writable "
                     "by all): not writing into it",
                     path, ms_sf_kind(st.st_mode), (unsigned)st.st_uid);
            return -1;
        }
        /* Blocks on a FIFO until a reader comes, as any writer does. */
        fd = openat(of->dirfd, of->base, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    }
    if (fd < 0 || fstat(fd, &got) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (S_ISREG(got.st_mode) || S_ISDIR(got.st_mode)) {
        snprintf(err, errlen, "%s: changed while being opened", path);
        close(fd);
        return -1;
    }
    return fd;
}

int ms_outfile_open(ms_outfile *of, const char *path, char *err, size_t errlen)
{
    memset(of, 0, sizeof *of);
    of->fd = of->dirfd = -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        snprintf(err, errlen, "%s: is a directory", *path ? path : "''");
        return -1;
    }
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    of->final_path = strdup(path);
    of->base = strdup(base);
    of->tmpcap = strlen(base) + MS_SF_TMP_EXTRA;
    of->tmp = calloc(1, of->tmpcap);
    if (!dir || !of->final_path || !of->base || !of->tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        free(dir);
        outfile_release(of);
        return -1;
    }
    of->dirfd = ms_open_dir_safe(dir, err, errlen);
    free(dir);
    if (of->dirfd < 0) {
        outfile_release(of);
        return -1;
    }
    int fd = open_existing(of, path, err, errlen);
    if (fd == -1) {
        outfile_release(of);
        return -1;
    }
    if (fd >= 0) {
        of->through = 1;
    } else {
        fd = ms_sf_create(of->dirfd, of->base, of->tmp, of->tmpcap);
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create: %s", path, strerror(-fd));
            outfile_release(of);
            return -1;
        }
    }
    of->fd = fd;
    of->fp = fdopen(fd, "w");
    if (!of->fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        outfile_release(of);
        return -1;
    }
    return 0;
}

int ms_outfile_commit(ms_outfile *of, char *err, size_t errlen)
{
    int rc = 0;
    const char *path = of->final_path;
    if (fflush(of->fp) != 0 || ferror(of->fp)) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && !of->through && fsync(of->fd) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && !of->through) {
        int r = ms_sf_place(of->dirfd, of->fd, of->base, of->tmp, of->tmpcap);
        if (r != 0) {
            snprintf(err, errlen, "%s: cannot rename into place: %s%s", path, strerror(-r),
                     ms_sf_name_taken(-r) ? " (the name is taken by something this user may "
                                            "not replace)"
                                          : "");
            rc = -1;
        }
    }
    int cr = fclose(of->fp);
    of->fp = NULL;
    of->fd = -1;
    if (cr != 0 && rc == 0) {
        snprintf(err, errlen, "%s: close failed: %s", path, strerror(errno));
        rc = -1;
    }
    outfile_release(of);
    return rc;
}

void ms_outfile_abort(ms_outfile *of) { outfile_release(of); }

int ms_remove_stale_snapshot_tmps(const char *dir, uid_t owner)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, ".memsight-", 10) != 0 || !strstr(n, ".msnap.tmp"))
            continue;
        char *end;
        long pid = strtol(n + 10, &end, 10);
        struct stat st;
        if (end == n + 10 || *end != '-' || pid <= 0 || pid > INT_MAX ||
            fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != owner)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* still running (or not ours to ask): maybe writing it now */
        removed += unlinkat(dirfd(d), n, 0) == 0;
    }
    closedir(d);
    return removed;
}

/* ===========================================================================
 * Reading.
 * ========================================================================= */
int ms_open_awaited(const char *path, uid_t owner, char *err, size_t errlen)
{
    struct stat st;
    int fd = ms_sf_open_regular(AT_FDCWD, path, owner, &st);
    if (fd >= 0)
        return fd;
    if (fd == -ELOOP)
        snprintf(err, errlen, "%s: is a symlink (owner uid %u), not a file an agent wrote: "
                              "not following it",
                 path, (unsigned)st.st_uid);
    else if (fd == -EINVAL)
        snprintf(err, errlen, "%s: is a %s (owner uid %u), not a snapshot file: not reading it",
                 path, ms_sf_kind(st.st_mode), (unsigned)st.st_uid);
    else if (fd == -EPERM)
        snprintf(err, errlen, "%s: belongs to uid %u, not to uid %u whose process writes it: "
                              "not reading it",
                 path, (unsigned)st.st_uid, (unsigned)owner);
    else
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-fd));
    return -1;
}

char *ms_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    return ms_read_fd(fd, path, len, err, errlen);
}

char *ms_read_fd(int fd, const char *path, size_t *len, char *err, size_t errlen)
{
    size_t cap = 65536, n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX - 1)
        cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        close(fd);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap * 2;
            char *nb = ncap > cap ? realloc(buf, ncap + 1) : NULL;
            if (!nb) {
                snprintf(err, errlen, "%s: out of memory", path);
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: read failed: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}
