/* The address-table recording's per-call steps (record_addr.c), inline for the sampled
 * interposers (alloc.c): the commit of a sampled malloc and the forgetting of a sampled
 * block's free in the interposer's own frame, without a call layer and its copy of the
 * preparation. record_addr.c keeps the out-of-line forms for the other callers. */
#ifndef MS_AGENT_RECORD_ADDR_HOT_H
#define MS_AGENT_RECORD_ADDR_HOT_H

#include "agent/record/record.h"
#include "agent/record/sampler.h"
#include "agent/tables/addr_table.h"
#include "agent/tables/live_hot.h"

#ifndef MS_ALWAYS_INLINE
#define MS_ALWAYS_INLINE inline __attribute__((always_inline))
#endif

static MS_ALWAYS_INLINE void *ms_record_commit_addr_at(void *p, size_t size,
                                                      const ms_rec_prep *rp)
{
    if (MS_UNLIKELY(!p)) { /* the allocation failed */
        ms_record_abort(rp, size);
        return NULL;
    }
    if (!rp->idx) { /* not sampled, or dropped (no room): a plain block */
        if (rp->weight)
            MS_HEALTH_INC(dropped_blocks);
        return p;
    }
    uint32_t stale;
    if (MS_UNLIKELY(ms_addr_insert(p, rp->idx, &stale) != 0)) {
        /* the table cannot grow: the block stays plain, as if the live table were full */
        ms_record_abort(rp, size);
        MS_HEALTH_INC(dropped_blocks);
        return p;
    }
    ms_live_store(rp->idx, (uint64_t)(uintptr_t)p, size, rp->ticks, rp->sid, rp->tid);
    if (MS_UNLIKELY(stale != 0))
        ms_forget_addr_stale(stale);
    return p;
}

/* Forgets live entry idx, just taken out of the address table: 1. */
static MS_ALWAYS_INLINE int ms_forget_addr_idx(uint32_t idx, size_t *size)
{
    /* the table keeps only indices the recording took from the live table (mapped), with
     * entries it stored: read in place, the stack id one of the interned ones (no
     * bounds checks, no copy: a third of this function's cost on a malloc/free loop) */
    const ms_live_entry *e = MS_LIVE_AT(idx);
    int have = __atomic_load_n(MS_LIVE_MARK(idx), __ATOMIC_ACQUIRE) != 0;
    uint64_t esize = e->size;
    uint32_t etid = e->tid, sid = e->stack_id;
    ms_live_clear(idx);
    ms_live_put_index(idx);
    if (!have)
        return 1;
    if (size)
        *size = (size_t)esize;
    uint64_t w = ms_sampler_entry_weight(esize, etid);
    ms_stack_rec *r = ms_stack_known(sid);
    if (r)
        ms_stack_account_free_n(r, ms_sampler_count_estimate(esize, w), w);
    return 1;
}

static MS_ALWAYS_INLINE int ms_forget_addr_at(const void *p, size_t *size)
{
    uint32_t idx = ms_addr_remove(p);
    return idx ? ms_forget_addr_idx(idx, size) : 0;
}

#endif
