/* The per-architecture half of `memsight attach` (inject_<arch>.c): registers, the code
 * that calls the loader in the target and puts every register back, and how a thread
 * stopped in a system call resumes it. inject.c holds the rest and sees nothing else of
 * the CPU. To port: one file implementing this header, and its name in CMakeLists. */
#ifndef MS_CLI_INJECT_ARCH_H
#define MS_CLI_INJECT_ARCH_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
#define MS_INJ_ARCH 1 /* an implementation is built for this CPU */
#endif

/* A thread's general registers as ptrace gives them (opaque outside the arch file). */
typedef struct ms_inj_regs {
    _Alignas(16) unsigned char b[1024];
} ms_inj_regs;

/* The data block the code reads and writes, in the target (64-byte aligned). inject.c
 * fills it; the offsets are the same on every architecture. */
enum {
    MS_INJ_D_DLOPEN = 0,   /* u64 address of dlopen (or __libc_dlopen_mode) */
    MS_INJ_D_DLSYM = 8,    /* u64 address of dlsym */
    MS_INJ_D_DLERROR = 16, /* u64 address of dlerror (0: none) */
    MS_INJ_D_FLAGS = 24,   /* u64 dlopen flags */
    MS_INJ_D_HANDLE = 32,  /* out: dlopen's result */
    MS_INJ_D_ENTRY = 40,   /* out: dlsym's result */
    MS_INJ_D_RC = 48,      /* out: the entry's result (int, sign-extended by inject.c) */
    MS_INJ_D_ERR = 56,     /* out: dlerror's result when dlopen or dlsym failed */
    MS_INJ_D_DONE = 64,    /* out: 1 once the calls are over and the FP state is back */
    MS_INJ_D_PATH = 512,   /* the library's path (1024 bytes) */
    MS_INJ_D_SYM = 1536,   /* the entry's name (64 bytes) */
    MS_INJ_D_OPTS = 1600,  /* the entry's argument (2048 bytes) */
    MS_INJ_D_FPSTATE = 4096, /* save area of the floating-point/vector state */
};
#define MS_INJ_PATH_MAX 1024
#define MS_INJ_OPTS_MAX 2048

typedef struct ms_inj_call {
    uint64_t code;      /* where the code goes (executable memory of the target) */
    uint64_t data;      /* the data block */
    uint64_t stack_top; /* stack pointer for the calls */
} ms_inj_call;

int ms_inj_arch_machine(void);       /* e_machine of the targets this file serves */
const char *ms_inj_arch_name(void);
uint64_t ms_inj_red_zone(void);      /* bytes below sp a leaf function may use */
size_t ms_inj_fpstate_size(void);    /* bytes for the FP/vector save (this CPU) */

int ms_inj_get_regs(int tid, ms_inj_regs *r); /* 0 or -errno */
int ms_inj_set_regs(int tid, const ms_inj_regs *r);
uint64_t ms_inj_pc(const ms_inj_regs *r);
uint64_t ms_inj_sp(const ms_inj_regs *r);
/* The system call the thread is stopped in (interrupted or not yet returned), or -1. */
long ms_inj_in_syscall(const ms_inj_regs *r);

/* The registers with which the thread goes on after the injection: `orig` as the kernel
 * would resume it (an interrupted system call restarted), with nothing left for the
 * kernel to restart. */
void ms_inj_resume_regs(ms_inj_regs *out, const ms_inj_regs *orig);
/* Registers to run the code: pc = c->code, sp = c->stack_top, the data block's address
 * where the code expects it, no system call to restart. */
void ms_inj_entry_regs(ms_inj_regs *out, const ms_inj_regs *orig, const ms_inj_call *c);
/* Writes the code into buf: dlopen(path, flags), dlsym(handle, sym), entry(opts) (or
 * dlerror() when one of the first two fails), the FP state back, done = 1; then every
 * register of `resume` is put back and the thread jumps where `resume` says, so that a
 * thread left alone in the code (its tracer killed) comes out of it as it went in. From
 * the instruction after done = 1 on, setting `resume` from outside is the same. Returns
 * the length, 0 if cap is too small. */
size_t ms_inj_build(unsigned char *buf, size_t cap, const ms_inj_call *c, const ms_inj_regs *resume);

#endif
