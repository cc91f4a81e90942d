/* x86-64 half of `memsight attach` (inject_arch.h): user_regs_struct through ptrace, the
 * code that calls the loader with the FP/vector state saved by XSAVE (FXSAVE without it),
 * and the kernel's system-call restart done by hand. */
#if defined(__x86_64__)
#define _GNU_SOURCE
#include "inject_arch.h"

#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>

_Static_assert(sizeof(struct user_regs_struct) <= sizeof(ms_inj_regs), "register buffer");
#define R(x) ((struct user_regs_struct *)(void *)(x)->b)
#define RC(x) ((const struct user_regs_struct *)(const void *)(x)->b)

/* Kernel return values that mean "restart this system call" (include/linux/errno.h). */
#define K_ERESTARTSYS 512
#define K_ERESTARTNOINTR 513
#define K_ERESTARTNOHAND 514
#define K_ERESTART_RESTARTBLOCK 516

int ms_inj_arch_machine(void) { return EM_X86_64; }
const char *ms_inj_arch_name(void) { return "x86-64"; }
uint64_t ms_inj_red_zone(void) { return 128; }

static int have_xsave(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)); /* OSXSAVE */
}

size_t ms_inj_fpstate_size(void)
{
    unsigned a, b, c, d;
    if (have_xsave() && __get_cpuid_count(0xd, 0, &a, &b, &c, &d) && b >= 576)
        return ((size_t)b + 63) & ~(size_t)63; /* EBX: size for the features enabled in XCR0 */
    return 512;
}

int ms_inj_get_regs(int tid, ms_inj_regs *r)
{
    memset(r, 0, sizeof *r);
    return ptrace(PTRACE_GETREGS, tid, NULL, R(r)) == 0 ? 0 : -errno;
}

int ms_inj_set_regs(int tid, const ms_inj_regs *r)
{
    return ptrace(PTRACE_SETREGS, tid, NULL, (void *)(uintptr_t)RC(r)) == 0 ? 0 : -errno;
}

uint64_t ms_inj_pc(const ms_inj_regs *r) { return RC(r)->rip; }
uint64_t ms_inj_sp(const ms_inj_regs *r) { return RC(r)->rsp; }

long ms_inj_in_syscall(const ms_inj_regs *r)
{
    return (long)RC(r)->orig_rax >= 0 ? (long)RC(r)->orig_rax : -1;
}

void ms_inj_resume_regs(ms_inj_regs *out, const ms_inj_regs *orig)
{
    *out = *orig;
    struct user_regs_struct *u = R(out);
    if ((long)u->orig_rax >= 0) {
        long rv = (long)u->rax;
        /* what the kernel does on the way out when no handler runs (arch signal code) */
        if (rv == -K_ERESTARTSYS || rv == -K_ERESTARTNOINTR || rv == -K_ERESTARTNOHAND) {
            u->rax = u->orig_rax;
            u->rip -= 2;
        } else if (rv == -K_ERESTART_RESTARTBLOCK) {
            u->rax = SYS_restart_syscall;
            u->rip -= 2;
        }
    }
    u->orig_rax = (unsigned long long)-1;
}

void ms_inj_entry_regs(ms_inj_regs *out, const ms_inj_regs *orig, const ms_inj_call *c)
{
    *out = *orig;
    struct user_regs_struct *u = R(out);
    u->rip = c->code;
    u->rsp = c->stack_top;
    u->rbx = c->data; /* callee-saved: survives the calls */
    u->orig_rax = (unsigned long long)-1;
    u->eflags &= ~(1ull << 10); /* DF clear, as the ABI wants at a call */
}

/* ---- a tiny assembler ---- */
typedef struct asmbuf {
    unsigned char *p;
    size_t n, cap;
} asmbuf;

static void emit(asmbuf *a, const void *b, size_t n)
{
    if (a->n + n <= a->cap)
        memcpy(a->p + a->n, b, n);
    a->n += n;
}
#define E(...) do { const unsigned char b_[] = {__VA_ARGS__}; emit(a, b_, sizeof b_); } while (0)
static void emit32(asmbuf *a, uint32_t v) { emit(a, &v, 4); }
static void emit64(asmbuf *a, uint64_t v) { emit(a, &v, 8); }
/* movabs reg, imm64; reg numbers as in the ISA (r8..r15 take REX.B) */
static void movabs(asmbuf *a, unsigned reg, uint64_t v)
{
    E((unsigned char)(reg >= 8 ? 0x49 : 0x48), (unsigned char)(0xb8 + (reg & 7)));
    emit64(a, v);
}
/* jcc/jmp rel8 patched once the target is known */
static size_t jshort(asmbuf *a, unsigned char op)
{
    E(op, 0);
    return a->n - 1;
}
static void land(asmbuf *a, size_t at)
{
    if (at < a->cap && a->n - (at + 1) < 128)
        a->p[at] = (unsigned char)(a->n - (at + 1));
}

