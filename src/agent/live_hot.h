/* The live table's per-call operations, inline for the recording path (record.c): an
 * entry index from the thread's cache and back, an entry stored and cleared. The table,
 * the pool the caches exchange batches with, and everything else are in live.c. */
#ifndef MS_AGENT_LIVE_HOT_H
#define MS_AGENT_LIVE_HOT_H

#include "agent/agent.h"
#include "agent/chunks.h"

extern ms_chunks ms_live_entries MS_INTERNAL;
/* Entries are mapped 64K at a time (2 MiB) as the high-water mark reaches them, so the
 * table takes address space in proportion to use, not to `capacity`. */
#define MS_LIVE_CHUNK_SHIFT 16
/* Entry idx of a mapped chunk (an index taken from the caches always is). */
#define MS_LIVE_AT(idx) MS_CHUNKS_AT(&ms_live_entries, idx, MS_LIVE_CHUNK_SHIFT, ms_live_entry)
/* The thread's cache is empty: a batch from the pool or fresh indices (0: table full). */
uint32_t ms_live_refill(void) MS_INTERNAL;
/* The thread's cache is full: a batch goes back to the pool, then idx into the cache
 * (out of line with idx as its argument: the inline part keeps nothing across a call). */
void ms_live_spill_put(uint32_t idx) MS_INTERNAL;

/* An unused entry index (from the thread's cache), or 0 when the table is full. */
static inline uint32_t ms_live_take_index(void)
{
    ms_tls *t = &ms_self;
    if (MS_LIKELY(t->nidx > 0))
        return t->idx[--t->nidx];
    return ms_live_refill();
}

static inline void ms_live_put_index(uint32_t idx)
{
    ms_tls *t = &ms_self;
    uint32_t n = t->nidx;
    if (MS_LIKELY(n < MS_IDX_CACHE)) {
        t->idx[n] = idx;
        t->nidx = n + 1;
        return;
    }
    ms_live_spill_put(idx);
}

/* The address is published last (release): a reader that sees it sees the rest. */
static inline void ms_live_store(uint32_t idx, uint64_t addr, uint64_t size, uint64_t ticks,
                                 uint32_t stack_id, uint32_t tid)
{
    ms_live_entry *d = MS_LIVE_AT(idx);
    d->size = size;
    d->ticks = ticks;
    d->stack_id = stack_id;
    d->tid = tid;
    __atomic_store_n(&d->addr, addr, __ATOMIC_RELEASE);
}

static inline void ms_live_clear(uint32_t idx)
{
    ms_live_entry *d = MS_LIVE_AT(idx);
    __atomic_store_n(&d->addr, 0, __ATOMIC_RELEASE);
}

#endif
