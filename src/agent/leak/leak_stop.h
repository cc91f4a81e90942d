/* Stop-the-world for the leak scan: every other thread of the process is sent a signal
 * whose handler saves its registers into a preallocated slot and waits on a futex until
 * released. Runs inside the target: no malloc, no stdio, raw system calls only. */
#ifndef MS_AGENT_LEAK_STOP_H
#define MS_AGENT_LEAK_STOP_H

#include <stddef.h>
#include <stdint.h>

#include "agent/arch/arch.h"

enum {
    MS_LKT_SIGNALLED = 0,
    MS_LKT_STOPPED = 1, /* registers saved, waiting in the handler */
    MS_LKT_GONE = 2,    /* exited before it could stop */
    MS_LKT_TIMEOUT = 3, /* did not answer (signal blocked, zombie leader): not stopped */
    MS_LKT_SELF = 4,    /* the calling thread */
};

#define MS_LK_NREGS MS_ARCH_NREGS /* general registers of the signal context */
#define MS_LK_NXMM MS_ARCH_NVEC   /* vector registers, as words */

typedef struct ms_lk_thread {
    uint32_t tid;
    uint32_t state; /* MS_LKT_* (atomic) */
    uint32_t blocked_seen; /* checks that found the signal blocked and pending for it */
    uint64_t sp;
    uint64_t tp;    /* thread pointer (fs base, tpidr_el0) */
    uint64_t regs[MS_LK_NREGS];
    uint64_t xmm[MS_LK_NXMM];
} ms_lk_thread;

typedef struct ms_lk_world {
    ms_lk_thread *t; /* caller-provided, capacity cap */
    size_t n, cap;
    size_t stopped, gone, timeout, overflow;
    uint32_t skip[4]; /* agent threads that are neither stopped nor roots (0 = none) */
    uint64_t t0_ns, stopped_ns; /* CLOCK_MONOTONIC: first signal, all stopped */
    uint64_t released_ns;       /* ...the release, just before the wake-up call */
} ms_lk_world;

/* Installs the stop handler for `sig` (once). Returns 0 or -errno. */
int ms_lk_stop_install(int sig);
/* Stops every thread but the caller (listed from /proc/self/task, repeatedly until no
 * new thread appears). `timeout_ms` bounds the wait for threads that do not answer.
 * Returns 0 or -errno (then nothing is stopped). */
int ms_lk_stop_world(ms_lk_world *w, int sig, unsigned timeout_ms);
/* Lets every stopped thread go. */
void ms_lk_resume_world(ms_lk_world *w);
uint64_t ms_lk_mono_ns(void);

#endif
