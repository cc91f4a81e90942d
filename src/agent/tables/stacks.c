/* Interned call stacks: each distinct (kind, pcs) is stored once and named by a 32-bit
 * id. The records, their counter shards and the pcs live in tables that grow by chunks
 * as stacks are interned (chunks.h), the hash index by doubling: the address space taken
 * follows the number of stacks, not stack_capacity. Lookups are lock-free; inserting a
 * new stack takes a spinlock (a new call site is rare; the lock is never held across
 * fork). Runs inside the target: no malloc. */
#include <sched.h>
#include <string.h>

#include "agent/tables/tables.h"
#include "agent/tables/chunks.h"

ms_chunks ms_stack_recs;           /* indexed by id; id 0 unused */
ms_chunks ms_stack_shards[MS_STACK_SHARDS - 1]; /* {blocks, bytes} per id, shards 1.. */
static uint32_t ms_stack_cap;       /* ids 1..ms_stack_cap-1 */
static uint32_t ms_next_id = 1;     /* ids below are complete records (set under the lock) */
/* The pc arena grows by chunks of 64K pcs (512 KiB) as stacks are interned; a stack's pcs
 * lie in one chunk (the end of a chunk too short for the next stack stays unused). */
#define PCS_CHUNK_SHIFT 16
static ms_chunks ms_pcs;
static uint64_t ms_pcs_cap, ms_pcs_used;
static const uint64_t ms_no_pcs[1];
/* Open-addressing index, slot -> id (0 = empty), at most half full: when an insert
 * would fill it past that, a twice larger one is built under the lock and published.
 * An index it replaces stays mapped (a reader may still probe it; together they are
 * smaller than the last one) and a reader that misses in it retries under the lock. */
typedef struct stack_index {
    uint64_t mask;
    uint32_t slot[];
} stack_index;
#define INDEX_MIN_SLOTS 1024
static stack_index *ms_index;
static uint64_t ms_index_max;       /* slots the index may reach (2 x capacity) */
static uint32_t ms_intern_owner;    /* tid holding the insert lock, 0 = free */
/* Fallback stacks (depth 0), one per kind, used when the table is full. */
static uint32_t ms_fallback[MS_KIND_COUNT];

static uint64_t stack_hash(unsigned kind, const uint64_t *pcs, unsigned depth)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)kind << 56) ^ depth;
    for (unsigned i = 0; i < depth; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    h ^= h >> 29;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    return h ? h : 1;
}

static stack_index *index_new(uint64_t slots)
{
    stack_index *x = ms_sys_mmap(sizeof(stack_index) + slots * sizeof(uint32_t));
    if (!x) {
        ms_table_grow_failed();
        return NULL;
    }
    x->mask = slots - 1;
    return x;
}

int ms_stacks_init(uint64_t capacity)
{
    if (capacity < 64)
        capacity = 64;
    if (capacity > (1u << 30))
        capacity = 1u << 30;
    ms_stack_cap = (uint32_t)capacity + 1;
    uint64_t isize = 1;
    while (isize < capacity * 2)
        isize <<= 1;
    ms_index_max = isize;
    ms_pcs_cap = capacity * 24;
    int ok = ms_chunks_init(&ms_stack_recs, ms_stack_cap, MS_STACK_RECS_SHIFT,
                            sizeof(ms_stack_rec)) == 0 &&
             ms_chunks_init(&ms_pcs, ms_pcs_cap, PCS_CHUNK_SHIFT, sizeof(uint64_t)) == 0;
    for (unsigned s = 0; ok && s < MS_STACK_SHARDS - 1; s++)
        ok = ms_chunks_init(&ms_stack_shards[s], ms_stack_cap, MS_STACK_RECS_SHIFT,
                            2 * sizeof(uint64_t)) == 0;
    ms_index = ok ? index_new(isize < INDEX_MIN_SLOTS ? isize : INDEX_MIN_SLOTS) : NULL;
    if (!ms_index)
        return -1;
    for (unsigned k = 0; k < MS_KIND_COUNT; k++)
        ms_fallback[k] = ms_stack_intern(k, NULL, 0, MS_STACKF_UNWIND_FAIL);
    return 0;
}

/* The first thread that asks owns shard 0 of the heap stacks (stacks.h); every other
 * thread adds to shards 1.., which exist for every stack interned (intern_new_locked). */
/* Sets ms_self.count_own to 1 (this thread owns shard 0) or -1. */
static void count_claim(void)
{
    static int taken;
    int free_ = 0;
    int won = __atomic_compare_exchange_n(&taken, &free_, 1, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED);
    ms_self.count_own = won ? 1 : -1;
}

