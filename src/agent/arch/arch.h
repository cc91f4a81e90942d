/* The agent's per-CPU layer: what differs between architectures (registers, frame
 * records, DWARF register numbers, relocation types, pointer tags and authentication
 * codes) is here and nowhere else, in the manner of mimalloc's prim/ layer. One header
 * per CPU gives the inline parts (used on the recording path), arch_<cpu>.c the rest.
 * Runs inside the target: nothing here allocates, locks or makes a system call. */
#ifndef MS_AGENT_ARCH_H
#define MS_AGENT_ARCH_H

#include <stdint.h>

#if defined(__x86_64__)
#include "agent/arch/arch_x86_64.h"
#elif defined(__aarch64__)
#include "agent/arch/arch_aarch64.h"
#else
#error "memsight: no agent arch layer for this CPU (src/agent/arch/)"
#endif

/* Every form defines:
 *   MS_ARCH_NAME                 "x86_64", "aarch64" (META arch)
 *   MS_ARCH_DW_SP/FP/RA          DWARF numbers of the stack pointer, the frame pointer
 *                                and the return-address column
 *   MS_ARCH_AGENT_FP_CFA         1: a frame record at fp means CFA = fp + 16 (the agent's
 *                                own frames are left by the record chain alone); 0: the
 *                                record's place in the frame varies, rules are needed
 *   MS_ARCH_CFA_NEGATE_RA_STATE  a CFA opcode the walk may ignore (0: none)
 *   MS_ARCH_TLS_ABOVE_TP         1: static TLS lies above the thread pointer (variant I)
 *   MS_ARCH_R_JUMP_SLOT/GLOB_DAT relocation types of PLT and GOT slots (RELA)
 *   MS_ARCH_NREGS, MS_ARCH_NVEC  words of general and vector registers a stopped
 *                                thread's context gives (leak-scan roots)
 *   MS_ARCH_NCALLEE              callee-saved registers MS_ARCH_CAPTURE stores
 *   ms_arch_thread_pointer()     the thread pointer (fs base, tpidr_el0)
 *   ms_arch_cpu_relax()          the spin-wait hint (pause, yield)
 *   ms_arch_strip_pc(pc)         a return address without authentication bits
 *   ms_arch_untag(addr)          an address without a top-byte tag
 *   ms_arch_add_own(p, v)        *p += v by the word's only writer, safe against the
 *                                same thread's signal handlers (no lock prefix on x86)
 *   MS_ARCH_CURRENT_STATE(pc,sp,fp)  the calling function's exact pc, sp and fp
 *   MS_ARCH_CAPTURE(sp, regs)    the caller's sp and callee-saved registers
 *   MS_ARCH_CALLER_SP()          the caller's sp before its call into the current
 *                                function (that function's CFA)
 *   MS_ARCH_SYSCALL_INSN_LEN     bytes of the system-call instruction
 *   MS_ARCH_VDSO_CLOCK_GETTIME   the vDSO's name of clock_gettime (vdso.c) */

/* A stopped thread's registers, read from its signal context (arch_<cpu>.c). */
void ms_arch_context_regs(const void *ucontext, uint64_t *sp, uint64_t regs[MS_ARCH_NREGS],
                          uint64_t vec[MS_ARCH_NVEC]) __attribute__((visibility("hidden")));
/* The same context's stack pointer and callee-saved registers (the MS_ARCH_CAPTURE set),
 * and its pc. */
void ms_arch_context_callee(const void *ucontext, uint64_t *sp,
                            uint64_t regs[MS_ARCH_NCALLEE]) __attribute__((visibility("hidden")));
uintptr_t ms_arch_context_pc(const void *ucontext) __attribute__((visibility("hidden")));
/* Where a context stopped: its pc, stack pointer and frame pointer (a walk's start). */
void ms_arch_context_frame(const void *ucontext, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
    __attribute__((visibility("hidden")));
/* A system call's result register in a signal context (meaningful when the context
 * stopped on return from one), read and written. */
long ms_arch_context_ret(const void *ucontext) __attribute__((visibility("hidden")));
void ms_arch_context_set_ret(void *ucontext, long v) __attribute__((visibility("hidden")));
/* Argument i (0-5) of the system call a context stopped on return from, into *v.
 * Returns 0 when the CPU's convention overwrote it with the result (AArch64's x0). */
int ms_arch_context_sysarg(const void *ucontext, int i, long *v)
    __attribute__((visibility("hidden")));
/* 1 when the MS_ARCH_SYSCALL_INSN_LEN bytes at insn are the system-call instruction. */
int ms_arch_is_syscall_insn(const unsigned char *insn) __attribute__((visibility("hidden")));

#endif
