/* fatal_snapshot=1: when SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT kills the process,
 * write what was live then (and the leak scan with leak_check=exit) and let the signal
 * take its default action. Runs in a signal handler of a broken thread: only the
 * allocation-free snapshot writer and leak scan, once, and nothing when the fault is in
 * the agent itself or the thread holds the snapshot lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/services/services.h"
#include "agent/arch/arch.h"
#include "agent/leak/leak_scan.h"

static const int ms_fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static int ms_fatal_taken; /* the first fatal signal writes; any later one just dies */
static int ms_fatal_signo; /* for the HLTH chunk of that snapshot */

static void fatal_hook(ms_snap_writer *w, void *arg)
{
    (void)arg;
    int sig = __atomic_load_n(&ms_fatal_signo, __ATOMIC_ACQUIRE);
    if (!sig)
        return;
    ms_sw_named n;
    ms_sw_named_begin(w, &n, MS_CHUNK_HLTH);
    ms_sw_named_put(w, &n, "fatal_signal", (uint64_t)sig);
    ms_sw_named_end(w, &n);
}

static int fault_in_agent(const void *uc)
{
    uintptr_t pc = ms_arch_context_pc(uc);
    return pc >= ms_self_lo && pc < ms_self_hi;
}

static void fatal_handler(int sig, siginfo_t *si, void *ucv)
{
    int saved = errno;
    const void *uc = ucv;
    if (!__atomic_exchange_n(&ms_fatal_taken, 1, __ATOMIC_ACQ_REL) &&
        ms_state == MS_STATE_READY && !fault_in_agent(uc) && !ms_snapshot_held_by_me()) {
        __atomic_store_n(&ms_fatal_signo, sig, __ATOMIC_RELEASE);
        ms_leak_caller who;
        ms_leak_caller_from(&who, uc);
        int rc = -ENOTSUP;
        if (ms_opt.leak_check == 1 /* exit */)
            rc = ms_leak_check_and_write(&who, "fatal", NULL, 0);
        if (rc != 0) /* no scan asked, or it could not run (sampled mode, busy) */
            ms_snapshot_write("fatal", NULL, NULL, NULL, 0);
    }
    /* the default action: a fault returns to the faulting instruction and takes it
     * again; a signal that was sent (abort, kill) is sent again, delivered on return */
    signal(sig, SIG_DFL);
    if (si->si_code <= 0)
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)sig);
    errno = saved;
}

void ms_fatal_init(void)
{
    if (!ms_opt.fatal_snapshot)
        return;
    ms_snapshot_add_hook(fatal_hook, NULL);
    for (size_t i = 0; i < sizeof ms_fatal_signals / sizeof ms_fatal_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(ms_fatal_signals[i], NULL, &old) != 0)
            continue;
        /* never in place of the program's own handler (nor an ignored signal) */
        if (old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = fatal_handler;
        sa.sa_flags = SA_SIGINFO;
        sigfillset(&sa.sa_mask);
        /* the scan stops other threads with its own signal, never this one's */
        sigaction(ms_fatal_signals[i], &sa, NULL);
    }
}
