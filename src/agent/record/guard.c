/* Sampled guard pages: the pool of guarded slots (one page each, between PROT_NONE guard
 * pages), the per-thread countdown that picks one allocation in RATE, and free's checks.
 * Runs inside the target: the pool is the agent's own mapping (reserved at the first
 * guarded allocation), slots are handed out least recently freed first so a freed block
 * stays inaccessible as long as possible; the pool lock is never held across fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/record/guard.h"
#include "agent/record/sampler.h"

__thread int32_t ms_guard_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t ms_guard_rng __attribute__((tls_model("initial-exec")));

ms_guard_slot *ms_guard_slots;
uint32_t ms_guard_nslots;
size_t ms_guard_page;

/* Slots ready to be handed out, oldest first: a ring of slot numbers (never used ones
 * at first, then freed ones in the order they were freed). */
static uint32_t *ms_guard_ring;
static uint32_t ms_guard_head, ms_guard_count;
static int ms_guard_lock;
static uint64_t ms_guard_turn; /* guard_side=alternate: right, left, right... */
static int ms_guard_reserve_failed;

static void pool_lock(void)
{
    while (__atomic_exchange_n(&ms_guard_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&ms_guard_lock, __ATOMIC_RELAXED))
            ms_arch_cpu_relax();
}

static void pool_unlock(void)
{
    __atomic_store_n(&ms_guard_lock, 0, __ATOMIC_RELEASE);
}

static int sys_mprotect(uintptr_t a, size_t len, int prot)
{
    return (int)syscall(SYS_mprotect, (void *)a, len, prot);
}

/* ===========================================================================
 * The pool: reserved once, with the pool lock held.
 * ========================================================================= */
static int pool_reserve(void)
{
    if (ms_guard_span)
        return 0;
    if (ms_guard_reserve_failed)
        return -1;
    uint32_t n = (uint32_t)ms_opt.guard_pool;
    size_t pg = ms_guard_page;
    size_t span = (2 * (size_t)n + 1) * pg;
    size_t meta = ((size_t)n * (sizeof(ms_guard_slot) + sizeof(uint32_t)) + pg - 1) & ~(pg - 1);
    /* Not one of the agent's registered mappings (ms_sys_mmap), which a leak scan never
     * reads: the live guarded blocks are the program's and hold its pointers. The slot
     * records, which hold block addresses, are. */
    long r = syscall(SYS_mmap, 0, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                     -1, 0);
    char *pool = r < 0 && r > -4096 ? NULL : (char *)r;
    char *m = pool ? ms_sys_mmap(meta) : NULL;
    if (!m) {
        if (pool)
            syscall(SYS_munmap, pool, span);
        ms_guard_reserve_failed = 1;
        MS_HEALTH_INC(guard_failures);
        return -1;
    }
    ms_guard_slots = (ms_guard_slot *)m;
    ms_guard_ring = (uint32_t *)(m + (size_t)n * sizeof(ms_guard_slot));
    for (uint32_t i = 0; i < n; i++)
        ms_guard_ring[i] = i;
    ms_guard_head = 0;
    ms_guard_count = n;
    ms_guard_nslots = n;
    ms_guard_lo = (uintptr_t)pool;
    __atomic_store_n(&ms_guard_span, span, __ATOMIC_RELEASE);
    return 0;
}

/* Before a slot's first use: the guard pages on each side become mappings unlike a freed
 * slot's (left out of core dumps: they never hold anything), so that the kernel never
 * merges the slot's page with them. Its mprotect at each allocation and free then
 * changes one mapping in place instead of splitting the pool's mapping and merging it
 * back, which cost several times more. Without it (the call fails) only that cost
 * returns. A guard page between two slots is marked once: not again when the slot on
 * its other side was used before (and marked it then), so the pool's first uses make
 * N+1 calls, not 2N (slots are first handed out in order). */