void ms_stack_count_heap_alloc_other(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    if (ms_self.count_own == 0)
        count_claim();
    if (ms_self.count_own > 0) {
        ms_arch_add_own(&r->alloc_blocks, blocks);
        ms_arch_add_own(&r->alloc_bytes, bytes);
        return;
    }
    unsigned sh = 1 + ms_self.tid % (MS_STACK_SHARDS - 1);
    uint64_t *c = (uint64_t *)ms_chunks_at(&ms_stack_shards[sh - 1], r->id); /* mapped */
    __atomic_fetch_add(&c[0], blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c[1], bytes, __ATOMIC_RELAXED);
}

/* Room for depth pcs in one mapped chunk: their offset, or UINT64_MAX (arena full, or a
 * chunk that cannot be mapped). Called under the insert lock. */
static uint64_t pcs_take(unsigned depth)
{
    for (int tries = 0; tries < 8; tries++) {
        uint64_t off = ms_pcs_used;
        if (off + depth > ms_pcs_cap)
            return UINT64_MAX;
        ms_pcs_used = off + depth;
        if (depth == 0)
            return off;
        if ((off >> PCS_CHUNK_SHIFT) != ((off + depth - 1) >> PCS_CHUNK_SHIFT))
            continue; /* would straddle two chunks */
        return ms_chunks_ensure(&ms_pcs, off) == 0 ? off : UINT64_MAX;
    }
    return UINT64_MAX;
}

/* ---------------------------------------------------------------------------
 * The insert lock. A signal handler that allocates inside its own thread's insert
 * (an mmap it makes, say) does not wait for itself: its stack is dropped.
 * ------------------------------------------------------------------------- */
