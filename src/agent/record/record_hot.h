/* The recording path's per-call steps, inline so that the full-mode interposers (alloc.c)
 * do them in their own frame: a call layer with its prologue and its copy of the
 * preparation in memory costs more than the steps themselves. record.c keeps the
 * out-of-line forms for the other callers, and says why recording is split around the
 * real allocation (no copy of a block's address left in the agent's dead frames). */
#ifndef MS_AGENT_RECORD_HOT_H
#define MS_AGENT_RECORD_HOT_H

#include "agent/record/record.h"
#include "agent/tables/live_hot.h"
#include "agent/record/sampler.h"
#include "agent/unwind/unwind_cfi.h"

#define MS_ALWAYS_INLINE inline __attribute__((always_inline))

/* Sampled mode's preparation: the sampler's weight, then as below (record.c). */
void ms_record_prepare_sampled(ms_rec_prep *rp, size_t size, uintptr_t walk_fp) MS_INTERNAL;
/* No live entry for this block (table full, stack id or size too large): idx goes back.
 * The drop is counted by the commit, not here: a request the allocator then refuses (a
 * program asking for 2^41 bytes to see it fail) dropped nothing. */
void ms_record_drop(uint32_t idx) MS_INTERNAL;
/* Modes whose stacks count their frees (record.c). */
void ms_forget_counted(uint32_t idx, uint64_t size, uint32_t sid) MS_INTERNAL;

/* Prepares a block of size bytes that stands for weight bytes; the walk leaves the agent
 * from the frame record walk_fp (a frame of the agent's that is live until the commit). */
static MS_ALWAYS_INLINE void ms_record_prepare_weighed(ms_rec_prep *rp, size_t size,
                                                       uint64_t weight, uintptr_t walk_fp)
{
    rp->weight = weight;
    uint32_t sid = ms_cfi_cached_id((unsigned)ms_opt.max_depth, walk_fp);
    if (!sid) { /* a walk: it starts from the frame record ms_self.walk_fp names */
        ms_self.walk_fp = walk_fp;
        sid = ms_current_stack(MS_KIND_HEAP);
        ms_self.walk_fp = 0;
    }
    uint32_t idx = ms_live_take_index();
    if (MS_UNLIKELY(idx == 0 || sid > MS_HDR_MAX_STACK || size > MS_HDR_SIZE_MASK)) {
        ms_record_drop(idx);
        rp->weight |= 1; /* with idx 0: dropped, counted once the block exists */
        rp->sid = 0;
        rp->idx = 0;
        return;
    }
    rp->sid = sid;
    rp->idx = idx;
    if (MS_LIKELY(sid != 0)) { /* 0: the stack table was full */
        uint64_t blocks = ms_sampler_count_estimate(size, weight);
        if (MS_LIKELY(blocks == 1)) { /* full mode: the note keeps the stack's counters */
            ms_totals_note_id(sid, (int64_t)weight, 1, 0, 1, 1);
        } else { /* a sample standing for several blocks */
            ms_stack_count_heap_alloc(ms_stack_known(sid), blocks, weight);
            ms_totals_note_id(sid, (int64_t)weight, (int64_t)blocks, 0, 1, 0);
        }
    }
    rp->ticks = ms_ticks();
    rp->tid = ms_sampler_tag_tid(ms_gettid(), size, weight);
}

/* The preparation of any recorded block (full mode inline, sampled mode out of line). */
static MS_ALWAYS_INLINE void ms_record_prepare_at(ms_rec_prep *rp, size_t size, uintptr_t walk_fp)
{
    ms_control_maybe_start();
    if (MS_UNLIKELY(ms_sampler_cfg.enabled)) {
        ms_rec_prep s; /* a copy: the caller's rp stays in registers */
        ms_record_prepare_sampled(&s, size, walk_fp);
        *rp = s;
        return;
    }
    ms_record_prepare_weighed(rp, size, size, walk_fp);
}

/* Stores only, and calls nothing on a tracked block's way: a call would save registers
 * holding the block's address in a frame of the agent's. */
static MS_ALWAYS_INLINE void ms_record_commit_entry_at(const void *p, size_t size,
                                                       const ms_rec_prep *rp)
{
    ms_live_store(rp->idx, (uint64_t)(uintptr_t)p, size, rp->ticks, rp->sid, rp->tid);
    ms_pend *pd = ms_self.pend; /* the size class and the temporaries' window */
    if (pd) {
        pd->hist[size ? 64 - __builtin_clzll((unsigned long long)size) : 0]++;
        pd->last_ptr = (uint64_t)(uintptr_t)p;
    }
}

static MS_ALWAYS_INLINE void *ms_record_commit_at(void *p, size_t size, unsigned align_log2,
                                                  const ms_rec_prep *rp)
{
    ms_hdr *h = ms_hdr_of(p);
    if (MS_UNLIKELY(!rp->idx)) {
        if (rp->weight) /* dropped (not a sampled-out block) */
            MS_HEALTH_INC(dropped_blocks);
        h->index = 0;
        h->meta = ms_hdr_mark(p);
        h->check = ms_hdr_check(p, align_log2);
        return p;
    }
    ms_record_commit_entry_at(p, size, rp);
    h->index = rp->idx;
    h->meta = (uint64_t)size | ((uint64_t)rp->sid << MS_HDR_SIZE_BITS);
    h->check = ms_hdr_check(p, align_log2);
    return p;
}

static MS_ALWAYS_INLINE void ms_forget_entry_at(const void *p, uint32_t idx, uint64_t size,
                                                uint32_t sid)
{
    /* full mode: the heap stacks' free counters are derived from the live table when a
     * snapshot is written (tables/totals.h); no locked add on a cold stack record per free */
    if (MS_UNLIKELY(!ms_heap_frees_derived)) {
        ms_forget_counted(idx, size, sid);
        return;
    }
    ms_live_clear(idx);
    /* only the thread's own table: the peak's per-stack values and temporaries */
    ms_pend *pd = ms_self.pend;
    uint64_t temp = 0;
    if (pd) { /* any free ends the window: heaptrack counts the same way */
        temp = pd->last_ptr == (uint64_t)(uintptr_t)p;
        pd->last_ptr = 0;
    }
    ms_totals_note_id(sid, -(int64_t)size, -1, temp, 0, 0);
    ms_live_put_index(idx); /* last: less to keep across the calls of the rarer paths */
}

static MS_ALWAYS_INLINE void ms_forget_heap_at(void *p)
{
    ms_hdr *h = ms_hdr_of(p);
    uint32_t idx = h->index;
    /* Wipe the check: the allocator may keep these bytes untouched inside a free chunk
     * and later hand out a block (without header: from an agent thread or a re-entered
     * call) at the same address; a stale valid check would then make free() pass a
     * wrong pointer to the allocator. */
    h->check = 0; /* (the index needs no wiping: no header without its check is read) */
    if (!idx)
        return;
    uint64_t meta = h->meta;
    ms_forget_entry_at(p, idx, meta & MS_HDR_SIZE_MASK, (uint32_t)(meta >> MS_HDR_SIZE_BITS));
}

#endif