static void slot_isolate(uint32_t i, uintptr_t slot)
{
    if (i == 0 || !__atomic_load_n(&ms_guard_slots[i - 1].ptr, __ATOMIC_ACQUIRE))
        syscall(SYS_madvise, (void *)(slot - ms_guard_page), ms_guard_page, MADV_DONTDUMP);
    if (i + 1 == ms_guard_nslots || !__atomic_load_n(&ms_guard_slots[i + 1].ptr, __ATOMIC_ACQUIRE))
        syscall(SYS_madvise, (void *)(slot + ms_guard_page), ms_guard_page, MADV_DONTDUMP);
}

/* The least recently freed slot, or -1 when every slot is live (or no pool). Retired
 * slots (guard_recover) leave the ring as they come up. */
static int slot_take(void)
{
    int i = -1;
    pool_lock();
    if (pool_reserve() == 0) {
        while (ms_guard_count) {
            i = (int)ms_guard_ring[ms_guard_head];
            ms_guard_head = (ms_guard_head + 1) % ms_guard_nslots;
            ms_guard_count--;
            if (__atomic_load_n(&ms_guard_slots[i].state, __ATOMIC_ACQUIRE) !=
                MS_GUARD_SLOT_RETIRED)
                break;
            i = -1;
        }
    }
    pool_unlock();
    return i;
}

static void slot_put(uint32_t i)
{
    pool_lock();
    ms_guard_ring[(ms_guard_head + ms_guard_count) % ms_guard_nslots] = i;
    ms_guard_count++;
    pool_unlock();
}

/* ===========================================================================
 * The cost budget (guard_budget=PERCENT): the guard's cost bounded by design.
 * A guarded block's cost is most of all its page-table calls, the free's mprotect above
 * all, whose TLB flush takes from 1 to 100 us depending on the machine (a paravirtualised
 * one is the slow end), a cost counted instructions cannot see; then a fresh slot's first
 * page fault, the two stack walks, the fill written and checked. The whole guarded
 * allocation and free are timed (the calls alone were about half of that), on the
 * guarded path only, with CLOCK_MONOTONIC through the vDSO (some 20 ns, no system call:
 * CLOCK_THREAD_CPUTIME_ID would be two more system calls a call, the vDSO does not serve
 * CPU-time clocks; a preemption inside counts too, which errs towards guarding less),
 * and set against the process's CPU time over windows of at least MS_GUARD_WINDOW_NS
 * (one CLOCK_PROCESS_CPUTIME_ID system call a window, by the one thread that closes it).
 * Over budget the effective rate doubles (guard << shift); under half of it, it halves
 * again, never below the configured rate. With guard=1 (every allocation: a checking
 * mode, not a sample) or guard_budget=0 nothing is measured and the rate is exact.
 * Lock-free: a thread that finds the window being closed by another just adds its time;
 * a fork child starts a window of its own.
 * ========================================================================= */
#define MS_GUARD_WINDOW_NS 20000000ull /* 20 ms */
static uint32_t ms_guard_shift;        /* effective rate = guard << shift (atomic) */
static uint64_t ms_guard_win_start;    /* CLOCK_MONOTONIC ns of this window's start, 0: none */
static uint64_t ms_guard_win_cpu;      /* the process's CPU ns then (owned by the closer) */
static uint64_t ms_guard_win_spent;    /* ns in the pool's page-table calls since (atomic) */
static int ms_guard_win_closing;       /* a thread is closing the window */

static int budget_on(void)
{
    return ms_opt.guard_budget && ms_opt.guard > 1;
}

static uint64_t ts_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    ms_clock_coarse_fn(CLOCK_MONOTONIC, &ts); /* the vDSO's clock_gettime (vdso.h) */
    return ts_ns(&ts);
}

/* The rate the countdowns are drawn at now. */
static uint64_t guard_rate(void)
{
    return ms_opt.guard << __atomic_load_n(&ms_guard_shift, __ATOMIC_RELAXED);
}

uint64_t ms_guard_rate_now(void)
{
    return guard_rate();
}

