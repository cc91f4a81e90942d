/* The control thread: snapshots on request (signal), every interval, on byte/RSS
 * thresholds; the peak of total live bytes with per-stack counters as they were then.
 * Runs inside the target: no malloc, no stdio, no lock of its own (a futex word wakes the
 * thread); the signal handler only sets a bit and wakes; nothing is held across fork. */
#define _GNU_SOURCE
#include "agent/services/control.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/services/services.h"
#include "agent/tables/addr_table.h"
#include "agent/services/metrics_serve.h"
#include "agent/leak/leak_scan.h"
#include "agent/record/sampler.h"
#include "agent/platform/sig_resume.h"


/* CTL_IDLE: the handler is installed and nothing needs a thread (no interval, no
 * trigger, one program thread): requests are served on the program's own thread, so
 * that the program stays single-threaded for the C library (its fast paths). */
enum { CTL_OFF = 0, CTL_WAIT_MAIN = 1, CTL_STARTING = 2, CTL_RUNNING = 3, CTL_IDLE = 4 };

static struct {
    ms_control_config cfg;
    int signo;
    int state;             /* CTL_* */
    int main_started;      /* __libc_start_main handed over to main() */
    uint32_t word;         /* futex: bumped by every wake-up */
    uint32_t pending;      /* bit (1 << request) per pending request */
    uint32_t seen_seq[MS_CTL_REQ_MAX]; /* the last request number per request (repeats) */
    uint32_t last_seq[MS_CTL_REQ_MAX]; /* the number of the request taken last (0: none):
                                          its answer goes to it (ms_attach_reply) */
    int serving;           /* requests are being served on a program thread (CTL_IDLE) */
    ms_ctl_handler_fn handlers[MS_CTL_REQ_MAX];
    void *handler_args[MS_CTL_REQ_MAX];
    ms_control_stats stats;
    int bytes_fired, rss_fired; /* the byte trigger's level: tables/totals.c */
    uint32_t tid;          /* the control thread's id */
    uint32_t gen;          /* bumped when the thread is told to end (detach) */
    uint64_t deadline_ns;  /* mono_ns at which deadline_req is raised (0 = none) */
    unsigned deadline_req;
    struct sigaction old_sa; /* the program's disposition of the request signal */
    int have_old_sa;
    pthread_t thread;      /* joinable, so that the last program thread can wait for it */
    int have_thread;       /* `thread` was created in this process */
    int quit;              /* the program's threads are gone: leave */
    int orphan_poll;       /* quit once /proc shows no other live thread */
} ctl;

#define STAT_INC(f) __atomic_fetch_add(&ctl.stats.f, 1, __ATOMIC_RELAXED)

/* ====================================================================================
 * Wake-ups: a futex word, so that no file descriptor of ours can be closed or reused
 * by the program (daemons close every fd at start-up).
 * ================================================================================== */
