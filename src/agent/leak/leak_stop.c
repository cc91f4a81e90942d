/* Stop-the-world by signal for the leak scan (see leak_stop.h). The handler only saves
 * registers and waits on a futex; the stopping thread lists /proc/self/task with raw
 * getdents64. Runs inside the target: no malloc, no stdio, no lock a thread could hold. */
#define _GNU_SOURCE
#include "agent/leak/leak_stop.h"
#include "agent/platform/sig_resume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static ms_lk_world *volatile g_world; /* the stop in progress */
static uint32_t g_stop_seq;           /* incremented when a stop begins */
static uint32_t g_release_seq;        /* set to the stop's number when it ends */
static uint32_t g_acks;               /* futex word: bumped by each stopped thread */
static int g_in_handler;              /* threads inside the handler */
static int g_installed_sig;

uint64_t ms_lk_mono_ns(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long futex(uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    return syscall(SYS_futex, addr, op, val, ts, NULL, 0);
}

static void stop_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int saved = errno;
    __atomic_fetch_add(&g_in_handler, 1, __ATOMIC_ACQ_REL);
    uint32_t seq = __atomic_load_n(&g_stop_seq, __ATOMIC_ACQUIRE);
    ms_lk_world *w = g_world;
    if (si->si_code != SI_TKILL || si->si_pid != (pid_t)syscall(SYS_getpid) || !w ||
        (int32_t)(__atomic_load_n(&g_release_seq, __ATOMIC_ACQUIRE) - seq) >= 0)
        goto out; /* not ours, or a late signal of a stop already over */
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    ms_lk_thread *slot = NULL;
    for (size_t i = 0; i < w->n; i++)
        if (w->t[i].tid == tid) {
            slot = &w->t[i];
            break;
        }
    if (!slot)
        goto out;
    ms_arch_context_regs(ucv, &slot->sp, slot->regs, slot->xmm);
    slot->tp = ms_arch_thread_pointer();
    __atomic_store_n(&slot->state, MS_LKT_STOPPED, __ATOMIC_RELEASE);
    __atomic_fetch_add(&g_acks, 1, __ATOMIC_RELEASE);
    futex(&g_acks, FUTEX_WAKE_PRIVATE, 1, NULL);
    /* wait until this stop (or a later one) is released; the futex is given the value
     * just checked, so a release between the check and the wait is not missed */
    for (;;) {
        uint32_t rel = __atomic_load_n(&g_release_seq, __ATOMIC_ACQUIRE);
        if ((int32_t)(rel - seq) >= 0)
            break;
        futex(&g_release_seq, FUTEX_WAIT_PRIVATE, rel, NULL);
    }
out:
    __atomic_fetch_sub(&g_in_handler, 1, __ATOMIC_ACQ_REL);
    errno = saved;
    /* a sleep this stop cut short goes on for the rest of its time */
    ms_sig_resume_interrupted(ucv);
}

int ms_lk_stop_install(int sig)
{
    if (g_installed_sig == sig)
        return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = stop_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0)
        return -errno;
    g_installed_sig = sig;
    return 0;
}

/* The 64-bit hex mask after `key` ("\nSigBlk:") in a status text, or 0. */
static uint64_t status_mask(const char *buf, long r, const char *key)
{
    size_t kl = strlen(key);
    for (long i = 0; i + (long)kl < r; i++) {
        if (memcmp(buf + i, key, kl) != 0)
            continue;
        const char *p = buf + i + kl;
        while (*p == ' ' || *p == '\t')
            p++;
        uint64_t mask = 0;
        for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
            mask = (mask << 4) | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
        return mask;
    }
    return 0;
}

