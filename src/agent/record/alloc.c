/* Hot path: the malloc-family interposers. In full mode each asks the real allocator for
 * 16 bytes more, records the block (header below the program's pointer + one live entry)
 * with the re-entrancy flag raised (so the allocator's own mmap calls are not recorded),
 * and undoes this on free; blocks without a valid header go to the real functions as
 * they are. In sampled and min_size modes, and in every mode when the real malloc is not
 * the C library's (ms_addr_mode), a recorded block is the real allocator's block
 * unchanged, known by its address (addr_table.h). Runs inside the
 * target: no locks of ours on the plain paths, no malloc of ours. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/tables/addr_table.h"
#include "agent/record/record.h"
#include "agent/record/entry.h"
#include "agent/record/guard.h"
#include "agent/record/record_addr_hot.h"
#include "agent/record/record_hot.h"
#include "agent/record/sampler.h"

#define MS_EXPORT __attribute__((visibility("default")))
/* The agent is built without sibling calls (its frames must stay for the walk); the
 * entry points, which unwind nothing, take them so that most calls end in a jump. */
#define MS_SIBCALLS __attribute__((optimize("optimize-sibling-calls")))
/* The entry points and the variants they jump to start a 64-byte line each: their few
 * instructions then sit in one line of the instruction cache. Left to where they fall, a
 * variant that crossed a line cost 4% more per malloc/free pair than one that did not, so
 * that a change elsewhere in this file moved sampled mode's cost by more than the guard
 * pages' per-call checks (AMD Zen 5). */
#define MS_HOT __attribute__((aligned(64)))

/* What the real allocator is asked for a recorded block of n bytes: the header, and at
 * least 9 bytes of block. With 8 or fewer, glibc's next chunk would begin exactly at the
 * program's pointer (its header overlaps the block's last bytes), and the allocator's
 * own words (main_arena.top, bins) would be start pointers to the block for a scan. */
static inline size_t ms_real_size(size_t n)
{
    return (n < 9 ? 9 : n) + MS_HDR_SIZE;
}

static inline int ms_fast_ok(void)
{
    return MS_LIKELY(__atomic_load_n(&ms_state, __ATOMIC_RELAXED) == MS_STATE_READY) &&
           MS_LIKELY(ms_self.busy == 0);
}

/* ===========================================================================
 * Bootstrap arena: dlsym may call calloc/malloc before we know the real functions.
 * Blocks carry a 16-byte header with their size; free() of them is a no-op. Each is held
 * in the address filter, where free() in the address modes finds it behind a "maybe".
 * ========================================================================= */
unsigned char ms_boot_arena[MS_BOOT_SIZE] __attribute__((aligned(64)));
static size_t ms_boot_used;

void *ms_boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    MS_HEALTH_INC(boot_allocs);
    for (;;) {
        size_t old = __atomic_load_n(&ms_boot_used, __ATOMIC_RELAXED);
        size_t start = (old + 16 + align - 1) & ~(align - 1);
        if (n > MS_BOOT_SIZE || start + n > MS_BOOT_SIZE)
            return NULL;
        if (__atomic_compare_exchange_n(&ms_boot_used, &old, start + n, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            memcpy(ms_boot_arena + start - 16, &n, sizeof n);
            ms_addr_hold(ms_boot_arena + start); /* free() in the address modes */
            return ms_boot_arena + start;
        }
    }
}

size_t ms_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - 16, sizeof n);
    return n;
}

/* ===========================================================================
 * Slow paths: before init, during bootstrap, or re-entered from inside the agent (and
 * in the agent's own threads): no header, nothing recorded.
 * ========================================================================= */
static inline int ms_can_real(void)
{
    return ms_state != MS_STATE_INITING || ms_self.busy == 0;
}

static void *ms_malloc_recorded(size_t n);
static void *ms_calloc_recorded(size_t n);

static inline int ms_fast_ok_after_init(void)
{
    /* the call that started the agent is recorded like any later one: a block
     * allocated by a library constructor before the agent's own may hold pointers */
    return __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY &&
           ms_self.busy == 0 && !ms_sampler_cfg.enabled;
}