static void ctl_wake(void)
{
    __atomic_fetch_add(&ctl.word, 1, __ATOMIC_RELEASE);
    syscall(SYS_futex, &ctl.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The byte trigger's hook (totals.h): the flush that crossed it wakes the thread. */
void ms_control_trigger_reached(void)
{
    ctl_wake();
}

static void ctl_wait(uint32_t seen, uint64_t timeout_ns)
{
    struct timespec ts, *tp = NULL;
    if (timeout_ns != UINT64_MAX) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
        ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
        tp = &ts;
    }
    syscall(SYS_futex, &ctl.word, FUTEX_WAIT_PRIVATE, seen, tp, NULL, 0);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ====================================================================================
 * The request signal. The handler is async-signal-safe: two atomics and a futex wake.
 * ================================================================================== */
static void ctl_serve_here(const ms_leak_caller *who);

/* A request number rides above the request's code (MS_CTL_REQ_SEQ_SHIFT): `memsight dump`
 * sends a request again while no thread answers, and a copy that comes after the request
 * was served (or while it is served) is not served twice. */
static int ctl_take_request(const siginfo_t *si)
{
    unsigned req = MS_CTL_REQ_DUMP, seq = 0;
    if (si && si->si_code == SI_QUEUE && si->si_value.sival_int > 0) {
        unsigned v = (unsigned)si->si_value.sival_int;
        req = v & MS_CTL_REQ_CODE_MASK;
        seq = v >> MS_CTL_REQ_SEQ_SHIFT;
        if (req == 0 || req >= MS_CTL_REQ_MAX)
            req = MS_CTL_REQ_DUMP;
    }
    if (seq && __atomic_exchange_n(&ctl.seen_seq[req], seq, __ATOMIC_ACQ_REL) == seq)
        return 0;
    __atomic_store_n(&ctl.last_seq[req], seq, __ATOMIC_RELEASE);
    __atomic_fetch_or(&ctl.pending, 1u << req, __ATOMIC_RELEASE);
    return 1;
}

static void ctl_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    int saved = errno;
    ctl_take_request(si);
    if (__atomic_load_n(&ctl.state, __ATOMIC_ACQUIRE) != CTL_IDLE) {
        ctl_wake();
    } else if (__atomic_load_n(&ctl.pending, __ATOMIC_ACQUIRE)) {
        /* No thread: served here when the thread waits in a blocking call of the C
         * library (its allocator and the agent idle on it: nothing a snapshot or a scan
         * needs is half-changed), else by the thread's next allocation that reaches the
         * agent; `memsight dump` sends again meanwhile, in case it waits next. */
        if (__atomic_load_n(&ctl.main_started, __ATOMIC_ACQUIRE) && ms_self.busy == 0 &&
            ms_state == MS_STATE_READY && ms_sig_at_wait(uc)) {
            ms_leak_caller who;
            ms_leak_caller_from(&who, uc);
            ctl_serve_here(&who);
        } else {
            __atomic_store_n(&ms_ctl_need_start, 1, __ATOMIC_RELEASE);
        }
    }
    errno = saved;
    /* `memsight dump` sends to this thread alone; a request sent to the process may
     * land on a program thread: a sleep it cut short goes on for the rest of its time */
    ms_sig_resume_interrupted(uc);
}

unsigned ms_control_request_seq(unsigned request)
{
    return request < MS_CTL_REQ_MAX ? __atomic_load_n(&ctl.last_seq[request], __ATOMIC_ACQUIRE)
                                    : 0;
}

uint32_t ms_control_tid(void)
{
    return __atomic_load_n(&ctl.tid, __ATOMIC_ACQUIRE);
}

int ms_control_signal(void)
{
    return ctl.cfg.enabled ? ctl.signo : 0;
}

int ms_control_set_handler(unsigned request, ms_ctl_handler_fn fn, void *arg)
{
    if (request == 0 || request >= MS_CTL_REQ_MAX)
        return -EINVAL;
    ctl.handler_args[request] = arg;
    __atomic_store_n(&ctl.handlers[request], fn, __ATOMIC_RELEASE);
    return 0;
}

/* Snapshot hook: the PEAK chunk (dump_at_peak) and the control/sampler counters. */
static void ctl_snapshot_hook(ms_snap_writer *w, void *arg)
{
    (void)arg;
    ms_totals_flush_self();
    ms_totals_write(w, ms_ctl_track && !ms_sampler_cfg.enabled);
    ms_control_stats st;
    ms_control_get_stats(&st);
    ms_sw_named n;
    ms_sw_named_begin(w, &n, MS_CHUNK_HLTH);
    ms_sw_named_put(w, &n, "sample_interval", ms_sampler_cfg.interval);
    ms_sw_named_put(w, &n, "sample_min_size", ms_sampler_cfg.min_size);
    ms_sw_named_put(w, &n, "sample_threshold", ms_sampler_cfg.threshold);
    ms_sw_named_put(w, &n, "control_signal", (uint64_t)ms_control_signal());
    ms_sw_named_put(w, &n, "control_requests", st.requests);
    ms_sw_named_put(w, &n, "control_snapshots", st.snapshots);
    ms_sw_named_put(w, &n, "control_snapshot_errors", st.snapshot_errors);
    ms_sw_named_put(w, &n, "control_triggers", st.triggers);
    ms_sw_named_put(w, &n, "tracked_live_bytes", ms_totals_live_total());
    /* recorded blocks known by address */
    ms_sw_named_put(w, &n, "addr_table_blocks", ms_addr_count());
    ms_sw_named_put(w, &n, "addr_table_bytes", ms_addr_bytes_reserved());
    ms_sw_named_end(w, &n);
}

void ms_control_get_stats(ms_control_stats *s)
{
    s->requests = __atomic_load_n(&ctl.stats.requests, __ATOMIC_RELAXED);
    s->snapshots = __atomic_load_n(&ctl.stats.snapshots, __ATOMIC_RELAXED);
    s->snapshot_errors = __atomic_load_n(&ctl.stats.snapshot_errors, __ATOMIC_RELAXED);
    s->triggers = __atomic_load_n(&ctl.stats.triggers, __ATOMIC_RELAXED);
    s->peak_updates = ms_totals_peak_updates();
    s->thread_starts = __atomic_load_n(&ctl.stats.thread_starts, __ATOMIC_RELAXED);
}

/* ====================================================================================
 * The thread
 * ================================================================================== */
/* At exit the agent writes its exit snapshot from a destructor, and the process ends
 * right after: a snapshot this thread started then would be cut off (a stray temporary
 * file). So the work below runs only while not stopping, and the destructor waits for a
 * piece already started (Dekker-style: both sides store, then read the other's flag). */
static int ctl_stopping, ctl_working;

static int ctl_begin_work(void)
{
    __atomic_store_n(&ctl_working, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ctl_stopping, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&ctl_working, 0, __ATOMIC_SEQ_CST);
        return 0;
    }
    return 1;
}

