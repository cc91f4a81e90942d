/* The live total and its peak: the threads' tables of pending changes (ms_pend), the
 * shared per-stack slots they flush into, the total with the byte trigger, and the chunks
 * a snapshot gets from them (PEAK, TEMP, HIST). The allocation path notes each change
 * inline (totals.h); the rest is here.
 * Runs inside the target: no malloc (tables are mapped), no lock (atomics). */
#include <stdint.h>
#include <string.h>

#include "agent/tables/tables.h"

int ms_ctl_track;

static struct {
    uint64_t live_total;   /* signed in spirit; wraps are clamped when read */
    uint64_t peak_total;
    uint64_t peak_ticks;   /* ms_ticks() at the peak (a coarse clock: a few ns) */
    uint64_t epoch;        /* bumped at every new peak */
    uint64_t trigger_at;   /* live_total >= this wakes the thread (UINT64_MAX = disarmed) */
    uint64_t peak_updates; /* times a new peak was reached */
    int dump_at_peak;
} tot = {.trigger_at = UINT64_MAX};

/* Per-stack live counters and their values at the last peak. A slot whose epoch is not
 * the current one has not changed since the peak: its current values are the peak's. */
typedef struct ms_peak_slot {
    int64_t cur_bytes, cur_blocks;
    int64_t peak_bytes, peak_blocks;
    uint64_t epoch;
    uint64_t temps; /* temporary allocations (totals.h) */
} ms_peak_slot;
/* indexed by stack id; grows with the stacks (chunks.h) */
static ms_chunks peak_slots;
static int peak_on;

/* A change of stack sid's live counters (and its temporaries) in its shared slot. */
static void ms_totals_apply(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps)
{
    if (!peak_on)
        return;
    ms_peak_slot *s = ms_chunks_get(&peak_slots, sid);
    if (MS_UNLIKELY(!s)) { /* the first change of a stack in a new chunk */
        if (ms_chunks_ensure(&peak_slots, sid) != 0)
            return;
        s = ms_chunks_at(&peak_slots, sid);
    }
    uint64_t epoch = __atomic_load_n(&tot.epoch, __ATOMIC_ACQUIRE);
    uint64_t seen = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE);
    if (seen != epoch &&
        __atomic_compare_exchange_n(&s->epoch, &seen, epoch, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED)) {
        /* first change since the peak moved: its value then is its value now */
        __atomic_store_n(&s->peak_bytes, __atomic_load_n(&s->cur_bytes, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&s->peak_blocks, __atomic_load_n(&s->cur_blocks, __ATOMIC_RELAXED),
                         __ATOMIC_RELAXED);
    }
    if (bytes)
        __atomic_fetch_add(&s->cur_bytes, bytes, __ATOMIC_RELAXED);
    if (blocks)
        __atomic_fetch_add(&s->cur_blocks, blocks, __ATOMIC_RELAXED);
    if (temps)
        __atomic_fetch_add(&s->temps, temps, __ATOMIC_RELAXED);
}

/* A change of the total: the byte trigger and the peak. */
static void tot_apply_total(int64_t bytes)
{
    uint64_t total = __atomic_add_fetch(&tot.live_total, (uint64_t)bytes, __ATOMIC_ACQ_REL);
    if (bytes <= 0 || (int64_t)total < 0)
        return;
    if (total >= __atomic_load_n(&tot.trigger_at, __ATOMIC_RELAXED)) {
        __atomic_store_n(&tot.trigger_at, UINT64_MAX, __ATOMIC_RELAXED);
        ms_control_trigger_reached();
    }
    if (!tot.dump_at_peak)
        return;
    uint64_t peak = __atomic_load_n(&tot.peak_total, __ATOMIC_RELAXED);
    while (total > peak) {
        if (__atomic_compare_exchange_n(&tot.peak_total, &peak, total, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&tot.epoch, 1, __ATOMIC_ACQ_REL);
            __atomic_store_n(&tot.peak_ticks, ms_ticks(), __ATOMIC_RELAXED);
            __atomic_fetch_add(&tot.peak_updates, 1, __ATOMIC_RELAXED);
            break;
        }
    }
}

