/* AArch64 form of the arch layer: a stopped thread's registers from its ucontext (the
 * general registers, and v0-v31 from the FPSIMD record of the signal frame).
 * Runs inside the target, in a signal handler: no malloc, no lock, no system call. */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/ucontext.h>

#include "agent/arch/arch.h"

#define MS_FPSIMD_MAGIC 0x46508001u /* asm/sigcontext.h: FPSIMD_MAGIC */

void ms_arch_context_regs(const void *ucv, uint64_t *sp, uint64_t regs[MS_ARCH_NREGS],
                          uint64_t vec[MS_ARCH_NVEC])
{
    const ucontext_t *uc = ucv;
    for (int r = 0; r < 31; r++)
        regs[r] = (uint64_t)uc->uc_mcontext.regs[r];
    regs[31] = (uint64_t)uc->uc_mcontext.pc;
    *sp = (uint64_t)uc->uc_mcontext.sp;
    /* __reserved holds records {u32 magic, u32 size, ...}; FPSIMD comes first when there:
     * magic, size, fpsr, fpcr, then 32 16-byte registers */
    const unsigned char *p = (const unsigned char *)uc->uc_mcontext.__reserved;
    uint32_t magic, size;
    memcpy(&magic, p, 4);
    memcpy(&size, p + 4, 4);
    if (magic == MS_FPSIMD_MAGIC && size >= 16 + 32 * 16)
        memcpy(vec, p + 16, MS_ARCH_NVEC * sizeof(uint64_t));
}

void ms_arch_context_callee(const void *ucv, uint64_t *sp, uint64_t regs[MS_ARCH_NCALLEE])
{
    const ucontext_t *uc = ucv;
    *sp = (uint64_t)uc->uc_mcontext.sp;
    for (int i = 0; i < MS_ARCH_NCALLEE; i++)
        regs[i] = (uint64_t)uc->uc_mcontext.regs[19 + i];
}

uintptr_t ms_arch_context_pc(const void *ucv)
{
    return (uintptr_t)((const ucontext_t *)ucv)->uc_mcontext.pc;
}

void ms_arch_context_frame(const void *ucv, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
    const ucontext_t *uc = ucv;
    *pc = (uintptr_t)uc->uc_mcontext.pc;
    *sp = (uintptr_t)uc->uc_mcontext.sp;
    *fp = (uintptr_t)uc->uc_mcontext.regs[29];
}

long ms_arch_context_ret(const void *ucv)
{
    return (long)((const ucontext_t *)ucv)->uc_mcontext.regs[0];
}

void ms_arch_context_set_ret(void *ucv, long v)
{
    ((ucontext_t *)ucv)->uc_mcontext.regs[0] = (unsigned long long)v;
}

int ms_arch_context_sysarg(const void *ucv, int i, long *v)
{
    /* x0 carries the result back: the first argument is gone */
    if (i < 1 || i > 5)
        return 0;
    *v = (long)((const ucontext_t *)ucv)->uc_mcontext.regs[i];
    return 1;
}

int ms_arch_is_syscall_insn(const unsigned char *insn)
{
    return insn[0] == 0x01 && insn[1] == 0x00 && insn[2] == 0x00 && insn[3] == 0xd4;
}
