/* Interned call stacks: each distinct (kind, pcs) is stored once in preallocated
 * (mmap) arrays and named by a 32-bit id; lookup and insert are lock-free (CAS on an
 * open-addressing index). Runs inside the target: no malloc, no locks. */
#include <string.h>

#include "agent/agent.h"
#include "agent/chunks.h"

#define ms_recs ms_stack_recs       /* indexed by id; id 0 unused */
#define ms_rec_cap ms_stack_cap     /* ids 1..ms_rec_cap-1 */
ms_stack_rec *ms_stack_recs;
uint32_t ms_stack_cap;
uint64_t *ms_stack_shards;          /* allocation counter shards 1.. (agent.h) */
static uint32_t ms_next_id = 1;
/* The pc arena grows by chunks of 64K pcs (512 KiB) as stacks are interned; a stack's pcs
 * lie in one chunk (the end of a chunk too short for the next stack stays unused). */
#define PCS_CHUNK_SHIFT 16
static ms_chunks ms_pcs;
static uint64_t ms_pcs_cap, ms_pcs_used;
static const uint64_t ms_no_pcs[1];
static uint32_t *ms_index;         /* slot -> id, 0 = empty */
static uint64_t ms_index_mask;
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

int ms_stacks_init(uint64_t capacity)
{
    if (capacity < 64)
        capacity = 64;
    if (capacity > (1u << 30))
        capacity = 1u << 30;
    ms_rec_cap = (uint32_t)capacity + 1;
    uint64_t isize = 1;
    while (isize < capacity * 2)
        isize <<= 1;
    ms_index_mask = isize - 1;
    ms_pcs_cap = capacity * 24;
    ms_recs = ms_sys_mmap(sizeof(ms_stack_rec) * ms_rec_cap);
    ms_index = ms_sys_mmap(sizeof(uint32_t) * isize);
    int pcs_ok = ms_chunks_init(&ms_pcs, ms_pcs_cap, PCS_CHUNK_SHIFT, sizeof(uint64_t)) == 0;
    if (!ms_recs || !ms_index || !pcs_ok)
        return -1;
    /* pages are touched only for stacks that threads of shard >= 1 allocate from; without
     * this array every count goes to shard 0 (the record) */
    ms_stack_shards = ms_sys_mmap(sizeof(uint64_t) * 2 * (MS_STACK_SHARDS - 1) * (uint64_t)ms_rec_cap);
    for (unsigned k = 0; k < MS_KIND_COUNT; k++)
        ms_fallback[k] = ms_stack_intern(k, NULL, 0, MS_STACKF_UNWIND_FAIL);
    return 0;
}

/* The first thread that asks owns shard 0 of the heap stacks (agent.h); without the shard
 * array every thread adds to shard 0, so nobody may own it. */
void ms_stack_count_claim(void)
{
    static int taken;
    int free_ = 0;
    int won = ms_stack_shards && __atomic_compare_exchange_n(&taken, &free_, 1, 0, __ATOMIC_RELAXED,
                                                             __ATOMIC_RELAXED);
    ms_self.count_own = won ? 1 : -1;
}

/* Room for depth pcs in one mapped chunk: their offset, or UINT64_MAX (arena full, or a
 * chunk that cannot be mapped). */
static uint64_t pcs_take(unsigned depth)
{
    for (int tries = 0; tries < 8; tries++) {
        uint64_t off = __atomic_fetch_add(&ms_pcs_used, depth, __ATOMIC_RELAXED);
        if (off + depth > ms_pcs_cap)
            return UINT64_MAX;
        if (depth == 0)
            return off;
        if ((off >> PCS_CHUNK_SHIFT) != ((off + depth - 1) >> PCS_CHUNK_SHIFT))
            continue; /* would straddle two chunks */
        return ms_chunks_ensure(&ms_pcs, off) == 0 ? off : UINT64_MAX;
    }
    return UINT64_MAX;
}

