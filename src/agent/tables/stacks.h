/* The call-stack table (stacks.c): interned (kind, pcs) with their cumulative counters,
 * sharded per thread. Part of the tables layer (tables.h).
 * Runs inside the target: no malloc, lock-free. */
#ifndef MS_AGENT_STACKS_H
#define MS_AGENT_STACKS_H

#include "agent/platform/platform.h"
#include "agent/tables/chunks.h"
#include "memsight/snapshot_format.h"

/* ===========================================================================
 * Stack table (stacks.c): interned (kind, pcs), lock-free, ids from 1.
 * ========================================================================= */
typedef struct ms_stack_rec {
    uint64_t hash;
    uint64_t pcs_off;     /* index into the pc arena */
    uint32_t depth;
    uint16_t flags;       /* MS_STACKF_* */
    uint8_t kind;
    uint8_t thread_ref;   /* a thread's creation stack: written even with no allocation */
    uint64_t alloc_blocks, alloc_bytes; /* cumulative, relaxed atomics */
    uint64_t free_blocks, free_bytes;
    uint32_t id;
    uint32_t pad2;
} __attribute__((aligned(64))) ms_stack_rec;

int ms_stacks_init(uint64_t capacity) MS_INTERNAL;
/* Returns the id of (kind, pcs[0..depth)), inserting it; 0 when the table is full. */
uint32_t ms_stack_intern(unsigned kind, const uint64_t *pcs, unsigned depth, unsigned flags) MS_INTERNAL;
ms_stack_rec *ms_stack_get(uint32_t id) MS_INTERNAL; /* NULL if unknown */
extern ms_chunks ms_stack_recs MS_INTERNAL;
/* 16K records (1 MiB) per chunk: ms_own_ranges keeps a few hundred mappings at 1M stacks */
#define MS_STACK_RECS_SHIFT 14
/* The record of an id this thread had from ms_stack_intern (directly or through a cache):
 * no bounds check and no call, for the recording path; id 0 has none. */
static inline ms_stack_rec *ms_stack_known(uint32_t id)
{
    return id ? MS_CHUNKS_AT(&ms_stack_recs, id, MS_STACK_RECS_SHIFT, ms_stack_rec) : NULL;
}
/* Agent memory the stack tables hold (records, shards, pcs, index). */
uint64_t ms_stacks_bytes_mapped(void) MS_INTERNAL;
void ms_stacks_fork_prepare(void) MS_INTERNAL;
void ms_stacks_fork_parent(void) MS_INTERNAL;
void ms_stacks_fork_child(void) MS_INTERNAL;
const uint64_t *ms_stack_pcs(const ms_stack_rec *r) MS_INTERNAL;
uint32_t ms_stack_max_id(void) MS_INTERNAL; /* ids are 1..max_id */
/* Counters of a stack at a moment; live = alloc - free. */
void ms_stack_counters(const ms_stack_rec *r, ms_snap_counters *c) MS_INTERNAL;
/* Full mode with no live-total tracking (no sampling, no min_size, no peak/trigger):
 * free() does not touch the heap stack's record (a cold cache line and a locked add per
 * call); the free counters of heap stacks are then derived when needed from the live
 * table: free = alloc - live. ms_stack_live_sums() gives live blocks/bytes per heap
 * stack id (array of max_id+1, mmap'ed; release with ms_sys_munmap(p, *len)). */
extern int ms_heap_frees_derived MS_INTERNAL;
typedef struct ms_live_sum {
    uint64_t blocks, bytes;
    /* the stack's allocations still in the threads' tables (ms_pend_sums), read when
     * the array was made: one pass over the tables, not one per stack */
    uint64_t pend_blocks, pend_bytes;
} ms_live_sum;
ms_live_sum *ms_stack_live_sums(uint32_t max_id, size_t *len) MS_INTERNAL;
/* The same array with no live sums yet, for a caller that walks the live table itself and
 * adds each entry with ms_stack_live_sum_add (a snapshot's block list: one pass for both). */
ms_live_sum *ms_stack_live_sums_new(uint32_t max_id, size_t *len) MS_INTERNAL;
static inline void ms_stack_live_sum_add(ms_live_sum *s, uint32_t max_id, uint32_t stack_id,
                                         uint64_t size)
{
    if (stack_id <= max_id) {
        s[stack_id].blocks++;
        s[stack_id].bytes += size;
    }
}
/* A stack's counters now, its live ones from sums (of ms_stack_live_sums up to max_id, or
 * NULL) when its frees are derived. A stack above max_id (interned after the sums were
 * taken) keeps the counters it has. */
void ms_stack_counters_with(const ms_stack_rec *r, const ms_live_sum *sums, uint32_t max_id,
                            ms_snap_counters *c) MS_INTERNAL;
/* Live bytes and blocks of every kind, summed over the stacks as a snapshot sums them. */
void ms_stack_live_totals(uint64_t bytes[MS_KIND_COUNT], uint64_t blocks[MS_KIND_COUNT]) MS_INTERNAL;

/* Allocation counters are sharded: threads allocating from one call site would otherwise
 * bounce the record's cache line on every locked add. Shard 0 is the record's own
 * alloc_blocks/alloc_bytes; shards 1..MS_STACK_SHARDS-1 live in a side array (one
 * {blocks, bytes} pair per stack per shard, each shard a separate table that grows with
 * the records), chosen by the thread id. Readers sum them (ms_stack_counters,
 * ms_stack_used): exact once quiet. */
#define MS_STACK_SHARDS 4
extern ms_chunks ms_stack_shards[MS_STACK_SHARDS - 1] MS_INTERNAL; /* [shard-1]: id -> pair */
/* Heap stacks: shard 0 belongs to one thread, the first that records a block (usually the
 * main thread: the whole program when it is single-threaded), which adds to it without a
 * locked instruction (ms_arch_add_own); every other thread adds to shards 1.. with
 * relaxed atomics by its thread id. Only one thread ever writes shard 0, so the sums stay
 * exact. Region stacks (mmap.c) keep the shards by thread id: their records are other
 * records. */
/* The owner's adds inline (one test of count_own); the claim and the other threads'
 * shards out of line (stacks.c). */
void ms_stack_count_heap_alloc_other(ms_stack_rec *r, uint64_t blocks, uint64_t bytes) MS_INTERNAL;
static inline void ms_stack_count_heap_alloc(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    if (MS_UNLIKELY(ms_self.count_own <= 0)) {
        ms_stack_count_heap_alloc_other(r, blocks, bytes);
        return;
    }
    ms_arch_add_own(&r->alloc_blocks, blocks);
    ms_arch_add_own(&r->alloc_bytes, bytes);
}
/* 1 if the stack ever had an allocation counted (sum over shards). */
int ms_stack_used(const ms_stack_rec *r) MS_INTERNAL;

#endif
