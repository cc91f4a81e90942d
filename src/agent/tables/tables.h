/* The tables layer (src/agent/tables): what the agent knows, in memory of its own. The
 * call-stack table with its counters, the threads' pending changes and the live total
 * with its peak (totals.c), the live heap blocks (live.c, live_hot.h), the address table
 * (addr_table.h) and the chunked arrays they grow in (chunks.h). It calls the platform
 * layer, and one hook above it (below). Runs inside the target: no malloc, no lock held
 * across fork. */
#ifndef MS_AGENT_TABLES_H
#define MS_AGENT_TABLES_H

#include "agent/platform/platform.h"
#include "agent/tables/chunks.h"
#include "memsight/snapshot_format.h"
#include "core/snapshot_write.h"

/* A table could not grow (no address space or memory): counted in table_grow_failures,
 * and told once on stderr (chunks.c). */
void ms_table_grow_failed(void) MS_INTERNAL;

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

/* ---------------------------------------------------------------------------
 * The live total and the peak (dump_at_peak, on by default; trigger_bytes). Every
 * recorded change is first added to the calling thread's own table of pending changes
 * (plain stores on memory no other thread touches), keyed by stack id; the table is
 * flushed into the shared per-stack slots and the total every MS_PEND_FLUSH_EVENTS
 * changes, when the thread's pending bytes fall by MS_PEND_FLUSH_BYTES, at thread exit
 * and before the thread writes a snapshot, and as soon as they grow by more than the
 * `room` computed at the last flush: the distance from the total to the peak (or to the
 * byte trigger) then, plus a grain of 1/256 of the peak (1 KiB to MS_PEND_FLUSH_BYTES).
 * So a single-threaded program's peak is exact to within the grain, and with several
 * threads within the grain plus what the other threads hold unflushed; the ramp towards
 * a new peak flushes once per grain, and no shared cache line is written per call. The same table counts temporary allocations (a block freed by the thread
 * that allocated it, before it allocated anything else: heaptrack's definition) and the
 * allocation size histogram (full mode).
 * ------------------------------------------------------------------------- */
#define MS_PEND_WAYS 256
#define MS_PEND_FLUSH_EVENTS 4096
#define MS_PEND_FLUSH_BYTES (64 * 1024)
#define MS_HIST_BUCKETS 65 /* 0 bytes, then [2^(b-1), 2^b) for b = 1..64 */
typedef struct ms_pend_ent {
    uint32_t sid;          /* 0: empty; else listed in ms_pend.dirty (a flush empties the
                            * ways it lists, a way is listed when it is filled) */
    /* at most one per change each: a flush comes within MS_PEND_FLUSH_EVENTS + 1 */
    uint16_t temps;
    uint16_t alloc_blocks; /* heap blocks allocated from the stack (one block a change) */
    int64_t blocks, bytes; /* the stack's live change */
    uint64_t alloc_bytes;  /* their bytes */
} ms_pend_ent;             /* 32 bytes: the way's address is a shift */
/* The heap blocks' allocation counters are kept here instead of in the stack's record
 * (one per-thread record per call): a flush adds them to the record's shard, and readers
 * of the counters add what is still here (ms_pend_unflushed). */
_Static_assert(MS_PEND_FLUSH_EVENTS + 1 <= UINT16_MAX, "a way's 16-bit counts overflow");
typedef struct ms_pend {
    int64_t bytes;        /* the sum of the entries' bytes: this thread's unflushed share */
    uint64_t band;        /* room + MS_PEND_FLUSH_BYTES - 1 (ms_pend_due) */
    uint32_t events_left; /* changes until the periodic flush */
    uint32_t flush_due;   /* a deferred flush (ms_control_note_id) */
    uint64_t last_ptr;    /* the block this thread allocated last (temporaries) */
    struct ms_pend *next; /* every table ever made, for the counters' readers */
    uint32_t in_use;      /* a thread's; 0: given back at its exit, for the next thread */
    uint32_t ndirty;
    uint16_t dirty[MS_PEND_WAYS]; /* entries changed since the last flush */
    ms_pend_ent ent[MS_PEND_WAYS] __attribute__((aligned(64))); /* a way in one line */
    uint64_t hist[MS_HIST_BUCKETS];
} ms_pend;
ms_pend *ms_pend_new(void) MS_INTERNAL;
void ms_pend_flush(ms_pend *p) MS_INTERNAL;
/* Heap allocations of stack sid still in the threads' tables (added to *blocks, *bytes):
 * with the record's shards, the stack's allocation counters. Tables are read without a
 * lock (never unmapped: a table is given back at thread exit and reused): exact once the
 * threads are quiet, as the shards are; while a thread flushes, a read may count its
 * stack's changes in both places or in neither for a moment. */