size_t ms_inj_build(unsigned char *buf, size_t cap, const ms_inj_call *c, const ms_inj_regs *resume)
{
    (void)c;
    asmbuf A = {buf, 0, cap}, *a = &A;
    const struct user_regs_struct *u = RC(resume);
    int xs = have_xsave();
    /* save the FP/vector state: the loader and constructors use SSE/AVX registers */
    E(0xb8, 0xff, 0xff, 0xff, 0xff); /* mov eax, -1 */
    E(0xba, 0xff, 0xff, 0xff, 0xff); /* mov edx, -1 */
    E(0x48, 0x0f, 0xae, (unsigned char)(xs ? 0xa3 : 0x83)); /* xsave64 / fxsave64 [rbx+d32] */
    emit32(a, MS_INJ_D_FPSTATE);
    E(0xfc);                                     /* cld */
    E(0x48, 0x8d, 0xbb); emit32(a, MS_INJ_D_PATH); /* lea rdi, [rbx+path] */
    E(0x48, 0x8b, 0x73, MS_INJ_D_FLAGS);         /* mov rsi, [rbx+flags] */
    E(0xff, 0x53, MS_INJ_D_DLOPEN);              /* call [rbx+dlopen] */
    E(0x48, 0x89, 0x43, MS_INJ_D_HANDLE);        /* mov [rbx+handle], rax */
    E(0x48, 0x85, 0xc0);                         /* test rax, rax */
    size_t j_err1 = jshort(a, 0x74);             /* jz err */
    E(0x48, 0x89, 0xc7);                         /* mov rdi, rax */
    E(0x48, 0x8d, 0xb3); emit32(a, MS_INJ_D_SYM); /* lea rsi, [rbx+sym] */
    E(0xff, 0x53, MS_INJ_D_DLSYM);               /* call [rbx+dlsym] */
    E(0x48, 0x89, 0x43, MS_INJ_D_ENTRY);         /* mov [rbx+entry], rax */
    E(0x48, 0x85, 0xc0);                         /* test rax, rax */
    size_t j_err2 = jshort(a, 0x74);             /* jz err */
    E(0x48, 0x8d, 0xbb); emit32(a, MS_INJ_D_OPTS); /* lea rdi, [rbx+opts] */
    E(0xff, 0xd0);                               /* call rax */
    E(0x48, 0x63, 0xc0);                         /* movsxd rax, eax */
    E(0x48, 0x89, 0x43, MS_INJ_D_RC);            /* mov [rbx+rc], rax */
    size_t j_done = jshort(a, 0xeb);             /* jmp done */
    land(a, j_err1);
    land(a, j_err2);
    E(0x48, 0x8b, 0x43, MS_INJ_D_DLERROR);       /* mov rax, [rbx+dlerror] */
    E(0x48, 0x85, 0xc0);                         /* test rax, rax */
    size_t j_noerr = jshort(a, 0x74);            /* jz done */
    E(0xff, 0xd0);                               /* call rax */
    E(0x48, 0x89, 0x43, MS_INJ_D_ERR);           /* mov [rbx+err], rax */
    land(a, j_done);
    land(a, j_noerr);
    E(0xb8, 0xff, 0xff, 0xff, 0xff);
    E(0xba, 0xff, 0xff, 0xff, 0xff);
    E(0x48, 0x0f, 0xae, (unsigned char)(xs ? 0xab : 0x8b)); /* xrstor64 / fxrstor64 */
    emit32(a, MS_INJ_D_FPSTATE);
    E(0x48, 0xc7, 0x43, MS_INJ_D_DONE, 1, 0, 0, 0); /* mov qword [rbx+done], 1 */
    /* from here on the tracer may set the final registers itself at any instruction;
     * alone, the code does: flags on the scratch stack, every register, sp, rbx, a jump */
    movabs(a, 0, u->eflags);
    E(0x50, 0x9d);                               /* push rax; popfq */
    movabs(a, 0, u->rax);
    movabs(a, 1, u->rcx);
    movabs(a, 2, u->rdx);
    movabs(a, 5, u->rbp);
    movabs(a, 6, u->rsi);
    movabs(a, 7, u->rdi);
    movabs(a, 8, u->r8);
    movabs(a, 9, u->r9);
    movabs(a, 10, u->r10);
    movabs(a, 11, u->r11);
    movabs(a, 12, u->r12);
    movabs(a, 13, u->r13);
    movabs(a, 14, u->r14);
    movabs(a, 15, u->r15);
    movabs(a, 4, u->rsp);
    movabs(a, 3, u->rbx);
    E(0xff, 0x25, 0, 0, 0, 0);                   /* jmp [rip+0] */
    emit64(a, u->rip);
    return a->n <= cap ? a->n : 0;
}

#endif
