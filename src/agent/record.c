/* Recording: unwind the caller, intern its stack, account the block and insert it in
 * the live table; forget a block before the allocator frees it.
 * Runs inside the target with the re-entrancy flag raised: no malloc, no global lock. */
#include <string.h>

#include "agent/agent.h"

uint32_t ms_current_stack(unsigned kind)
{
    uint64_t pcs[MS_MAX_DEPTH_LIMIT];
    unsigned flags = 0;
    unsigned d = ms_unwind(pcs, (unsigned)ms_opt.max_depth, &flags);
    return ms_stack_intern(kind, pcs, d, flags);
}

void ms_record_heap(void *p, size_t size)
{
    uint32_t sid = ms_current_stack(MS_KIND_HEAP);
    ms_stack_rec *r = ms_stack_get(sid);
    if (r)
        ms_stack_account_alloc(r, size);
    ms_live_entry e = {(uint64_t)(uintptr_t)p, size, ms_ticks(), sid, ms_gettid()};
    if (MS_UNLIKELY(ms_live_insert(&e) != 0)) {
        MS_HEALTH_INC(dropped_blocks);
        if (r) { /* not tracked: take it out of the counters again */
            __atomic_fetch_sub(&r->alloc_blocks, 1, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&r->alloc_bytes, size, __ATOMIC_RELAXED);
        }
    }
}

int ms_forget_heap(void *p)
{
    ms_live_entry e;
    if (!ms_live_remove((uint64_t)(uintptr_t)p, &e)) {
        MS_HEALTH_INC(unknown_frees);
        return 0;
    }
    ms_stack_rec *r = ms_stack_get(e.stack_id);
    if (r)
        ms_stack_account_free(r, e.size);
    return 1;
}