static void ctl_end_work(void)
{
    __atomic_store_n(&ctl_working, 0, __ATOMIC_SEQ_CST);
}

__attribute__((destructor(102))) static void ctl_stop_at_exit(void)
{
    /* destructor(102) runs before the agent's exit snapshot (destructor(101)) */
    __atomic_store_n(&ctl_stopping, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&ctl_working, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&ctl.state, __ATOMIC_ACQUIRE) == CTL_RUNNING)
        sched_yield();
}

static int ctl_snapshot(const char *reason)
{
    if (!ctl_begin_work())
        return -ESHUTDOWN; /* the process is exiting */
    int rc = ms_snapshot_write(reason, NULL, NULL, NULL, 0);
    ctl_end_work();
    if (rc == 0)
        STAT_INC(snapshots);
    else
        STAT_INC(snapshot_errors);
    return rc;
}

/* A leak scan asked through the control signal, with a "leakcheck" snapshot as result.
 * On the control thread (who NULL) its stack and registers are not roots; on a program
 * thread (CTL_IDLE) `who` gives that thread's as the request found them. */
static int ctl_leak_scan(const ms_leak_caller *who)
{
    if (!ctl_begin_work())
        return -ESHUTDOWN;
    ms_leak_caller none;
    memset(&none, 0, sizeof none);
    /* memsight leaks --leak-check-heuristics: the set rides in the request's number */
    uint32_t seq = __atomic_load_n(&ctl.last_seq[MS_CTL_REQ_LEAKS], __ATOMIC_ACQUIRE);
    ms_leak_next_heuristics(seq & MS_CTL_SEQ_HEUR_FLAG ? (int)(seq & (MS_CTL_SEQ_HEUR_FLAG - 1))
                                                       : -1);
    int rc = ms_leak_check_and_write(who ? who : &none, "leakcheck", NULL, 0);
    ms_leak_next_heuristics(-1);
    ctl_end_work();
    if (rc == 0)
        STAT_INC(snapshots);
    else if (rc != -ENOTSUP) /* sampled mode: refused, nothing failed */
        STAT_INC(snapshot_errors);
    return rc;
}

static void ctl_run_requests(uint32_t pend, const ms_leak_caller *who)
{
    for (unsigned r = 1; r < MS_CTL_REQ_MAX; r++) {
        if (!(pend & (1u << r)))
            continue;
        STAT_INC(requests);
        ms_ctl_handler_fn fn = __atomic_load_n(&ctl.handlers[r], __ATOMIC_ACQUIRE);
        int rc = 0;
        if (fn) {
            fn(r, ctl.handler_args[r]); /* it answers by itself (attach.c's detach) */
            continue;
        }
        if (r == MS_CTL_REQ_DUMP)
            rc = ctl_snapshot("signal");
        else if (r == MS_CTL_REQ_LEAKS)
            rc = ctl_leak_scan(who);
        else
            rc = -EINVAL; /* a code this agent does not know */
        /* the answer, for the command that asked: the snapshot's name is its "yes", an
         * errno (a full disk, sampled mode) its "no", at once rather than at its timeout */
        ms_attach_reply(r, ms_control_request_seq(r), rc < 0 ? -rc : 0);
    }
}

