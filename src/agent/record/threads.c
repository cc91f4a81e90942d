/* Thread registry and thread stacks (kind stack): pthread_create records the stack the
 * new thread gets (size from its attributes or the default), with the creator's call
 * stack; the record goes when the thread is joined, or when a detached thread exits
 * (glibc then recycles the stack without munmap, so no other hook would see it).
 * Runs inside the target: registry in mmap'ed memory, no lock held across fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

#include "agent/record/record.h"
#include "agent/record/guard.h"
#include "agent/libc/libc.h"
#include "agent/unwind/unwind_cfi.h"

#define MS_EXPORT __attribute__((visibility("default")))


static ms_thread_slot *ms_slots;
static uint32_t ms_nslots;
static uint32_t ms_slot_hint;
/* One past the highest slot ever taken: the walks over the registry stop there. The
 * registry holds `capacity` slots of a cache line each (4096 by default): a program of
 * a few threads had every snapshot and thread report read them all, 4096 cache misses
 * a walk. Only grows (a slot freed below it stays in the walk's range). */
static uint32_t ms_slot_top;

static uint32_t slots_used_range(void)
{
    uint32_t top = __atomic_load_n(&ms_slot_top, __ATOMIC_ACQUIRE);
    return top < ms_nslots ? top : ms_nslots;
}

