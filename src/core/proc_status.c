/* Parsers for status, statm and meminfo: "Key:   value [kB]" lines matched against a
 * table. No allocation in the parse functions; reads use a small stack buffer.
 * Never trusts the text: bounded scans, saturating numbers. */
#include "core/proc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/proc_read.h"

static const char *const status_names[MS_ST_NFIELDS] = {
    [MS_ST_VM_PEAK] = "VmPeak", [MS_ST_VM_SIZE] = "VmSize", [MS_ST_VM_LCK] = "VmLck",
    [MS_ST_VM_PIN] = "VmPin",   [MS_ST_VM_HWM] = "VmHWM",   [MS_ST_VM_RSS] = "VmRSS",
    [MS_ST_RSS_ANON] = "RssAnon", [MS_ST_RSS_FILE] = "RssFile",
    [MS_ST_RSS_SHMEM] = "RssShmem", [MS_ST_VM_DATA] = "VmData", [MS_ST_VM_STK] = "VmStk",
    [MS_ST_VM_EXE] = "VmExe",   [MS_ST_VM_LIB] = "VmLib",   [MS_ST_VM_PTE] = "VmPTE",
    [MS_ST_VM_SWAP] = "VmSwap", [MS_ST_THREADS] = "Threads", [MS_ST_PID] = "Pid",
    [MS_ST_PPID] = "PPid",      [MS_ST_TGID] = "Tgid",      [MS_ST_UID] = "Uid",
};

static const char *const meminfo_names[MS_MI_NFIELDS] = {
    [MS_MI_MEM_TOTAL] = "MemTotal", [MS_MI_MEM_FREE] = "MemFree",
    [MS_MI_MEM_AVAILABLE] = "MemAvailable", [MS_MI_BUFFERS] = "Buffers",
    [MS_MI_CACHED] = "Cached", [MS_MI_SWAP_CACHED] = "SwapCached",
    [MS_MI_SWAP_TOTAL] = "SwapTotal", [MS_MI_SWAP_FREE] = "SwapFree",
    [MS_MI_SHMEM] = "Shmem", [MS_MI_SLAB] = "Slab",
};

const char *ms_status_field_name(enum ms_status_field f)
{
    return (unsigned)f < MS_ST_NFIELDS ? status_names[f] : "?";
}

const char *ms_meminfo_field_name(enum ms_meminfo_field f)
{
    return (unsigned)f < MS_MI_NFIELDS ? meminfo_names[f] : "?";
}

/* Calls fn(key, keylen, value_start, line_end) for each "key:" line. */
typedef void (*kv_fn)(void *ctx, const char *k, size_t kl, const char *v, const char *e);
static void each_kv(const char *text, size_t len, kv_fn fn, void *ctx)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end;
        const char *c = memchr(p, ':', (size_t)(e - p));
        if (c && c > p)
            fn(ctx, p, (size_t)(c - p), c + 1, e);
        p = e < end ? e + 1 : end;
    }
}

static int lookup(const char *const *names, int n, const char *k, size_t kl)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == kl && memcmp(names[i], k, kl) == 0)
            return i;
    return -1;
}

static void status_kv(void *ctx, const char *k, size_t kl, const char *v, const char *e)
{
    ms_proc_status *st = ctx;
    if (kl == 4 && memcmp(k, "Name", 4) == 0) {
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        size_t n = (size_t)(e - v);
        if (n >= sizeof st->name)
            n = sizeof st->name - 1;
        memcpy(st->name, v, n);
        st->name[n] = '\0';
        return;
    }
    if (kl == 5 && memcmp(k, "State", 5) == 0) {
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        st->state = v < e ? *v : 0;
        return;
    }
    int f = lookup(status_names, MS_ST_NFIELDS, k, kl);
    if (f < 0)
        return;
    uint64_t x;
    if (ms_parse_u64(&v, e, &x)) { /* Uid: the first (real) id */
        st->v[f] = x;
        st->present |= 1u << f;
    }
}

void ms_status_parse(ms_proc_status *st, const char *text, size_t len)
{
    memset(st, 0, sizeof *st);
    each_kv(text, len, status_kv, st);
}

static void meminfo_kv(void *ctx, const char *k, size_t kl, const char *v, const char *e)
{
    ms_meminfo *mi = ctx;
    int f = lookup(meminfo_names, MS_MI_NFIELDS, k, kl);
    uint64_t x;
    if (f >= 0 && ms_parse_u64(&v, e, &x)) {
        mi->kb[f] = x;
        mi->present |= 1u << f;
    }
}

void ms_meminfo_parse(ms_meminfo *mi, const char *text, size_t len)
{
    memset(mi, 0, sizeof *mi);
    each_kv(text, len, meminfo_kv, mi);
}

void ms_statm_parse(ms_proc_statm *sm, const char *text, size_t len)
{
    memset(sm, 0, sizeof *sm);
    uint64_t *dst[] = {&sm->size, &sm->resident, &sm->shared, &sm->text,
                       &sm->lib, &sm->data, &sm->dt};
    const char *p = text, *end = text + len;
    for (int i = 0; i < 7; i++) {
        if (!ms_parse_u64(&p, end, dst[i]))
            break;
        sm->nfields = i + 1;
    }
}

/* Reads a small /proc file into buf (truncating what does not fit). */
static int read_small(const char *path, char *buf, size_t cap, size_t *len, char *err,
                      size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *len = n;
    return 0;
}

/* read_small of /proc/PID/<name>, or /proc/self/<name> when pid <= 0. */
static int read_pid_file(int pid, const char *name, char *buf, size_t cap, size_t *len,
                         char *err, size_t errlen)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
    else
        snprintf(path, sizeof path, "/proc/self/%s", name);
    return read_small(path, buf, cap, len, err, errlen);
}

int ms_status_read(ms_proc_status *st, int pid, char *err, size_t errlen)
{
    char buf[8192];
    size_t len;
    int rc = read_pid_file(pid, "status", buf, sizeof buf, &len, err, errlen);
    if (rc)
        return rc;
    ms_status_parse(st, buf, len);
    return 0;
}

int ms_statm_read(ms_proc_statm *sm, int pid, char *err, size_t errlen)
{
    char buf[512];
    size_t len;
    int rc = read_pid_file(pid, "statm", buf, sizeof buf, &len, err, errlen);
    if (rc)
        return rc;
    ms_statm_parse(sm, buf, len);
    return 0;
}

int ms_meminfo_read(ms_meminfo *mi, char *err, size_t errlen)
{
    char buf[16384];
    size_t len;
    int rc = read_small("/proc/meminfo", buf, sizeof buf, &len, err, errlen);
    if (rc)
        return rc;
    ms_meminfo_parse(mi, buf, len);
    if (!(mi->present & (1u << MS_MI_MEM_AVAILABLE)))
        mi->kb[MS_MI_MEM_AVAILABLE] = ms_sat_add(
            mi->kb[MS_MI_MEM_FREE], ms_sat_add(mi->kb[MS_MI_BUFFERS], mi->kb[MS_MI_CACHED]));
    return 0;
}
