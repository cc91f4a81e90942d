/* Loading a library into a running process (inject.h). One thread at a time is seized
 * and interrupted; the first found in a safe place (its own code, or waiting in an idle
 * system call: never inside the C library or the loader, where it may hold their locks)
 * runs code written into the padding after the C library's text: save the FP state,
 * dlopen, dlsym, the entry, restore the FP state, mark itself done, then every
 * register put back. The other threads are never stopped. Only the CLI prints. */
#define _GNU_SOURCE
#include "inject.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "core/fileio.h"
#include "inject_arch.h"
#include "remote_elf.h"

#define set_err ms_cli_errf

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Fault injection for the tests: MEMSIGHT_ATTACH_DIE_AT=<step> kills this process with
 * SIGKILL at that step (the target must survive whatever the moment);
 * MEMSIGHT_ATTACH_STOP_AT=<step> stops it there (SIGSTOP), holding the target's thread,
 * so that a test can send the thread signals that must be delivered afterwards. */
static void step(const char *name)
{
    const char *d = getenv("MEMSIGHT_ATTACH_DIE_AT");
    if (d && !strcmp(d, name))
        kill(getpid(), SIGKILL);
    const char *s = getenv("MEMSIGHT_ATTACH_STOP_AT");
    if (s && !strcmp(s, name))
        kill(getpid(), SIGSTOP);
}

const char *ms_inject_why_eperm(int pid, char *msg, size_t cap)
{
    char path[64], e2[128];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    char *st = ms_read_file(path, &len, e2, sizeof e2);
    /* a process that ended (killed while we attached) cannot be traced either */
    const char *state = st ? strstr(st, "\nState:") : NULL;
    if (!st || (state && (strstr(state, "\nState:\tZ") == state ||
                          strstr(state, "\nState:\tX") == state))) {
        free(st);
        snprintf(msg, cap, "process %d has exited%s", pid,
                 st ? " (a zombie: it ended before or while it was being attached)"
                    : " (it ended before or while it was being attached)");
        return msg;
    }
    if (st) {
        const char *tp = strstr(st, "\nTracerPid:");
        long tracer = tp ? strtol(tp + 11, NULL, 10) : 0;
        const char *u = strstr(st, "\nUid:");
        long ruid = -1, euid = -1;
        if (u)
            sscanf(u + 5, "%ld %ld", &ruid, &euid);
        free(st);
        if (tracer > 0) {
            snprintf(msg, cap, "process %d is already traced by process %ld (a debugger, strace, "
                     "or another attach); only one tracer at a time", pid, tracer);
            return msg;
        }
        if (geteuid() != 0 && ((ruid >= 0 && (uid_t)ruid != geteuid()) || (euid >= 0 && (uid_t)euid != geteuid()))) {
            snprintf(msg, cap, "process %d belongs to uid %ld and you are uid %ld: attaching needs "
                     "the same user or CAP_SYS_PTRACE", pid, ruid, (long)geteuid());
            return msg;
        }
    }
    char *y = ms_read_file("/proc/sys/kernel/yama/ptrace_scope", &len, e2, sizeof e2);
    if (y) {
        int scope = atoi(y);
        free(y);
        if (scope == 1) {
            snprintf(msg, cap, "Yama ptrace_scope is 1: only a parent may trace its children "
                     "(run as root or with CAP_SYS_PTRACE, or set kernel.yama.ptrace_scope=0)");
            return msg;
        }
        if (scope == 2) {
            snprintf(msg, cap, "Yama ptrace_scope is 2: tracing needs CAP_SYS_PTRACE");
            return msg;
        }
        if (scope >= 3) {
            snprintf(msg, cap, "Yama ptrace_scope is 3: no process may be traced until reboot");
            return msg;
        }
    }
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    snprintf(msg, cap, "the kernel refuses to let this process trace %d (not dumpable: a setuid or "
             "capability-raised program, or a security module)", pid);
    return msg;
}

/* ===========================================================================
 * One thread under ptrace
 * ========================================================================= */
/* Waits for a stop of tid. Signal-delivery stops on the way are passed on (the signal is
 * delivered as it would have been). Returns the status, 0 on timeout, -1 if gone. */
static int wait_stop(int tid, double deadline, int pass_signals)
{
    for (;;) {
        int st;
        pid_t r = waitpid(tid, &st, __WALL | WNOHANG);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (now_ms() > deadline)
                return 0;
            nap_us(200);
            continue;
        }
        if (WIFEXITED(st) || WIFSIGNALED(st))
            return -1;
        if (!WIFSTOPPED(st))
            continue;
        int sig = WSTOPSIG(st);
        if (pass_signals && (st >> 16) == 0 && sig != (SIGTRAP | 0x80)) {
            /* a signal arriving: deliver it now, the interrupt stop follows */
            ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
            continue;
        }
        return st;
    }
}