static void slot_top_raise(uint32_t top)
{
    uint32_t cur = __atomic_load_n(&ms_slot_top, __ATOMIC_RELAXED);
    while (cur < top && !__atomic_compare_exchange_n(&ms_slot_top, &cur, top, 1,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        ;
}
static ms_thread_slot *ms_main_slot;

/* Program threads alive that the agent saw start (the initialising thread, then every
 * thread started through pthread_create). Each is seen leaving whichever way it does: a
 * return from its start routine or a cleanup handler of ms_thread_start (pthread_exit,
 * cancellation), main() leaving through pthread_exit in the wrapper; at zero the control
 * thread is told to go (control.c). A flag in the agent's TLS, not a thread-specific
 * key: the program gets every one of its PTHREAD_KEYS_MAX keys. */
static uint32_t ms_prog_threads;

static void ms_thread_count_me(void)
{
    ms_self.counted = 1;
}

static void ms_thread_uncount_me(void)
{
    if (!ms_self.counted)
        return;
    ms_self.counted = 0;
    if (__atomic_sub_fetch(&ms_prog_threads, 1, __ATOMIC_ACQ_REL) == 0)
        ms_control_program_gone();
}

int ms_threads_init(uint64_t capacity)
{
    if (capacity < 16)
        capacity = 16;
    if (capacity > (1u << 24))
        capacity = 1u << 24;
    ms_nslots = (uint32_t)capacity;
    ms_slots = ms_sys_mmap(sizeof(ms_thread_slot) * ms_nslots);
    return ms_slots ? 0 : -1;
}

static ms_thread_slot *slot_alloc(void)
{
    uint32_t start = __atomic_load_n(&ms_slot_hint, __ATOMIC_RELAXED);
    for (uint32_t k = 0; k < ms_nslots; k++) {
        uint32_t i = (start + k) % ms_nslots;
        uint32_t zero = 0;
        if (__atomic_load_n(&ms_slots[i].state, __ATOMIC_RELAXED) != 0)
            continue;
        slot_top_raise(i + 1); /* the walks' range covers the slot before it is taken */
        if (__atomic_compare_exchange_n(&ms_slots[i].state, &zero, MS_THR_USED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ms_slot_hint, i + 1, __ATOMIC_RELAXED);
            ms_thread_slot *s = &ms_slots[i];
            s->tid = 0;
            s->handle = 0;
            s->stack_lo = s->stack_hi = 0;
            s->stack_rec_addr = s->stack_rec_size = 0;
            s->stack_id = 0;
            s->arg = s->ret = NULL;
            s->start = NULL;
            s->creator_tid = 0;
            s->create_ns = s->exit_ns = s->guard_size = 0;
            s->name[0] = 0;
            return s;
        }
    }
    MS_HEALTH_INC(dropped_threads);
    ms_tlife_table_full();
    return NULL;
}

static void slot_release(ms_thread_slot *s)
{
    __atomic_store_n(&s->state, 0, __ATOMIC_RELEASE);
}

static ms_thread_slot *slot_find(pthread_t h)
{
    for (uint32_t i = 0, top = slots_used_range(); i < top; i++) {
        uint32_t st = __atomic_load_n(&ms_slots[i].state, __ATOMIC_ACQUIRE);
        if ((st & MS_THR_USED) && !(st & MS_THR_MAIN) && ms_slots[i].handle == h)
            return &ms_slots[i];
    }
    return NULL;
}

/* The thread's stack record goes and its slot is recycled. */
static void slot_finish(ms_thread_slot *s)
{
    if (s->stack_rec_addr)
        ms_region_remove_exact(s->stack_rec_addr, MS_KIND_STACK);
    slot_release(s);
}

/* The lowest address the main thread's stack can reach (its mapping grows down to the
 * stack rlimit). Below it the program runs on a stack of its own (coroutines, ucontext)
 * whose bounds the agent does not know: libunwind walks those (unwind.c). */
static uintptr_t ms_main_stack_lo(uintptr_t hi)
{
    struct rlimit rl;
    uint64_t span = 1ull << 30;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < span)
        span = rl.rlim_cur + (1u << 20); /* + room for the environment above the limit */
    return hi > span ? hi - span : 0;
}

void ms_threads_register_main(void)
{
    __atomic_store_n(&ms_prog_threads, 1, __ATOMIC_RELEASE);
    ms_thread_count_me();
    ms_thread_slot *s = slot_alloc();
    if (!s)
        return;
    s->tid = ms_gettid();
    s->handle = pthread_self();
    s->stack_hi = ms_libc_main_stack_hi();
    __atomic_fetch_or(&s->state, MS_THR_MAIN | MS_THR_STARTED, __ATOMIC_RELEASE);
    ms_main_slot = s;
    ms_self.slot = s;
    if (!ms_self.stack_hi) {
        ms_self.stack_hi = s->stack_hi;
        ms_self.stack_lo = ms_main_stack_lo(s->stack_hi);
    }
}

void ms_thread_bounds(void)
{
    if (ms_self.stack_hi)
        return;
    if (ms_main_slot && ms_gettid() == (uint32_t)getpid()) {
        ms_self.stack_hi = ms_main_slot->stack_hi;
        ms_self.stack_lo = ms_main_stack_lo(ms_self.stack_hi);
        return;
    }
    pthread_attr_t a;
    ms_enter();
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo = NULL;
        size_t sz = 0;
        if (pthread_attr_getstack(&a, &lo, &sz) == 0 && lo) {
            ms_self.stack_lo = (uintptr_t)lo;
            ms_self.stack_hi = (uintptr_t)lo + sz;
        }
        pthread_attr_destroy(&a);
    }
    ms_leave();
}

int ms_threads_foreach(ms_thread_fn fn, void *arg)
{
    for (uint32_t i = 0, top = slots_used_range(); i < top; i++) {
        uint32_t st = __atomic_load_n(&ms_slots[i].state, __ATOMIC_ACQUIRE);
        if (!(st & MS_THR_USED) || (st & MS_THR_EXITED) || !(st & MS_THR_STARTED))
            continue;
        int r = fn(&ms_slots[i], arg);
        if (r)
            return r;
    }
    return 0;
}

int ms_threads_foreach_used(ms_thread_fn fn, void *arg)
{
    for (uint32_t i = 0, top = slots_used_range(); i < top; i++) {
        uint32_t st = __atomic_load_n(&ms_slots[i].state, __ATOMIC_ACQUIRE);
        if (!(st & MS_THR_USED))
            continue;
        int r = fn(&ms_slots[i], arg);
        if (r)
            return r;
    }
    return 0;
}