void ms_totals_apply_now(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps)
{
    ms_totals_apply(sid, bytes, blocks, temps);
    if (bytes)
        tot_apply_total(bytes);
}

/* Allocation sizes (full mode), summed from the threads' tables when they flush. */
static uint64_t tot_hist[MS_HIST_BUCKETS];

/* Every table ever made, newest first (pushed, never removed: readers walk it without a
 * lock). A table is given back at its thread's exit and taken by a later thread. */
static ms_pend *pend_all;

ms_pend *ms_pend_new(void)
{
    if (ms_self.exit_done || !ms_ctl_track)
        return NULL;
    ms_pend *p;
    for (p = __atomic_load_n(&pend_all, __ATOMIC_ACQUIRE); p; p = p->next) {
        uint32_t free_ = 0; /* flushed at its thread's exit: every way empty */
        if (__atomic_load_n(&p->in_use, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&p->in_use, &free_, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            p->last_ptr = 0;
            p->band = 0; /* as a new table: its first change flushes and sets it */
            break;
        }
    }
    if (!p) {
        p = ms_sys_mmap(sizeof(ms_pend));
        if (!p)
            return NULL;
        p->in_use = 1;
        p->next = __atomic_load_n(&pend_all, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&pend_all, &p->next, p, 1, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED))
            ;
    }
    ms_self.pend = p;
    return p;
}

void ms_pend_unflushed(uint32_t sid, uint64_t *blocks, uint64_t *bytes)
{
    unsigned way = ms_pend_way(sid);
    for (ms_pend *p = __atomic_load_n(&pend_all, __ATOMIC_ACQUIRE); p; p = p->next) {
        if (!__atomic_load_n(&p->in_use, __ATOMIC_ACQUIRE))
            continue; /* given back: flushed, every way empty */
        ms_pend_ent *e = &p->ent[way];
        if (__atomic_load_n(&e->sid, __ATOMIC_RELAXED) == sid) {
            *blocks += __atomic_load_n(&e->alloc_blocks, __ATOMIC_RELAXED);
            *bytes += __atomic_load_n(&e->alloc_bytes, __ATOMIC_RELAXED);
        }
    }
}

void ms_pend_sums(ms_live_sum *s, uint32_t max_id)
{
    for (ms_pend *p = __atomic_load_n(&pend_all, __ATOMIC_ACQUIRE); p; p = p->next) {
        if (!__atomic_load_n(&p->in_use, __ATOMIC_ACQUIRE))
            continue; /* given back: flushed, every way empty */
        for (unsigned w = 0; w < MS_PEND_WAYS; w++) {
            ms_pend_ent *e = &p->ent[w];
            uint32_t sid = __atomic_load_n(&e->sid, __ATOMIC_RELAXED);
            if (sid && sid <= max_id) {
                s[sid].pend_blocks += __atomic_load_n(&e->alloc_blocks, __ATOMIC_RELAXED);
                s[sid].pend_bytes += __atomic_load_n(&e->alloc_bytes, __ATOMIC_RELAXED);
            }
        }
    }
}

static void pend_apply(ms_pend_ent *e)
{
    if (e->sid && (e->bytes || e->blocks || e->temps))
        ms_totals_apply(e->sid, e->bytes, e->blocks, e->temps);
    e->bytes = e->blocks = 0;
    e->temps = 0;
    if (e->alloc_blocks || e->alloc_bytes) { /* on the table's own thread: its shard */
        ms_stack_count_heap_alloc(ms_stack_known(e->sid), e->alloc_blocks, e->alloc_bytes);
        e->alloc_blocks = 0;
        e->alloc_bytes = 0;
    }
}

/* Entry e (the way of sid) holds another stack, or none: hand its changes to the shared
 * slot and the stack's record. The thread's pending total keeps them until the next flush
 * (the slots may lead the total by at most that much). An empty way is listed for the
 * next flush. */
static void pend_take(ms_pend *p, unsigned way, uint32_t sid)
{
    ms_pend_ent *e = &p->ent[way];
    if (e->sid)
        pend_apply(e);
    else
        p->dirty[p->ndirty++] = (uint16_t)way;
    e->sid = sid;
}