static const char *const unsafe_modules[] = {"libc.so", "libc-", "ld-linux", "ld-2.", "libpthread",
                                             "libdl.so", "libdl-", "libmemsight.so", NULL};

/* 2: its own code, or an idle system call; 1: a futex wait (may be a lock of the C
 * library it is waiting for, not holding: tried only when nothing better comes);
 * 0: inside the C library or the loader (may hold their locks), or anywhere unknown. */
static int classify(const ms_inj_regs *r, const ms_rmaps *maps, char *where, size_t cap)
{
    long nr = ms_inj_in_syscall(r);
    uint64_t pc = ms_inj_pc(r);
    const ms_rmap *m = ms_rmaps_find(maps, pc);
    const char *mod = m ? (m->path[0] ? m->path : "anonymous code") : "unmapped";
    if (nr >= 0) {
        static const long idle[] = {
            SYS_read, SYS_write, SYS_pread64, SYS_readv, SYS_writev, SYS_poll, SYS_select,
            SYS_pselect6, SYS_ppoll, SYS_epoll_wait, SYS_epoll_pwait, SYS_nanosleep,
            SYS_clock_nanosleep, SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_wait4,
            SYS_waitid, SYS_accept, SYS_accept4, SYS_recvfrom, SYS_recvmsg, SYS_sendto,
            SYS_sendmsg, SYS_connect, SYS_msgrcv,
#ifdef SYS_epoll_pwait2
            SYS_epoll_pwait2,
#endif
        };
        for (size_t i = 0; i < sizeof idle / sizeof idle[0]; i++)
            if (idle[i] == nr) {
                snprintf(where, cap, "waiting in system call %ld", nr);
                return 2;
            }
        snprintf(where, cap, "in system call %ld (%s)", nr, mod);
        return nr == SYS_futex ? 1 : 0;
    }
    snprintf(where, cap, "running at 0x%" PRIx64 " (%s)", pc, mod);
    if (!m || m->perms[2] != 'x')
        return 0;
    if (m->path[0] == '[')
        return 0; /* the vdso */
    const char *b = strrchr(m->path, '/');
    b = b ? b + 1 : m->path;
    for (size_t i = 0; unsafe_modules[i]; i++)
        if (!strncmp(b, unsafe_modules[i], strlen(unsafe_modules[i])))
            return 0;
    return 2;
}

/* Where the data block goes below sp: past the red zone, inside the stack's mapping, with
 * room for the calls below it (a thread stack of fixed size), 0 if it does not fit. */
static uint64_t place_data(const ms_inj_regs *r, const ms_rmaps *maps, size_t size)
{
    uint64_t sp = ms_inj_sp(r);
    const ms_rmap *m = ms_rmaps_find(maps, sp - 1);
    if (!m || m->perms[0] != 'r' || m->perms[1] != 'w')
        return 0;
    uint64_t top = sp - ms_inj_red_zone() - 256;
    if (top < size + 4096 || top - size < m->lo)
        return 0;
    uint64_t d = (top - size) & ~(uint64_t)63;
    int grows = !strcmp(m->path, "[stack]"); /* the kernel extends it below */
    if (d < m->lo || (!grows && d - m->lo < 128 * 1024))
        return 0;
    return d;
}

static int list_tasks(int pid, int *tids, int cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    tids[n++] = pid; /* the main thread first */
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        int t = atoi(e->d_name);
        if (t > 0 && t != pid)
            tids[n++] = t;
    }
    closedir(d);
    return n;
}

/* ===========================================================================
 * The injection
 * ========================================================================= */
static const unsigned char code_tag[8] = {'m', 's', 'i', 'n', 'j', 'e', 'c', 't'};

typedef struct target_fns {
    uint64_t dlopen, dlsym, dlerror, flags;
    uint64_t code, code_room; /* the padding after the C library's text */
} target_fns;

