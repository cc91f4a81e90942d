/* Resuming a system call an agent signal cut short (see sig_resume.h). The kernel turns
 * -ERESTART_RESTARTBLOCK into EINTR when a handler runs and forgets its restart block
 * at sigreturn; until then restart_syscall continues the call with its original
 * deadline. Runs in signal handlers: raw system calls, no lock, no allocation. */
#define _GNU_SOURCE
#include "agent/sig_resume.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
/* 1 when the two bytes before ip are the syscall instruction (0f 05): the thread was
 * stopped on return from a system call, not somewhere its rax merely held -EINTR. Read
 * through the kernel, which answers EFAULT instead of faulting. */
static int after_syscall_insn(uint64_t ip)
{
    unsigned char b[2];
    struct iovec local = {b, 2}, remote = {(void *)(uintptr_t)(ip - 2), 2};
    long n = syscall(SYS_process_vm_readv, (long)syscall(SYS_getpid), &local, 1UL, &remote,
                     1UL, 0UL);
    return n == 2 && b[0] == 0x0f && b[1] == 0x05;
}

void ms_sig_resume_interrupted(void *ucv)
{
    ucontext_t *uc = ucv;
    if (uc->uc_mcontext.gregs[REG_RAX] != -EINTR ||
        !after_syscall_insn((uint64_t)uc->uc_mcontext.gregs[REG_RIP]))
        return;
    int saved = errno;
    sigset_t all;
    sigfillset(&all);
    /* the thread's own mask while it sleeps on; every signal blocked again after */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &uc->uc_sigmask, NULL, 8);
    long r = syscall(SYS_restart_syscall);
    long res = r == -1 ? -(long)errno : r;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8);
    /* -EINTR: nothing to resume (no restart block), or a program signal ended it */
    if (res != -EINTR)
        uc->uc_mcontext.gregs[REG_RAX] = res;
    errno = saved;
}
#else
void ms_sig_resume_interrupted(void *ucv)
{
    (void)ucv;
}
#endif
