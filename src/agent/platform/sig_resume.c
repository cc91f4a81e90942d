/* Resuming a system call an agent signal cut short (see sig_resume.h). The kernel turns
 * -ERESTART_RESTARTBLOCK into EINTR when a handler runs and forgets its restart block
 * at sigreturn; until then restart_syscall continues the call with its original
 * deadline. Runs in signal handlers: raw system calls, no lock, no allocation. What
 * differs per CPU (registers, the instruction) is in the arch layer.
 *
 * restart_syscall runs whatever restart block the thread holds, and a block is only
 * forgotten at a handler's return: a poll or sleep restarted earlier without a handler
 * (after SIGSTOP, a ptrace stop) leaves a stale one. Run for a call that set none (an
 * epoll_wait, a read), it would poll stale descriptors through a dead frame or sleep to
 * an old deadline. So a call is resumed only when the thread stopped inside one of the
 * C library's functions whose system call always leaves a fresh block when a handler
 * cuts it short: poll, and relative clock_nanosleep/nanosleep. An absolute
 * clock_nanosleep leaves none; it is issued again with the same arguments. */
#define _GNU_SOURCE
#include "agent/platform/sig_resume.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "agent/arch/arch.h"
#include "agent/platform/elf_mod.h"
#include "agent/libc/libc.h"

enum { RS_SLEEP, RS_POLL, RS_KINDS };
static const char *const rs_names[][2] = {
    [RS_SLEEP] = {"clock_nanosleep", "nanosleep"},
    [RS_POLL] = {"poll", "ppoll"},
};
static struct {
    uintptr_t lo, hi;
    int kind;
} rs_funcs[4];
static int rs_nfuncs;

/* The C library's wrappers of calls that wait (a thread stopped in one holds none of the
 * C library's internal locks and is in none of its allocator's work): where a request
 * may be served on the thread itself (ms_sig_at_wait). */
static const char *const wait_names[] = {
    "read",      "readv",      "pread64",     "poll",        "ppoll",      "select",
    "pselect",   "epoll_wait", "epoll_pwait", "nanosleep",   "clock_nanosleep",
    "pause",     "sigsuspend", "sigtimedwait", "sigwaitinfo", "wait4",     "waitpid",
    "waitid",    "accept",     "accept4",     "recv",        "recvfrom",   "recvmsg",
    "msgrcv",
};
#define WAIT_MAX (sizeof wait_names / sizeof wait_names[0])
static struct {
    uintptr_t lo, hi;
} wait_funcs[WAIT_MAX];
static int wait_nfuncs;

/* [lo, hi) of the C library's own definition of name, 0 when not known. */
static int libc_func_range(const char *name, uintptr_t *lo, uintptr_t *hi)
{
    if (!ms_libc_func_sizes_usable())
        return 0;
    void *p = dlsym(RTLD_DEFAULT, name);
    const char *file = NULL;
    size_t sz = 0;
    /* not dladdr: it scans every symbol of the C library (about 90,000 instructions a
     * call, a millisecond and a half of every program's start-up for these names) */
    if (!p || !ms_mod_func_at(p, name, &file, &sz) || !file || !ms_libc_is_libc_path(file))
        return 0; /* only the C library's own wrapper is known to be what it says */
    if (!sz)
        return 0;
    *lo = (uintptr_t)p;
    *hi = (uintptr_t)p + sz;
    return 1;
}

void ms_sig_resume_init(void)
{
    if (rs_nfuncs)
        return;
    int n = 0;
    for (int k = 0; k < RS_KINDS; k++)
        for (int j = 0; j < 2; j++) {
            const char *name = rs_names[k][j];
            /* ppoll restarts through no block (EINTR, or ERESTARTNOHAND): left alone */
            if (k == RS_POLL && j == 1)
                continue;
            if (!libc_func_range(name, &rs_funcs[n].lo, &rs_funcs[n].hi))
                continue;
            rs_funcs[n].kind = k;
            n++;
        }
    __atomic_store_n(&rs_nfuncs, n, __ATOMIC_RELEASE);
    int w = 0;
    for (size_t i = 0; i < WAIT_MAX; i++)
        if (libc_func_range(wait_names[i], &wait_funcs[w].lo, &wait_funcs[w].hi))
            w++;
    __atomic_store_n(&wait_nfuncs, w, __ATOMIC_RELEASE);
}