static int intern_lock(void)
{
    uint32_t me = ms_gettid();
    for (unsigned spins = 0;; spins++) {
        uint32_t owner = __atomic_load_n(&ms_intern_owner, __ATOMIC_RELAXED);
        if (owner == me)
            return 0;
        if (!owner && __atomic_compare_exchange_n(&ms_intern_owner, &owner, me, 0,
                                                  __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 1;
        if (spins > 64)
            sched_yield();
        else
            ms_arch_cpu_relax();
    }
}

static void intern_unlock(void)
{
    __atomic_store_n(&ms_intern_owner, 0, __ATOMIC_RELEASE);
}

/* A fork from a handler inside this thread's own insert: that insert unlocks later. */
static int ms_fork_locked;
void ms_stacks_fork_prepare(void) { ms_fork_locked = intern_lock(); }
void ms_stacks_fork_parent(void)
{
    if (ms_fork_locked)
        intern_unlock();
}
void ms_stacks_fork_child(void) { ms_stacks_fork_parent(); }

/* ---------------------------------------------------------------------------
 * The index
 * ------------------------------------------------------------------------- */
static int stack_is(const ms_stack_rec *r, uint64_t h, unsigned kind, const uint64_t *pcs,
                    unsigned depth)
{
    return r && r->hash == h && r->kind == kind && r->depth == depth &&
           (depth == 0 || memcmp(ms_stack_pcs(r), pcs, depth * sizeof(uint64_t)) == 0);
}

static uint32_t index_find(const stack_index *x, uint64_t h, unsigned kind,
                           const uint64_t *pcs, unsigned depth)
{
    uint64_t i = h & x->mask;
    for (uint64_t probe = 0; probe <= x->mask; probe++, i = (i + 1) & x->mask) {
        uint32_t id = __atomic_load_n(&x->slot[i], __ATOMIC_ACQUIRE);
        if (id == 0)
            return 0;
        if (stack_is(ms_chunks_get(&ms_stack_recs, id), h, kind, pcs, depth))
            return id;
    }
    return 0;
}

/* Under the lock; the index is at most half full, so an empty slot is there. */
static void index_put(stack_index *x, uint64_t h, uint32_t id)
{
    uint64_t i = h & x->mask;
    while (__atomic_load_n(&x->slot[i], __ATOMIC_RELAXED))
        i = (i + 1) & x->mask;
    __atomic_store_n(&x->slot[i], id, __ATOMIC_RELEASE);
}

/* Under the lock: a twice larger index holding every id, published; NULL when it cannot
 * be mapped (counted in table_grow_failures). */
static stack_index *index_grow(stack_index *x)
{
    uint64_t slots = (x->mask + 1) * 2;
    if (slots > ms_index_max)
        return NULL;
    stack_index *n = index_new(slots);
    if (!n)
        return NULL;
    for (uint32_t id = 1; id < ms_next_id; id++) {
        const ms_stack_rec *r = ms_chunks_get(&ms_stack_recs, id);
        if (r)
            index_put(n, r->hash, id);
    }
    __atomic_store_n(&ms_index, n, __ATOMIC_RELEASE);
    return n;
}

/* Under the lock: a record for a stack not in the index, or 0 (table full, or a table
 * that could not grow). */
static uint32_t intern_new_locked(uint64_t h, unsigned kind, const uint64_t *pcs,
                                  unsigned depth, unsigned flags)
{
    uint32_t nid = ms_next_id;
    if (nid >= ms_stack_cap || ms_chunks_ensure(&ms_stack_recs, nid) != 0)
        return 0;
    stack_index *x = ms_index;
    if ((uint64_t)nid * 2 > x->mask + 1 && !(x = index_grow(x)))
        return 0;
    uint64_t off = pcs_take(depth);
    if (off == UINT64_MAX)
        return 0;
    /* shards 1.. are mapped before a stack can be used: shard 0 has one writer (stacks.h),
     * a stack without them is dropped like one without a record */
    for (unsigned s = 0; s < MS_STACK_SHARDS - 1; s++)
        if (ms_chunks_ensure(&ms_stack_shards[s], nid) != 0)
            return 0;
    ms_stack_rec *r = ms_chunks_at(&ms_stack_recs, nid);
    r->hash = h;
    r->pcs_off = off;
    r->depth = depth;
    r->flags = (uint16_t)flags;
    r->kind = (uint8_t)kind;
    r->id = nid;
    if (depth)
        memcpy(ms_chunks_at(&ms_pcs, off), pcs, depth * sizeof(uint64_t));
    /* complete before it is counted, counted before it can be found */
    __atomic_store_n(&ms_next_id, nid + 1, __ATOMIC_RELEASE);
    index_put(x, h, nid);
    return nid;
}

uint32_t ms_stack_intern(unsigned kind, const uint64_t *pcs, unsigned depth, unsigned flags)
{
    uint64_t h = stack_hash(kind, pcs, depth);
    uint32_t id = index_find(__atomic_load_n(&ms_index, __ATOMIC_ACQUIRE), h, kind, pcs, depth);
    if (id)
        return id;
    if (intern_lock()) {
        /* another thread may have added it, or grown the index, since the lookup */
        id = index_find(ms_index, h, kind, pcs, depth);
        if (!id)
            id = intern_new_locked(h, kind, pcs, depth, flags);
        intern_unlock();
        if (id)
            return id;
    }
    MS_HEALTH_INC(dropped_stacks);
    return ms_fallback[kind < MS_KIND_COUNT ? kind : 0];
}

ms_stack_rec *ms_stack_get(uint32_t id)
{
    if (id == 0 || id >= __atomic_load_n(&ms_next_id, __ATOMIC_ACQUIRE))
        return NULL;
    return ms_chunks_get(&ms_stack_recs, id);
}

const uint64_t *ms_stack_pcs(const ms_stack_rec *r)
{
    const uint64_t *p = r->depth ? ms_chunks_get(&ms_pcs, r->pcs_off) : NULL;
    return p ? p : ms_no_pcs;
}

uint32_t ms_stack_max_id(void)
{
    return __atomic_load_n(&ms_next_id, __ATOMIC_ACQUIRE) - 1;
}

uint64_t ms_stacks_bytes_mapped(void)
{
    uint64_t n = ms_chunks_mapped(&ms_stack_recs) + ms_chunks_mapped(&ms_pcs);
    for (unsigned s = 0; s < MS_STACK_SHARDS - 1; s++)
        n += ms_chunks_mapped(&ms_stack_shards[s]);
    const stack_index *x = __atomic_load_n(&ms_index, __ATOMIC_ACQUIRE);
    return n + (x ? (x->mask + 1) * sizeof(uint32_t) * 2 : 0); /* with the ones it replaced */
}

int ms_stack_used(const ms_stack_rec *r)
{
    ms_snap_counters c;
    ms_stack_counters(r, &c);
    return c.alloc_blocks != 0;
}

/* The counters, with tb/ty allocations still in the threads' tables, read before the
 * shards that their flushes add to. */
static void counters_plus(const ms_stack_rec *r, uint64_t tb, uint64_t ty, ms_snap_counters *c)
{
    c->free_blocks = __atomic_load_n(&r->free_blocks, __ATOMIC_RELAXED);
    c->free_bytes = __atomic_load_n(&r->free_bytes, __ATOMIC_RELAXED);
    c->alloc_blocks = tb + __atomic_load_n(&r->alloc_blocks, __ATOMIC_RELAXED);
    c->alloc_bytes = ty + __atomic_load_n(&r->alloc_bytes, __ATOMIC_RELAXED);
    for (unsigned s = 0; s < MS_STACK_SHARDS - 1; s++) {
        const uint64_t *p = ms_chunks_get(&ms_stack_shards[s], r->id);
        if (p) {
            c->alloc_blocks += __atomic_load_n(&p[0], __ATOMIC_RELAXED);
            c->alloc_bytes += __atomic_load_n(&p[1], __ATOMIC_RELAXED);
        }
    }
    c->live_blocks = c->alloc_blocks > c->free_blocks ? c->alloc_blocks - c->free_blocks : 0;
    c->live_bytes = c->alloc_bytes > c->free_bytes ? c->alloc_bytes - c->free_bytes : 0;
}

void ms_stack_counters(const ms_stack_rec *r, ms_snap_counters *c)
{
    uint64_t tb = 0, ty = 0; /* what the threads' tables still hold (totals.h) */
    if (r->kind == MS_KIND_HEAP)
        ms_pend_unflushed(r->id, &tb, &ty);
    counters_plus(r, tb, ty, c);
}

void ms_stack_counters_with(const ms_stack_rec *r, const ms_live_sum *sums, uint32_t max_id,
                            ms_snap_counters *c)
{
    if (!sums || r->kind != MS_KIND_HEAP || r->id > max_id) {
        ms_stack_counters(r, c);
        return;
    }
    uint64_t id = r->id; /* frees not counted one by one: derived from the live sums */
    counters_plus(r, sums[id].pend_blocks, sums[id].pend_bytes, c);
    c->live_blocks = sums[id].blocks;
    c->live_bytes = sums[id].bytes;
    c->free_blocks = c->alloc_blocks > c->live_blocks ? c->alloc_blocks - c->live_blocks : 0;
    c->free_bytes = c->alloc_bytes > c->live_bytes ? c->alloc_bytes - c->live_bytes : 0;
}

void ms_stack_live_totals(uint64_t bytes[MS_KIND_COUNT], uint64_t blocks[MS_KIND_COUNT])
{
    memset(bytes, 0, MS_KIND_COUNT * sizeof bytes[0]);
    memset(blocks, 0, MS_KIND_COUNT * sizeof blocks[0]);
    uint32_t max = ms_stack_max_id();
    size_t sums_len = 0;
    ms_live_sum *sums = ms_heap_frees_derived ? ms_stack_live_sums(max, &sums_len) : NULL;
    for (uint32_t id = 1; id <= max; id++) {
        ms_stack_rec *r = ms_stack_get(id);
        if (!r || r->kind >= MS_KIND_COUNT)
            continue;
        ms_snap_counters c;
        ms_stack_counters_with(r, sums, max, &c);
        if (!c.alloc_blocks) /* never used */
            continue;
        bytes[r->kind] += c.live_bytes;
        blocks[r->kind] += c.live_blocks;
    }
    if (sums)
        ms_sys_munmap(sums, sums_len);
}

/* ===========================================================================
 * Live sums per heap stack, from the live table (see ms_heap_frees_derived)
 * ========================================================================= */
int ms_heap_frees_derived;

typedef struct sums_ctx {
    ms_live_sum *s;
    uint32_t max;
} sums_ctx;

static int sums_add(const ms_live_entry *e, unsigned kind, void *arg)
{
    sums_ctx *c = arg;
    if (kind == MS_KIND_HEAP)
        ms_stack_live_sum_add(c->s, c->max, e->stack_id, e->size);
    return 0;
}

ms_live_sum *ms_stack_live_sums_new(uint32_t max_id, size_t *len)
{
    *len = ((size_t)(max_id + 1) * sizeof(ms_live_sum) + 4095) & ~(size_t)4095;
    ms_live_sum *s = ms_sys_mmap(*len);
    if (s) /* before any shard is read (ms_stack_counters_with) */
        ms_pend_sums(s, max_id);
    return s;
}

ms_live_sum *ms_stack_live_sums(uint32_t max_id, size_t *len)
{
    ms_live_sum *s = ms_stack_live_sums_new(max_id, len);
    if (!s)
        return NULL;
    sums_ctx c = {s, max_id};
    ms_live_foreach(sums_add, &c, 0);
    return s;
}