/* Serves the pending requests on the calling program thread (CTL_IDLE), one caller at a
 * time: a request that comes meanwhile is taken by the loop, or by the next caller. */
static void ctl_serve_here(const ms_leak_caller *who)
{
    if (__atomic_exchange_n(&ctl.serving, 1, __ATOMIC_ACQUIRE))
        return;
    ms_enter();
    uint32_t pend;
    while ((pend = __atomic_exchange_n(&ctl.pending, 0, __ATOMIC_ACQ_REL)) != 0)
        ctl_run_requests(pend, who);
    ms_leave();
    __atomic_store_n(&ctl.serving, 0, __ATOMIC_RELEASE);
}

/* Resident set size in bytes from /proc/self/statm (second field, in pages). */
static uint64_t read_rss(void)
{
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = buf;
    while (*p && *p != ' ')
        p++;
    while (*p == ' ')
        p++;
    uint64_t pages = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        pages = pages * 10 + (uint64_t)(*p - '0');
    return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

#define RSS_POLL_NS 50000000ull    /* 50 ms */
#define REARM_POLL_NS 100000000ull /* 100 ms */
#define ORPHAN_POLL_NS 100000000ull /* 100 ms */

static void *ctl_main(void *arg)
{
    (void)arg;
    ms_self.busy = 1; /* nothing this thread does is recorded */
    __atomic_store_n(&ctl.tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    prctl(PR_SET_NAME, "memsight-ctl", 0, 0, 0);
    /* Block every signal but ours, so that a program whose threads all block the
     * request signal still gets its requests answered here; and the leak scan's stop
     * signal, so that a scan does not wait for this thread to answer. */
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, ctl.signo);
    sigdelset(&all, ms_leak_stop_signal());
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    __atomic_store_n(&ctl.state, CTL_RUNNING, __ATOMIC_RELEASE);

    const uint32_t gen = __atomic_load_n(&ctl.gen, __ATOMIC_ACQUIRE);
    const uint64_t interval = ctl.cfg.interval_ms * 1000000ull;
    uint64_t now = mono_ns();
    uint64_t next_interval = interval ? now + interval : UINT64_MAX;
    uint64_t next_rss = ctl.cfg.trigger_rss ? now : UINT64_MAX;
    uint64_t next_rearm = UINT64_MAX;
    for (;;) {
        uint32_t seen = __atomic_load_n(&ctl.word, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&ctl.quit, __ATOMIC_ACQUIRE))
            break;
        if (__atomic_load_n(&ctl.orphan_poll, __ATOMIC_ACQUIRE) && ms_proc_other_threads() == 0)
            break; /* threads the agent did not count are gone too */
        uint64_t dl = __atomic_load_n(&ctl.deadline_ns, __ATOMIC_ACQUIRE);
        if (dl && mono_ns() >= dl) { /* e.g. attach --duration: detach now */
            __atomic_store_n(&ctl.deadline_ns, 0, __ATOMIC_RELEASE);
            __atomic_fetch_or(&ctl.pending, 1u << ctl.deadline_req, __ATOMIC_RELEASE);
        }
        ctl_run_requests(__atomic_exchange_n(&ctl.pending, 0, __ATOMIC_ACQ_REL), NULL);
        if (__atomic_load_n(&ctl.gen, __ATOMIC_ACQUIRE) != gen)
            return NULL; /* told to end (detach): a later attach starts a new thread */
        now = mono_ns();
        if (now >= next_interval) {
            ctl_snapshot("interval");
            next_interval += interval;
            if (next_interval <= now)
                next_interval = now + interval;
        }
        if (ctl.cfg.trigger_bytes) {
            uint64_t live = ms_totals_live_total();
            if (!ctl.bytes_fired && live >= ctl.cfg.trigger_bytes) {
                ctl.bytes_fired = 1;
                STAT_INC(triggers);
                ctl_snapshot("trigger");
                next_rearm = now + REARM_POLL_NS;
            } else if (ctl.bytes_fired && live < ctl.cfg.trigger_bytes - ctl.cfg.trigger_bytes / 10) {
                /* hysteresis: fire again only after falling 10% below the threshold */
                ctl.bytes_fired = 0;
                next_rearm = UINT64_MAX;
                ms_totals_arm(ctl.cfg.trigger_bytes);
            } else if (ctl.bytes_fired) {
                next_rearm = now + REARM_POLL_NS;
            }
        }
        if (now >= next_rss) {
            uint64_t rss = read_rss();
            if (!ctl.rss_fired && rss >= ctl.cfg.trigger_rss) {
                ctl.rss_fired = 1;
                STAT_INC(triggers);
                ctl_snapshot("trigger");
            } else if (ctl.rss_fired && rss && rss < ctl.cfg.trigger_rss - ctl.cfg.trigger_rss / 10) {
                ctl.rss_fired = 0;
            }
            next_rss = now + RSS_POLL_NS;
        }
        uint64_t next = next_interval;
        dl = __atomic_load_n(&ctl.deadline_ns, __ATOMIC_ACQUIRE);
        if (dl && dl < next)
            next = dl;
        if (next_rss < next)
            next = next_rss;
        if (next_rearm < next)
            next = next_rearm;
        now = mono_ns();
        if (__atomic_load_n(&ctl.orphan_poll, __ATOMIC_ACQUIRE) && now + ORPHAN_POLL_NS < next)
            next = now + ORPHAN_POLL_NS;
        if (__atomic_load_n(&ctl.pending, __ATOMIC_ACQUIRE))
            continue;
        ctl_wait(seen, next == UINT64_MAX ? UINT64_MAX : (next > now ? next - now : 0));
    }
    /* From here glibc counts this thread out; should it be the last, glibc ends the
     * process with exit(0), as it would have for the program's last thread. */
    __atomic_store_n(&ctl.tid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ctl.state, CTL_OFF, __ATOMIC_RELEASE);
    return NULL;
}