/* d ns were spent in a page-table call that ended at now: counted, and the window
 * closed when it is old enough (by one thread; the others go on). */
static void budget_spent(uint64_t d, uint64_t now)
{
    MS_HEALTH_ADD(guard_spent_ns, d);
    __atomic_fetch_add(&ms_guard_win_spent, d, __ATOMIC_RELAXED);
    uint64_t start = __atomic_load_n(&ms_guard_win_start, __ATOMIC_ACQUIRE);
    if (start && now - start < MS_GUARD_WINDOW_NS)
        return;
    if (__atomic_exchange_n(&ms_guard_win_closing, 1, __ATOMIC_ACQUIRE))
        return;
    start = __atomic_load_n(&ms_guard_win_start, __ATOMIC_ACQUIRE);
    struct timespec ts;
    if ((!start || now - start >= MS_GUARD_WINDOW_NS) &&
        syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts) == 0) {
        uint64_t cpu = ts_ns(&ts);
        uint64_t spent = __atomic_exchange_n(&ms_guard_win_spent, 0, __ATOMIC_RELAXED);
        uint64_t used = cpu > ms_guard_win_cpu ? cpu - ms_guard_win_cpu : 0;
        uint32_t sh = __atomic_load_n(&ms_guard_shift, __ATOMIC_RELAXED);
        if (start && used) {
            /* guard_budget is in tenths of a percent */
            if (spent * 1000 > ms_opt.guard_budget * used) { /* over: guard half as often */
                if ((ms_opt.guard << (sh + 1)) <= (1ull << 30)) {
                    __atomic_store_n(&ms_guard_shift, sh + 1, __ATOMIC_RELAXED);
                    MS_HEALTH_INC(guard_budget_stretches);
                }
            } else if (sh && spent * 2000 < ms_opt.guard_budget * used) {
                /* under half: at twice the rate it stays under budget */
                __atomic_store_n(&ms_guard_shift, sh - 1, __ATOMIC_RELAXED);
            }
        }
        ms_guard_win_cpu = cpu;
        __atomic_store_n(&ms_guard_win_start, now, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&ms_guard_win_closing, 0, __ATOMIC_RELEASE);
}

/* The start of a guarded allocation's or free's work (0: not timed). */
static uint64_t budget_start(void)
{
    return budget_on() ? mono_ns() : 0;
}

static void budget_end(uint64_t t0)
{
    if (!t0)
        return;
    uint64_t t1 = mono_ns();
    budget_spent(t1 - t0, t1);
}

/* ===========================================================================
 * The countdown: uniform in [1, span] (RATE is at most 2^30: it fits ms_guard_left).
 * Between guarded allocations span is 2*RATE-1 (mean RATE); a thread's first countdown
 * counts its first allocation too and spans 2*RATE, as GWP-ASan's does, so that the
 * first allocation is guarded with probability 1/(2*RATE).
 * ========================================================================= */
static uint32_t next_countdown(uint64_t span)
{
    if (ms_opt.guard <= 1)
        return 1;
    uint64_t x = ms_guard_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ms_guard_rng = x;
    return (uint32_t)(1 + (x * 0x2545F4914F6CDD1DULL >> 11) % span);
}

/* 1 when this allocation is to be guarded; sets the next countdown either way. */
static int guard_turn(void)
{
    if (__atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) != MS_STATE_READY) {
        ms_guard_left = 0; /* the next one decides again, once the options are known */
        return 0;
    }
    if (!ms_opt.guard) {
        ms_guard_left = INT32_MAX;
        return 0;
    }
    if (ms_self.busy) { /* the agent's own allocation: the next one decides */
        ms_guard_left = 0;
        return 0;
    }
    if (MS_UNLIKELY(ms_guard_rng == 0)) { /* this thread's first allocation */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t s = ((uint64_t)ts.tv_nsec << 20) ^ ((uint64_t)ms_gettid() << 40) ^
                     (uint64_t)(uintptr_t)&ms_guard_rng ^ ms_hdr_secret;
        ms_guard_rng = ms_sampler_splitmix64(&s) | 1;
        ms_enter();
        ms_guard_altstack();
        ms_leave();
        /* this allocation is the first of the countdown: guarded when it is 1 */
        uint32_t c = next_countdown(2 * guard_rate());
        if (c > 1) {
            ms_guard_left = (int32_t)c - 2;
            return 0;
        }
    }
    /* the countdown-th from here decides */
    ms_guard_left = (int32_t)next_countdown(2 * guard_rate() - 1) - 1;
    return 1;
}

