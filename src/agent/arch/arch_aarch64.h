/* AArch64 form of the arch layer (arch.h): AAPCS64 frame records {x29, x30} whose place
 * in the frame varies (GCC puts them at the bottom), return addresses that may carry a
 * pointer-authentication code (-mbranch-protection=pac-ret), data pointers that may
 * carry a top-byte tag (TBI: Android's tagged heap pointers, MTE). */
#ifndef MS_AGENT_ARCH_AARCH64_H
#define MS_AGENT_ARCH_AARCH64_H

#include <stdint.h>

#define MS_ARCH_NAME "aarch64"
#define MS_ARCH_DW_SP 31 /* sp */
#define MS_ARCH_DW_FP 29 /* x29 */
#define MS_ARCH_DW_RA 30 /* x30, the link register */
#define MS_ARCH_AGENT_FP_CFA 0
/* DW_CFA_AARCH64_negate_ra_state: the return address is signed from here on; the walk
 * strips authentication bits from every return address anyway */
#define MS_ARCH_CFA_NEGATE_RA_STATE 0x2d
#define MS_ARCH_TLS_ABOVE_TP 1
#define MS_ARCH_R_JUMP_SLOT 1026 /* R_AARCH64_JUMP_SLOT */
#define MS_ARCH_R_GLOB_DAT 1025  /* R_AARCH64_GLOB_DAT */
#define MS_ARCH_NREGS 32         /* x0-x30, pc */
#define MS_ARCH_NVEC 64          /* v0-v31 as 64 words */
#define MS_ARCH_NCALLEE 11       /* x19-x29 */
#define MS_ARCH_SYSCALL_INSN_LEN 4 /* svc #0: d4000001 */
#define MS_ARCH_CALLER_SP() ((uint64_t)(uintptr_t)__builtin_dwarf_cfa())
#define MS_ARCH_VDSO_CLOCK_GETTIME "__kernel_clock_gettime"

static inline uintptr_t ms_arch_thread_pointer(void)
{
    uintptr_t tp;
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

static inline void ms_arch_cpu_relax(void) { __asm__ volatile("yield" ::: "memory"); }

/* XPACLRI (a hint: a no-op on cores without pointer authentication) strips the code
 * from x30 whatever the virtual-address size; only x30 can be given to it. */
static inline uintptr_t ms_arch_strip_pc(uintptr_t pc)
{
    register uintptr_t x30 __asm__("x30") = pc;
    __asm__("hint #7" : "+r"(x30));
    return x30;
}

/* Top-byte ignore: user-space data addresses are 56 bits, the top byte is a tag. */
static inline uintptr_t ms_arch_untag(uintptr_t a) { return a & 0x00ffffffffffffffull; }

/* A counter with one writing thread: a load and a store could be split by a signal
 * handler that allocates, so a relaxed atomic add (one STADD with LSE). */
static inline void ms_arch_add_own(uint64_t *p, uint64_t v)
{
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* The calling function's exact pc (a label), sp and x29, read together. */
#define MS_ARCH_CURRENT_STATE(pc, sp, fp)                                                \
    do {                                                                                 \
        __asm__ volatile("adr %0, 1f\n1:\n\tmov %1, sp\n\tmov %2, x29"                  \
                         : "=r"(pc), "=r"(sp), "=r"(fp));                                \
    } while (0)

/* Stores sp and the callee-saved registers x19-x29 into sp and regs[0..10]. */
#define MS_ARCH_CAPTURE(spp, regs)                                                       \
    do {                                                                                 \
        uintptr_t ms_sp_;                                                                \
        __asm__ volatile("mov %0, sp" : "=r"(ms_sp_));                                   \
        *(spp) = ms_sp_;                                                                 \
        __asm__ volatile("stp x19, x20, [%0, #0]\n\tstp x21, x22, [%0, #16]\n\t"        \
                         "stp x23, x24, [%0, #32]\n\tstp x25, x26, [%0, #48]\n\t"        \
                         "stp x27, x28, [%0, #64]\n\tstr x29, [%0, #80]"                 \
                         : : "r"(regs) : "memory");                                      \
    } while (0)

#endif