static void *ms_malloc_plain(size_t n);

static MS_NOINLINE void *ms_malloc_passthrough(size_t n)
{
    int was_ready = __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY;
    ms_init();
    if (!was_ready && ms_fast_ok_after_init() && n <= SIZE_MAX - 64)
        return ms_malloc_recorded(n);
    /* another allocator's own mmap calls (and the stack walks it takes: tcmalloc) go
     * unrecorded, as for any plain block (ms_malloc_plain) */
    if (ms_real.malloc && ms_can_real())
        return ms_real_malloc_is_libc ? ms_real.malloc(n) : ms_malloc_plain(n);
    return ms_boot_alloc(n, 16);
}

static MS_NOINLINE void *ms_aligned_passthrough(size_t align, size_t n)
{
    ms_init();
    if (ms_real.memalign && ms_can_real())
        return ms_real.memalign(align, n);
    return ms_boot_alloc(n, align);
}

/* A block the filter may know (ms_addr_mode): forgotten if recorded, then freed. The
 * bootstrap arena's blocks, held in the filter, are never freed. */
static MS_NOINLINE void ms_free_addr(void *p)
{
    if (ms_boot_owns(p))
        return;
    ms_enter();
    ms_forget_addr_at(p, NULL);
    ms_real.free(p);
    ms_leave();
}

/* Frees p whatever it is: bootstrap arena, a block with our header, or a foreign one. */
static MS_NOINLINE void ms_free_any(void *p)
{
    if (ms_boot_owns(p))
        return;
    ms_init();
    if (!ms_real.free)
        return;
    if (ms_state == MS_STATE_READY && ms_addr_mode) {
        ms_free_addr(p);
        return;
    }
    if (ms_state == MS_STATE_READY && ms_hdr_valid(p)) {
        void *base = ms_hdr_base(p); /* before forgetting: that wipes the header */
        ms_enter();
        ms_forget_heap(p);
        ms_real.free(ms_real_ptr(base));
        ms_leave();
        return;
    }
    ms_real.free(p);
}

static size_t ms_usable(void *p)
{
    if (ms_guard_owns(p))
        return ms_guard_usable(p);
    if (ms_boot_owns(p))
        return ms_boot_size(p);
    if (!ms_real.malloc_usable_size)
        return 0;
    if (ms_state == MS_STATE_READY && !ms_addr_mode && ms_hdr_valid(p)) {
        void *base = ms_hdr_base(p);
        size_t u = ms_real.malloc_usable_size(ms_real_ptr(base));
        size_t off = (size_t)((char *)p - (char *)base);
        return u > off ? u - off : 0;
    }
    return ms_real.malloc_usable_size(p);
}

static MS_NOINLINE void *ms_malloc_plain(size_t n)
{
    ms_enter();
    void *q = ms_real.malloc(n);
    ms_leave();
    return q;
}

/* A block with a header and a live entry, zeroed for calloc. Called from malloc and
 * calloc by a jump: the walk leaves the agent from this frame's record, whose return
 * address is the program's. The recording steps are inline (record_hot.h): no frames
 * of their own, the preparation kept in registers. */
static inline __attribute__((always_inline)) void *ms_alloc_recorded(size_t n, int zero, int full)
{
    ms_enter();
    ms_rec_prep rp;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (full) { /* the caller saw full mode (no sampling): weight = size */
        ms_control_maybe_start();
        ms_record_prepare_weighed(&rp, n, n, fp);
    } else {
        ms_record_prepare_at(&rp, n, fp);
    }
    /* the real size computed here, not kept in a register across the walk (GCC hoists it) */
    size_t rs = n;
    __asm__ volatile("" : "+r"(rs) : : "memory");
    rs = ms_real_size(rs);
    char *r = zero ? ms_real.calloc(1, rs) : ms_real.malloc(rs);
    void *p = NULL;
    if (MS_LIKELY(r != NULL)) {
        p = ms_record_commit_at(r + MS_HDR_SIZE, n, 0, &rp);
    } else {
        ms_rec_prep c = rp; /* a copy: rp itself stays in registers */
        ms_record_abort(&c, n);
    }
    ms_leave();
    return p;
}