/* ===========================================================================
 * Allocation and free
 * ========================================================================= */
void *ms_guard_alloc(size_t n, size_t align)
{
    if (!guard_turn())
        return NULL;
    size_t pg = ms_guard_page;
    if (n > pg || align > pg) {
        MS_HEALTH_INC(guard_too_large);
        return NULL;
    }
    int saved = errno;
    ms_enter();
    int i = slot_take();
    if (i < 0) {
        if (ms_guard_span)
            MS_HEALTH_INC(guard_pool_full);
        ms_leave();
        errno = saved;
        return NULL;
    }
    uint64_t t0 = budget_start();
    ms_guard_slot *s = &ms_guard_slots[i];
    __atomic_store_n(&s->state, MS_GUARD_SLOT_BUSY, __ATOMIC_RELEASE);
    uintptr_t slot = ms_guard_slot_addr((uint32_t)i);
    int used = s->ptr != 0; /* its page holds a freed block's bytes */
    if (!used)
        slot_isolate((uint32_t)i, slot);
    if (sys_mprotect(slot, pg, PROT_READ | PROT_WRITE) != 0) {
        __atomic_store_n(&ms_guard_slots[i].state, MS_GUARD_SLOT_FREED, __ATOMIC_RELEASE);
        MS_HEALTH_INC(guard_failures);
        slot_put((uint32_t)i);
        budget_end(t0);
        ms_leave();
        errno = saved;
        return NULL;
    }
    int right;
    switch (ms_opt.guard_side) {
    case 1: right = 1; break;
    case 2: right = 0; break;
    default: right = (__atomic_fetch_add(&ms_guard_turn, 1, __ATOMIC_RELAXED) & 1) == 0;
    }
    if (align < 16)
        align = 16;
    /* right: the block ends as close to the next guard page as its alignment allows */
    uintptr_t p = right ? (slot + pg - (n ? n : 1)) & ~(uintptr_t)(align - 1) : slot;
    /* The block zero (a fresh page is; a reused one holds the freed block's bytes):
     * calloc's promise. The rest of the page the fill, checked at free, realloc and in
     * snapshots for the bytes an overflow or underflow wrote there (no freed block's
     * bytes are left beside the new one: a scan of the page could take them for
     * pointers; the fill is no pointer). */
    memset((void *)slot, MS_GUARD_FILL, p - slot);
    if (used)
        memset((void *)p, 0, n);
    memset((void *)(p + n), MS_GUARD_FILL, slot + pg - (p + n));
    ms_rec_prep rp;
    ms_record_prepare(&rp, n); /* full mode: a live entry as for any block */
    ms_record_commit_entry((void *)p, n, &rp);
    __atomic_store_n(&s->ptr, p, __ATOMIC_RELEASE);
    s->size = n;
    s->alloc_sid = rp.sid ? rp.sid : ms_current_stack(MS_KIND_HEAP);
    s->alloc_tid = ms_gettid();
    s->free_sid = 0;
    s->free_tid = 0;
    s->live_idx = rp.idx;
    __atomic_store_n(&s->flags, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->state, MS_GUARD_SLOT_LIVE, __ATOMIC_RELEASE);
    MS_HEALTH_INC(guard_allocs);
    budget_end(t0);
    ms_leave();
    errno = saved;
    return (void *)p; /* zeroed: a fresh page, or cleared above */
}