void ms_threads_fork_child(void)
{
    /* Only the forking thread survives: every other slot is gone with its thread. The
     * stacks of those threads stay mapped in the child (the kernel copies them), so
     * their records stay too. */
    ms_thread_slot *me = ms_self.slot;
    for (uint32_t i = 0, top = slots_used_range(); i < top; i++) {
        if (&ms_slots[i] == me)
            continue;
        uint32_t st = __atomic_load_n(&ms_slots[i].state, __ATOMIC_RELAXED);
        if (st & MS_THR_USED)
            __atomic_store_n(&ms_slots[i].state, 0, __ATOMIC_RELAXED);
    }
    if (me) {
        me->tid = ms_gettid();
        __atomic_fetch_or(&me->state, MS_THR_MAIN, __ATOMIC_RELAXED);
        ms_main_slot = me;
    }
    /* The forking thread is the child's only thread, whichever it was in the parent:
     * when it leaves (returns from its start routine, pthread_exit), so must the child's
     * control thread. */
    ms_prog_threads = 1;
    ms_thread_count_me();
    ms_tlife_fork_child();
}

/* Live threads of this process other than the caller and the control thread, from
 * /proc/self/task (a zombie thread-group leader, i.e. main() gone through pthread_exit,
 * does not count); 0 when /proc cannot tell. No malloc: a stack buffer and getdents64. */
int ms_proc_other_threads(void)
{
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    uint32_t me = (uint32_t)syscall(SYS_gettid), ctl = ms_control_tid(), met = ms_metrics_tid();
    int n = 0;
    char buf[2048];
    for (;;) {
        long k = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (k <= 0)
            break;
        for (long off = 0; off + 19 < k;) {
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            if (reclen == 0 || off + reclen > k)
                break;
            const char *name = buf + off + 19;
            off += reclen;
            uint32_t tid = 0;
            int digits = 0;
            for (; *name >= '0' && *name <= '9' && digits < 10; name++, digits++)
                tid = tid * 10 + (uint32_t)(*name - '0');
            if (!digits || *name || tid == me || tid == ctl || (met && tid == met))
                continue;
            char path[64], st[512];
            memcpy(path, "/proc/self/task/", 16);
            int p = 16;
            char rev[12];
            int r = 0;
            for (uint32_t t = tid; t; t /= 10)
                rev[r++] = (char)('0' + t % 10);
            while (r)
                path[p++] = rev[--r];
            memcpy(path + p, "/stat", 6);
            int sfd = open(path, O_RDONLY | O_CLOEXEC);
            if (sfd < 0)
                continue; /* gone meanwhile */
            ssize_t got = read(sfd, st, sizeof st - 1);
            close(sfd);
            if (got <= 0)
                continue;
            st[got] = 0;
            const char *paren = NULL; /* the state follows the last ')' (names hold any) */
            for (const char *q = st; *q; q++)
                if (*q == ')')
                    paren = q;
            if (paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'))
                continue;
            n++;
        }
    }
    close(fd);
    return n;
}

/* ===========================================================================
 * Thread start and exit
 * ========================================================================= */
/* `how`: MS_THR_RETURNED, MS_THR_PTHREAD_EXIT or MS_THR_CANCELLED. */
static void ms_thread_exit_bookkeeping(uint32_t how)
{
    ms_thread_slot *s = ms_self.slot;
    if (!s || ms_self.exit_done)
        return;
    ms_self.exit_done = 1;
    ms_tlife_exiting(s, how);
    ms_live_thread_exit();
    ms_cfi_thread_exit();
    ms_scache_thread_exit();
    ms_pend_thread_exit();
    ms_guard_thread_exit();
    uint32_t old = __atomic_fetch_or(&s->state, MS_THR_EXITED, __ATOMIC_ACQ_REL);
    if (old & MS_THR_DETACHED)
        slot_finish(s);
}

/* Runs when the start routine is left by pthread_exit (whose wrapper did the bookkeeping
 * already) or by cancellation. */
static void ms_thread_left(void *v)
{
    (void)v;
    ms_thread_exit_bookkeeping(MS_THR_CANCELLED);
    ms_thread_uncount_me();
}

static void *ms_thread_start(void *arg)
{
    ms_thread_slot *s = arg;
    ms_thread_count_me();
    ms_self.slot = s;
    s->tid = ms_gettid();
    s->handle = pthread_self();
    pthread_attr_t a;
    ms_enter();
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo = NULL;
        size_t sz = 0;
        if (pthread_attr_getstack(&a, &lo, &sz) == 0 && lo) {
            s->stack_lo = (uintptr_t)lo;
            s->stack_hi = (uintptr_t)lo + sz;
            ms_self.stack_lo = s->stack_lo;
            ms_self.stack_hi = s->stack_hi;
        }
        pthread_attr_destroy(&a);
    }
    if (s->stack_rec_size && s->stack_lo) {
        s->stack_rec_addr = s->stack_lo;
        ms_region_add(s->stack_rec_addr, s->stack_rec_size, MS_KIND_STACK, s->stack_id, s->creator_tid);
    }
    ms_leave();
    __atomic_fetch_or(&s->state, MS_THR_STARTED, __ATOMIC_RELEASE);
    void *ret;
    pthread_cleanup_push(ms_thread_left, NULL);
    ret = s->start(s->arg);
    pthread_cleanup_pop(0);
    s->ret = ret; /* what pthread_join will return: a root until then */
    ms_thread_exit_bookkeeping(MS_THR_RETURNED);
    ms_thread_uncount_me();
    return ret;
}