uint32_t ms_stack_intern(unsigned kind, const uint64_t *pcs, unsigned depth, unsigned flags)
{
    uint64_t h = stack_hash(kind, pcs, depth);
    uint64_t i = h & ms_index_mask;
    uint32_t mine = 0;
    for (uint64_t probe = 0; probe <= ms_index_mask; probe++, i = (i + 1) & ms_index_mask) {
        uint32_t id = __atomic_load_n(&ms_index[i], __ATOMIC_ACQUIRE);
        if (id == 0) {
            if (!mine) {
                uint32_t nid = __atomic_fetch_add(&ms_next_id, 1, __ATOMIC_RELAXED);
                uint64_t off = nid < ms_rec_cap ? pcs_take(depth) : UINT64_MAX;
                if (nid >= ms_rec_cap || off == UINT64_MAX) {
                    MS_HEALTH_INC(dropped_stacks);
                    return ms_fallback[kind < MS_KIND_COUNT ? kind : 0];
                }
                ms_stack_rec *r = &ms_recs[nid];
                r->hash = h;
                r->pcs_off = off;
                r->depth = depth;
                r->flags = (uint16_t)flags;
                r->kind = (uint8_t)kind;
                if (depth)
                    memcpy(ms_chunks_at(&ms_pcs, off), pcs, depth * sizeof(uint64_t));
                mine = nid;
            }
            uint32_t zero = 0;
            if (__atomic_compare_exchange_n(&ms_index[i], &zero, mine, 0, __ATOMIC_RELEASE,
                                            __ATOMIC_ACQUIRE))
                return mine;
            id = zero; /* somebody else filled this slot: compare with theirs */
        }
        const ms_stack_rec *r = &ms_recs[id];
        if (r->hash == h && r->kind == kind && r->depth == depth &&
            (depth == 0 || memcmp(ms_stack_pcs(r), pcs, depth * sizeof(uint64_t)) == 0))
            return id; /* an id we reserved stays unused: its counters stay 0 */
    }
    MS_HEALTH_INC(dropped_stacks);
    return ms_fallback[kind < MS_KIND_COUNT ? kind : 0];
}

ms_stack_rec *ms_stack_get(uint32_t id)
{
    if (id == 0 || id >= ms_rec_cap || id >= __atomic_load_n(&ms_next_id, __ATOMIC_RELAXED))
        return NULL;
    return &ms_recs[id];
}

const uint64_t *ms_stack_pcs(const ms_stack_rec *r)
{
    const uint64_t *p = r->depth ? ms_chunks_get(&ms_pcs, r->pcs_off) : NULL;
    return p ? p : ms_no_pcs;
}

uint32_t ms_stack_max_id(void)
{
    uint32_t n = __atomic_load_n(&ms_next_id, __ATOMIC_RELAXED);
    if (n > ms_rec_cap)
        n = ms_rec_cap;
    return n - 1;
}

int ms_stack_used(const ms_stack_rec *r)
{
    ms_snap_counters c;
    ms_stack_counters(r, &c);
    return c.alloc_blocks != 0;
}

void ms_stack_counters(const ms_stack_rec *r, ms_snap_counters *c)
{
    c->free_blocks = __atomic_load_n(&r->free_blocks, __ATOMIC_RELAXED);
    c->free_bytes = __atomic_load_n(&r->free_bytes, __ATOMIC_RELAXED);
    c->alloc_blocks = __atomic_load_n(&r->alloc_blocks, __ATOMIC_RELAXED);
    c->alloc_bytes = __atomic_load_n(&r->alloc_bytes, __ATOMIC_RELAXED);
    uint64_t *sh = ms_stack_shards;
    if (sh) {
        uint64_t id = (uint64_t)(r - ms_recs);
        for (unsigned s = 1; s < MS_STACK_SHARDS; s++) {
            const uint64_t *p = &sh[((uint64_t)(s - 1) * ms_rec_cap + id) * 2];
            c->alloc_blocks += __atomic_load_n(&p[0], __ATOMIC_RELAXED);
            c->alloc_bytes += __atomic_load_n(&p[1], __ATOMIC_RELAXED);
        }
    }
    c->live_blocks = c->alloc_blocks > c->free_blocks ? c->alloc_blocks - c->free_blocks : 0;
    c->live_bytes = c->alloc_bytes > c->free_bytes ? c->alloc_bytes - c->free_bytes : 0;
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
    if (kind == MS_KIND_HEAP && e->stack_id <= c->max) {
        c->s[e->stack_id].blocks++;
        c->s[e->stack_id].bytes += e->size;
    }
    return 0;
}

ms_live_sum *ms_stack_live_sums(uint32_t max_id, size_t *len)
{
    *len = ((size_t)(max_id + 1) * sizeof(ms_live_sum) + 4095) & ~(size_t)4095;
    ms_live_sum *s = ms_sys_mmap(*len);
    if (!s)
        return NULL;
    sums_ctx c = {s, max_id};
    ms_live_foreach(sums_add, &c, 0);
    return s;
}
