/* Resuming a system call an agent signal cut short (see sig_resume.h). The kernel turns
 * -ERESTART_RESTARTBLOCK into EINTR when a handler runs and forgets its restart block
 * at sigreturn; until then restart_syscall continues the call with its original
 * deadline. Runs in signal handlers: raw system calls, no lock, no allocation. What
 * differs per CPU (registers, the instruction) is in the arch layer. */
#define _GNU_SOURCE
#include "agent/sig_resume.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/arch/arch.h"

/* 1 when the instruction before pc is the system-call instruction: the thread was
 * stopped on return from a system call, not somewhere its result register merely held
 * -EINTR. Read through the kernel, which answers EFAULT instead of faulting. */
static int after_syscall_insn(uintptr_t pc)
{
    unsigned char b[MS_ARCH_SYSCALL_INSN_LEN];
    struct iovec local = {b, sizeof b}, remote = {(void *)(pc - sizeof b), sizeof b};
    long n = syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), &local, 1UL, &remote,
                     1UL, 0UL);
    return n == (long)sizeof b && ms_arch_is_syscall_insn(b);
}

void ms_sig_resume_interrupted(void *ucv)
{
    if (ms_arch_context_ret(ucv) != -EINTR || !after_syscall_insn(ms_arch_context_pc(ucv)))
        return;
    int saved = errno;
    sigset_t all;
    sigfillset(&all);
    /* the thread's own mask while it sleeps on; every signal blocked again after */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &((ucontext_t *)ucv)->uc_sigmask, NULL, 8);
    long r = syscall(SYS_restart_syscall);
    long res = r == -1 ? -(long)errno : r;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8);
    /* -EINTR: nothing to resume (no restart block), or a program signal ended it */
    if (res != -EINTR)
        ms_arch_context_set_ret(ucv, res);
    errno = saved;
}
