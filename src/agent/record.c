/* Recording: unwind the caller, intern its stack, account the block and insert it in
 * the live table; forget a block before the allocator frees it.
 * Runs inside the target with the re-entrancy flag raised: no malloc, no global lock. */
#include <string.h>

#include "agent/agent.h"
#include "agent/sampler.h"

uint32_t ms_current_stack(unsigned kind)
{
    uint64_t pcs[MS_MAX_DEPTH_LIMIT];
    unsigned flags = 0;
    unsigned d = ms_unwind(pcs, (unsigned)ms_opt.max_depth, &flags);
    return ms_stack_intern(kind, pcs, d, flags);
}

void ms_record_heap(void *p, size_t size)
{
    uint64_t w = size; /* bytes this record stands for */
    ms_control_maybe_start();
    if (MS_UNLIKELY(ms_sampler_cfg.enabled)) {
        w = ms_sampler_weigh(size);
        if (!w)
            return; /* not sampled: not unwound, not stored */
    }
    uint64_t nb = ms_sampler_count_estimate(size, w);
    uint32_t sid = ms_current_stack(MS_KIND_HEAP);
    ms_stack_rec *r = ms_stack_get(sid);
    if (r)
        ms_stack_account_alloc_n(r, nb, w);
    ms_live_entry e = {(uint64_t)(uintptr_t)p, size, ms_ticks(), sid,
                       ms_sampler_tag_tid(ms_gettid(), size, w)};
    if (MS_UNLIKELY(ms_live_insert(&e) != 0)) {
        MS_HEALTH_INC(dropped_blocks);
        if (r) { /* not tracked: take it out of the counters again */
            __atomic_fetch_sub(&r->alloc_blocks, nb, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&r->alloc_bytes, w, __ATOMIC_RELAXED);
            ms_control_note(r, -(int64_t)w, -(int64_t)nb);
        }
    }
}

void ms_account_forget(const ms_live_entry *e)
{
    ms_stack_rec *r = ms_stack_get(e->stack_id);
    if (!r)
        return;
    uint64_t w = ms_sampler_entry_weight(e->size, e->tid);
    ms_stack_account_free_n(r, ms_sampler_count_estimate(e->size, w), w);
}

int ms_forget_heap(void *p)
{
    ms_live_entry e;
    if (!ms_live_remove((uint64_t)(uintptr_t)p, &e)) {
        if (!ms_sampler_cfg.enabled) /* sampled mode: most frees are of unsampled blocks */
            MS_HEALTH_INC(unknown_frees);
        return 0;
    }
    ms_account_forget(&e);
    return 1;
}