static int ctl_spawn(void)
{
    pthread_t th;
    /* joinable: the program's last thread waits for it to be gone (ms_control_program_gone) */
    int rc = ms_agent_thread_create(&th, ctl_main);
    if (rc == 0) {
        ctl.thread = th;
        __atomic_store_n(&ctl.have_thread, 1, __ATOMIC_RELEASE);
        STAT_INC(thread_starts);
    }
    return -rc;
}

/* The program's last thread the agent knows of is leaving (threads.c): the control thread
 * must not keep the process alive (glibc ends a process when its last thread exits, also
 * when main() left through pthread_exit), nor hold signals that only it would still be
 * there to receive. It is told to leave, and waited for, so that glibc's count of threads
 * reaches zero on the program's thread, which then runs exit(0) as without the agent.
 * Threads the agent did not see start (created before it, or beyond its registry) are
 * looked for in /proc; while any lives, the control thread stays and polls. */
void ms_control_program_gone(void)
{
    ms_metrics_stop(2000); /* the serving thread must not keep the process alive either */
    int expected = CTL_WAIT_MAIN, idle = CTL_IDLE;
    if (__atomic_compare_exchange_n(&ctl.state, &expected, CTL_OFF, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED) ||
        __atomic_compare_exchange_n(&ctl.state, &idle, CTL_OFF, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
        __atomic_store_n(&ms_ctl_need_start, 0, __ATOMIC_RELEASE);
        return; /* never started: it never will */
    }
    /* also with no control thread (between a detach and the next attach): a thread
     * started by a later attach must know that only uncounted threads are left */
    if (ms_proc_other_threads() > 0) {
        __atomic_store_n(&ctl.orphan_poll, 1, __ATOMIC_RELEASE);
        ctl_wake();
        return;
    }
    if (__atomic_exchange_n(&ctl.quit, 1, __ATOMIC_ACQ_REL))
        return; /* somebody else is already waiting for it */
    ctl_wake();
    /* whoever takes have_thread owns the handle: here the join, or a detach that is
     * ending the thread at the same time (ms_control_end), which lets it go by itself */
    if (__atomic_exchange_n(&ctl.have_thread, 0, __ATOMIC_ACQ_REL)) {
        int (*join)(pthread_t, void **) =
            ms_real.pthread_join ? ms_real.pthread_join : pthread_join;
        join(ctl.thread, NULL);
    }
    __atomic_store_n(&ctl.state, CTL_OFF, __ATOMIC_RELEASE);
}

/* CTL_IDLE: requests a signal could not serve where it found the thread, served from
 * the allocation that called in (the program's frames above are its roots). */
static MS_NOINLINE void ctl_serve_from_alloc(void)
{
    __atomic_store_n(&ms_ctl_need_start, 0, __ATOMIC_RELEASE);
    if (!__atomic_load_n(&ctl.pending, __ATOMIC_ACQUIRE))
        return;
    ms_leak_caller who;
    memset(&who, 0, sizeof who);
    MS_LEAK_CAPTURE(&who);
    ctl_serve_here(&who);
}

void ms_control_start_slow(void)
{
    if (!__atomic_load_n(&ctl.main_started, __ATOMIC_ACQUIRE))
        return; /* still in start-up (constructors): wait for main() */
    ms_metrics_start(); /* metrics_listen=: started the same lazy way, once */
    if (!ctl.cfg.enabled) { /* the start was asked for the metrics thread alone */
        __atomic_store_n(&ms_ctl_need_start, 0, __ATOMIC_RELEASE);
        return;
    }
    if (__atomic_load_n(&ctl.state, __ATOMIC_ACQUIRE) == CTL_IDLE) {
        ctl_serve_from_alloc();
        return;
    }
    int expected = CTL_WAIT_MAIN;
    if (!__atomic_compare_exchange_n(&ctl.state, &expected, CTL_STARTING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    __atomic_store_n(&ms_ctl_need_start, 0, __ATOMIC_RELEASE);
    ms_enter();
    int rc = ctl_spawn();
    ms_leave();
    /* cannot create threads (limits): no periodic snapshots; requests are served on the
     * program's threads (as without the need of a thread) */
    if (rc != 0)
        __atomic_store_n(&ctl.state, CTL_IDLE, __ATOMIC_RELEASE);
}

/* Whether the thread is needed from main() on: periodic work, a byte trigger the
 * allocation path wakes it for, or a C library whose waits the agent cannot recognise. */
static int ctl_thread_wanted(void)
{
    /* or where a waiting thread cannot be served where a request finds it (musl,
     * qemu-user): the thread then answers, as before requests were served in place */
    return ctl.cfg.interval_ms || ctl.cfg.trigger_rss || ctl.cfg.trigger_bytes ||
           !ms_sig_can_serve_waits();
}

/* From idle to waiting for the thread's start (by the next allocation after main()). */
static void ctl_want_thread(void)
{
    int expected = CTL_IDLE;
    if (__atomic_compare_exchange_n(&ctl.state, &expected, CTL_WAIT_MAIN, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED))
        __atomic_store_n(&ms_ctl_need_start, 1, __ATOMIC_RELEASE);
}

void ms_control_program_threaded(void)
{
    /* a request sent to the process may land on any thread, which may be busy for long:
     * with several threads a thread of the agent answers (it costs the C library's
     * single-thread fast paths no more: they are gone already) */
    if (__atomic_load_n(&ctl.state, __ATOMIC_ACQUIRE) != CTL_IDLE)
        return;
    ctl_want_thread();
    ms_control_start_slow();
}

int ms_control_program_running(void)
{
    __atomic_store_n(&ctl.main_started, 1, __ATOMIC_RELEASE);
    if (!ctl.cfg.enabled) {
        ms_metrics_start();
        return -ENOTSUP;
    }
    /* a request may land on one of the program's threads, which may never allocate */
    if (ms_proc_other_threads() > 0)
        ctl_want_thread();
    ms_control_start_slow(); /* the thread if wanted (interval=, triggers, threads) */
    return 0;
}

int ms_control_start_now(void)
{
    __atomic_store_n(&ctl.main_started, 1, __ATOMIC_RELEASE);
    if (!ctl.cfg.enabled) {
        ms_metrics_start();
        return -ENOTSUP;
    }
    ctl_want_thread(); /* a running program (attach, memsight_start): its thread at once */
    ms_control_start_slow();
    int s = __atomic_load_n(&ctl.state, __ATOMIC_ACQUIRE);
    return s == CTL_STARTING || s == CTL_RUNNING ? 0 : -EAGAIN;
}

/* ====================================================================================
 * Set-up, main() detection, fork
 * ================================================================================== */
/* The request handler (the program's disposition kept for a detach), then the thread
 * may start. */
static int ctl_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ctl_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(ctl.signo, &sa, &ctl.old_sa) != 0) {
        ctl.cfg.enabled = 0;
        return -errno;
    }
    ctl.have_old_sa = 1;
    int wanted = ctl_thread_wanted();
    __atomic_store_n(&ctl.state, wanted ? CTL_WAIT_MAIN : CTL_IDLE, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_ctl_need_start, wanted, __ATOMIC_RELEASE);
    return 0;
}

int ms_control_init(const ms_control_config *c)
{
    ctl.cfg = *c;
    ms_totals_init(c->dump_at_peak, c->trigger_bytes, c->stack_capacity);
    ms_snapshot_add_hook(ctl_snapshot_hook, NULL);
    if (!c->enabled)
        return 0;
    ctl.signo = c->signo > 0 ? c->signo : MS_DEFAULT_REQUEST_SIGNAL;
    if (ctl.signo <= 0 || ctl.signo > SIGRTMAX) {
        ctl.cfg.enabled = 0;
        return -EINVAL;
    }
    return ctl_install();
}

/* ====================================================================================
 * Detach and attach again (attach.c): the thread ends, the program's disposition of the
 * request signal comes back (a default one as ignored: see ms_control_end); a later
 * attach installs both again.
 * ================================================================================== */
void ms_control_end(void)
{
    ms_metrics_stop(2000); /* a detached agent serves nothing; an attach serves again */
    __atomic_store_n(&ms_ctl_need_start, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ctl.deadline_ns, 0, __ATOMIC_RELEASE);
    if (ctl.cfg.enabled && ctl.have_old_sa) {
        /* a default disposition (for the request signal: terminate) comes back as
         * ignored: a request that a client sent just before the detach, having seen the
         * handler, must not kill the program when it lands just after */
        struct sigaction sa = ctl.old_sa;
        if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL)
            sa.sa_handler = SIG_IGN;
        sigaction(ctl.signo, &sa, NULL);
        ctl.have_old_sa = 0;
    }
    /* This runs on the control thread, which is joinable (for the program's last thread,
     * ms_control_program_gone): nobody will join it after a detach, so it lets itself
     * go, unless the last program thread has already taken it to join. A later attach
     * starts a new thread with a handle of its own. */
    if (__atomic_exchange_n(&ctl.have_thread, 0, __ATOMIC_ACQ_REL)) {
        int (*detach)(pthread_t) =
            ms_real.pthread_detach ? ms_real.pthread_detach : pthread_detach;
        detach(pthread_self());
    }
    __atomic_store_n(&ctl.state, CTL_OFF, __ATOMIC_RELEASE);
    __atomic_store_n(&ctl.tid, 0, __ATOMIC_RELEASE);
    __atomic_fetch_add(&ctl.gen, 1, __ATOMIC_ACQ_REL); /* the running thread returns */
}

