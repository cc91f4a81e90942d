/* Thread lives, for the thread-leak report (KOOM's thread leak monitor): counters of
 * threads created, joined, detached and ended, and the THRL chunk of every snapshot,
 * which lists the registry's threads that run now and those that ended without being
 * joined or detached (leaked: their stack and descriptor stay until a join).
 * Runs inside the target: no malloc, no lock; the registry itself is threads.c's. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/record/record.h"

static uint64_t ms_tlife_counts[MS_TLIFE_COUNT];
static int ms_tlife_said_full;

static const char *const ms_tlife_names[MS_TLIFE_COUNT] = {
    [MS_TLIFE_CREATED] = "created",   [MS_TLIFE_UNTRACKED] = "untracked",
    [MS_TLIFE_JOINED] = "joined",     [MS_TLIFE_DETACHED] = "detached",
    [MS_TLIFE_EXITED] = "exited",
};

void ms_tlife_count(enum ms_tlife_event e)
{
    __atomic_fetch_add(&ms_tlife_counts[e], 1, __ATOMIC_RELAXED);
}

void ms_tlife_exiting(ms_thread_slot *s, uint32_t how)
{
    s->exit_ns = ms_now_ns();
    char name[16] = {0};
    /* the thread's own name, read by itself (no /proc, no allocation); gone after exit */
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0)
        memcpy(s->name, name, sizeof s->name);
    s->name[sizeof s->name - 1] = 0;
    __atomic_fetch_or(&s->state, how, __ATOMIC_RELEASE);
    ms_tlife_count(MS_TLIFE_EXITED);
}

void ms_tlife_table_full(void)
{
    if (__atomic_exchange_n(&ms_tlife_said_full, 1, __ATOMIC_RELAXED))
        return;
    static const char line[] = "memsight: thread_capacity reached: threads created while "
                               "the registry is full are not in the thread report (HLTH "
                               "dropped_threads counts them)\n";
    (void)!write(2, line, sizeof line - 1);
}

void ms_tlife_fork_child(void)
{
    /* the child's life starts with the forking thread alone */
    for (int i = 0; i < MS_TLIFE_COUNT; i++)
        ms_tlife_counts[i] = 0;
}

/* ===========================================================================
 * The THRL chunk
 * ========================================================================= */
typedef struct tlife_ctx {
    ms_snap_writer *w;
    uint32_t n, alive, leaked;
} tlife_ctx;

static int tlife_leaked(uint32_t st)
{
    return (st & MS_THR_EXITED) && !(st & (MS_THR_DETACHED | MS_THR_MAIN));
}

static int write_rec(const ms_thread_slot *t, void *arg)
{
    tlife_ctx *c = arg;
    uint32_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
    if (!(st & MS_THR_STARTED))
        return 0; /* created, not yet running: no tid, no stack yet */
    if ((st & MS_THR_EXITED) && !tlife_leaked(st))
        return 0; /* main() gone through pthread_exit */
    ms_snap_thread_life r;
    memset(&r, 0, sizeof r);
    r.tid = t->tid;
    r.flags = st;
    r.stack_id = t->stack_id;
    r.creator_tid = t->creator_tid;
    r.create_ns = t->create_ns;
    r.exit_ns = (st & MS_THR_EXITED) ? t->exit_ns : 0;
    /* the main thread's lower end moves (stack_lo 0): no size */
    r.stack_size = t->stack_rec_size ? t->stack_rec_size
                   : t->stack_lo     ? t->stack_hi - t->stack_lo
                                     : 0;
    r.guard_size = t->guard_size;
    r.stack_lo = t->stack_lo;
    r.stack_hi = t->stack_hi;
    r.start_routine = (uint64_t)(uintptr_t)t->start;
    ms_sw_bytes(c->w, &r, sizeof r);
    char name[64];
    size_t n = 0;
    if (st & MS_THR_EXITED) {
        for (; n < sizeof t->name && t->name[n]; n++)
            name[n] = t->name[n];
    } else if (t->tid) { /* still running: /proc has its current name */
        char path[64];
        memcpy(path, "/proc/self/task/", 16);
        size_t k = 16 + ms_fmt_u64(path + 16, t->tid);
        memcpy(path + k, "/comm", 6);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t got = read(fd, name, sizeof name - 1);
            close(fd);
            n = got > 0 ? (size_t)got : 0;
            while (n && (name[n - 1] == '\n' || name[n - 1] == 0))
                n--;
        }
    }
    ms_sw_str(c->w, name, n);
    c->n++;
    if (tlife_leaked(st))
        c->leaked++;
    else
        c->alive++;
    return 0;
}

void ms_tlife_write(ms_snap_writer *w, void *arg)
{
    (void)arg;
    tlife_ctx c = {w, 0, 0, 0};
    ms_sw_begin(w, MS_CHUNK_THRL, 0);
    ms_sw_u32(w, MS_TLIFE_COUNT + 3);
    for (int i = 0; i < MS_TLIFE_COUNT; i++) {
        ms_sw_cstr(w, ms_tlife_names[i]);
        ms_sw_u64(w, __atomic_load_n(&ms_tlife_counts[i], __ATOMIC_RELAXED));
    }
    ms_sw_cstr(w, "alive");
    uint64_t at_alive = ms_sw_chunk_pos(w);
    ms_sw_u64(w, 0);
    ms_sw_cstr(w, "leaked");
    uint64_t at_leaked = ms_sw_chunk_pos(w);
    ms_sw_u64(w, 0);
    /* the program's threads as /proc shows them now (the agent's own left out): after an
     * attach, the threads started before it are in no count above */
    ms_sw_cstr(w, "process_threads");
    ms_sw_u64(w, (uint64_t)ms_proc_other_threads() + (ms_gettid() != ms_control_tid()));
    ms_sw_u32(w, sizeof(ms_snap_thread_life));
    uint64_t at_n = ms_sw_chunk_pos(w);
    ms_sw_u32(w, 0);
    ms_threads_foreach_used(write_rec, &c);
    ms_sw_patch_u32(w, at_n, c.n);
    ms_sw_patch_u64(w, at_alive, c.alive);
    ms_sw_patch_u64(w, at_leaked, c.leaked);
    ms_sw_end(w);
}