static int find_fns(int pid, const ms_rmaps *maps, target_fns *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    const ms_rmap *libc = ms_rmaps_module(maps, "libc.so.6");
    if (!libc)
        libc = ms_rmaps_module(maps, "libc-2.");
    if (!libc) {
        set_err(err, errlen, "process %d has no glibc mapped (libc.so.6): a static or "
                "non-glibc program; attach needs glibc's dynamic loader", pid);
        return -1;
    }
    char lpath[4096];
    snprintf(lpath, sizeof lpath, "%s", libc->path);
    ms_relf e;
    if (ms_relf_open(pid, maps, lpath, &e, err, errlen) != 0)
        return -1;
    if (e.machine != ms_inj_arch_machine() || e.elfclass != ELFCLASS64) {
        set_err(err, errlen, "%s in process %d is not a %s library", lpath, pid, ms_inj_arch_name());
        return -1;
    }
    const int RTLD_NOW_ = 2, RTLD_DLOPEN_ = (int)0x80000000;
    if (ms_relf_sym(&e, "dlopen", &f->dlopen, err, errlen) != 0 ||
        ms_relf_sym(&e, "dlsym", &f->dlsym, err, errlen) != 0 ||
        ms_relf_sym(&e, "dlerror", &f->dlerror, err, errlen) != 0)
        return -1;
    f->flags = (uint64_t)RTLD_NOW_; /* RTLD_LOCAL: the agent's names stay out of the program's scope */
    if (!f->dlopen || !f->dlsym) { /* glibc before 2.34: libdl, or libc's private entries */
        const ms_rmap *dl = ms_rmaps_module(maps, "libdl.so");
        ms_relf de;
        char dpath[4096];
        if (dl) {
            snprintf(dpath, sizeof dpath, "%s", dl->path);
            if (ms_relf_open(pid, maps, dpath, &de, err, errlen) == 0 &&
                ms_relf_sym(&de, "dlopen", &f->dlopen, err, errlen) == 0 &&
                ms_relf_sym(&de, "dlsym", &f->dlsym, err, errlen) == 0)
                ms_relf_sym(&de, "dlerror", &f->dlerror, err, errlen);
        }
        if (!f->dlopen || !f->dlsym) {
            f->dlerror = 0;
            f->flags = (uint64_t)(uint32_t)(RTLD_NOW_ | RTLD_DLOPEN_);
            if (ms_relf_sym(&e, "__libc_dlopen_mode", &f->dlopen, err, errlen) != 0 ||
                ms_relf_sym(&e, "__libc_dlsym", &f->dlsym, err, errlen) != 0)
                return -1;
        }
    }
    if (!f->dlopen || !f->dlsym) {
        set_err(err, errlen, "%s in process %d exports neither dlopen nor __libc_dlopen_mode", lpath, pid);
        return -1;
    }
    const ms_rmap *tm = e.text_end ? ms_rmaps_find(maps, e.text_end - 1) : NULL;
    if (!tm || tm->perms[2] != 'x' || tm->hi < e.text_page_end) {
        set_err(err, errlen, "%s in process %d: its code segment is not mapped as its headers say",
                lpath, pid);
        return -1;
    }
    f->code = (e.text_end + 15) & ~(uint64_t)15;
    f->code_room = e.text_page_end > f->code ? e.text_page_end - f->code : 0;
    return 0;
}

typedef struct held {
    int tid;
    ms_inj_regs orig;
    uint64_t data;
    double stopped_at;
} held;

/* Seizes threads one at a time until one is stopped in a safe place with room on its
 * stack; that one stays seized and stopped. 0, or -1 with err. */
static int pick_thread(int pid, size_t data_size, held *h, ms_inject_result *res, char *err,
                       size_t errlen)
{
    enum { ROUNDS = 400, FUTEX_FROM = 200 };
    int tids[256], stuck[64], nstuck = 0;
    char where[160] = "";
    for (int round = 0; round < ROUNDS; round++) {
        ms_rmaps maps;
        if (ms_rmaps_read(pid, &maps, err, errlen) != 0)
            return -1;
        int n = list_tasks(pid, tids, 256);
        if (n <= 0) {
            ms_rmaps_free(&maps);
            set_err(err, errlen, "process %d is gone", pid);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            int tid = tids[i], skip = 0;
            for (int k = 0; k < nstuck; k++)
                skip |= stuck[k] == tid;
            if (skip)
                continue;
            if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)PTRACE_O_TRACESYSGOOD) != 0) {
                if (errno == ESRCH)
                    continue; /* gone meanwhile */
                int e = errno;
                ms_rmaps_free(&maps);
                char why[512];
                if (e == EPERM)
                    set_err(err, errlen, "cannot trace process %d: %s", pid,
                            ms_inject_why_eperm(pid, why, sizeof why));
                else
                    set_err(err, errlen, "cannot trace thread %d of process %d: %s", tid, pid, strerror(e));
                return -1;
            }
            double t0 = now_ms();
            ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
            int st = wait_stop(tid, t0 + 1000, 1);
            if (st <= 0) { /* gone, or not stopping (uninterruptible): released at our exit */
                if (st == 0 && nstuck < 64)
                    stuck[nstuck++] = tid;
                continue;
            }
            ms_inj_regs r;
            int cls = ms_inj_get_regs(tid, &r) == 0 ? classify(&r, &maps, where, sizeof where) : 0;
            uint64_t d = cls ? place_data(&r, &maps, data_size) : 0;
            if (cls && !d)
                snprintf(where + strlen(where), sizeof where - strlen(where), ", no room on its stack");
            if (d && (cls == 2 || (cls == 1 && round >= FUTEX_FROM))) {
                h->tid = tid;
                h->orig = r;
                h->data = d;
                h->stopped_at = t0;
                res->rounds = round + 1;
                snprintf(res->where, sizeof res->where, "%s", where);
                ms_rmaps_free(&maps);
                return 0;
            }
            ptrace(PTRACE_DETACH, tid, NULL, NULL);
        }
        ms_rmaps_free(&maps);
        nap_us(1000); /* let them move on */
    }
    set_err(err, errlen, "no thread of process %d stopped in a safe place in %d tries (last: %s): "
            "every stop was inside the C library or the loader, where a thread may hold their "
            "locks; nothing was changed, try again", pid, ROUNDS, where);
    return -1;
}

