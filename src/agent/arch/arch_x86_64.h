/* x86-64 form of the arch layer (arch.h): System V ABI, frame records {rbp, ra} with
 * CFA = rbp + 16, no pointer tags or authentication codes. */
#ifndef MS_AGENT_ARCH_X86_64_H
#define MS_AGENT_ARCH_X86_64_H

#include <stdint.h>

#define MS_ARCH_NAME "x86_64"
#define MS_ARCH_DW_SP 7  /* rsp */
#define MS_ARCH_DW_FP 6  /* rbp */
#define MS_ARCH_DW_RA 16 /* return address column */
#define MS_ARCH_AGENT_FP_CFA 1
#define MS_ARCH_CFA_NEGATE_RA_STATE 0
#define MS_ARCH_TLS_ABOVE_TP 0
#define MS_ARCH_R_JUMP_SLOT 7 /* R_X86_64_JUMP_SLOT */
#define MS_ARCH_R_GLOB_DAT 6  /* R_X86_64_GLOB_DAT */
#define MS_ARCH_NREGS 23      /* gregs of the ucontext */
#define MS_ARCH_NVEC 32       /* xmm0-15 as 32 words */
#define MS_ARCH_NCALLEE 6     /* rbx, rbp, r12-r15 */
#define MS_ARCH_SYSCALL_INSN_LEN 2 /* syscall: 0f 05 */
#define MS_ARCH_CALLER_SP() ((uint64_t)(uintptr_t)__builtin_dwarf_cfa())
#define MS_ARCH_VDSO_CLOCK_GETTIME "__vdso_clock_gettime"

static inline uintptr_t ms_arch_thread_pointer(void)
{
    uintptr_t tp;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
    return tp;
}
static inline void ms_arch_cpu_relax(void) { __builtin_ia32_pause(); }
static inline uintptr_t ms_arch_strip_pc(uintptr_t pc) { return pc; }
static inline uintptr_t ms_arch_untag(uintptr_t a) { return a; }
/* A counter with one writing thread: one add to memory without the lock prefix (a signal
 * handler on that thread cannot split it; other threads read the old or the new value). */
static inline void ms_arch_add_own(uint64_t *p, uint64_t v)
{
    __asm__ volatile("addq %1, %0" : "+m"(*p) : "er"(v));
}

/* Not used where MS_ARCH_AGENT_FP_CFA is 1: the walk starts from the frame record. */
#define MS_ARCH_CURRENT_STATE(pc, sp, fp)                                                \
    do {                                                                                 \
        __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"           \
                         : "=r"(pc), "=r"(sp), "=r"(fp));                                \
    } while (0)

/* Stores rsp and the callee-saved registers rbx rbp r12-r15 into sp and regs[0..5]. */
#define MS_ARCH_CAPTURE(spp, regs)                                                       \
    do {                                                                                 \
        __asm__ volatile("mov %%rsp, 0(%0)\n\tmov %%rbx, 0(%1)\n\tmov %%rbp, 8(%1)\n\t" \
                         "mov %%r12, 16(%1)\n\tmov %%r13, 24(%1)\n\tmov %%r14, 32(%1)\n\t" \
                         "mov %%r15, 40(%1)\n\t"                                         \
                         : : "r"(spp), "r"(regs) : "memory");                             \
    } while (0)

#endif