/* 1 when thread tid blocks sig with a signal it blocks pending for it (SigBlk and SigPnd
 * of /proc/self/task/TID/status): it will not answer, so waiting for it would only
 * lengthen the pause. Blocked alone is not enough: a thread that has just entered the
 * stop handler has every signal blocked (the handler's mask) before it marks itself
 * stopped, and the signal it took is no longer pending. The pending signal is ours on a
 * kernel; under qemu-user, whose /proc is the host's and which carries the guest's
 * real-time signals on other host signals, it is the host signal ours became (qemu's
 * helper thread blocks every signal: the stop waited its whole timeout for it). */
static int sig_blocked(uint32_t tid, int sig)
{
    char path[64] = "/proc/self/task/";
    size_t n = 16;
    char digits[12];
    size_t k = 0;
    do {
        digits[k++] = (char)('0' + tid % 10);
        tid /= 10;
    } while (tid && k < sizeof digits);
    while (k)
        path[n++] = digits[--k];
    memcpy(path + n, "/status", 8);
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[2048];
    long r = syscall(SYS_read, (int)fd, buf, sizeof buf - 1);
    syscall(SYS_close, (int)fd);
    if (r <= 0 || sig < 1 || sig > 64)
        return 0;
    buf[r] = 0;
    uint64_t bit = 1ull << (sig - 1);
    uint64_t blk = status_mask(buf, r, "\nSigBlk:");
    return (blk & bit) && (blk & status_mask(buf, r, "\nSigPnd:"));
}

