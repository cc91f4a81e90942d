/* The agent's control thread and production-mode bookkeeping: snapshots on request (a
 * signal whose handler only wakes the thread), every interval, on thresholds, and the
 * per-stack counters at the peak of total live bytes (the PEAK chunk).
 * Runs inside the target: no malloc, no lock of its own; nothing held across fork. */
#ifndef MS_AGENT_CONTROL_H
#define MS_AGENT_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* Requests carried by the signal's value (sigqueue); a plain kill() means DUMP. */
enum ms_ctl_request {
    MS_CTL_REQ_DUMP = 1,  /* write <out>/memsight-<pid>-<NNNN>-signal.msnap */
    MS_CTL_REQ_LEAKS = 2, /* run the reachability scan (handler registered by leak_*.c) */
    MS_CTL_REQ_DETACH = 3, /* memsight detach: final snapshot, hooks off (attach.c) */
    MS_CTL_REQ_MAX = 8
};
/* The signal's value: the request's code in the low bits, and above them a number that
 * copies of one request share (0: none), so that a copy is not served twice. */
#define MS_CTL_REQ_CODE_MASK 0xffu
#define MS_CTL_REQ_SEQ_SHIFT 8
/* A leak request's number may name the scan's interior-pointer heuristics in its low
 * bits: MS_CTL_SEQ_HEUR_FLAG | set (MS_LEAK_H_*); without the flag, the agent's option. */
#define MS_CTL_SEQ_HEUR_FLAG 0x20u

typedef struct ms_control_config {
    int enabled;            /* control=1: install the handler and run the thread */
    int signo;              /* request signal; 0 = MS_DEFAULT_REQUEST_SIGNAL */
    uint64_t interval_ms;   /* interval=MS: periodic numbered snapshots (0 = off) */
    int dump_at_peak;       /* keep per-stack counters at the peak; PEAK in every snapshot */
    uint64_t trigger_bytes; /* snapshot when tracked live bytes reach this (0 = off) */
    uint64_t trigger_rss;   /* snapshot when the process RSS reaches this (0 = off) */
    uint64_t stack_capacity;/* stack ids 0..stack_capacity (for the peak counters) */
} ms_control_config;

/* Called once by the agent's initialisation when it is ready. Installs the request
 * signal handler (never starts a thread). Returns 0 or a negative errno. */
int ms_control_init(const ms_control_config *c);

/* Sets up production mode from the agent's options (sampler, control thread, peak):
 * the one call the agent's initialisation makes. */
void ms_production_init(void);
/* The agent's atfork child handler calls this: reseeds the sampler, forgets the
 * parent's control thread; the child's first allocation starts its own. */
void ms_production_fork_child(void);

/* The number the last request of this code carried (0: none), for its answer
 * (ms_attach_reply). */
unsigned ms_control_request_seq(unsigned request);

/* A request handler run on the control thread (e.g. the leak scan). One per code. */
typedef void (*ms_ctl_handler_fn)(unsigned request, void *arg);
int ms_control_set_handler(unsigned request, ms_ctl_handler_fn fn, void *arg);

/* The thread exists only when something needs it: interval=, a trigger, a second program
 * thread, an attach or memsight_start(). It is then created from the first top-level
 * allocation made after main() has been entered (never from a constructor, never inside
 * the signal handler). Without it, a request is served on the program thread the signal
 * found waiting in a blocking call of the C library, or else from that thread's next
 * allocation that reaches the agent; ms_ctl_need_start then asks the allocation path to
 * call in. The allocation path calls ms_control_maybe_start() (record.h); it costs one load. */
/* memsight_start() called by the program itself: as after main() under LD_PRELOAD, the
 * thread starts if something needs it or the program already runs threads of its own;
 * a single-threaded program keeps the C library's single-thread paths. */
int ms_control_program_running(void);
/* Starts the thread now (attach: a program in an unknown state). */
int ms_control_start_now(void);

/* Detach (called on the control thread): the thread returns after its current request,
 * the program's own disposition of the request signal is put back. */
void ms_control_end(void);
/* Attach again: the request handler again, interval= as given; the thread starts with
 * ms_control_start_now(). 0 or a negative errno (-ENOTSUP with control=0). */
int ms_control_again(uint64_t interval_ms);
/* Raises `request` on the control thread after_ms from now (0: cancels). */
void ms_control_set_deadline(uint64_t after_ms, unsigned request);

/* In the forked child (from the agent's atfork child handler): forget the parent's
 * thread; with `keep` the child's first allocation starts its own thread. */
void ms_control_fork_child(int keep);

/* Signal number in use (for messages and META), 0 when control is off. */
int ms_control_signal(void);

/* Counters for the HLTH chunk. */
typedef struct ms_control_stats {
    uint64_t requests;        /* signal requests received */
    uint64_t snapshots;       /* snapshots written by the control thread */
    uint64_t snapshot_errors;
    uint64_t triggers;        /* threshold snapshots */
    uint64_t peak_updates;    /* times a new peak was reached */
    uint64_t thread_starts;
} ms_control_stats;
void ms_control_get_stats(ms_control_stats *s);

#endif