/* Lets the seized thread run the code, passing its signals on, until the data block says
 * done (read from outside: no system call of the loader stops it), then stops it again.
 * 1 stopped after done, 0 on timeout (left running), -1 if the process went away. */
static int run_until_done(int pid, int tid, uint64_t data, double deadline)
{
    if (ptrace(PTRACE_CONT, tid, NULL, NULL) != 0)
        return -1;
    step("running");
    char e2[256];
    for (;;) {
        int st;
        pid_t r = waitpid(tid, &st, __WALL | WNOHANG);
        if (r < 0 || (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st))))
            return -1;
        if (r > 0 && WIFSTOPPED(st)) {
            int sig = WSTOPSIG(st), ev = st >> 16;
            if (ev == PTRACE_EVENT_STOP && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
                                            sig == SIGTTOU))
                ptrace(PTRACE_LISTEN, tid, NULL, NULL); /* the process is stopped: stay so */
            else /* a signal for the thread: delivered in the code, as anywhere */
                ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)(ev ? 0 : sig));
            continue;
        }
        uint64_t done = 0;
        if (ms_rmem_read(pid, data + MS_INJ_D_DONE, &done, sizeof done, e2, sizeof e2) != 0)
            return -1;
        if (done == 1)
            break;
        if (now_ms() > deadline)
            return 0;
        nap_us(100);
    }
    ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
    return wait_stop(tid, now_ms() + 10000, 1) > 0 ? 1 : -1;
}

