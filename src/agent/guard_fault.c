/* Guard pages: the SIGSEGV handler. A fault in the pool is reported (guard_report.c) and
 * the process then dies of it as it would have (default action, the access taken
 * again); any other fault goes to the handler that was there before (the program's, or
 * fatal.c's last snapshot). Runs on an alternate signal stack of its own where the
 * thread has none: only async-signal-safe code, no allocation, no lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/guard.h"

#define MS_GUARD_ALTSTACK (64 * 1024)

static struct sigaction ms_guard_prev; /* SIGSEGV's action before ours */
static int ms_guard_installed;
/* The alternate stack this thread got from the agent (NULL: none, or the program's). */
static __thread void *ms_guard_alt __attribute__((tls_model("initial-exec")));

void ms_guard_altstack(void)
{
    if (ms_guard_alt)
        return;
    ms_thread_bounds(); /* the handler's walk of the faulting stack needs its bounds */
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

/* The previous action, as the kernel would have taken it. */
static void chain(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *p = &ms_guard_prev;
    if (p->sa_flags & SA_SIGINFO) {
        if (p->sa_sigaction)
            p->sa_sigaction(sig, si, uc);
        return;
    }
    if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    /* default action: a fault returns to the faulting instruction and takes it again;
     * a signal that was sent is sent again, delivered on return */
    signal(sig, SIG_DFL);
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
        signal(sig, SIG_DFL); /* dies of the access, taken again on return */
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
    if (sigaction(SIGSEGV, &sa, &old) != 0) {
        MS_HEALTH_INC(guard_failures);
        return;
    }
    ms_guard_prev = old;
    ms_guard_installed = 1;
}
