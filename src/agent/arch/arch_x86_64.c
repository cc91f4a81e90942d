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
    for (int r = 0; r < MS_ARCH_NREGS && r < (int)NGREG; r++)
        regs[r] = (uint64_t)uc->uc_mcontext.gregs[r];
    *sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    if (uc->uc_mcontext.fpregs)
        memcpy(vec, uc->uc_mcontext.fpregs->_xmm, MS_ARCH_NVEC * sizeof(uint64_t));
}

void ms_arch_context_callee(const void *ucv, uint64_t *sp, uint64_t regs[MS_ARCH_NCALLEE])
{
    const greg_t *g = ((const ucontext_t *)ucv)->uc_mcontext.gregs;
    static const int callee[MS_ARCH_NCALLEE] = {REG_RBX, REG_RBP, REG_R12,
                                                REG_R13, REG_R14, REG_R15};
    *sp = (uint64_t)g[REG_RSP];
    for (int i = 0; i < MS_ARCH_NCALLEE; i++)
        regs[i] = (uint64_t)g[callee[i]];
}

uintptr_t ms_arch_context_pc(const void *ucv)
{
    return (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RIP];
}

void ms_arch_context_frame(const void *ucv, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
    const greg_t *g = ((const ucontext_t *)ucv)->uc_mcontext.gregs;
    *pc = (uintptr_t)g[REG_RIP];
    *sp = (uintptr_t)g[REG_RSP];
    *fp = (uintptr_t)g[REG_RBP];
}

long ms_arch_context_ret(const void *ucv)
{
    return (long)((const ucontext_t *)ucv)->uc_mcontext.gregs[REG_RAX];
}

void ms_arch_context_set_ret(void *ucv, long v)
{
    ((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RAX] = v;
}

int ms_arch_context_sysarg(const void *ucv, int i, long *v)
{
    /* the kernel keeps the argument registers; only rax, rcx and r11 change */
    static const int reg[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
    if (i < 0 || i > 5)
        return 0;
    *v = (long)((const ucontext_t *)ucv)->uc_mcontext.gregs[reg[i]];
    return 1;
}

int ms_arch_is_syscall_insn(const unsigned char *insn)
{
    return insn[0] == 0x0f && insn[1] == 0x05;
}