int ms_control_again(uint64_t interval_ms)
{
    ctl.cfg.interval_ms = interval_ms;
    if (!ctl.cfg.enabled)
        return -ENOTSUP;
    return ctl_install();
}

void ms_control_set_deadline(uint64_t after_ms, unsigned request)
{
    if (!after_ms || request == 0 || request >= MS_CTL_REQ_MAX) {
        __atomic_store_n(&ctl.deadline_ns, 0, __ATOMIC_RELEASE);
        return;
    }
    ctl.deadline_req = request;
    __atomic_store_n(&ctl.deadline_ns, mono_ns() + after_ms * 1000000ull, __ATOMIC_RELEASE);
    ctl_wake();
}

void ms_control_fork_child(int keep)
{
    /* Only the forking thread exists in the child: reset without locks. */
    ctl.word = 0;
    ctl.pending = 0;
    ctl.tid = 0;
    ctl.have_thread = 0; /* the parent's thread is not in this process */
    ctl.quit = 0;
    ctl.orphan_poll = 0;
    ctl_working = 0;
    ctl.bytes_fired = 0;
    ctl.rss_fired = 0;
    if (ctl.cfg.trigger_bytes)
        ms_totals_arm(ctl.cfg.trigger_bytes);
    ctl.serving = 0;
    if (ctl.cfg.enabled && keep && ctl.state != CTL_OFF) {
        /* the child has one thread: it needs its own only for periodic work */
        ms_ctl_need_start = ctl_thread_wanted();
        ctl.state = ms_ctl_need_start ? CTL_WAIT_MAIN : CTL_IDLE;
    } else {
        if (ctl.cfg.enabled) {
            signal(ctl.signo, SIG_IGN); /* a request must not kill the child */
        }
        ctl.state = CTL_OFF;
        ms_ctl_need_start = 0;
    }
}

