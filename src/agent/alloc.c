/* Hot path: the malloc-family interposers. Each forwards to the real function with the
 * re-entrancy flag raised (so the allocator's own mmap calls are not recorded), then
 * records or forgets the block. Runs inside the target: no locks, no malloc of ours. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/sampler.h"

#define MS_EXPORT __attribute__((visibility("default")))

/* ===========================================================================
 * Slow paths: before init, during bootstrap, or re-entered from inside the agent.
 * ========================================================================= */
static MS_NOINLINE void *ms_malloc_passthrough(size_t n)
{
    ms_init();
    if (ms_real.malloc && ms_state != MS_STATE_INITING)
        return ms_real.malloc(n);
    if (ms_real.malloc && ms_self.busy == 0)
        return ms_real.malloc(n);
    return ms_boot_alloc(n, 16);
}

static MS_NOINLINE void *ms_aligned_passthrough(size_t align, size_t n)
{
    ms_init();
    if (ms_real.memalign && (ms_state != MS_STATE_INITING || ms_self.busy == 0))
        return ms_real.memalign(align, n);
    return ms_boot_alloc(n, align);
}

static MS_NOINLINE void ms_free_slow(void *p)
{
    if (ms_boot_owns(p))
        return;
    ms_init();
    if (ms_state == MS_STATE_READY && ms_self.busy == 0) {
        ms_enter();
        ms_forget_heap(p);
        ms_real.free(p);
        ms_leave();
        return;
    }
    if (ms_real.free)
        ms_real.free(p);
}

static inline int ms_fast_ok(void)
{
    return MS_LIKELY(__atomic_load_n(&ms_state, __ATOMIC_RELAXED) == MS_STATE_READY) &&
           MS_LIKELY(ms_self.busy == 0);
}

/* ===========================================================================
 * Interposers
 * ========================================================================= */
MS_EXPORT void *malloc(size_t n)
{
    if (!ms_fast_ok())
        return ms_malloc_passthrough(n);
    ms_enter();
    void *p = ms_real.malloc(n);
    if (MS_LIKELY(p != NULL))
        ms_record_heap(p, n);
    ms_leave();
    return p;
}

MS_EXPORT void free(void *p)
{
    if (!p)
        return;
    if (!ms_fast_ok() || MS_UNLIKELY(ms_boot_owns(p))) {
        ms_free_slow(p);
        return;
    }
    ms_enter();
    ms_forget_heap(p);
    ms_real.free(p);
    ms_leave();
}

MS_EXPORT void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!ms_fast_ok()) {
        ms_init();
        if (ms_real.calloc && (ms_state != MS_STATE_INITING || ms_self.busy == 0))
            return ms_real.calloc(a, b);
        return ms_boot_alloc(n, 16); /* static arena memory is zero */
    }
    ms_enter();
    void *p = ms_real.calloc(a, b);
    if (MS_LIKELY(p != NULL))
        ms_record_heap(p, n);
    ms_leave();
    return p;
}

static void *ms_realloc_impl(void *old, size_t n)
{
    if (MS_UNLIKELY(old && ms_boot_owns(old))) {
        size_t on = ms_boot_size(old);
        void *p = malloc(n);
        if (p)
            memcpy(p, old, on < n ? on : n);
        return p;
    }
    if (!ms_fast_ok()) {
        ms_init();
        if (ms_real.realloc && (ms_state != MS_STATE_INITING || ms_self.busy == 0))
            return ms_real.realloc(old, n);
        void *p = ms_boot_alloc(n, 16);
        return p;
    }
    if (!old)
        return malloc(n);
    ms_enter();
    ms_live_entry e;
    memset(&e, 0, sizeof e);
    int had = ms_live_remove((uint64_t)(uintptr_t)old, &e);
    void *p = ms_real.realloc(old, n);
    if (p == NULL && n != 0) {
        /* Failed: the old block is still live, put it back unchanged. */
        if (had && ms_live_insert(&e) != 0) {
            ms_account_forget(&e);
            MS_HEALTH_INC(dropped_blocks);
        }
        ms_leave();
        return NULL;
    }
    if (had)
        ms_account_forget(&e);
    else if (!ms_sampler_cfg.enabled) /* sampled mode: most blocks are not tracked */
        MS_HEALTH_INC(unknown_frees);
    if (p)
        ms_record_heap(p, n);
    ms_leave();
    return p;
}

MS_EXPORT void *realloc(void *old, size_t n)
{
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

static void *ms_memalign_common(size_t align, size_t n, int which)
{
    if (!ms_fast_ok())
        return ms_aligned_passthrough(align, n);
    ms_enter();
    void *p = NULL;
    switch (which) {
    case 0: p = ms_real.memalign(align, n); break;
    case 1: p = ms_real.aligned_alloc(align, n); break;
    case 2: p = ms_real.valloc(n); break;
    case 3: p = ms_real.pvalloc(n); break;
    }
    if (MS_LIKELY(p != NULL))
        ms_record_heap(p, n);
    ms_leave();
    return p;
}

MS_EXPORT void *memalign(size_t align, size_t n) { return ms_memalign_common(align, n, 0); }
MS_EXPORT void *aligned_alloc(size_t align, size_t n) { return ms_memalign_common(align, n, 1); }
MS_EXPORT void *valloc(size_t n) { return ms_memalign_common(4096, n, 2); }
MS_EXPORT void *pvalloc(size_t n) { return ms_memalign_common(4096, n, 3); }

MS_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!ms_fast_ok()) {
        ms_init();
        if (ms_real.posix_memalign && (ms_state != MS_STATE_INITING || ms_self.busy == 0))
            return ms_real.posix_memalign(out, align, n);
        if (align < sizeof(void *) || (align & (align - 1)))
            return EINVAL;
        void *p = ms_boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    ms_enter();
    int rc = ms_real.posix_memalign(out, align, n);
    if (rc == 0 && *out)
        ms_record_heap(*out, n);
    ms_leave();
    return rc;
}

MS_EXPORT void cfree(void *p) { free(p); }