/* ===========================================================================
 * The fill around a block
 * ========================================================================= */
#define FILL64 (0x0101010101010101ULL * MS_GUARD_FILL)

static uint64_t word_at(uintptr_t a)
{
    uint64_t w;
    memcpy(&w, (const void *)a, 8);
    return w;
}

/* 1 when the 64 bytes at a are all the fill: one pass of wide loads, no branch per word
 * (a page is checked in some 600 instructions, not 6000) */
typedef uint64_t ms_v2 __attribute__((vector_size(16)));
static int filled64(uintptr_t a)
{
    ms_v2 w[4];
    const ms_v2 f = {FILL64, FILL64};
    memcpy(w, (const void *)a, sizeof w);
    ms_v2 x = (w[0] ^ f) | (w[1] ^ f) | (w[2] ^ f) | (w[3] ^ f);
    return (x[0] | x[1]) == 0;
}

/* The lowest byte of [a, b) that is not the fill, or 0. */
static uintptr_t first_unfilled(uintptr_t a, uintptr_t b)
{
    while (a < b) {
        if (!(a & 7) && b - a >= 64 && filled64(a)) {
            a += 64;
            continue;
        }
        if (!(a & 7) && b - a >= 8 && word_at(a) == FILL64) {
            a += 8;
            continue;
        }
        if (*(const uint8_t *)a != MS_GUARD_FILL)
            return a;
        a++;
    }
    return 0;
}

/* The highest byte of [a, b) that is not the fill, or 0. */
static uintptr_t last_unfilled(uintptr_t a, uintptr_t b)
{
    while (b > a) {
        if (!(b & 7) && b - a >= 64 && filled64(b - 64)) {
            b -= 64;
            continue;
        }
        if (!(b & 7) && b - a >= 8 && word_at(b - 8) == FILL64) {
            b -= 8;
            continue;
        }
        b--;
        if (*(const uint8_t *)b != MS_GUARD_FILL)
            return b;
    }
    return 0;
}

/* Slot i's page around its block (the slot claimed, readable): 0 when the fill is whole,
 * else the kind of error and in *at the byte written farthest from the block. */
static unsigned fill_check(uint32_t i, uintptr_t *at)
{
    const ms_guard_slot *s = &ms_guard_slots[i];
    uintptr_t slot = ms_guard_slot_addr(i), end = s->ptr + s->size;
    if ((*at = last_unfilled(end, slot + ms_guard_page)))
        return MS_GUARD_KIND_SLACK_OVER;
    if ((*at = first_unfilled(slot, s->ptr)))
        return MS_GUARD_KIND_SLACK_UNDER;
    return 0;
}