static MS_NOINLINE void *ms_malloc_recorded(size_t n)
{
    return ms_alloc_recorded(n, 0, 0);
}

/* A recorded block without header (ms_addr_mode): the real allocator's block as asked,
 * zeroed for calloc. */
static MS_NOINLINE void *ms_alloc_addr(size_t n, int zero)
{
    ms_enter();
    ms_rec_prep rp;
    ms_record_prepare(&rp, n);
    void *r = ms_record_commit_addr(zero ? ms_real.calloc(1, n) : ms_real.malloc(n), n, &rp);
    ms_leave();
    return r;
}

/* ===========================================================================
 * Interposers
 * ========================================================================= */
static MS_NOINLINE __attribute__((optimize("optimize-sibling-calls"))) void *ms_malloc_other(size_t n)
{
    if (!ms_fast_ok() || MS_UNLIKELY(n > SIZE_MAX - 64))
        return ms_malloc_passthrough(n);
    if (MS_UNLIKELY(ms_sampler_cfg.enabled) && !ms_sampler_pick(n)) {
        if (MS_LIKELY(ms_real_malloc_is_libc))
            return ms_real.malloc(n);
        return ms_malloc_plain(n);
    }
    if (ms_addr_mode)
        return ms_alloc_addr(n, 0);
    return ms_malloc_recorded(n);
}

/* Full mode records here, in malloc's one frame of its own (entered by a jump: its return
 * address is the program's); everything else goes on to ms_malloc_other. */
static MS_NOINLINE MS_HOT __attribute__((optimize("optimize-sibling-calls"))) void *ms_malloc_slow(size_t n)
{
    if (MS_LIKELY(ms_fast_ok()) && MS_LIKELY(n <= MS_HDR_SIZE_MASK) &&
        MS_LIKELY(!ms_sampler_cfg.enabled) && MS_LIKELY(!ms_addr_mode))
        return ms_alloc_recorded(n, 0, 1);
    return ms_malloc_other(n);
}

/* Sampled modes: a block of n bytes the sampler weighed at w > 0, recorded without a
 * header (ms_addr_mode). Entered by a jump from malloc's variant: the walk leaves the
 * agent from this frame's record, whose return address is the program's. */
static MS_NOINLINE void *ms_malloc_addr_weighed(size_t n, uint64_t w)
{
    ms_enter();
    ms_rec_prep rp;
    ms_record_prepare_weighed(&rp, n, w, (uintptr_t)__builtin_frame_address(0));
    void *r = ms_record_commit_addr_at(ms_real.malloc(n), n, &rp);
    ms_leave();
    return r;
}

/* The sampled variant's countdown did not pass the block: one decision here (the
 * sampler's weight), then a jump into the C library's malloc or into the recording.
 * Before, this went through full mode's ms_malloc_slow, ms_malloc_other, the sampler's
 * pick (its decision parked, then taken back by the recording) and an out-of-line
 * preparation: about 180 instructions per sampled block on the malloc/free loop. What
 * this does not decide (not ready, inside the agent, a decision pending from realloc,
 * sampling off since) goes the general way, which asks the countdown again. */
static MS_NOINLINE MS_SIBCALLS void *ms_malloc_sampled_slow(size_t n)
{
    ms_sampler_state *st = &ms_sampler_tls;
    if (MS_UNLIKELY(!ms_fast_ok()) || MS_UNLIKELY(n > SIZE_MAX - 64) ||
        MS_UNLIKELY(st->pending_w != 0) || MS_UNLIKELY(ms_sampler_cfg.interval == 0) ||
        MS_UNLIKELY(!ms_addr_mode))
        return ms_malloc_slow(n);
    uint64_t w = ms_sampler_weigh_slow(st, n);
    if (!w)
        return ms_real.malloc(n); /* the C library's (the variant's condition) */
    return ms_malloc_addr_weighed(n, w);
}