int ms_inject(const ms_inject_req *q, ms_inject_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
#ifndef MS_INJ_ARCH
    set_err(err, errlen, "attaching is not implemented for this architecture");
    return -1;
#else
    if (strlen(q->lib) >= MS_INJ_PATH_MAX || strlen(q->arg) >= MS_INJ_OPTS_MAX ||
        strlen(q->entry) >= 64) {
        set_err(err, errlen, "library path, entry or options too long");
        return -1;
    }
    ms_rmaps maps;
    if (ms_rmaps_read(q->pid, &maps, err, errlen) != 0)
        return -1;
    target_fns f;
    int rc = find_fns(q->pid, &maps, &f, err, errlen);
    ms_rmaps_free(&maps);
    if (rc != 0)
        return -1;

    unsigned char code[1024], saved[1024];
    size_t fpsize = ms_inj_fpstate_size();
    size_t data_size = MS_INJ_D_FPSTATE + fpsize;
    if (f.code_room < sizeof code) {
        set_err(err, errlen, "process %d: no room after the C library's code (%" PRIu64
                " bytes) for the loader call", q->pid, f.code_room);
        return -1;
    }
    if (ms_rmem_read(q->pid, f.code, saved, sizeof saved, err, errlen) != 0)
        return -1;
    for (size_t i = sizeof code_tag; i < sizeof saved; i++)
        if (saved[i] && memcmp(saved, code_tag, sizeof code_tag) != 0) {
            set_err(err, errlen, "process %d: the padding after the C library's code is not "
                    "empty; not writing there", q->pid);
            return -1;
        }
    memset(saved, 0, sizeof saved); /* what is put back: the padding as the file has it */

    held h;
    memset(&h, 0, sizeof h);
    if (pick_thread(q->pid, data_size, &h, res, err, errlen) != 0)
        return -1;
    step("seized");
    res->tid = h.tid;

    /* the code and its data; the tag first, so that a later attach knows the bytes */
    ms_inj_call c = {.code = f.code + sizeof code_tag, .data = h.data,
                     .stack_top = (h.data - 64) & ~(uint64_t)15};
    ms_inj_regs resume, entry;
    ms_inj_resume_regs(&resume, &h.orig);
    ms_inj_entry_regs(&entry, &h.orig, &c);
    memcpy(code, code_tag, sizeof code_tag);
    size_t clen = ms_inj_build(code + sizeof code_tag, sizeof code - sizeof code_tag, &c, &resume);
    unsigned char *data = calloc(1, data_size);
    int ok = clen && data;
    if (ok) {
        uint64_t *w = (uint64_t *)(void *)data;
        w[MS_INJ_D_DLOPEN / 8] = f.dlopen;
        w[MS_INJ_D_DLSYM / 8] = f.dlsym;
        w[MS_INJ_D_DLERROR / 8] = f.dlerror;
        w[MS_INJ_D_FLAGS / 8] = f.flags;
        memcpy(data + MS_INJ_D_PATH, q->lib, strlen(q->lib) + 1);
        memcpy(data + MS_INJ_D_SYM, q->entry, strlen(q->entry) + 1);
        memcpy(data + MS_INJ_D_OPTS, q->arg, strlen(q->arg) + 1);
        ok = ms_rmem_write(q->pid, f.code, code, sizeof code_tag + clen, err, errlen) == 0 &&
             ms_rmem_write(q->pid, h.data, data, data_size, err, errlen) == 0;
    } else {
        set_err(err, errlen, "cannot build the loader call");
    }
    free(data);
    if (!ok) { /* nothing ran: the thread goes on untouched */
        ptrace(PTRACE_DETACH, h.tid, NULL, NULL);
        ms_rmem_write(q->pid, f.code, saved, sizeof code_tag + clen, err + strlen(err), 0);
        return -1;
    }
    step("written");
    int setrc = ms_inj_set_regs(h.tid, &entry);
    if (setrc != 0) {
        ptrace(PTRACE_DETACH, h.tid, NULL, NULL);
        set_err(err, errlen, "cannot set the registers of thread %d: %s", h.tid, strerror(-setrc));
        return -1;
    }
    step("entry");
    double t_call = now_ms();
    int m = run_until_done(q->pid, h.tid, h.data, t_call + q->timeout * 1000.0);
    if (m < 0) {
        set_err(err, errlen, "process %d went away during the attach", q->pid);
        return -1;
    }
    if (m == 0) { /* it will come out by itself: the code puts the registers back */
        ptrace(PTRACE_INTERRUPT, h.tid, NULL, NULL);
        if (wait_stop(h.tid, now_ms() + 1000, 1) > 0)
            ptrace(PTRACE_DETACH, h.tid, NULL, NULL);
        set_err(err, errlen, "the loader did not return in thread %d within %.0f s; the thread "
                "was let go and resumes by itself when it does (look again with memsight dump)",
                h.tid, q->timeout);
        return -1;
    }
    res->call_ms = now_ms() - t_call;
    step("done");
    uint64_t out[5] = {0};
    int readok = ms_rmem_read(q->pid, h.data + MS_INJ_D_HANDLE, out, sizeof out, err, errlen) == 0;
    /* stopped after done = 1: in the code's tail (the registers as the thread had them are
     * set here at once), or already out of it by itself */
    ms_inj_regs now;
    uint64_t pc = ms_inj_get_regs(h.tid, &now) == 0 ? ms_inj_pc(&now) : 0;
    int in_code = pc >= f.code && pc < f.code + sizeof code_tag + clen;
    int back = in_code ? ms_inj_set_regs(h.tid, &resume) : 0;
    step("resumed");
    ptrace(PTRACE_DETACH, h.tid, NULL, NULL);
    res->stop_ms = now_ms() - h.stopped_at;
    step("detached");
    if (back == 0 && pc) /* the code is not running any more: the padding as it was */
        ms_rmem_write(q->pid, f.code, saved, sizeof code_tag + clen, err, errlen);
    if (!readok)
        return -1;
    if (!out[0] || !out[1]) {
        char msg[512] = "";
        if (out[3])
            ms_rmem_read(q->pid, out[3], msg, sizeof msg - 1, err, errlen);
        msg[sizeof msg - 1] = 0;
        set_err(err, errlen, "%s failed in process %d: %s", !out[0] ? "dlopen" : "dlsym", q->pid,
                msg[0] ? msg : "(no message)");
        return -1;
    }
    res->rc = (long)(int64_t)out[2];
    return 0;
#endif
}