static int ms_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    ms_init();
    if (!ms_real.pthread_create) {
        errno = ENOSYS;
        return EAGAIN;
    }
    if (ms_state != MS_STATE_READY || ms_self.busy)
        return ms_real.pthread_create(t, attr, fn, arg);
    ms_thread_slot *s = slot_alloc();
    if (!s) {
        int rc = ms_real.pthread_create(t, attr, fn, arg);
        if (rc == 0) {
            ms_tlife_count(MS_TLIFE_CREATED);
            ms_tlife_count(MS_TLIFE_UNTRACKED);
        }
        return rc;
    }
    s->start = fn;
    s->arg = arg;
    s->creator_tid = ms_gettid();
    int detached = 0;
    size_t size = 0, guard = 0;
    ms_enter();
    s->create_ns = ms_now_ns();
    if (attr) {
        void *lo = NULL;
        size_t sz = 0;
        pthread_attr_getdetachstate(attr, &detached);
        pthread_attr_getguardsize(attr, &guard);
        /* With no stack supplied, glibc keeps stackaddr 0 and getstack reports
         * 0 - stacksize as the low end; musl's getstack fails (EINVAL). */
        int own = pthread_attr_getstack(attr, &lo, &sz) == 0 && lo != NULL && (uintptr_t)lo + sz != 0;
        if (!own)
            pthread_attr_getstacksize(attr, &size);
        /* a stack the program supplied is the program's own memory, not a new one */
    } else {
        pthread_attr_t d;
        if (pthread_getattr_default_np(&d) == 0) {
            pthread_attr_getstacksize(&d, &size);
            pthread_attr_getguardsize(&d, &guard);
            pthread_attr_destroy(&d);
        }
    }
    s->stack_rec_size = size;
    s->guard_size = guard;
    /* also without a stack of ours to record: the thread-leak report names its creator */
    s->stack_id = ms_current_stack(MS_KIND_STACK);
    ms_stack_rec *cr = ms_stack_get(s->stack_id);
    if (cr && !cr->thread_ref)
        __atomic_store_n(&cr->thread_ref, 1, __ATOMIC_RELAXED);
    if (detached == PTHREAD_CREATE_DETACHED)
        __atomic_fetch_or(&s->state, MS_THR_DETACHED | MS_THR_ATTR_DETACHED, __ATOMIC_RELAXED);
    ms_leave();
    __atomic_fetch_add(&ms_prog_threads, 1, __ATOMIC_ACQ_REL);
    int rc = ms_real.pthread_create(t, attr, ms_thread_start, s);
    if (rc != 0) {
        __atomic_fetch_sub(&ms_prog_threads, 1, __ATOMIC_ACQ_REL);
        slot_release(s);
        return rc;
    }
    if (!detached)
        s->handle = *t;
    ms_tlife_count(MS_TLIFE_CREATED);
    if (detached == PTHREAD_CREATE_DETACHED)
        ms_tlife_count(MS_TLIFE_DETACHED);
    return 0;
}

