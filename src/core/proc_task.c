/* fd and thread counts, thread stack pointers, exe path and command line from /proc.
 * Tools only. Never trusts /proc text: fixed-size buffers, bounded parsing, a thread
 * that exits while being read is skipped. */
#include "core/proc_task.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc_read.h"

static void pid_path(char *path, size_t cap, int pid, const char *rest)
{
    if (pid > 0)
        snprintf(path, cap, "/proc/%d/%s", pid, rest);
    else
        snprintf(path, cap, "/proc/self/%s", rest);
}

static long count_dir(int pid, const char *which, char *err, size_t errlen)
{
    char path[64];
    pid_path(path, sizeof path, pid, which);
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

long ms_proc_fd_count(int pid, char *err, size_t errlen)
{
    return count_dir(pid, "fd", err, errlen);
}

long ms_proc_task_count(int pid, char *err, size_t errlen)
{
    return count_dir(pid, "task", err, errlen);
}

static ssize_t read_into(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

int ms_parse_syscall_sp(const char *text, size_t len, uint64_t *sp)
{
    const char *p = text, *end = text + len;
    uint64_t words[9];
    int n = 0;
    while (p < end && n < 9) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n'))
            p++;
        if (p >= end)
            break;
        if (*p == '-') { /* "-1 sp pc": blocked, not in a system call */
            p++;
            uint64_t x;
            if (!ms_parse_u64(&p, end, &x))
                return 0;
            words[n++] = (uint64_t)-1;
            continue;
        }
        if (n == 0) {
            if (!ms_parse_u64(&p, end, &words[n]))
                return 0; /* "running" */
        } else if (!ms_parse_hex(&p, end, &words[n], 1)) {
            return 0;
        }
        n++;
    }
    /* nr a1 a2 a3 a4 a5 a6 sp pc (9 words), or -1 sp pc (3 words). */
    if (n == 9) {
        *sp = words[7];
        return 1;
    }
    if (n == 3 && words[0] == (uint64_t)-1) {
        *sp = words[1];
        return 1;
    }
    return 0;
}

uint64_t ms_parse_stat_kstkesp(const char *text, size_t len)
{
    const char *end = text + len, *rp = NULL;
    for (const char *q = text; q < end; q++)
        if (*q == ')')
            rp = q;
    if (!rp)
        return 0;
    const char *p = rp + 1;
    /* After ")": field 3 (state) is a letter; kstkesp is field 29. */
    int field = 2;
    while (p < end && field < 29) {
        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            return 0;
        field++;
        if (field == 29) {
            uint64_t v;
            return ms_parse_u64(&p, end, &v) ? v : 0;
        }
        while (p < end && *p != ' ')
            p++;
    }
    return 0;
}

long ms_proc_thread_sps(int pid, ms_thread_sp **out, char *err, size_t errlen)
{
    char path[96];
    pid_path(path, sizeof path, pid, "task");
    *out = NULL;
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    size_t n = 0, cap = 0;
    ms_thread_sp *v = NULL;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *endp;
        long tid = strtol(de->d_name, &endp, 10);
        if (*endp || tid <= 0 || tid > 0x7fffffff)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            ms_thread_sp *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                free(v);
                closedir(d);
                snprintf(err, errlen, "%s: out of memory", path);
                return -ENOMEM;
            }
            v = nv;
            cap = ncap;
        }
        ms_thread_sp *t = &v[n];
        memset(t, 0, sizeof *t);
        t->tid = (int)tid;
        char buf[1024], tp[128];
        char sub[64];
        snprintf(sub, sizeof sub, "task/%ld/syscall", tid);
        pid_path(tp, sizeof tp, pid, sub);
        ssize_t r = read_into(tp, buf, sizeof buf);
        if (r > 0)
            ms_parse_syscall_sp(buf, (size_t)r, &t->sp);
        if (!t->sp) {
            snprintf(sub, sizeof sub, "task/%ld/stat", tid);
            pid_path(tp, sizeof tp, pid, sub);
            r = read_into(tp, buf, sizeof buf);
            if (r > 0)
                t->sp = ms_parse_stat_kstkesp(buf, (size_t)r);
        }
        snprintf(sub, sizeof sub, "task/%ld/comm", tid);
        pid_path(tp, sizeof tp, pid, sub);
        r = read_into(tp, buf, sizeof t->comm);
        if (r > 0) {
            if (buf[r - 1] == '\n')
                buf[r - 1] = '\0';
            memcpy(t->comm, buf, sizeof t->comm);
            t->comm[sizeof t->comm - 1] = '\0';
        }
        n++;
    }
    closedir(d);
    *out = v;
    return (long)n;
}

int ms_proc_elf_class(int pid)
{
    char path[64];
    unsigned char h[5];
    pid_path(path, sizeof path, pid, "exe");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t r = read(fd, h, sizeof h);
    close(fd);
    if (r != (ssize_t)sizeof h || memcmp(h, "\177ELF", 4) != 0)
        return -ENOEXEC;
    return h[4] == 1 ? 32 : h[4] == 2 ? 64 : -ENOEXEC;
}

int ms_proc_exe(int pid, char *buf, size_t cap, char *err, size_t errlen)
{
    char path[64];
    pid_path(path, sizeof path, pid, "exe");
    if (cap == 0)
        return -EINVAL;
    ssize_t r = readlink(path, buf, cap - 1);
    if (r < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        buf[0] = '\0';
        return -e;
    }
    buf[r] = '\0';
    return 0;
}

int ms_proc_cmdline(int pid, char *buf, size_t cap, char *err, size_t errlen)
{
    char path[64];
    if (cap == 0)
        return -EINVAL;
    pid_path(path, sizeof path, pid, "cmdline");
    ssize_t r = read_into(path, buf, cap);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror((int)-r));
        buf[0] = '\0';
        return (int)r;
    }
    while (r > 0 && buf[r - 1] == '\0')
        r--;
    for (ssize_t i = 0; i < r; i++)
        if (buf[i] == '\0' || buf[i] == '\n')
            buf[i] = ' ';
    buf[r] = '\0';
    if (r == 0) {
        char comm[64];
        pid_path(path, sizeof path, pid, "comm");
        ssize_t c = read_into(path, comm, sizeof comm);
        if (c < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror((int)-c));
            return (int)c;
        }
        if (c > 0 && comm[c - 1] == '\n')
            comm[c - 1] = '\0';
        snprintf(buf, cap, "[%s]", comm);
    }
    return 0;
}
