/* Live heap blocks: a dense preallocated (mmap) array of 32-byte entries indexed by a
 * number that the block's own 16-byte header carries (record/record.h), and an in-use byte
 * per entry in each chunk's tail (live_hot.h). Allocation and free never search:
 * allocation writes one entry and its byte, free the byte alone (a hash keyed by
 * address missed on nearly every call). Free indices are cached
 * per thread and exchanged with a global pool in batches, so no global lock is taken
 * per call. Runs inside the target: mmap memory only; no lock is held across fork. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/tables/tables.h"
#include "agent/arch/arch.h"
#include "agent/tables/chunks.h"
#include "agent/tables/live_hot.h"

ms_chunks ms_live_entries;         /* index 0 unused (live_hot.h) */
static uint32_t ms_entries_cap;
static uint64_t ms_pool_cap;      /* entries the pool's mapping holds (grows, under the lock) */
static uint32_t ms_hwm = 1;       /* next never-used index */
/* global pool of free indices, exchanged in batches of MS_IDX_BATCH */
static uint32_t *ms_pool;
static uint32_t ms_pool_n;
static int ms_pool_lock;
#define MS_IDX_BATCH (MS_IDX_CACHE / 2)

static void pool_lock(void)
{
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_load_n(&ms_pool_lock, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&ms_pool_lock, 1, __ATOMIC_ACQUIRE))
            return;
        if (spins > 64)
            sched_yield();
        else
            ms_arch_cpu_relax();
    }
}

static void pool_unlock(void)
{
    __atomic_store_n(&ms_pool_lock, 0, __ATOMIC_RELEASE);
}

int ms_live_init(uint64_t capacity)
{
    if (capacity < 1024)
        capacity = 1024;
    if (capacity > 0xfffffff0ull)
        capacity = 0xfffffff0ull;
    ms_entries_cap = (uint32_t)capacity + 1;
    ms_pool_cap = 4096;
    ms_pool = ms_sys_mmap(ms_pool_cap * sizeof(uint32_t));
    return ms_chunks_init_tail(&ms_live_entries, ms_entries_cap, MS_LIVE_CHUNK_SHIFT,
                               sizeof(ms_live_entry), MS_LIVE_CHUNK_ENTRIES) == 0 &&
                   ms_pool
               ? 0
               : -1;
}

/* Room for n free indices in the pool (lock held): the pool doubles when it must, as
 * blocks are freed; when it cannot, the indices stay in the thread's cache. */
static int pool_room(uint64_t n)
{
    if (n <= ms_pool_cap)
        return 1;
    uint64_t cap = ms_pool_cap;
    while (cap < n)
        cap *= 2;
    void *r = ms_sys_mremap(ms_pool, ms_pool_cap * sizeof(uint32_t), cap * sizeof(uint32_t));
    if (!r) {
        static uint64_t failed_cap; /* counted once per size it could not reach */
        if (__atomic_exchange_n(&failed_cap, cap, __ATOMIC_RELAXED) != cap)
            ms_table_grow_failed();
        return 0;
    }
    ms_pool = r;
    ms_pool_cap = cap;
    return 1;
}

/* Refills the calling thread's cache: a batch from the pool, else fresh indices. */
MS_NOINLINE uint32_t ms_live_refill(void)
{
    ms_tls *t = &ms_self;
    pool_lock();
    if (ms_pool_n > 0) {
        uint32_t k = ms_pool_n < MS_IDX_BATCH ? ms_pool_n : MS_IDX_BATCH;
        ms_pool_n -= k;
        memcpy(t->idx, ms_pool + ms_pool_n, k * sizeof(uint32_t));
        t->nidx = k;
    }
    pool_unlock();
    if (t->nidx == 0) {
        if (__atomic_load_n(&ms_hwm, __ATOMIC_RELAXED) >= ms_entries_cap)
            return 0; /* full (until indices come back through the pool) */
        uint32_t start = __atomic_fetch_add(&ms_hwm, MS_IDX_BATCH, __ATOMIC_RELAXED);
        uint32_t end = start + MS_IDX_BATCH;
        if (start >= ms_entries_cap)
            return 0;
        if (end > ms_entries_cap)
            end = ms_entries_cap;
        if (ms_chunks_ensure(&ms_live_entries, start) != 0 || ms_chunks_ensure(&ms_live_entries, end - 1) != 0)
            return 0; /* no memory for the table's next chunk: counted, the block untracked */
        uint32_t n = 0;
        for (uint32_t i = end; i > start;) /* popped from the end: increasing order */
            t->idx[n++] = --i;
        t->nidx = n;
    }
    return t->idx[--t->nidx];
}

static void live_spill(void)
{
    ms_tls *t = &ms_self;
    pool_lock();
    uint32_t k = MS_IDX_BATCH;
    if (ms_pool_n + k <= ms_entries_cap && pool_room(ms_pool_n + k)) {
        memcpy(ms_pool + ms_pool_n, t->idx + t->nidx - k, k * sizeof(uint32_t));
        ms_pool_n += k;
        t->nidx -= k;
    }
    pool_unlock();
}