MS_EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    int rc = ms_thread_create(t, attr, fn, arg);
    /* the program is multi-threaded now: the agent's control thread may run too */
    if (rc == 0 && ms_state == MS_STATE_READY && !ms_self.busy)
        ms_control_program_threaded();
    return rc;
}

/* Only a successful join ends the thread's record (EBUSY, ETIMEDOUT leave it). */
static int ms_join_common(int rc_of_real, ms_thread_slot *s)
{
    if (rc_of_real == 0 && s) {
        slot_finish(s);
        ms_tlife_count(MS_TLIFE_JOINED);
    }
    return rc_of_real;
}

MS_EXPORT int pthread_join(pthread_t t, void **ret)
{
    ms_init();
    ms_thread_slot *s = ms_state == MS_STATE_READY ? slot_find(t) : NULL;
    return ms_join_common(ms_real.pthread_join(t, ret), s);
}

MS_EXPORT int pthread_tryjoin_np(pthread_t t, void **ret)
{
    ms_init();
    ms_thread_slot *s = ms_state == MS_STATE_READY ? slot_find(t) : NULL;
    return ms_join_common(ms_real.pthread_tryjoin_np(t, ret), s);
}

MS_EXPORT int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *ts)
{
    ms_init();
    ms_thread_slot *s = ms_state == MS_STATE_READY ? slot_find(t) : NULL;
    return ms_join_common(ms_real.pthread_timedjoin_np(t, ret, ts), s);
}

MS_EXPORT int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clk, const struct timespec *ts)
{
    ms_init();
    if (!ms_real.pthread_clockjoin_np)
        return ENOSYS; /* a C library without it (musl) */
    ms_thread_slot *s = ms_state == MS_STATE_READY ? slot_find(t) : NULL;
    return ms_join_common(ms_real.pthread_clockjoin_np(t, ret, clk, ts), s);
}

MS_EXPORT int pthread_detach(pthread_t t)
{
    ms_init();
    ms_thread_slot *s = ms_state == MS_STATE_READY ? slot_find(t) : NULL;
    int rc = ms_real.pthread_detach(t);
    if (rc == 0 && s)
        ms_tlife_count(MS_TLIFE_DETACHED);
    if (rc == 0 && s) {
        uint32_t old = __atomic_fetch_or(&s->state, MS_THR_DETACHED, __ATOMIC_ACQ_REL);
        if (old & MS_THR_EXITED)
            slot_finish(s);
    }
    return rc;
}

MS_EXPORT void pthread_exit(void *ret)
{
    ms_init();
    if (ms_self.slot && !ms_self.exit_done && !(ms_self.slot->state & MS_THR_MAIN))
        ms_self.slot->ret = ret;
    ms_thread_exit_bookkeeping(MS_THR_PTHREAD_EXIT);
    ms_thread_uncount_me(); /* main(), or any thread: only once (ms_thread_left) */
    ms_real.pthread_exit(ret);
}

int ms_agent_thread_create(pthread_t *th, void *(*fn)(void *))
{
    /* a loader and a C library of two builds: pthread_create would spin for ever in a
     * program that never started a thread itself (libc.h); the agent goes on without */
    char why[256];
    /* the first call walks the modules (libc.h): counted as a walk, so that a fork made
     * meanwhile by another thread waits for it rather than copy the loader's lock held
     * (a child forked during it hung in its exit snapshot's walk, test limits_main_exit) */
    ms_dl_begin(1);
    int startable = ms_libc_threads_startable(why, sizeof why);
    ms_dl_end();
    if (!startable) {
        static int said;
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL)) {
            const char *parts[] = {"the dynamic loader and the C library come from two "
                                   "different glibc builds (", why, "), where a new thread "
                                   "never starts: the agent starts no thread of its own "
                                   "(requests are served when the program allocates; no "
                                   "interval= snapshots, no metrics_listen=)"};
            ms_say(parts, sizeof parts / sizeof parts[0]);
        }
        return ENOTSUP;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return ENOMEM;
    pthread_attr_setstacksize(&attr, 256 * 1024);
    /* The thread must not block the program's signals nor take them before it has set
     * its own mask: create it with everything blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        ms_real.pthread_create ? ms_real.pthread_create : pthread_create;
    int rc = create(th, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}