void ms_pend_flush(ms_pend *p)
{
    for (uint32_t i = 0; i < p->ndirty; i++) {
        ms_pend_ent *e = &p->ent[p->dirty[i]];
        pend_apply(e);
        /* emptied: a way that holds a stack is listed (the note's inline part tests the
         * stack alone); the stack's next change lists it again */
        e->sid = 0;
    }
    p->ndirty = 0;
    for (unsigned b = 0; b < MS_HIST_BUCKETS; b++)
        if (p->hist[b]) {
            __atomic_fetch_add(&tot_hist[b], p->hist[b], __ATOMIC_RELAXED);
            p->hist[b] = 0;
        }
    int64_t bytes = p->bytes;
    p->bytes = 0;
    p->events_left = MS_PEND_FLUSH_EVENTS;
    p->flush_due = 0;
    if (bytes)
        tot_apply_total(bytes);
    /* how far this thread may grow before it could make a new peak or reach the trigger */
    uint64_t total = ms_totals_live_total(), peak = ms_totals_peak_total();
    uint64_t limit = __atomic_load_n(&tot.trigger_at, __ATOMIC_RELAXED);
    if (tot.dump_at_peak && peak < limit)
        limit = peak;
    uint64_t grain = peak / 256;
    if (grain < 1024) /* a small program's ramp would flush at every block */
        grain = 1024;
    if (grain > MS_PEND_FLUSH_BYTES)
        grain = MS_PEND_FLUSH_BYTES;
    uint64_t room = limit > total ? limit - total : 0;
    if (room > (uint64_t)INT64_MAX / 2)
        room = (uint64_t)INT64_MAX / 2;
    p->band = room + grain + 1 + MS_PEND_FLUSH_BYTES - 1;
}

/* ms_totals_note_id (totals.h) when its inline part cannot apply the change. */
void ms_totals_note_slow(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps, int defer,
                         int counted)
{
    ms_pend *p = ms_ctl_track ? ms_pend_self() : NULL;
    if (MS_UNLIKELY(!p)) { /* nothing tracked, or no table: the record at once */
        if (counted)
            ms_stack_count_heap_alloc(ms_stack_known(sid), (uint64_t)blocks, (uint64_t)bytes);
        if (ms_ctl_track)
            ms_totals_apply_now(sid, bytes, blocks, temps);
        return;
    }
    if (p->flush_due)
        ms_pend_flush(p);
    unsigned way = ms_pend_way(sid);
    ms_pend_ent *e = &p->ent[way];
    if (e->sid != sid)
        pend_take(p, way, sid);
    e->bytes += bytes;
    e->blocks += blocks;
    e->temps += (uint16_t)temps;
    if (counted) {
        e->alloc_blocks++;
        e->alloc_bytes += (uint64_t)bytes;
    }
    p->bytes += bytes;
    if (ms_pend_due(p, p->bytes)) {
        if (defer)
            p->flush_due = 1;
        else
            ms_pend_flush(p);
    }
}

void ms_totals_flush_self(void)
{
    ms_pend *p = ms_self.pend;
    if (p)
        ms_pend_flush(p);
}

void ms_pend_thread_exit(void)
{
    ms_pend *p = ms_self.pend;
    if (!p)
        return;
    ms_pend_flush(p);
    ms_self.pend = NULL;
    /* kept mapped (a reader of the counters may be walking it) and given back */
    __atomic_store_n(&p->in_use, 0, __ATOMIC_RELEASE);
}

uint64_t ms_totals_live_total(void)
{
    int64_t t = (int64_t)__atomic_load_n(&tot.live_total, __ATOMIC_RELAXED);
    return t > 0 ? (uint64_t)t : 0;
}

uint64_t ms_totals_peak_total(void)
{
    return __atomic_load_n(&tot.peak_total, __ATOMIC_RELAXED);
}

uint64_t ms_totals_peak_updates(void)
{
    return __atomic_load_n(&tot.peak_updates, __ATOMIC_RELAXED);
}

void ms_totals_arm(uint64_t at)
{
    __atomic_store_n(&tot.trigger_at, at, __ATOMIC_RELAXED);
}

