/* The ways to ask for a leak scan: memsight_leak_check() from the program, at exit
 * (leak_check=exit), and on request (the control thread's MS_CTL_REQ_LEAKS calls
 * ms_leak_check_and_write); and the LEAK chunk written into the snapshot.
 * Runs inside the target: no malloc, no stdio. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "agent/leak/leak.h"
#include "agent/leak/leak_scan.h"
#include "memsight/memsight.h"

enum { LK_OFF = 0, LK_EXIT = 1, LK_SIGNAL = 2 };

/* Option values; read from the agent's option table when it carries them. */
static int opt_leak_check(void)
{
#ifdef MS_HAVE_LEAK_OPTIONS
    return (int)ms_opt.leak_check;
#else
    return LK_OFF;
#endif
}

int ms_leak_stop_signal(void)
{
#ifdef MS_HAVE_LEAK_OPTIONS
    if (ms_opt.leak_stop_signal > 0 && ms_opt.leak_stop_signal <= (uint64_t)SIGRTMAX)
        return (int)ms_opt.leak_stop_signal;
#endif
    return SIGRTMAX - 3;
}

unsigned ms_leak_heuristics(void)
{
#ifdef MS_HAVE_LEAK_OPTIONS
    return (unsigned)ms_opt.leak_heuristics;
#else
    return MS_LEAK_H_VALGRIND;
#endif
}

/* Full mode only: a scan needs every live block. */
static int full_mode(void)
{
#ifdef MS_HAVE_SAMPLING_OPTION
    /* sampling, or a minimum size, leaves blocks out: a pointer held only in a block
     * that was not recorded would make what it points to look lost */
    return ms_opt.sample_interval == 0 && ms_opt.min_size == 0;
#else
    return 1;
#endif
}

/* ===========================================================================
 * The LEAK chunk: summary, records, then (name, value) statistics.
 * ========================================================================= */
void ms_leak_write_chunk(struct ms_snap_writer *w, void *arg)
{
    const ms_leak_result *r = arg;
    if (!r)
        return;
    ms_sw_begin(w, MS_CHUNK_LEAK, 0);
    for (int i = 0; i < MS_LEAK_CLASS_COUNT; i++)
        ms_sw_u64(w, r->sum.blocks[i]);
    for (int i = 0; i < MS_LEAK_CLASS_COUNT; i++)
        ms_sw_u64(w, r->sum.bytes[i]);
    ms_sw_u64(w, r->sum.pause_ns);
    ms_sw_u64(w, r->sum.scan_ns);
    ms_sw_u64(w, r->sum.flags);
    ms_sw_u32(w, r->nrec);
    for (uint32_t i = 0; i < r->nrec; i++) {
        const ms_snap_leak_rec *x = &r->rec[i];
        ms_sw_u32(w, x->stack_id);
        ms_sw_u8(w, x->leak_class);
        ms_sw_u8(w, x->sample_len);
        ms_sw_u16(w, x->heuristics);
        ms_sw_u64(w, x->blocks);
        ms_sw_u64(w, x->bytes);
        ms_sw_u64(w, x->example_address);
        ms_sw_u64(w, x->example_size);
        ms_sw_bytes(w, x->sample, sizeof x->sample);
    }
    ms_sw_u32(w, MS_LKS_COUNT);
    for (int i = 0; i < MS_LKS_COUNT; i++) {
        ms_sw_cstr(w, ms_leak_stat_names[i]);
        ms_sw_u64(w, r->stat[i]);
    }
    ms_sw_end(w);
}

static void set_flags(ms_leak_result *r)
{
    uint64_t f = 0;
    if (r->stat[MS_LKS_UNSTOPPED])
        f |= MS_LEAK_F_UNSTOPPED;
    if (r->stat[MS_LKS_SKIPPED_BYTES] || r->stat[MS_LKS_FAULTS])
        f |= MS_LEAK_F_READ_ERRORS;
    if (r->stat[MS_LKS_RECORDS_DROPPED])
        f |= MS_LEAK_F_TRUNCATED;
    r->sum.flags |= f;
}

/* The newest scan's totals per class, for the agent's /metrics (metrics_serve.c): scans
 * run one at a time; a reader retries while the sequence is odd or moved. */
static struct {
    uint32_t seq;
    uint64_t bytes[MS_LEAK_CLASS_COUNT], blocks[MS_LEAK_CLASS_COUNT];
} g_last;

static void note_last(const ms_snap_leak_summary *sum)
{
    __atomic_fetch_add(&g_last.seq, 1, __ATOMIC_ACQ_REL);
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
        __atomic_store_n(&g_last.bytes[c], sum->bytes[c], __ATOMIC_RELAXED);
        __atomic_store_n(&g_last.blocks[c], sum->blocks[c], __ATOMIC_RELAXED);
    }
    __atomic_fetch_add(&g_last.seq, 1, __ATOMIC_ACQ_REL);
}