void ms_guard_check_live(void)
{
    uint32_t n = __atomic_load_n(&ms_guard_span, __ATOMIC_ACQUIRE) ? ms_guard_nslots : 0;
    for (uint32_t i = 0; i < n; i++) {
        ms_guard_slot *s = &ms_guard_slots[i];
        uint32_t live = MS_GUARD_SLOT_LIVE;
        /* claimed, so that its free (which waits) cannot take the page away meanwhile */
        if (!__atomic_compare_exchange_n(&s->state, &live, MS_GUARD_SLOT_CHECKING, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        uintptr_t at = 0;
        unsigned kind = (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & MS_GUARD_SLOTF_REPORTED)
                            ? 0
                            : fill_check(i, &at);
        __atomic_store_n(&s->state, MS_GUARD_SLOT_LIVE, __ATOMIC_RELEASE);
        if (kind) /* the block stays live and its page readable: the report reads no page */
            ms_guard_report_found(kind, at, (int)i);
    }
}

/* The slot whose block starts exactly at p, claimed for freeing, or -1 (bad pointer). */
static int slot_claim(uintptr_t p)
{
    uintptr_t k = (p - ms_guard_lo) / ms_guard_page;
    if (!(k & 1))
        return -1; /* a guard page */
    uint32_t i = (uint32_t)((k - 1) / 2);
    ms_guard_slot *s = &ms_guard_slots[i];
    if (__atomic_load_n(&s->ptr, __ATOMIC_ACQUIRE) != p)
        return -1;
    for (;;) {
        uint32_t st = MS_GUARD_SLOT_LIVE;
        if (__atomic_compare_exchange_n(&s->state, &st, MS_GUARD_SLOT_BUSY, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return (int)i;
        if (st != MS_GUARD_SLOT_CHECKING)
            return -1;
        ms_arch_cpu_relax(); /* a snapshot checks its fill: a few microseconds */
    }
}

/* A pointer in the pool that starts no live block: reported with the block it is about
 * (the one it points into, or in a guard page the nearer of the two beside it), then
 * abort(), as the C library does for the double frees it detects; with guard_recover=1
 * the free is ignored and the program runs on. */
static MS_NOINLINE void bad_free(uintptr_t p)
{
    uintptr_t k = (p - ms_guard_lo) / ms_guard_page;
    int i;
    unsigned kind = MS_GUARD_KIND_INVALID_FREE, near;
    if (k & 1) {
        i = (int)((k - 1) / 2);
        if (__atomic_load_n(&ms_guard_slots[i].ptr, __ATOMIC_ACQUIRE) == p)
            kind = MS_GUARD_KIND_DOUBLE_FREE; /* freed already (or by another thread now) */
    } else {
        i = ms_guard_classify(p, &near);
    }
    ms_guard_report(kind, p, i, NULL);
    if (!ms_opt.guard_recover)
        abort();
}

void ms_guard_free(void *ptr)
{
    uintptr_t p = ms_ptr_key(ptr);
    int i = slot_claim(p);
    if (i < 0) {
        bad_free(p);
        return;
    }
    uint64_t t0 = budget_start();
    ms_guard_slot *s = &ms_guard_slots[i];
    uintptr_t at = 0;
    unsigned bad = (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & MS_GUARD_SLOTF_REPORTED)
                       ? 0
                       : fill_check((uint32_t)i, &at);
    if (bad) { /* found at free (or realloc): the caller's stack is the free stack */
        ms_guard_report(bad, at, i, NULL);
        if (!ms_opt.guard_recover)
            abort(); /* as the C library does for the heap damage it finds at free */
    }
    int saved = errno;
    ms_enter();
    s->free_sid = ms_current_stack(MS_KIND_HEAP);
    s->free_tid = ms_gettid();
    if (s->live_idx)
        ms_forget_entry((void *)p, s->live_idx, s->size, s->alloc_sid);
    s->live_idx = 0;
    uintptr_t slot = ms_guard_slot_addr((uint32_t)i);
    /* Inaccessible, not emptied: giving the page back (madvise) cost a system call and a
     * page fault at the slot's next use; the block's bytes stay resident, unreadable,
     * until the slot is reused (at most N pages). */
    if (sys_mprotect(slot, ms_guard_page, PROT_NONE) != 0)
        MS_HEALTH_INC(guard_failures);
    __atomic_store_n(&s->state, MS_GUARD_SLOT_FREED, __ATOMIC_RELEASE);
    slot_put((uint32_t)i);
    budget_end(t0);
    ms_leave();
    errno = saved;
}

size_t ms_guard_usable(void *ptr)
{
    uintptr_t p = ms_ptr_key(ptr);
    uintptr_t k = (p - ms_guard_lo) / ms_guard_page;
    if (!(k & 1))
        return 0;
    const ms_guard_slot *s = &ms_guard_slots[(k - 1) / 2];
    uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    if ((st != MS_GUARD_SLOT_LIVE && st != MS_GUARD_SLOT_CHECKING) || s->ptr != p)
        return 0;
    return s->size;
}

/* ===========================================================================
 * Classification of a faulting address
 * ========================================================================= */
int ms_guard_classify(uintptr_t addr, unsigned *kind)
{
    *kind = MS_GUARD_KIND_UNKNOWN;
    if (!ms_guard_slots)
        return -1;
    uintptr_t k = (addr - ms_guard_lo) / ms_guard_page;
    if (k & 1) { /* in a slot's page: only a freed one is inaccessible */
        uint32_t i = (uint32_t)((k - 1) / 2);
        if (__atomic_load_n(&ms_guard_slots[i].state, __ATOMIC_ACQUIRE) == MS_GUARD_SLOT_FREED)
            *kind = MS_GUARD_KIND_UAF;
        return (int)i;
    }
    /* a guard page: past the end of the slot before it, or before the start of the one
     * after it, whichever block is nearer */
    uint32_t g = (uint32_t)(k / 2);
    int best = -1;
    uintptr_t dist = UINTPTR_MAX;
    if (g >= 1 && g - 1 < ms_guard_nslots) {
        const ms_guard_slot *s = &ms_guard_slots[g - 1];
        if (s->ptr && addr >= s->ptr + s->size && addr - (s->ptr + s->size) < dist) {
            dist = addr - (s->ptr + s->size);
            best = (int)g - 1;
            *kind = MS_GUARD_KIND_OVERFLOW;
        }
    }
    if (g < ms_guard_nslots) {
        const ms_guard_slot *s = &ms_guard_slots[g];
        if (s->ptr && addr < s->ptr && s->ptr - addr < dist) {
            best = (int)g;
            *kind = MS_GUARD_KIND_UNDERFLOW;
        }
    }
    /* beside a freed block: a use after free (its free stack says so), as GWP-ASan has it */
    if (best >= 0 &&
        __atomic_load_n(&ms_guard_slots[best].state, __ATOMIC_ACQUIRE) == MS_GUARD_SLOT_FREED)
        *kind = MS_GUARD_KIND_UAF;
    return best;
}

/* ===========================================================================
 * Lifecycle
 * ========================================================================= */
void ms_guard_init(void)
{
    ms_guard_page = (size_t)sysconf(_SC_PAGESIZE);
}

void ms_guard_fork_prepare(void)
{
    if (ms_opt.guard)
        pool_lock();
}

void ms_guard_fork_parent(void)
{
    if (ms_opt.guard)
        pool_unlock();
}

/* The child's pool is a copy of the parent's (same protections, same slots); a check of
 * a snapshot's thread, which the child has not, is over. */
void ms_guard_fork_child(void)
{
    if (!ms_opt.guard)
        return;
    for (uint32_t i = 0; ms_guard_span && i < ms_guard_nslots; i++)
        if (ms_guard_slots[i].state == MS_GUARD_SLOT_CHECKING)
            ms_guard_slots[i].state = MS_GUARD_SLOT_LIVE;
    /* the budget's window: the child's CPU clock starts again (its rate is the parent's) */
    ms_guard_win_start = 0;
    ms_guard_win_spent = 0;
    ms_guard_win_closing = 0;
    pool_unlock();
}

/* guard_recover=1: the program runs on at a bad access. The page it touched is made
 * readable and writable for good: a guard page (its two slots lose that side's guard),
 * or a slot's page, whose slot is retired (never handed out again: the program may
 * still use it through the pointer it kept). */
void ms_guard_recover_page(uintptr_t addr)
{
    uintptr_t k = (addr - ms_guard_lo) / ms_guard_page;
    if (k & 1) {
        ms_guard_slot *s = &ms_guard_slots[(k - 1) / 2];
        uint32_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
        while ((st == MS_GUARD_SLOT_FREED || st == MS_GUARD_SLOT_NEVER) &&
               !__atomic_compare_exchange_n(&s->state, &st, MS_GUARD_SLOT_RETIRED, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            ;
    }
    if (sys_mprotect(ms_guard_lo + k * ms_guard_page, ms_guard_page, PROT_READ | PROT_WRITE) != 0)
        MS_HEALTH_INC(guard_failures);
}
