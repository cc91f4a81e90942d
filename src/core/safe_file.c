/* Safe creation and opening of files in shared directories (see safe_file.h). Used
 * inside the target by the agent's snapshot writer: no malloc, no stdio, no locks. */
#define _GNU_SOURCE
#include "core/safe_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h> /* renameat() only */
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int ms_sf_trusted(const struct stat *dir, uid_t owner)
{
    if (!(dir->st_mode & S_ISVTX) || !(dir->st_mode & S_IWOTH))
        return 1;
    return owner == geteuid() || owner == dir->st_uid;
}

/* ===========================================================================
 * Directories walked one component at a time (ms_sf_open_dir)
 * ========================================================================= */
static size_t sf_len(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* Appends "/comp" (or "comp" after a "/" or at the start) to walked; 0 if it fits. */
static int sf_walked_add(char *walked, size_t cap, const char *comp, size_t cl)
{
    size_t wl = sf_len(walked);
    int sep = wl && walked[wl - 1] != '/';
    if (wl + (size_t)sep + cl + 1 > cap)
        return -1;
    if (sep)
        walked[wl++] = '/';
    memcpy(walked + wl, comp, cl);
    walked[wl + cl] = 0;
    return 0;
}

int ms_sf_open_dir(const char *dir, char *work, char *walked, size_t cap, uid_t *link_uid)
{
    size_t dl = sf_len(dir);
    walked[0] = 0;
    if (dl >= cap || cap < 2)
        return -ENAMETOOLONG;
    memcpy(work, dir, dl + 1);
    if (dir[0] == '/') {
        walked[0] = '/';
        walked[1] = 0;
    }
    int fd = open(dir[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char *p = work;
    int hops = 0;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t cl = 0;
        while (p[cl] && p[cl] != '/')
            cl++;
        char comp[256];
        if (cl >= sizeof comp) {
            close(fd);
            return -ENAMETOOLONG;
        }
        memcpy(comp, p, cl);
        comp[cl] = 0;
        p += cl;
        if (cl == 1 && comp[0] == '.')
            continue;
        size_t wl = sf_len(walked);
        if (sf_walked_add(walked, cap, comp, cl) != 0) {
            close(fd);
            return -ENAMETOOLONG;
        }
        int nfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st, dst;
        if (nfd < 0 || fstat(nfd, &st) != 0) {
            int e = errno;
            if (nfd >= 0)
                close(nfd);
            close(fd);
            return -e;
        }
        if (S_ISLNK(st.st_mode)) {
            if (fstat(fd, &dst) != 0 || !ms_sf_trusted(&dst, st.st_uid)) {
                *link_uid = st.st_uid;
                close(nfd);
                close(fd);
                return -EPERM;
            }
            /* the target, then the rest of the path, in place of what was walked: the
             * rest waits at the end of the buffer while the target is read */
            size_t rl = sf_len(p);
            char *rest = work + cap - rl - 1;
            memmove(rest, p, rl + 1);
            ssize_t n = ++hops > 40 ? -1 : readlinkat(nfd, "", work, cap - rl - 1);
            int e = hops > 40 ? ELOOP : errno;
            close(nfd);
            if (n <= 0 || (size_t)n >= cap - rl - 1) {
                close(fd);
                return n < 0 ? -e : -ENAMETOOLONG;
            }
            int absolute = work[0] == '/';
            memmove(work + n, rest, rl + 1);
            p = work;
            walked[wl] = 0; /* the link's directory is the start of a relative target */
            if (absolute) {
                close(fd);
                walked[0] = '/';
                walked[1] = 0;
                fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                    return -errno;
            }
            continue;
        }
        close(fd);
        fd = nfd;
        if (!S_ISDIR(st.st_mode)) {
            close(fd);
            return -ENOTDIR;
        }
    }
    return fd;
}

/* 64 unpredictable bits for temporary names: a neighbour who can plant names in the
 * directory must not be able to guess the next one. */
static uint64_t sf_random(void)
{
    uint64_t v = 0;
    if (syscall(SYS_getrandom, &v, sizeof v, GRND_NONBLOCK) == (long)sizeof v)
        return v;
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
        (uint64_t)(uintptr_t)&v ^
        __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
    v ^= v >> 31;
    v *= 0xbf58476d1ce4e5b9ull;
    v ^= v >> 29;
    return v;
}

/* ".<base>.tmp<16 hex digits>"; the caller checked the room. */
static void sf_tmp_name(char *tmp, const char *base, size_t bl)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t r = sf_random();
    char *t = tmp;
    *t++ = '.';
    memcpy(t, base, bl);
    t += bl;
    memcpy(t, ".tmp", 4);
    t += 4;
    for (int i = 0; i < 16; i++, r >>= 4)
        *t++ = hex[r & 15];
    *t = 0;
}

static void sf_proc_fd(char *buf, int fd)
{
    static const char pre[] = "/proc/self/fd/";
    char digits[16];
    int n = 0;
    unsigned v = (unsigned)fd;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(buf, pre, sizeof pre - 1);
    char *p = buf + sizeof pre - 1;
    while (n)
        *p++ = digits[--n];
    *p = 0;
}

/* An unnamed file can be linked only through /proc/self/fd (AT_EMPTY_PATH needs a
 * capability): use O_TMPFILE only when that path leads to this very file. */
static int sf_linkable(int fd)
{
    char p[40];
    struct stat a, b;
    sf_proc_fd(p, fd);
    return stat(p, &a) == 0 && fstat(fd, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

int ms_sf_create(int dirfd, const char *base, char *tmp, size_t tmpcap)
{
    size_t bl = strlen(base);
    if (!bl || bl + MS_SF_TMP_EXTRA > tmpcap)
        return -ENAMETOOLONG;
    tmp[0] = 0;
#ifdef O_TMPFILE
    int ufd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (ufd >= 0) {
        if (sf_linkable(ufd))
            return ufd;
        close(ufd);
    }
#endif
    for (int attempt = 0; attempt < 100; attempt++) {
        sf_tmp_name(tmp, base, bl);
        int fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST) {
            int e = errno;
            tmp[0] = 0;
            return -e;
        }
    }
    tmp[0] = 0;
    return -EEXIST;
}

int ms_sf_place(int dirfd, int fd, const char *base, char *tmp, size_t tmpcap)
{
    if (!tmp[0]) {
        size_t bl = strlen(base);
        if (!bl || bl + MS_SF_TMP_EXTRA > tmpcap)
            return -ENAMETOOLONG;
        char proc[40];
        sf_proc_fd(proc, fd);
        int linked = 0;
        for (int attempt = 0; attempt < 100 && !linked; attempt++) {
            sf_tmp_name(tmp, base, bl);
            if (linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW) == 0)
                linked = 1;
            else if (errno != EEXIST) {
                int e = errno;
                tmp[0] = 0;
                return -e;
            }
        }
        if (!linked) {
            tmp[0] = 0;
            return -EEXIST;
        }
    }
    if (renameat(dirfd, tmp, dirfd, base) != 0)
        return -errno;
    tmp[0] = 0;
    return 0;
}

void ms_sf_discard(int dirfd, char *tmp)
{
    if (tmp[0])
        unlinkat(dirfd, tmp, 0);
    tmp[0] = 0;
}

int ms_sf_name_taken(int err)
{
    return err == EPERM || err == EISDIR || err == ENOTEMPTY || err == EEXIST || err == EBUSY;
}

int ms_sf_open_regular(int dirfd, const char *path, uid_t owner, struct stat *st)
{
    /* Looked at before opening: opening a device can have effects of its own. */
    if (fstatat(dirfd, path, st, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    if (S_ISLNK(st->st_mode))
        return -ELOOP;
    if (!S_ISREG(st->st_mode))
        return -EINVAL;
    if (owner != (uid_t)-1 && st->st_uid != owner)
        return -EPERM;
    int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* What was opened is checked again: the name may have been swapped meanwhile. */
    int rc = fstat(fd, st) != 0 ? -errno : 0;
    if (!rc && !S_ISREG(st->st_mode))
        rc = -EINVAL;
    if (!rc && owner != (uid_t)-1 && st->st_uid != owner)
        rc = -EPERM;
    if (rc) {
        close(fd);
        return rc;
    }
    return fd;
}

const char *ms_sf_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "regular file";
    case S_IFDIR: return "directory";
    case S_IFLNK: return "symlink";
    case S_IFIFO: return "FIFO";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    case S_IFSOCK: return "socket";
    default: return "special file";
    }
}