void ms_pend_unflushed(uint32_t sid, uint64_t *blocks, uint64_t *bytes) MS_INTERNAL;
/* The same for every stack at once: added to s[sid].pend_* for sid <= max_id. */
struct ms_live_sum;
void ms_pend_sums(struct ms_live_sum *s, uint32_t max_id) MS_INTERNAL;
void ms_pend_thread_exit(void) MS_INTERNAL;
/* Applies a change to the shared slot of stack sid and to the total at once (a thread
 * without a table: exiting, or out of memory). */
void ms_control_apply_now(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps) MS_INTERNAL;

/* The way of stack sid in a thread's table (256 ways). */
static inline unsigned ms_pend_way(uint32_t sid)
{
    return (sid * 0x9E3779B1u) >> 24;
}

/* A change that brought the thread's pending bytes to b is the one to flush at: the
 * MS_PEND_FLUSH_EVENTS-th since the last flush, b at `room` or at -MS_PEND_FLUSH_BYTES.
 * One unsigned compare for both bounds: band is room + MS_PEND_FLUSH_BYTES - 1 (room >= 0;
 * a new table's band of 0 flushes at its first change, which sets both). */
static inline int ms_pend_due(ms_pend *p, int64_t b)
{
    return --p->events_left == 0 || (uint64_t)(b + MS_PEND_FLUSH_BYTES - 1) >= p->band;
}

static inline ms_pend *ms_pend_self(void)
{
    ms_pend *p = (ms_pend *)ms_self.pend;
    if (MS_UNLIKELY(!p))
        p = ms_pend_new();
    return p;
}

/* The note's rarer parts (no table yet, a flush due, the way held by another stack or
 * empty): out of line, so that the inline part keeps nothing live across a call and its
 * callers' frames stay small. */
void ms_control_note_slow(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
                          int defer, int counted) MS_INTERNAL;

/* defer: an allocation noted before its block is in the live table (ms_record_prepare):
 * a flush it makes due waits for the thread's next change (or snapshot, or exit), so that
 * a byte trigger's snapshot sees the block, and the commit calls nothing.
 * counted: one heap block's allocation (blocks 1), whose stack counters the note keeps;
 * without a table they go to the stack's record at once. */
static inline void ms_control_note_id(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
                                      int defer, int counted)
{
    ms_pend *p = (ms_pend *)ms_self.pend; /* none while nothing is tracked (ms_pend_new) */
    if (MS_LIKELY(p != NULL) && MS_LIKELY(!p->flush_due)) {
        ms_pend_ent *e = &p->ent[ms_pend_way(sid)];
        if (MS_LIKELY(e->sid == sid)) { /* listed as dirty: a flush empties the way */
            e->bytes += bytes;
            e->blocks += blocks;
            e->temps += (uint16_t)temps;
            if (counted) {
                e->alloc_blocks++;
                e->alloc_bytes += (uint64_t)bytes;
            }
            int64_t b = p->bytes + bytes;
            p->bytes = b;
            if (MS_UNLIKELY(ms_pend_due(p, b))) {
                if (defer)
                    p->flush_due = 1;
                else
                    ms_pend_flush(p);
            }
            return;
        }
    }
    ms_control_note_slow(sid, bytes, blocks, temps, defer, counted);
}

static inline void ms_control_note(const ms_stack_rec *r, int64_t bytes, int64_t blocks)
{
    ms_control_note_id(r->id, bytes, blocks, 0, bytes > 0, 0);
}

/* blocks > 1: a sampled record standing for several blocks. ms_control_note keeps the
 * total and the peak. */
static inline void ms_stack_count_alloc_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    unsigned sh = ms_self.tid & (MS_STACK_SHARDS - 1); /* 0 (shard 0) until the tid is known */
    uint64_t *c = &r->alloc_blocks;
    if (sh) /* every stack interned has its shards mapped (stacks.c) */
        c = (uint64_t *)ms_chunks_at(&ms_stack_shards[sh - 1], r->id);
    __atomic_fetch_add(&c[0], blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c[1], bytes, __ATOMIC_RELAXED);
}
static inline void ms_stack_account_alloc_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    ms_stack_count_alloc_n(r, blocks, bytes);
    ms_control_note(r, (int64_t)bytes, (int64_t)blocks);
}
static inline void ms_stack_account_free_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    __atomic_fetch_add(&r->free_blocks, blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->free_bytes, bytes, __ATOMIC_RELAXED);
    ms_control_note(r, -(int64_t)bytes, -(int64_t)blocks);
}
static inline void ms_stack_account_alloc(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_alloc_n(r, 1, bytes);
}
static inline void ms_stack_account_free(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_free_n(r, 1, bytes);
}