static int rs_kind_at(uintptr_t pc)
{
    int n = __atomic_load_n(&rs_nfuncs, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (pc > rs_funcs[i].lo && pc <= rs_funcs[i].hi)
            return rs_funcs[i].kind;
    return -1;
}

/* 1 when the system-call instruction is at address a. Read through the kernel, which
 * answers EFAULT instead of faulting. */
static int syscall_insn_at(uintptr_t a)
{
    unsigned char b[MS_ARCH_SYSCALL_INSN_LEN];
    struct iovec local = {b, sizeof b}, remote = {(void *)a, sizeof b};
    long n = syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), &local, 1UL, &remote,
                     1UL, 0UL);
    return n == (long)sizeof b && ms_arch_is_syscall_insn(b);
}

/* 1 when the instruction before pc is the system-call instruction: the thread was
 * stopped on return from a system call, not somewhere its result register merely held
 * -EINTR. */
static int after_syscall_insn(uintptr_t pc)
{
    return syscall_insn_at(pc - MS_ARCH_SYSCALL_INSN_LEN);
}

int ms_sig_can_serve_waits(void)
{
    if (!__atomic_load_n(&wait_nfuncs, __ATOMIC_ACQUIRE))
        return 0;
    unsigned char probe[MS_ARCH_SYSCALL_INSN_LEN] = {0}, copy[sizeof probe];
    struct iovec local = {copy, sizeof copy}, remote = {probe, sizeof probe};
    return syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), &local, 1UL, &remote, 1UL, 0UL) ==
           (long)sizeof probe;
}

/* What this thread's handler is resuming now (RS_RESTART, RS_REISSUE), 0 when nothing:
 * a second agent signal may cut the resumed call short in turn, inside the handler of
 * the first (the thread's own mask is in force meanwhile), and is resumed the same way.
 * volatile: the nested handler reads it, which the compiler cannot see. */
enum { RS_RESTART = 1, RS_REISSUE = 2 };
static __thread volatile int rs_resuming __attribute__((tls_model("initial-exec")));

/* A request served in a handler writes a snapshot or runs a scan on the interrupted
 * thread's stack: only on the thread's known stack with this much room below (never a
 * context stack of a few KiB, a green thread's or a signal stack). */
#define SERVE_STACK_ROOM (128u * 1024)

int ms_sig_at_wait(const void *ucv)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (!ms_self.stack_hi || sp >= ms_self.stack_hi || sp < ms_self.stack_lo ||
        sp - ms_self.stack_lo < SERVE_STACK_ROOM)
        return 0;
    if (rs_resuming)
        return 1; /* in a wait an agent handler resumes: it stopped at one of these */
    uintptr_t pc = ms_arch_context_pc(ucv);
    int n = __atomic_load_n(&wait_nfuncs, __ATOMIC_ACQUIRE), in = 0;
    for (int i = 0; i < n && !in; i++)
        in = pc > wait_funcs[i].lo && pc < wait_funcs[i].hi;
    /* cut short (EINTR, pc after the instruction) or to be restarted (pc at it) */
    return in && (after_syscall_insn(pc) || syscall_insn_at(pc));
}

void ms_sig_resume_interrupted(void *ucv)
{
    if (ms_arch_context_ret(ucv) != -EINTR)
        return;
    uintptr_t pc = ms_arch_context_pc(ucv);
    int mode = rs_resuming;
    if (!mode) {
        int kind = rs_kind_at(pc);
        if (kind < 0)
            return;
        long flags = 0;
        /* clock_nanosleep(clock, flags, request, remain) */
        if (kind == RS_SLEEP && !ms_arch_context_sysarg(ucv, 1, &flags))
            return;
        mode = kind == RS_SLEEP && (flags & TIMER_ABSTIME) ? RS_REISSUE : RS_RESTART;
    }
    if (!after_syscall_insn(pc))
        return;
    long a[4] = {0};
    if (mode == RS_REISSUE)
        for (int i = 0; i < 4; i++)
            if (!ms_arch_context_sysarg(ucv, i, &a[i]))
                return;
    int saved = errno, outer = rs_resuming;
    sigset_t all;
    sigfillset(&all);
    rs_resuming = mode;
    /* the thread's own mask while it sleeps on; every signal blocked again after */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &((ucontext_t *)ucv)->uc_sigmask, NULL, 8);
    long r = mode == RS_REISSUE ? syscall(SYS_clock_nanosleep, a[0], a[1], a[2], a[3])
                                : syscall(SYS_restart_syscall);
    long res = r == -1 ? -(long)errno : r;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8);
    rs_resuming = outer;
    /* -EINTR: a program signal ended it, as it would have */
    if (res != -EINTR)
        ms_arch_context_set_ret(ucv, res);
    errno = saved;
}