/* Threads that have not answered yet: gone (exited), or blocking the signal. */
static void check_unanswered(ms_lk_world *w, pid_t pid, int sig)
{
    for (size_t i = 0; i < w->n; i++) {
        if (__atomic_load_n(&w->t[i].state, __ATOMIC_ACQUIRE) != MS_LKT_SIGNALLED)
            continue;
        if (syscall(SYS_tgkill, pid, w->t[i].tid, 0) != 0) {
            __atomic_store_n(&w->t[i].state, MS_LKT_GONE, __ATOMIC_RELEASE);
        } else if (sig_blocked(w->t[i].tid, sig) && ++w->t[i].blocked_seen >= 3) {
            /* three checks (2 ms or more apart): a thread still leaving the handler of
             * the previous stop has every signal blocked too, for a moment */
            uint32_t expect = MS_LKT_SIGNALLED;
            __atomic_compare_exchange_n(&w->t[i].state, &expect, MS_LKT_TIMEOUT, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        }
    }
}

/* Adds the tids of /proc/self/task not yet in w; returns how many were new. */
static long list_tasks(ms_lk_world *w, uint32_t self)
{
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[4096] __attribute__((aligned(8)));
    long added = 0;
    for (;;) {
        long r = syscall(SYS_getdents64, (int)fd, buf, sizeof buf);
        if (r <= 0)
            break;
        for (long off = 0; off < r;) {
            struct dirent64 *d = (struct dirent64 *)(buf + off);
            off += d->d_reclen;
            uint32_t tid = 0;
            const char *p = d->d_name;
            if (*p < '0' || *p > '9')
                continue;
            for (; *p >= '0' && *p <= '9'; p++)
                tid = tid * 10 + (uint32_t)(*p - '0');
            if (tid == self || tid == w->skip[0] || tid == w->skip[1] || tid == w->skip[2] ||
                tid == w->skip[3])
                continue;
            int known = 0;
            for (size_t i = 0; i < w->n; i++)
                if (w->t[i].tid == tid) {
                    known = 1;
                    break;
                }
            if (known)
                continue;
            if (w->n >= w->cap) {
                w->overflow++;
                continue;
            }
            ms_lk_thread *t = &w->t[w->n];
            memset(t, 0, sizeof *t);
            t->tid = tid;
            t->state = MS_LKT_SIGNALLED;
            w->n++; /* visible to the handler before the signal is sent */
            added++;
        }
    }
    syscall(SYS_close, (int)fd);
    return added;
}

int ms_lk_stop_world(ms_lk_world *w, int sig, unsigned timeout_ms)
{
    int rc = ms_lk_stop_install(sig);
    if (rc)
        return rc;
    pid_t pid = (pid_t)syscall(SYS_getpid);
    uint32_t self = (uint32_t)syscall(SYS_gettid);
    /* threads still leaving the handler of the previous stop use the old world */
    for (int i = 0; i < 1000 && __atomic_load_n(&g_in_handler, __ATOMIC_ACQUIRE); i++)
        syscall(SYS_sched_yield);
    w->n = w->stopped = w->gone = w->timeout = w->overflow = 0;
    w->t0_ns = ms_lk_mono_ns();
    __atomic_store_n(&g_acks, 0, __ATOMIC_RELEASE);
    __atomic_fetch_add(&g_stop_seq, 1, __ATOMIC_ACQ_REL);
    g_world = w;
    size_t signalled = 0;
    for (int round = 0; round < 50; round++) {
        long added = list_tasks(w, self);
        if (added < 0) {
            if (round == 0) {
                g_world = NULL;
                __atomic_store_n(&g_release_seq, g_stop_seq, __ATOMIC_RELEASE);
                return (int)added;
            }
            break;
        }
        for (; signalled < w->n; signalled++) {
            ms_lk_thread *t = &w->t[signalled];
            if (syscall(SYS_tgkill, pid, t->tid, sig) != 0)
                __atomic_store_n(&t->state, MS_LKT_GONE, __ATOMIC_RELEASE);
        }
        if (added == 0)
            break;
        /* a thread being created now is listed by the next round; wait a little for
         * the ones just signalled so that they cannot create more */
        for (int spin = 0; spin < 200; spin++) {
            size_t waiting = 0;
            for (size_t i = 0; i < w->n; i++)
                waiting += __atomic_load_n(&w->t[i].state, __ATOMIC_ACQUIRE) == MS_LKT_SIGNALLED;
            if (!waiting)
                break;
            uint32_t a = __atomic_load_n(&g_acks, __ATOMIC_ACQUIRE);
            struct timespec ts = {0, 200000};
            futex(&g_acks, FUTEX_WAIT_PRIVATE, a, &ts);
            if (spin % 10 == 9)
                check_unanswered(w, pid, sig);
        }
    }
    /* wait for the rest, checking that threads still exist */
    uint64_t deadline = w->t0_ns + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        size_t waiting = 0;
        for (size_t i = 0; i < w->n; i++)
            waiting += __atomic_load_n(&w->t[i].state, __ATOMIC_ACQUIRE) == MS_LKT_SIGNALLED;
        if (!waiting)
            break;
        if (ms_lk_mono_ns() > deadline) {
            for (size_t i = 0; i < w->n; i++) {
                uint32_t expect = MS_LKT_SIGNALLED;
                __atomic_compare_exchange_n(&w->t[i].state, &expect, MS_LKT_TIMEOUT, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            }
            break;
        }
        uint32_t a = __atomic_load_n(&g_acks, __ATOMIC_ACQUIRE);
        struct timespec ts = {0, 1000000};
        futex(&g_acks, FUTEX_WAIT_PRIVATE, a, &ts);
        check_unanswered(w, pid, sig);
    }
    for (size_t i = 0; i < w->n; i++) {
        uint32_t s = __atomic_load_n(&w->t[i].state, __ATOMIC_ACQUIRE);
        w->stopped += s == MS_LKT_STOPPED;
        w->gone += s == MS_LKT_GONE;
        w->timeout += s == MS_LKT_TIMEOUT;
    }
    w->stopped_ns = ms_lk_mono_ns();
    return 0;
}

void ms_lk_resume_world(ms_lk_world *w)
{
    __atomic_store_n(&g_release_seq, __atomic_load_n(&g_stop_seq, __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
    /* the end of the pause: a thread woken by the call below may take this CPU before
     * the call returns (measured: up to 10 ms on a busy machine), and it is already
     * running then */
    w->released_ns = ms_lk_mono_ns();
    futex(&g_release_seq, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL);
    g_world = NULL;
}