/* ===========================================================================
 * Live heap blocks (live.c): a dense array of entries; each tracked block's header
 * (below) names its entry, so allocation and free write one entry and never search.
 * Whether an entry is in use is a byte of its own, in a dense array beside the entries
 * (live_hot.h): a free writes that byte only, not the entry's cold line.
 * ========================================================================= */
typedef struct ms_live_entry {
    uint64_t addr;       /* the program's pointer (kept after the block is freed) */
    uint64_t size;       /* bytes asked for */
    uint64_t ticks;      /* ms_ticks() at allocation; ms_ticks_to_ns() converts */
    uint32_t stack_id;
    uint32_t tid;
} ms_live_entry;         /* 32 bytes */

int ms_live_init(uint64_t capacity) MS_INTERNAL;
/* Taking and giving back entry indices, storing and clearing entries: live_hot.h
 * (inline, for the recording path). */
int ms_live_get(uint32_t idx, ms_live_entry *out) MS_INTERNAL;
/* Gives the calling thread's cached indices back (thread exit). */
void ms_live_thread_exit(void) MS_INTERNAL;
/* Looks a program pointer up through its header; 1 and *out if it is a live block. */
int ms_live_find(uint64_t addr, ms_live_entry *out) MS_INTERNAL;
/* Exact number of live entries (scans the used part of the array: not for hot paths). */
uint64_t ms_live_count(void) MS_INTERNAL;
uint64_t ms_live_bytes_reserved(void) MS_INTERNAL; /* agent memory used by the table */
#define MS_ITER_NOLOCK 0x1u /* accepted for compatibility: iteration takes no lock */
/* Calls fn for every live heap block. Entries are read without a lock (a block freed
 * meanwhile may or may not be seen). fn must not allocate; a non-zero return stops. */
typedef int (*ms_live_fn)(const ms_live_entry *e, unsigned kind, void *arg);
int ms_live_foreach(ms_live_fn fn, void *arg, unsigned flags) MS_INTERNAL;
void ms_live_fork_prepare(void) MS_INTERNAL;
void ms_live_fork_parent(void) MS_INTERNAL;
void ms_live_fork_child(void) MS_INTERNAL;

/* ---------------------------------------------------------------------------
 * The live total and the peak (totals.c). Enabled by dump_at_peak (the default) or
 * trigger_bytes: every recorded allocation and free goes through ms_control_note_id()
 * above, which batches per thread and flushes here.
 * ------------------------------------------------------------------------- */
extern int ms_ctl_track MS_INTERNAL;
/* Sets the totals up (services/control.c, once): the per-stack peak counters with
 * dump_at_peak (stack ids 0..stack_capacity), and the byte trigger (0: none). */
void ms_totals_init(int dump_at_peak, uint64_t trigger_bytes, uint64_t stack_capacity) MS_INTERNAL;
/* Arms the byte trigger again at `at` (UINT64_MAX: disarmed). */
void ms_totals_arm(uint64_t at) MS_INTERNAL;
/* Flushes the calling thread's pending changes (before it writes a snapshot). */
void ms_control_flush_self(void) MS_INTERNAL;
/* Current and peak totals of tracked live bytes (0 when tracking is off). */
uint64_t ms_control_live_total(void) MS_INTERNAL;
uint64_t ms_control_peak_total(void) MS_INTERNAL;
/* Times a new peak was reached (HLTH). */
uint64_t ms_totals_peak_updates(void) MS_INTERNAL;
/* Appends the PEAK and TEMP chunks (with dump_at_peak) and, with `hist`, the allocation
 * size histogram HIST (snapshot hook of services/control.c). */
void ms_totals_write(ms_snap_writer *w, int hist) MS_INTERNAL;
/* Hook, implemented above (services/control.c): the live total reached the byte
 * trigger; wakes the control thread, which writes the trigger snapshot. Called once per
 * arming, from the flush that crossed it. */
void ms_control_trigger_reached(void) MS_INTERNAL;

#endif