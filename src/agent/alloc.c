/* Hot path: the malloc-family interposers. In full mode each asks the real allocator for
 * 16 bytes more, records the block (header below the program's pointer + one live entry)
 * with the re-entrancy flag raised (so the allocator's own mmap calls are not recorded),
 * and undoes this on free; blocks without a valid header go to the real functions as
 * they are. In sampled and min_size modes (ms_addr_mode) a recorded block is the real
 * allocator's block unchanged, known by its address (addr_table.h). Runs inside the
 * target: no locks of ours on the plain paths, no malloc of ours. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/addr_table.h"
#include "agent/agent.h"
#include "agent/guard.h"
#include "agent/record_hot.h"
#include "agent/sampler.h"

#define MS_EXPORT __attribute__((visibility("default")))

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

static MS_NOINLINE void *ms_malloc_passthrough(size_t n)
{
    int was_ready = __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY;
    ms_init();
    if (!was_ready && ms_fast_ok_after_init() && n <= SIZE_MAX - 64)
        return ms_malloc_recorded(n);
    if (ms_real.malloc && ms_can_real())
        return ms_real.malloc(n);
    return ms_boot_alloc(n, 16);
}

static MS_NOINLINE void *ms_aligned_passthrough(size_t align, size_t n)
{
    ms_init();
    if (ms_real.memalign && ms_can_real())
        return ms_real.memalign(align, n);
    return ms_boot_alloc(n, align);
}

/* A block the filter may know (ms_addr_mode): forgotten if recorded, then freed. */
static MS_NOINLINE void ms_free_addr(void *p)
{
    ms_enter();
    ms_forget_addr(p, NULL);
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
static MS_NOINLINE __attribute__((optimize("optimize-sibling-calls"))) void *ms_malloc_slow(size_t n)
{
    if (MS_LIKELY(ms_fast_ok()) && MS_LIKELY(n <= MS_HDR_SIZE_MASK) &&
        MS_LIKELY(!ms_sampler_cfg.enabled) && MS_LIKELY(!ms_addr_mode))
        return ms_alloc_recorded(n, 0, 1);
    return ms_malloc_other(n);
}

/* Sampled mode: a block the sampler's countdown passes over is a plain block, no header.
 * The countdown's fast share is non-zero only once the agent is ready, sampling, and the
 * real malloc is the C library's (which calls nothing interposed), so that one compare
 * decides, and the C library's malloc is reached by a jump (no frame, no flag). */
static inline void *ms_malloc_unguarded(size_t n)
{
    if (MS_LIKELY(ms_sampler_fast(&ms_sampler_tls, n)))
        return ms_real.malloc(n);
    return ms_malloc_slow(n);
}

/* guard=RATE: this allocation's turn came (guard.c); not guarded, it goes on as usual. */
static MS_NOINLINE void *ms_malloc_guarded(size_t n)
{
    void *p = ms_guard_alloc(n, 16);
    return p ? p : ms_malloc_unguarded(n);
}

MS_EXPORT __attribute__((optimize("optimize-sibling-calls"))) void *malloc(size_t n)
{
    if (ms_guard_tick())
        return ms_malloc_guarded(n);
    return ms_malloc_unguarded(n);
}

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

/* Every path ends in a tail call, so the plain-block path (most blocks in sampled mode)
 * costs no stack frame: the checks, then a jump into the real free. (The agent is built
 * without sibling calls; free unwinds nothing, so it may take them.) Inside the agent
 * (re-entrancy flag raised) a free does the same as outside, so the flag is not read.
 * In sampled mode the check is one load from the address filter. */
MS_EXPORT __attribute__((optimize("optimize-sibling-calls"))) void free(void *p)
{
    /* first: the 16 bytes below a guarded block may be a guard page */
    if (ms_guard_owns(p)) {
        ms_guard_free(p);
        return;
    }
    /* sampled mode: set only once the real functions are resolved, so the agent's state
     * need not be read; the bootstrap arena's blocks are never in the filter */
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

static MS_NOINLINE __attribute__((optimize("optimize-sibling-calls"))) void *ms_calloc_slow(size_t a, size_t b)
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

/* As malloc: an unsampled block jumps into the C library's calloc. */
static MS_NOINLINE void *ms_calloc_guarded(size_t a, size_t b, size_t n)
{
    void *p = ms_guard_alloc(n, 16); /* zeroed */
    return p ? p : ms_calloc_slow(a, b);
}

MS_EXPORT __attribute__((optimize("optimize-sibling-calls"))) void *calloc(size_t a, size_t b)
{
    size_t n;
    if (MS_UNLIKELY(__builtin_mul_overflow(a, b, &n)))
        return ms_calloc_slow(a, b);
    if (ms_guard_tick())
        return ms_calloc_guarded(a, b, n);
    if (MS_LIKELY(ms_sampler_fast(&ms_sampler_tls, n)))
        return ms_real.calloc(a, b);
    return ms_calloc_slow(a, b);
}

/* Moves old's bytes (up to n) into the new block p and frees old. */
static void *ms_realloc_move(void *old, size_t n, void *p)
{
    size_t have = ms_usable(old);
    if (!ms_guard_owns(old) && ms_state == MS_STATE_READY && !ms_addr_mode && ms_hdr_valid(old) &&
        ms_hdr_of(old)->index) {
        size_t asked = (size_t)(ms_hdr_of(old)->meta & MS_HDR_SIZE_MASK);
        if (asked < have)
            have = asked;
    }
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
        if (n && !ms_guard_usable(old))
            ms_guard_free(old);
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

/* Sampled mode, a plain block that stays plain: a jump into the C library's realloc.
 * A picked size is decided once (the sampler keeps it for the copy's malloc). */
MS_EXPORT __attribute__((optimize("optimize-sibling-calls"))) void *realloc(void *old, size_t n)
{
    /* realloc(NULL, n) is malloc's turn, realloc(p, 0) is free */
    if (old && n && ms_guard_tick()) {
        void *p = ms_realloc_guarded(old, n);
        if (p)
            return p;
    }
    /* a non-zero fast share means ready and sampling; the header test comes first: a
     * block with a header takes the general path, which counts the size itself */
    if (MS_LIKELY(ms_sampler_tls.remaining != 0) && old && n && !ms_boot_owns(old) &&
        !ms_guard_owns(old) && (ms_addr_mode ? !ms_addr_maybe(old) : !ms_hdr_check_matches(old)) &&
        ms_sampler_fast(&ms_sampler_tls, n))
        return ms_real.realloc(old, n);
    return ms_realloc_impl(old, n);
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