int ms_leak_last(uint64_t bytes[MS_LEAK_CLASS_COUNT], uint64_t blocks[MS_LEAK_CLASS_COUNT])
{
    for (int tries = 0; tries < 1000; tries++) {
        uint32_t s0 = __atomic_load_n(&g_last.seq, __ATOMIC_ACQUIRE);
        if (s0 == 0)
            return 0; /* no scan yet */
        if (s0 & 1)
            continue;
        for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
            bytes[c] = __atomic_load_n(&g_last.bytes[c], __ATOMIC_RELAXED);
            blocks[c] = __atomic_load_n(&g_last.blocks[c], __ATOMIC_RELAXED);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&g_last.seq, __ATOMIC_RELAXED) == s0)
            return 1;
    }
    return 0;
}

int ms_leak_check_and_write(const ms_leak_caller *who, const char *reason, char *path,
                            size_t pathlen)
{
    if (!ms_init())
        return -ENOTSUP;
    if (!full_mode())
        return -ENOTSUP;
    ms_leak_result *res = NULL;
    int rc = ms_leak_scan(who, &res);
    if (rc == -EIO || rc == -ETIMEDOUT) {
        static int told;
        if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED)) {
            const char *parts[] = {"a leak scan's child process ended before it sent its "
                                   "result (the snapshot's health says how: "
                                   "leak_scan_child_signal, leak_scan_child_exit)"};
            ms_say(parts, 1);
        }
        /* a scan asked for (memsight leaks, memsight_leak_check) still gets its snapshot,
         * without a scan, so that whoever waits for it learns why at once */
        if (!strcmp(reason, "leakcheck"))
            ms_snapshot_write(reason, NULL, NULL, path, pathlen);
        return rc;
    }
    if (rc)
        return rc;
    set_flags(res);
    note_last(&res->sum);
    return ms_snapshot_write(reason, ms_leak_write_chunk, res, path, pathlen);
}

void ms_leak_caller_from(ms_leak_caller *who, const void *uc)
{
    memset(who, 0, sizeof *who);
    who->program_thread = 1;
    ms_arch_context_callee(uc, &who->sp, who->regs);
}

/* ===========================================================================
 * Public API
 * ========================================================================= */
/* The agent's dead frames below the caller hold copies of program pointers (the
 * snapshot writer walks every block): zero them so that a later scan does not take
 * them for the program's. Bounded by the thread's known stack. */
__attribute__((noinline)) static void wipe_dead_stack(void)
{
    ms_thread_bounds();
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    size_t n = 32768;
    if (ms_self.stack_lo && sp > ms_self.stack_lo && sp - ms_self.stack_lo < n + 8192)
        n = sp - ms_self.stack_lo > 8192 ? sp - ms_self.stack_lo - 8192 : 0;
    if (n == 0)
        return;
    volatile char buf[n];
    memset((char *)buf, 0, n);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

__attribute__((visibility("default"), noinline)) int memsight_leak_check(char *path,
                                                                      unsigned long pathlen)
{
    ms_leak_caller who;
    memset(&who, 0, sizeof who);
    MS_LEAK_CAPTURE(&who);
    int rc = ms_leak_check_and_write(&who, "leakcheck", path, pathlen);
    wipe_dead_stack();
    return rc;
}

/* ===========================================================================
 * At exit: the scan's result rides in the exit snapshot through a hook.
 * ========================================================================= */
static ms_leak_result *g_exit_result;

static void exit_hook(ms_snap_writer *w, void *arg)
{
    (void)arg;
    ms_leak_result *r = __atomic_exchange_n(&g_exit_result, NULL, __ATOMIC_ACQ_REL);
    if (r)
        ms_leak_write_chunk(w, r);
}

/* The exit point noted by the exit paths (one process-wide exit: the first one wins). */
static ms_leak_caller g_exit_from;
static uint32_t g_exit_tid;

void ms_leak_note_exit(const ms_leak_caller *who)
{
    uint32_t tid = ms_gettid(), none = 0;
    if (!__atomic_compare_exchange_n(&g_exit_tid, &none, tid, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return;
    g_exit_from = *who;
}

__attribute__((noinline)) void ms_leak_at_exit(void)
{
    if (opt_leak_check() != LK_EXIT || ms_state != MS_STATE_READY)
        return;
    if (!full_mode()) {
        static const char msg[] = "memsight: leak check at exit refused: the agent runs in "
                                  "sampled mode (sample= or min_size=) and a reachability "
                                  "scan needs every live block (run in full mode)\n";
        (void)!write(2, msg, sizeof msg - 1);
        return;
    }
    ms_leak_caller who;
    memset(&who, 0, sizeof who);
    MS_LEAK_CAPTURE(&who);
    /* from the frame where exit began, when it was on this thread and its stack: the
     * exit path's frames below it are dead */
    if (__atomic_load_n(&g_exit_tid, __ATOMIC_ACQUIRE) == ms_gettid() &&
        g_exit_from.sp > who.sp && (!ms_self.stack_hi || g_exit_from.sp <= ms_self.stack_hi))
        who = g_exit_from;
    ms_leak_result *res = NULL;
    if (ms_leak_scan(&who, &res) != 0)
        return;
    set_flags(res);
    res->sum.flags |= MS_LEAK_F_AT_EXIT;
    note_last(&res->sum);
    g_exit_result = res;
    ms_snapshot_add_hook(exit_hook, NULL);
}
