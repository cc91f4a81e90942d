/* The live total and its peak (totals.c): each thread's table of pending changes, noted
 * inline on the recording path, and the accounting of a block in its stack's counters.
 * Part of the tables layer (tables.h). Runs inside the target: no malloc, no lock. */
#ifndef MS_AGENT_TOTALS_H
#define MS_AGENT_TOTALS_H

#include "agent/tables/stacks.h"
#include "core/snapshot_write.h"

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
    uint32_t flush_due;   /* a deferred flush (ms_totals_note_id) */
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
void ms_totals_apply_now(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps) MS_INTERNAL;

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
void ms_totals_note_slow(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
                         int defer, int counted) MS_INTERNAL;

/* defer: an allocation noted before its block is in the live table (ms_record_prepare):
 * a flush it makes due waits for the thread's next change (or snapshot, or exit), so that
 * a byte trigger's snapshot sees the block, and the commit calls nothing.
 * counted: one heap block's allocation (blocks 1), whose stack counters the note keeps;
 * without a table they go to the stack's record at once. */
static inline void ms_totals_note_id(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
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
    ms_totals_note_slow(sid, bytes, blocks, temps, defer, counted);
}

static inline void ms_totals_note(const ms_stack_rec *r, int64_t bytes, int64_t blocks)
{
    ms_totals_note_id(r->id, bytes, blocks, 0, bytes > 0, 0);
}

/* blocks > 1: a sampled record standing for several blocks. ms_totals_note keeps the
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
    ms_totals_note(r, (int64_t)bytes, (int64_t)blocks);
}
static inline void ms_stack_account_free_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    __atomic_fetch_add(&r->free_blocks, blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->free_bytes, bytes, __ATOMIC_RELAXED);
    ms_totals_note(r, -(int64_t)bytes, -(int64_t)blocks);
}
static inline void ms_stack_account_alloc(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_alloc_n(r, 1, bytes);
}
static inline void ms_stack_account_free(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_free_n(r, 1, bytes);
}

/* ---------------------------------------------------------------------------
 * The live total and the peak (totals.c). Enabled by dump_at_peak (the default) or
 * trigger_bytes: every recorded allocation and free goes through ms_totals_note_id()
 * above, which batches per thread and flushes here.
 * ------------------------------------------------------------------------- */
extern int ms_ctl_track MS_INTERNAL;
/* Sets the totals up (services/control.c, once): the per-stack peak counters with
 * dump_at_peak (stack ids 0..stack_capacity), and the byte trigger (0: none). */
void ms_totals_init(int dump_at_peak, uint64_t trigger_bytes, uint64_t stack_capacity) MS_INTERNAL;
/* Arms the byte trigger again at `at` (UINT64_MAX: disarmed). */
void ms_totals_arm(uint64_t at) MS_INTERNAL;
/* Flushes the calling thread's pending changes (before it writes a snapshot). */
void ms_totals_flush_self(void) MS_INTERNAL;
/* Current and peak totals of tracked live bytes (0 when tracking is off). */
uint64_t ms_totals_live_total(void) MS_INTERNAL;
uint64_t ms_totals_peak_total(void) MS_INTERNAL;
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
