/* The live table's per-call operations, inline for the recording path (record.c): an
 * entry index from the thread's cache and back, an entry stored and cleared. The table,
 * the pool the caches exchange batches with, and everything else are in live.c. */
#ifndef MS_AGENT_LIVE_HOT_H
#define MS_AGENT_LIVE_HOT_H

#include "agent/tables/tables.h"
#include "agent/tables/chunks.h"

extern ms_chunks ms_live_entries MS_INTERNAL;
/* Entries are mapped 64K at a time (2 MiB) as the high-water mark reaches them, so the
 * table takes address space in proportion to use, not to `capacity`. */
#define MS_LIVE_CHUNK_SHIFT 16
#define MS_LIVE_CHUNK_ENTRIES (1u << MS_LIVE_CHUNK_SHIFT)
/* Each chunk's tail: one byte per entry, 1 while the entry holds a live block. A free
 * clears that byte instead of the entry's address: the entry was written when its block
 * was allocated, often long before, and its line has left the cache; the bytes of a
 * program's live blocks take 32 times less room and mostly stay (on bench-counted's
 * python3 churn this removed 0.18 last-level misses per call). */
#define MS_LIVE_MARKS_OFFSET ((uint64_t)MS_LIVE_CHUNK_ENTRIES * sizeof(ms_live_entry))
/* The chunk holding idx (mapped: an index taken from the caches always is). */
#define MS_LIVE_CHUNK(idx)                                                              \
    ((char *)__atomic_load_n(&ms_live_entries.dir[(uint64_t)(idx) >> MS_LIVE_CHUNK_SHIFT], \
                             __ATOMIC_ACQUIRE))
#define MS_LIVE_SLOT(idx) ((uint64_t)(idx) & (MS_LIVE_CHUNK_ENTRIES - 1))
/* The in-use bytes of a chunk (the chunk's own pointer, already loaded). */
#define MS_LIVE_MARKS_OF(chunk) ((uint8_t *)(chunk) + MS_LIVE_MARKS_OFFSET)
/* Entry idx, and its in-use byte. */
#define MS_LIVE_AT(idx) ((ms_live_entry *)MS_LIVE_CHUNK(idx) + MS_LIVE_SLOT(idx))
#define MS_LIVE_MARK(idx) (MS_LIVE_MARKS_OF(MS_LIVE_CHUNK(idx)) + MS_LIVE_SLOT(idx))
/* The thread's cache is empty: a batch from the pool or fresh indices (0: table full). */
uint32_t ms_live_refill(void) MS_INTERNAL;
/* The thread's cache is full: a batch goes back to the pool, then idx into the cache
 * (out of line with idx as its argument: the inline part keeps nothing across a call). */
void ms_live_spill_put(uint32_t idx) MS_INTERNAL;

/* An unused entry index (from the thread's cache), or 0 when the table is full.
 * The entry the next call will give (the cache's new top, unless a free pushes one
 * first) is prefetched for writing: its line was last written when another block was
 * allocated, usually long before, and the store into it at the next allocation would
 * wait for it. Prefetched now, it has the program's whole time between the two
 * allocations to arrive (python3's churn: about 4% of the run's time under full mode,
 * docs/agent.md "Costs"). */
static inline uint32_t ms_live_take_index(void)
{
    ms_tls *t = &ms_self;
    uint32_t n = t->nidx;
    if (MS_LIKELY(n > 0)) {
        t->nidx = --n;
        uint32_t idx = t->idx[n];
        if (MS_LIKELY(n > 0)) /* a prefetch never faults, whatever the address */
            __builtin_prefetch(MS_LIVE_AT(t->idx[n - 1]), 1, 3);
        return idx;
    }
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

/* The in-use byte is set last (release): a reader that sees it sees the entry. */
static inline void ms_live_store(uint32_t idx, uint64_t addr, uint64_t size, uint64_t ticks,
                                 uint32_t stack_id, uint32_t tid)
{
    char *chunk = MS_LIVE_CHUNK(idx);
    ms_live_entry *d = (ms_live_entry *)chunk + MS_LIVE_SLOT(idx);
    d->addr = addr;
    d->size = size;
    d->ticks = ticks;
    d->stack_id = stack_id;
    d->tid = tid;
    __atomic_store_n(MS_LIVE_MARKS_OF(chunk) + MS_LIVE_SLOT(idx), 1, __ATOMIC_RELEASE);
}

static inline void ms_live_clear(uint32_t idx)
{
    __atomic_store_n(MS_LIVE_MARK(idx), 0, __ATOMIC_RELEASE);
}

#endif