MS_NOINLINE void ms_live_spill_put(uint32_t idx)
{
    ms_tls *t = &ms_self;
    live_spill();
    if (t->nidx < MS_IDX_CACHE) /* else the pool is full too: the index is lost */
        t->idx[t->nidx++] = idx;
}

void ms_live_thread_exit(void)
{
    ms_tls *t = &ms_self;
    while (t->nidx >= MS_IDX_BATCH) {
        uint32_t before = t->nidx;
        live_spill();
        if (t->nidx == before)
            break;
    }
    if (t->nidx) {
        pool_lock();
        if (ms_pool_n + t->nidx <= ms_entries_cap && pool_room(ms_pool_n + t->nidx)) {
            memcpy(ms_pool + ms_pool_n, t->idx, t->nidx * sizeof(uint32_t));
            ms_pool_n += t->nidx;
            t->nidx = 0;
        }
        pool_unlock();
    }
}

static uint32_t live_hwm(void)
{
    uint32_t hwm = __atomic_load_n(&ms_hwm, __ATOMIC_RELAXED);
    return hwm > ms_entries_cap ? ms_entries_cap : hwm;
}

/* The chunk whose first index is c0, below the high-water mark hwm: its entries, its
 * in-use bytes and how many of them are used (0 when not mapped). The readers below go
 * chunk by chunk: the bytes are read in a row, the entries only where in use. */
static uint32_t chunk_view(uint32_t c0, uint32_t hwm, const ms_live_entry **e,
                           const uint8_t **mark)
{
    const char *chunk = ms_chunks_get(&ms_live_entries, c0);
    if (!chunk)
        return 0;
    *e = (const ms_live_entry *)chunk;
    *mark = MS_LIVE_MARKS_OF(chunk);
    return hwm - c0 < MS_LIVE_CHUNK_ENTRIES ? hwm - c0 : MS_LIVE_CHUNK_ENTRIES;
}

/* Entry i and its in-use byte, NULL when i's chunk is not mapped (any i may be asked). */
static const ms_live_entry *entry_at(uint32_t i, const uint8_t **mark)
{
    const ms_live_entry *e;
    if (i >= ms_entries_cap || !chunk_view(i - (uint32_t)MS_LIVE_SLOT(i), i + 1, &e, mark))
        return NULL;
    *mark += MS_LIVE_SLOT(i);
    return e + MS_LIVE_SLOT(i);
}

/* Entry i into *out when it is in use. The copy is not atomic: a block freed and its
 * entry taken again meanwhile may give a mix of both (as any unlocked reader may). */
static int entry_copy(uint32_t i, ms_live_entry *out)
{
    const uint8_t *mark;
    const ms_live_entry *e = entry_at(i, &mark);
    if (!e || !__atomic_load_n(mark, __ATOMIC_ACQUIRE))
        return 0;
    *out = *e;
    return out->addr != 0;
}

int ms_live_get(uint32_t idx, ms_live_entry *out)
{
    return idx && entry_copy(idx, out); /* any index: headers are checked through here */
}

uint64_t ms_live_count(void)
{
    uint64_t n = 0; /* exact but O(high-water mark): for snapshots, not the hot path */
    uint32_t hwm = live_hwm();
    for (uint32_t c0 = 0; c0 < hwm; c0 += MS_LIVE_CHUNK_ENTRIES) {
        const ms_live_entry *e;
        const uint8_t *mark;
        uint32_t used = chunk_view(c0, hwm, &e, &mark);
        for (uint32_t i = 0; i < used; i++) /* index 0 is never in use */
            n += __atomic_load_n(&mark[i], __ATOMIC_RELAXED) != 0;
    }
    return n;
}

uint64_t ms_live_bytes_reserved(void)
{
    uint32_t hwm = live_hwm();
    /* touched pages of the entry array, of the in-use bytes and of the pool */
    return ((uint64_t)hwm * sizeof(ms_live_entry) + 4095) / 4096 * 4096 +
           ((uint64_t)hwm + 4095) / 4096 * 4096 +
           ((uint64_t)ms_pool_n * 4 + 4095) / 4096 * 4096;
}

int ms_live_foreach(ms_live_fn fn, void *arg, unsigned flags)
{
    (void)flags; /* entries are read without a lock; a racing free may or may not show */
    uint32_t hwm = live_hwm();
    for (uint32_t c0 = 0; c0 < hwm; c0 += MS_LIVE_CHUNK_ENTRIES) {
        const ms_live_entry *e;
        const uint8_t *mark;
        uint32_t used = chunk_view(c0, hwm, &e, &mark);
        for (uint32_t i = 0; i < used; i++) {
            if (!__atomic_load_n(&mark[i], __ATOMIC_ACQUIRE))
                continue;
            ms_live_entry copy = e[i]; /* not atomic: see entry_copy */
            if (!copy.addr)
                continue;
            int stop = fn(&copy, MS_KIND_HEAP, arg);
            if (stop)
                return stop;
        }
    }
    return 0;
}

void ms_live_fork_prepare(void) { pool_lock(); }
void ms_live_fork_parent(void) { pool_unlock(); }
void ms_live_fork_child(void) { pool_unlock(); }