/* guard=RATE: this allocation's turn came (guard.c); not guarded, it goes on as any
 * allocation the countdown did not pass. */
static MS_NOINLINE void *ms_malloc_guarded(size_t n)
{
    void *p = ms_guard_alloc(n, 16);
    return p ? p : ms_malloc_slow(n);
}

/* malloc's variants (see "Entries" below): with guard pages, the thread's guard countdown
 * first; in sampled modes, a block the sampler's countdown passes over is a plain block
 * of the C library's malloc, reached by a jump (no frame, no flag). Full mode without
 * guard pages enters ms_malloc_slow directly. */
static inline __attribute__((always_inline)) void *ms_malloc_body(size_t n, int guard, int count)
{
    if (guard && ms_guard_tick())
        return ms_malloc_guarded(n);
    if (count && MS_LIKELY(ms_sampler_fast(&ms_sampler_tls, n)))
        return ms_real.malloc(n);
    if (count)
        return ms_malloc_sampled_slow(n);
    return ms_malloc_slow(n);
}

static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_malloc_sampled(size_t n) { return ms_malloc_body(n, 0, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_malloc_sampled_guard(size_t n) { return ms_malloc_body(n, 1, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_malloc_full_guard(size_t n) { return ms_malloc_body(n, 1, 0); }

/* A block whose header check matched: confirmed (sampled mode), then forgotten (inline:
 * one frame for the whole free). */
static MS_NOINLINE void ms_free_checked(void *p)
{
    if (MS_UNLIKELY(ms_hdr_confirm_needed) && !ms_hdr_confirm(p)) {
        ms_real.free(p); /* a plain block whose bytes below happened to match */
        return;
    }
    void *base = ms_hdr_base(p); /* before forgetting: that wipes the header */
    ms_enter();
    ms_forget_heap_at(p);
    ms_real.free(ms_real_ptr(base));
    ms_leave();
}

/* free's variants. Every path ends in a tail call, so the plain-block path costs no
 * stack frame: the checks, then a jump into the real free. Inside the agent (re-entrancy
 * flag raised) a free does the same as outside, so the flag is not read.
 * Before the agent is ready (and should it not start): every case decided here. */
static MS_NOINLINE MS_SIBCALLS void ms_free_any_mode(void *p)
{
    /* first: the 16 bytes below a guarded block may be a guard page */
    if (ms_guard_owns(p)) {
        ms_guard_free(p);
        return;
    }
    if (ms_addr_mode && MS_LIKELY(!ms_boot_owns(p))) {
        if (MS_LIKELY(!ms_addr_maybe(p))) {
            ms_real.free(p); /* free(NULL) included */
            return;
        }
        ms_free_addr(p);
        return;
    }
    if (MS_UNLIKELY(__atomic_load_n(&ms_state, __ATOMIC_RELAXED) != MS_STATE_READY) ||
        MS_UNLIKELY(ms_boot_owns(p))) {
        if (p)
            ms_free_any(p);
        return;
    }
    if (MS_LIKELY(!ms_hdr_check_matches(p))) {
        ms_real.free(p); /* free(NULL) included: the real free ignores it */
        return;
    }
    ms_free_checked(p);
}

/* Full mode, once ready, a pointer the address filter does not know (free tested it
 * first, and the guard pool's range: the filter holds the bootstrap arena's blocks only):
 * the header check. */
static MS_NOINLINE MS_HOT MS_SIBCALLS void ms_free_full(void *p)
{
    if (MS_LIKELY(!ms_hdr_check_matches(p))) {
        ms_real.free(p); /* free(NULL) included: the real free ignores it */
        return;
    }
    ms_free_checked(p);
}

static MS_NOINLINE void *ms_calloc_plain(size_t a, size_t b)
{
    ms_enter();
    void *q = ms_real.calloc(a, b);
    ms_leave();
    return q;
}

static MS_NOINLINE void *ms_calloc_recorded(size_t n)
{
    return ms_alloc_recorded(n, 1, 0);
}

static MS_NOINLINE MS_HOT __attribute__((optimize("optimize-sibling-calls"))) void *ms_calloc_slow(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n) || n > SIZE_MAX - 64) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ms_fast_ok()) {
        int was_ready = __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY;
        ms_init();
        if (!was_ready && ms_fast_ok_after_init())
            return ms_calloc_recorded(n);
        if (ms_real.calloc && ms_can_real())
            return ms_real.calloc(a, b);
        return ms_boot_alloc(n, 16); /* static arena memory is zero */
    }
    if (MS_UNLIKELY(ms_sampler_cfg.enabled) && !ms_sampler_pick(n)) {
        if (MS_LIKELY(ms_real_malloc_is_libc))
            return ms_real.calloc(a, b);
        return ms_calloc_plain(a, b);
    }
    if (ms_addr_mode)
        return ms_alloc_addr(n, 1);
    return ms_calloc_recorded(n);
}

static MS_NOINLINE void *ms_calloc_guarded(size_t a, size_t b, size_t n)
{
    void *p = ms_guard_alloc(n, 16); /* zeroed */
    return p ? p : ms_calloc_slow(a, b);
}

/* calloc's variants, as malloc's: an unsampled block jumps into the C library's calloc;
 * full mode without guard pages enters ms_calloc_slow directly. */
static inline __attribute__((always_inline)) void *ms_calloc_body(size_t a, size_t b, int guard,
                                                                   int count)
{
    size_t n;
    if (MS_UNLIKELY(__builtin_mul_overflow(a, b, &n)))
        return ms_calloc_slow(a, b);
    if (guard && ms_guard_tick())
        return ms_calloc_guarded(a, b, n);
    if (count && MS_LIKELY(ms_sampler_fast(&ms_sampler_tls, n)))
        return ms_real.calloc(a, b);
    return ms_calloc_slow(a, b);
}

static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_calloc_sampled(size_t a, size_t b) { return ms_calloc_body(a, b, 0, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_calloc_sampled_guard(size_t a, size_t b) { return ms_calloc_body(a, b, 1, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_calloc_full_guard(size_t a, size_t b) { return ms_calloc_body(a, b, 1, 0); }

/* Moves old's bytes (up to n) into the new block p and frees old: every byte
 * malloc_usable_size gave the program, not only the size it asked for (SQLite writes up
 * to the usable size and expects realloc to keep it, as the C library's does). */
static void *ms_realloc_move(void *old, size_t n, void *p)
{
    size_t have = ms_usable(old);
    memcpy(p, old, have < n ? have : n);
    free(old);
    return p;
}

/* ms_addr_mode: the block moves or grows in place through the real realloc whatever it
 * is; its record (if any) is forgotten before, and the new size is weighed as any
 * allocation (recorded when picked, without a copy: no header to make room for). */
static MS_NOINLINE void *ms_realloc_addr(void *old, size_t n)
{
    ms_enter();
    size_t asked = 0;
    int known = ms_addr_maybe(old) && ms_forget_addr(old, &asked);
    if (MS_UNLIKELY(ms_self.busy > 1)) { /* inside the agent: nothing recorded */
        void *q = ms_real.realloc(old, n);
        ms_leave();
        return q;
    }
    ms_rec_prep rp;
    ms_record_prepare(&rp, n);
    void *r = ms_record_commit_addr(ms_real.realloc(old, n), n, &rp);
    if (MS_UNLIKELY(!r) && known) {
        /* the old block is intact: weighed again (from this call site) */
        ms_record_prepare(&rp, asked);
        ms_record_commit_addr(old, asked, &rp);
    }
    ms_leave();
    return r;
}

/* realloc by copy: for bootstrap, foreign, over-aligned and guarded blocks. */
static void *ms_realloc_copy(void *old, size_t n)
{
    void *p = malloc(n);
    return p ? ms_realloc_move(old, n, p) : NULL;
}

/* guard=RATE: realloc's turn came: the block moves into the pool if it can. */
static MS_NOINLINE void *ms_realloc_guarded(void *old, size_t n)
{
    void *p = ms_guard_alloc(n, 16);
    return p ? ms_realloc_move(old, n, p) : NULL;
}

static void *ms_realloc_impl(void *old, size_t n)
{
    if (!old)
        return malloc(n);
    if (ms_guard_owns(old)) { /* out of the pool: a double or invalid pointer is reported */
        if (n && !ms_guard_usable(old)) {
            ms_guard_free(old); /* returns with guard_recover=1 only: nothing to copy */
            errno = ENOMEM;
            return NULL;
        }
        return n ? ms_realloc_copy(old, n) : (free(old), NULL);
    }
    if (n == 0) { /* glibc: frees and returns NULL */
        free(old);
        return NULL;
    }
    if (ms_addr_mode && __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY &&
        !ms_boot_owns(old) && n <= SIZE_MAX - 64)
        return ms_realloc_addr(old, n);
    if (!ms_fast_ok()) {
        if (ms_boot_owns(old) || (ms_state == MS_STATE_READY && ms_hdr_valid(old)))
            return ms_realloc_copy(old, n);
        ms_init();
        if (ms_real.realloc && ms_can_real())
            return ms_real.realloc(old, n);
        void *p = ms_boot_alloc(n, 16);
        return p;
    }
    if (MS_UNLIKELY(ms_sampler_cfg.enabled) && !ms_boot_owns(old) && !ms_hdr_valid(old) &&
        n <= SIZE_MAX - 64) {
        /* sampled mode: a plain (unsampled) block stays plain unless the new size is
         * picked; then it moves into a recorded block by copy */
        ms_enter();
        int picked = ms_sampler_pick(n);
        void *q = picked ? NULL : ms_real.realloc(old, n);
        ms_leave();
        return picked ? ms_realloc_copy(old, n) : q;
    }
    if (MS_UNLIKELY(ms_boot_owns(old)) || MS_UNLIKELY(!ms_hdr_valid(old)) ||
        MS_UNLIKELY((ms_hdr_of(old)->check & 63u) != 0) || MS_UNLIKELY(n > SIZE_MAX - 64))
        return ms_realloc_copy(old, n);
    ms_enter();
    /* the header moves with the data; the block keeps its live entry if it had one.
     * Prepared before, committed after, as malloc (no copy of the new address left in
     * the agent's frames) */
    size_t asked = (size_t)(ms_hdr_of(old)->meta & MS_HDR_SIZE_MASK);
    ms_rec_prep rp;
    ms_record_prepare(&rp, n);
    ms_forget_heap(old);
    char *r = ms_real.realloc(ms_real_ptr((char *)old - MS_HDR_SIZE), ms_real_size(n));
    void *p = NULL;
    if (MS_UNLIKELY(r == NULL)) {
        /* the old block is intact: record it again (from this call site) */
        ms_record_abort(&rp, n);
        ms_record_heap(ms_real_ptr(old), asked, 0);
    } else {
        p = ms_record_commit(r + MS_HDR_SIZE, n, 0, &rp);
    }
    ms_leave();
    return p;
}

/* realloc's variants. With guard pages, the countdown's turn (realloc(NULL, n) is
 * malloc's turn, realloc(p, 0) is free). In sampled modes, a plain block that stays
 * plain (not in the filter, its new size passed over by the countdown) is a jump into
 * the C library's realloc; a picked size is decided once (the sampler keeps it for the
 * copy's malloc). Everything else, and full mode, in ms_realloc_impl. */
static inline __attribute__((always_inline)) void *ms_realloc_unguarded(void *old, size_t n,
                                                                         int guard, int count)
{
    if (count && MS_LIKELY(old != NULL) && MS_LIKELY(n != 0) && (!guard || !ms_guard_owns(old)) &&
        MS_LIKELY(!ms_addr_maybe(old)) && MS_LIKELY(ms_sampler_fast(&ms_sampler_tls, n)))
        return ms_real.realloc(old, n);
    return ms_realloc_impl(old, n);
}

/* The countdown's turn, out of line: the variants keep no frame (a call they return
 * from would give each realloc a frame and a spill). */
static MS_NOINLINE MS_SIBCALLS void *ms_realloc_turn_sampled(void *old, size_t n)
{
    void *p = ms_realloc_guarded(old, n);
    return p ? p : ms_realloc_unguarded(old, n, 1, 1);
}

static MS_NOINLINE MS_SIBCALLS void *ms_realloc_turn_full(void *old, size_t n)
{
    void *p = ms_realloc_guarded(old, n);
    return p ? p : ms_realloc_unguarded(old, n, 1, 0);
}

static inline __attribute__((always_inline)) void *ms_realloc_body(void *old, size_t n, int guard,
                                                                    int count)
{
    if (guard && old && n && ms_guard_tick())
        return count ? ms_realloc_turn_sampled(old, n) : ms_realloc_turn_full(old, n);
    return ms_realloc_unguarded(old, n, guard, count);
}

static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_realloc_sampled(void *old, size_t n) { return ms_realloc_body(old, n, 0, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_realloc_sampled_guard(void *old, size_t n) { return ms_realloc_body(old, n, 1, 1); }
static MS_NOINLINE MS_HOT MS_SIBCALLS void *ms_realloc_full_guard(void *old, size_t n) { return ms_realloc_body(old, n, 1, 0); }

/* ===========================================================================
 * Entries: each exported function of the hot four jumps through one pointer to the
 * variant made for the configuration (sampled or full, guard pages or not), so that no
 * call pays for a check of a feature that is off; free asks the address filter first
 * (its "maybe" decides everything at the call), then the guard pool's range (span 0
 * while there is no pool), so that in sampled modes, guard pages or not, the pointer is
 * the real free itself: one indirect jump per call, as any interposer makes (a second one
 * cost about 0.4 ns a call on a malloc/free loop, more than the instructions it saved;
 * with guard pages on, the range test in a variant of its own made free cost 2% more
 * than sampled mode's on that loop, where it costs four instructions in free() itself).
 * In full mode the filter holds only the bootstrap arena's blocks: its untouched pages
 * are the kernel's one zero page, a few cache lines. Until the agent is ready (and for
 * good should it not start) they hold the variants that decide everything at each call.
 * Both are right at any moment once it is ready: a thread may still be inside the old
 * one. Picked once: what they depend on (the address mode, guard pages, whether the
 * countdown may pass blocks to the C library) does not change afterwards; detach,
 * re-attach and a forked child change the sampler's settings, which the variants read.
 * ========================================================================= */
ms_entry_line ms_entry __attribute__((aligned(64))) = {
    .s = {.f = {ms_malloc_slow, ms_free_any_mode, ms_calloc_slow, ms_realloc_impl,
                ms_free_any_mode}}};

void ms_alloc_entries_pick(void)
{
    int guard = ms_opt.guard != 0 || __atomic_load_n(&ms_guard_span, __ATOMIC_ACQUIRE) != 0;
    int addr = __atomic_load_n(&ms_addr_mode, __ATOMIC_ACQUIRE) != 0;
    /* the countdown passes blocks to the real functions without the re-entrancy flag:
     * only when they are the C library's (fast_max 0 otherwise) */
    int count = addr && ms_sampler_cfg.fast_max != 0;
    ms_entry_fns e;
    e.malloc = count ? (guard ? ms_malloc_sampled_guard : ms_malloc_sampled)
                     : (guard ? ms_malloc_full_guard : ms_malloc_slow);
    e.calloc = count ? (guard ? ms_calloc_sampled_guard : ms_calloc_sampled)
                     : (guard ? ms_calloc_full_guard : ms_calloc_slow);
    e.realloc = count ? (guard ? ms_realloc_sampled_guard : ms_realloc_sampled)
                      : (guard ? ms_realloc_full_guard : ms_realloc_impl);
    e.free = addr ? ms_real.free : ms_free_full; /* free() tests the guard pool first */
    e.free_maybe = addr && !guard ? ms_free_addr : ms_free_any_mode;
    __atomic_store_n(&ms_entry.s.f.malloc, e.malloc, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_entry.s.f.free, e.free, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_entry.s.f.calloc, e.calloc, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_entry.s.f.realloc, e.realloc, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_entry.s.f.free_maybe, e.free_maybe, __ATOMIC_RELEASE);
}

MS_EXPORT MS_SIBCALLS MS_HOT void *malloc(size_t n)
{
    return __atomic_load_n(&ms_entry.s.f.malloc, __ATOMIC_RELAXED)(n);
}

MS_EXPORT MS_SIBCALLS MS_HOT void free(void *p)
{
    if (MS_LIKELY(!ms_addr_maybe(p))) {
        /* the pool's blocks first: the 16 bytes below one may be a guard page */
        if (ms_guard_owns(p)) {
            ms_guard_free(p);
            return;
        }
        __atomic_load_n(&ms_entry.s.f.free, __ATOMIC_RELAXED)(p);
        return;
    }
    __atomic_load_n(&ms_entry.s.f.free_maybe, __ATOMIC_RELAXED)(p);
}

MS_EXPORT MS_SIBCALLS MS_HOT void *calloc(size_t a, size_t b)
{
    return __atomic_load_n(&ms_entry.s.f.calloc, __ATOMIC_RELAXED)(a, b);
}

MS_EXPORT MS_SIBCALLS MS_HOT void *realloc(void *old, size_t n)
{
    return __atomic_load_n(&ms_entry.s.f.realloc, __ATOMIC_RELAXED)(old, n);
}

MS_EXPORT void *reallocarray(void *old, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return ms_realloc_impl(old, n);
}

static unsigned ms_log2(size_t a)
{
    return (unsigned)(63 - __builtin_clzll((unsigned long long)a));
}

/* Over-aligned blocks: the real block starts `align` bytes below the pointer. */
static void *ms_aligned(size_t align, size_t n)
{
    if (align & (align - 1)) { /* memalign rounds a bad alignment up, like glibc */
        size_t a = 32;
        while (a < align && a)
            a <<= 1;
        align = a;
    }
    if (align <= MS_HDR_SIZE)
        return malloc(n);
    if (!align || n > SIZE_MAX - align - 64) {
        errno = ENOMEM;
        return NULL;
    }
    if (ms_guard_tick()) {
        void *p = ms_guard_alloc(n, align);
        if (p)
            return p;
    }
    if (!ms_fast_ok())
        return ms_aligned_passthrough(align, n);
    ms_enter();
    if (MS_UNLIKELY(ms_sampler_cfg.enabled) && !ms_sampler_pick(n)) {
        void *q = ms_real.memalign(align, n);
        ms_leave();
        return q;
    }
    ms_rec_prep rp;
    ms_record_prepare(&rp, n);
    if (ms_addr_mode) {
        void *q = ms_record_commit_addr(ms_real.memalign(align, n), n, &rp);
        ms_leave();
        return q;
    }
    char *r = ms_real.memalign(align, n + align);
    void *p = NULL;
    if (MS_LIKELY(r != NULL))
        p = ms_record_commit(r + align, n, ms_log2(align), &rp);
    else
        ms_record_abort(&rp, n);
    ms_leave();
    return p;
}

MS_EXPORT void *memalign(size_t align, size_t n) { return ms_aligned(align, n); }
MS_EXPORT void *aligned_alloc(size_t align, size_t n) { return ms_aligned(align, n); }
MS_EXPORT void *valloc(size_t n) { return ms_aligned((size_t)sysconf(_SC_PAGESIZE), n); }

MS_EXPORT void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t r = n ? (n + pg - 1) & ~(pg - 1) : pg;
    return ms_aligned(pg, r);
}

MS_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    int saved = errno;
    void *p = ms_aligned(align, n);
    if (!p)
        return ENOMEM;
    errno = saved;
    *out = p;
    return 0;
}

MS_EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (ms_guard_owns(p))
        return ms_guard_usable(p);
    ms_init();
    return ms_usable(p);
}

MS_EXPORT void cfree(void *p) { free(p); }
