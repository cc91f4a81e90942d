/* Guard pages: the SIGSEGV handler. A fault in the pool is reported (guard_report.c) and
 * the process then dies of it as it would have (default action, the access taken
 * again), or with guard_recover=1 the page is opened and the program runs on; any other fault goes to the program's own handler, or to the one that was
 * there before (fatal.c's last snapshot). The program's sigaction and signal calls for
 * SIGSEGV set the handler ours passes faults to, and read it back, so ours stays in
 * place. Runs on an alternate signal stack of its own where the thread has none: only
 * async-signal-safe code, no allocation, no lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/services/guard_fault.h"
#include "agent/libc/libc.h"

#define MS_EXPORT __attribute__((visibility("default")))

#define MS_GUARD_ALTSTACK (64 * 1024)

static struct sigaction ms_guard_prev; /* SIGSEGV's action before ours */
static int ms_guard_installed;
/* The alternate stack this thread got from the agent (NULL: none, or the program's). */
static __thread void *ms_guard_alt __attribute__((tls_model("initial-exec")));

void ms_guard_altstack(void)
{
    if (ms_guard_alt)
        return;
    ms_thread_bounds();
    /* only threads whose exit the agent sees (in its registry): the stack is unmapped
     * then; any other thread's handler runs on its own stack */
    if (!ms_self.slot)
        return; /* the handler's walk of the faulting stack needs its bounds */
    stack_t old;
    if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
        return; /* the thread has one of its own: the handler runs there */
    void *m = ms_sys_mmap(MS_GUARD_ALTSTACK);
    if (!m) {
        MS_HEALTH_INC(guard_failures);
        return;
    }
    stack_t ss = {.ss_sp = m, .ss_size = MS_GUARD_ALTSTACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        ms_sys_munmap(m, MS_GUARD_ALTSTACK);
        MS_HEALTH_INC(guard_failures);
        return;
    }
    ms_guard_alt = m;
}

void ms_guard_thread_exit(void)
{
    void *m = ms_guard_alt;
    if (!m)
        return;
    ms_guard_alt = NULL;
    stack_t cur;
    /* still ours (the program may have set its own since): off before it is unmapped */
    if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == m) {
        if (cur.ss_flags & SS_ONSTACK)
            return; /* exiting from a handler running on it: leave it mapped */
        stack_t off = {.ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE};
        sigaltstack(&off, NULL);
    }
    ms_sys_munmap(m, MS_GUARD_ALTSTACK);
}

/* The previous action, as the kernel would have taken it (its mask and SA_NODEFER
 * aside: the handler runs with every signal blocked, on our stack). */
static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction p = ms_guard_prev;
    if (p.sa_flags & SA_RESETHAND)
        ms_guard_prev.sa_handler = SIG_DFL;
    if (p.sa_flags & SA_SIGINFO) {
        if (p.sa_sigaction)
            p.sa_sigaction(sig, si, uc);
        return;
    }
    if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
        p.sa_handler(sig);
        return;
    }
    /* default action: a fault returns to the faulting instruction and takes it again;
     * a signal that was sent is sent again, delivered on return */
    ms_libc_signal(sig, SIG_DFL);
    if (si->si_code <= 0)
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
}

static void guard_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    uintptr_t addr = (uintptr_t)si->si_addr;
    if (si->si_code > 0 && ms_guard_owns((void *)addr)) {
        unsigned kind;
        int slot = ms_guard_classify(addr, &kind);
        ms_guard_report(kind, addr, slot, uc);
        if (ms_opt.guard_recover) /* the access, taken again on return, goes through */
            ms_guard_recover_page(addr);
        else
            ms_libc_signal(sig, SIG_DFL); /* dies of the access, taken again on return */
    } else {
        chain(sig, si, uc);
    }
    errno = saved;
}

void ms_guard_fault_init(void)
{
    if (ms_guard_installed)
        return;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&sa.sa_mask);
    if (ms_libc_sigaction(SIGSEGV, &sa, &old) != 0) {
        MS_HEALTH_INC(guard_failures);
        return;
    }
    ms_guard_prev = old;
    __atomic_store_n(&ms_guard_installed, 1, __ATOMIC_RELEASE);
}

/* ===========================================================================
 * The program's SIGSEGV handler (sigaction, signal). The agent's own calls (fatal.c)
 * reach the C library's. Other ways (bsd_signal, sysv_signal, sigset, the system call)
 * replace ours: guard faults then go to the program's handler unreported.
 * ========================================================================= */
static int ours_to_keep(int sig, const void *caller)
{
    return sig == SIGSEGV && __atomic_load_n(&ms_guard_installed, __ATOMIC_ACQUIRE) &&
           !((uintptr_t)caller >= ms_self_lo && (uintptr_t)caller < ms_self_hi);
}

static void program_action(const struct sigaction *act, struct sigaction *old)
{
    struct sigaction prev = ms_guard_prev;
    if (act)
        ms_guard_prev = *act;
    if (old)
        *old = prev;
}

MS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!ours_to_keep(sig, __builtin_return_address(0)))
        return ms_libc_sigaction(sig, act, old);
    program_action(act, old);
    return 0;
}

MS_EXPORT ms_sighandler signal(int sig, ms_sighandler h)
{
    if (!ours_to_keep(sig, __builtin_return_address(0)))
        return ms_libc_signal(sig, h);
    if (h == SIG_ERR) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction sa, old; /* glibc's signal(): BSD semantics */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    program_action(&sa, &old);
    return old.sa_handler;
}
