/* x86-64 form of the arch layer: a stopped thread's registers from its ucontext.
 * Runs inside the target, in a signal handler: no malloc, no lock, no system call. */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/ucontext.h>

#include "agent/arch/arch.h"

void ms_arch_context_regs(const void *ucv, uint64_t *sp, uint64_t regs[MS_ARCH_NREGS],
                          uint64_t vec[MS_ARCH_NVEC])
{
    const ucontext_t *uc = ucv;
    for (int r = 0; r < MS_ARCH_NREGS && r < NGREG; r++)
        regs[r] = (uint64_t)uc->uc_mcontext.gregs[r];
    *sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    if (uc->uc_mcontext.fpregs)
        memcpy(vec, uc->uc_mcontext.fpregs->_xmm, MS_ARCH_NVEC * sizeof(uint64_t));
}