void ms_totals_init(int dump_at_peak, uint64_t trigger_bytes, uint64_t stack_capacity)
{
    tot.dump_at_peak = dump_at_peak;
    if (trigger_bytes || dump_at_peak) {
        tot.trigger_at = trigger_bytes ? trigger_bytes : UINT64_MAX;
        /* 16K slots (768 KiB) per chunk, as the stack records */
        if (dump_at_peak && ms_stack_get(1) &&
            ms_chunks_init(&peak_slots, stack_capacity + 2, 14, sizeof(ms_peak_slot)) == 0)
            peak_on = 1;
        __atomic_store_n(&ms_ctl_track, 1, __ATOMIC_RELEASE);
    } else {
        tot.trigger_at = UINT64_MAX;
    }
}

void ms_totals_write(ms_snap_writer *w, int hist)
{
    if (tot.dump_at_peak && peak_on) {
        uint64_t epoch = __atomic_load_n(&tot.epoch, __ATOMIC_ACQUIRE);
        uint64_t maxid = ms_stack_max_id();
        ms_sw_begin(w, MS_CHUNK_PEAK, 0);
        ms_sw_u64(w, ms_totals_peak_total());
        uint64_t pt = __atomic_load_n(&tot.peak_ticks, __ATOMIC_RELAXED);
        ms_sw_u64(w, pt ? ms_ticks_to_ns(pt) : 0);
        uint64_t count_at = ms_sw_chunk_pos(w);
        ms_sw_u32(w, 0);
        uint32_t n = 0;
        for (uint64_t id = 0; id <= maxid; id++) {
            ms_peak_slot *s = ms_chunks_get(&peak_slots, id);
            if (!s)
                continue;
            int at_peak = __atomic_load_n(&s->epoch, __ATOMIC_ACQUIRE) == epoch;
            int64_t bytes = at_peak ? s->peak_bytes : s->cur_bytes;
            int64_t blocks = at_peak ? s->peak_blocks : s->cur_blocks;
            if (bytes <= 0 && blocks <= 0)
                continue;
            ms_sw_u32(w, (uint32_t)id);
            ms_sw_u32(w, 0);
            ms_sw_u64(w, blocks > 0 ? (uint64_t)blocks : 0);
            ms_sw_u64(w, bytes > 0 ? (uint64_t)bytes : 0);
            n++;
        }
        ms_sw_patch_u32(w, count_at, n);
        ms_sw_end(w);
        /* temporary allocations per stack */
        ms_sw_begin(w, MS_CHUNK_TEMP, 0);
        count_at = ms_sw_chunk_pos(w);
        ms_sw_u32(w, 0);
        n = 0;
        for (uint64_t id = 1; id <= maxid; id++) {
            const ms_peak_slot *s = ms_chunks_get(&peak_slots, id);
            uint64_t t = s ? __atomic_load_n(&s->temps, __ATOMIC_RELAXED) : 0;
            if (!t)
                continue;
            ms_sw_u32(w, (uint32_t)id);
            ms_sw_u32(w, 0);
            ms_sw_u64(w, t);
            n++;
        }
        ms_sw_patch_u32(w, count_at, n);
        ms_sw_end(w);
    }
    if (hist) {
        /* allocation sizes: buckets [lo, hi] with their number of allocations */
        ms_sw_begin(w, MS_CHUNK_HIST, 0);
        uint64_t count_at = ms_sw_chunk_pos(w);
        ms_sw_u32(w, 0);
        uint32_t n = 0;
        for (unsigned b = 0; b < MS_HIST_BUCKETS; b++) {
            uint64_t c = __atomic_load_n(&tot_hist[b], __ATOMIC_RELAXED);
            if (!c)
                continue;
            ms_sw_u64(w, b ? 1ull << (b - 1) : 0);
            ms_sw_u64(w, b == 0 ? 0 : b == 64 ? UINT64_MAX : (1ull << b) - 1);
            ms_sw_u64(w, c);
            n++;
        }
        ms_sw_patch_u32(w, count_at, n);
        ms_sw_end(w);
    }
}