/* main() detection: the program's entry calls __libc_start_main through the PLT, so
 * preloading sees it; the wrapper marks the moment constructors are done. */
typedef int (*ms_main_fn)(int, char **, char **);
static ms_main_fn real_main;

static MS_NOINLINE int ms_main_wrapper(int argc, char **argv, char **envp)
{
    __atomic_store_n(&ctl.main_started, 1, __ATOMIC_RELEASE);
    ms_signal_ready();
    int rc = real_main(argc, argv, envp);
    /* main returned: exit begins in our caller, which calls it next (not through an
     * interposable call), so the exit scan reads this thread's stack from here */
    MS_LEAK_NOTE_EXIT();
    return rc;
}

__attribute__((visibility("default"))) int __libc_start_main(
    ms_main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
    void (*rtld_fini)(void), void *stack_end)
{
    int (*real)(ms_main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
                void *);
    *(void **)&real = dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real) /* cannot happen with glibc; give up on the wrapper rather than crash */
        _exit(127);
    real_main = main;
    return real(ms_main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

/* ====================================================================================
 * Production mode from the agent's options
 * ================================================================================== */
void ms_production_init(void)
{
    ms_attach_publish_mode(); /* the mode, for the memsight command (requests, attach) */
    ms_sampler_configure(ms_opt.sample_interval, ms_opt.min_size, ms_opt.seed != 0, ms_opt.seed);
    /* recorded blocks without header, known by address: in the sampled modes, and in
     * every mode when the real malloc is not the C library's. Such an allocator has
     * entry points of its own (mallocx/dallocx, tc_*, mi_*) that the program may mix
     * with malloc and free both ways, and keeps no header of its own below a block: a
     * header of the agent's would reach the allocator's own free, and reading 16 bytes
     * below a block it handed out may fault (jemalloc's page-aligned blocks). With the C
     * library's allocator, whose chunk header lies below every block, full mode keeps its
     * header (docs/agent.md, "Other allocators"). */
    if (ms_sampler_cfg.enabled || !ms_real_malloc_is_libc)
        ms_addr_init();
    /* most blocks get no header: a header's check must be confirmed before trusting it */
    ms_hdr_confirm_needed = ms_sampler_cfg.enabled;
    ms_control_config c;
    memset(&c, 0, sizeof c);
    c.enabled = ms_opt.control != 0;
    c.signo = (int)(ms_opt.dump_signal <= 64 ? ms_opt.dump_signal : 0);
    c.interval_ms = ms_opt.interval_ms;
    c.dump_at_peak = ms_opt.dump_at_peak != 0;
    c.trigger_bytes = ms_opt.trigger_bytes;
    c.trigger_rss = ms_opt.trigger_rss;
    c.stack_capacity = ms_opt.stack_capacity;
    ms_control_init(&c);
    if (ms_metrics_wanted()) /* its thread starts as the control thread does, control=0 too */
        __atomic_store_n(&ms_ctl_need_start, 1, __ATOMIC_RELEASE);
}

void ms_production_fork_child(void)
{
    ms_metrics_fork_child();
    if (!ms_opt.follow_fork) {
        /* The child stops recording: every new block is plain (a min_size no block
         * reaches), headers of inherited blocks are confirmed before they are trusted,
         * no control thread, no snapshot at exit. */
        ms_sampler_configure(0, UINT64_MAX, 0, 0);
        ms_hdr_confirm_needed = 1;
        ms_opt.exit_snapshot = 0;
        ms_control_fork_child(0);
        return;
    }
    ms_sampler_after_fork_child();
    ms_control_fork_child(1);
}

/* ====================================================================================
 * Public API: a snapshot asked by the program itself (include/memsight/memsight.h)
 * ================================================================================== */
__attribute__((visibility("default"))) int memsight_dump(char *path, unsigned long pathlen)
{
    if (!ms_init())
        return -ENOTSUP;
    /* the program is running its own code: the control thread may start from now on */
    __atomic_store_n(&ctl.main_started, 1, __ATOMIC_RELEASE);
    return ms_snapshot_write("api", NULL, NULL, path, pathlen);
}
