/* Recording: unwind the caller, intern its stack, account the block, take a live entry
 * and write the block's header; forget a block before the allocator frees it.
 * Runs inside the target with the re-entrancy flag raised: no malloc, no global lock. */
#include <string.h>

#include "agent/record/record_hot.h"

uint64_t ms_hdr_secret;

/* A small per-thread cache of recent stacks (direct-mapped by a hash of the pcs): the
 * global table's index, records and pc arena are large and cold, and an allocation
 * site is usually hit again soon by the same thread. Exact: the pcs are compared. */
#define MS_SCACHE 64
#define MS_SCACHE_DEPTH 64
typedef struct scache_ent {
    uint64_t hash;
    uint32_t id, depth;
    uint32_t flags, kind;
    uint64_t stamp; /* last use, for replacement */
    uint64_t pcs[MS_SCACHE_DEPTH];
} scache_ent;
/* Mapped on the thread's first allocation, not in static TLS (see unwind_cfi.c). */
static MS_NOINLINE scache_ent *scache_new(void)
{
    if (ms_self.exit_done)
        return NULL;
    ms_self.scache = ms_sys_mmap(sizeof(scache_ent) * MS_SCACHE);
    return ms_self.scache;
}

void ms_scache_thread_exit(void)
{
    if (ms_self.scache) {
        ms_sys_munmap(ms_self.scache, sizeof(scache_ent) * MS_SCACHE);
        ms_self.scache = NULL;
    }
}

/* Four independent multiply chains: a stack of 40 frames hashes in about a quarter of
 * the latency of one chain. */
static inline uint64_t scache_hash(const uint64_t *pcs, unsigned d, unsigned kind)
{
    uint64_t h0 = 0x51af4d1f3ull * (d + 1) + kind, h1 = 0x9E3779B97F4A7C15ull, h2 = 0xc2b2ae3d27d4eb4full,
             h3 = 0x165667b19e3779f9ull;
    unsigned i = 0;
    for (; i + 4 <= d; i += 4) {
        h0 = (h0 ^ pcs[i]) * 0x9E3779B97F4A7C15ull;
        h1 = (h1 ^ pcs[i + 1]) * 0xff51afd7ed558ccdull;
        h2 = (h2 ^ pcs[i + 2]) * 0xc4ceb9fe1a85ec53ull;
        h3 = (h3 ^ pcs[i + 3]) * 0x9E3779B97F4A7C15ull;
    }
    for (; i < d; i++)
        h0 = (h0 ^ pcs[i]) * 0xff51afd7ed558ccdull;
    uint64_t h = h0 ^ (h1 >> 7) ^ (h2 << 13) ^ (h3 >> 19) ^ (h1 << 29);
    h *= 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

/* The id of (kind, pcs[0..d), flags): from the recent-stack cache or the shared table. */
static uint32_t stack_id_of(unsigned kind, const uint64_t *pcs, unsigned d, unsigned flags)
{
    scache_ent *sc = ms_self.scache;
    if (MS_UNLIKELY(!sc))
        sc = scache_new();
    if (d > MS_SCACHE_DEPTH || !sc)
        return ms_stack_intern(kind, pcs, d, flags);
    uint64_t h = scache_hash(pcs, d, kind);
    /* two-way: a stack may sit in either of two slots; a miss replaces the older one */
    scache_ent *c0 = &sc[h & (MS_SCACHE - 1)], *c1 = &sc[(h >> 20) & (MS_SCACHE - 1)];
    for (int k = 0; k < 2; k++) {
        scache_ent *c = k ? c1 : c0;
        if (c->id && c->hash == h && c->depth == d && c->kind == kind && c->flags == flags &&
            memcmp(c->pcs, pcs, d * sizeof(uint64_t)) == 0) {
            c->stamp = ++ms_self.scache_clock;
            return c->id;
        }
    }
    uint32_t id = ms_stack_intern(kind, pcs, d, flags);
    scache_ent *c = c0->stamp <= c1->stamp ? c0 : c1;
    c->id = id;
    c->hash = h;
    c->depth = d;
    c->kind = kind;
    c->flags = flags;
    c->stamp = ++ms_self.scache_clock;
    memcpy(c->pcs, pcs, d * sizeof(uint64_t));
    return id;
}

uint32_t ms_current_stack(unsigned kind)
{
    uint64_t pcs[MS_MAX_DEPTH_LIMIT];
    unsigned flags = 0;
    uint32_t *slot = NULL; /* the unwinder's walk cache keeps heap stack ids */
    unsigned d = ms_unwind_ctx(pcs, (unsigned)ms_opt.max_depth, &flags,
                               kind == MS_KIND_HEAP ? &slot : NULL);
    if (slot && *slot)
        return *slot;
    uint32_t id = stack_id_of(kind, pcs, d, flags);
    if (slot)
        *slot = id;
    return id;
}

/* Recording is split around the real allocation so that the agent leaves no copy of
 * the new block's address on the program's stack: a dead slot of an agent frame holding
 * it would later lie inside a live frame (a caller's uninitialised buffer, the exit
 * path) and a leak scan would take it for a reference. Everything that calls out
 * (unwinding, interning, counters, the live index) runs before the block exists; the
 * commit only stores, and calls nothing that saves registers. The steps are inline in
 * record_hot.h (the full-mode interposers do them in their own frame); these are their
 * out-of-line forms. Never inlined: the walk starts from its caller's frame record (the
 * agent's own, as the agent keeps frame pointers): one agent frame fewer to pass. */
MS_NOINLINE void ms_record_prepare(ms_rec_prep *rp, size_t size)
{
    ms_record_prepare_at(rp, size, *(const uintptr_t *)__builtin_frame_address(0));
}

MS_NOINLINE void ms_record_prepare_sampled(ms_rec_prep *rp, size_t size, uintptr_t walk_fp)
{
    uint64_t weight = ms_sampler_take(size);
    if (!weight) { /* not sampled (realloc in place): a header saying "not tracked" */
        rp->weight = 0;
        rp->sid = 0;
        rp->idx = 0;
        return;
    }
    ms_record_prepare_weighed(rp, size, weight, walk_fp);
}

void ms_record_drop(uint32_t idx)
{
    if (idx)
        ms_live_put_index(idx);
}

void ms_record_abort(const ms_rec_prep *rp, size_t size)
{
    if (!rp->idx)
        return;
    ms_live_put_index(rp->idx);
    ms_stack_rec *r = ms_stack_known(rp->sid);
    if (r)
        ms_stack_account_free_n(r, ms_sampler_count_estimate(size, rp->weight), rp->weight);
}

void ms_record_commit_entry(const void *p, size_t size, const ms_rec_prep *rp)
{
    if (rp->idx)
        ms_record_commit_entry_at(p, size, rp);
    else if (rp->weight) /* dropped */
        MS_HEALTH_INC(dropped_blocks);
}

void *ms_record_commit(void *p, size_t size, unsigned align_log2, const ms_rec_prep *rp)
{
    return ms_record_commit_at(p, size, align_log2, rp);
}

void ms_record_heap(void *p, size_t size, unsigned align_log2)
{
    ms_rec_prep rp;
    ms_record_prepare(&rp, size);
    ms_record_commit(p, size, align_log2, &rp);
}

/* Modes whose stacks count their frees (sampled, min_size): the weight a sampled entry
 * stands for, then the stack's free counters. Out of line: full mode's free keeps no
 * copy of an entry in its frame and no sampler test on its way. */
MS_NOINLINE void ms_forget_counted(uint32_t idx, uint64_t size, uint32_t sid)
{
    uint64_t w = size;
    if (ms_sampler_cfg.interval) { /* the sample count rides in the entry */
        ms_live_entry e;
        if (ms_live_get(idx, &e))
            w = ms_sampler_entry_weight(size, e.tid);
    }
    ms_live_clear(idx);
    ms_live_put_index(idx);
    ms_stack_rec *r = ms_stack_get(sid);
    if (r)
        ms_stack_account_free_n(r, ms_sampler_count_estimate(size, w), w);
}

void ms_forget_heap(void *p)
{
    ms_forget_heap_at(p);
}

void ms_forget_entry(const void *p, uint32_t idx, uint64_t size, uint32_t sid)
{
    ms_forget_entry_at(p, idx, size, sid);
}

int ms_live_find(uint64_t addr, ms_live_entry *out)
{
    const void *p = (const void *)(uintptr_t)addr;
    if (!ms_hdr_valid(p))
        return 0;
    ms_live_entry e;
    if (!ms_live_get(ms_hdr_of(p)->index, &e) || ms_ptr_key((void *)(uintptr_t)e.addr) != ms_ptr_key(p))
        return 0;
    *out = e;
    return 1;
}

/* ===========================================================================
 * Header confirmation (sampled and min_size modes, and a child that stopped recording)
 * ========================================================================= */
int ms_hdr_confirm_needed;

/* A second, independent 64-bit mark of p for headers that name no live entry. */
uint64_t ms_hdr_mark(const void *p)
{
    uint64_t h = (ms_ptr_key(p) ^ ~ms_hdr_secret) * 0xD6E8FEB86659FD93ull;
    return (h ^ (h >> 29)) | 1;
}

int ms_hdr_confirm(const void *p)
{
    const ms_hdr *h = ms_hdr_of(p);
    if (!h->index)
        return h->meta == ms_hdr_mark(p);
    ms_live_entry e;
    return ms_live_get(h->index, &e) && ms_ptr_key((void *)(uintptr_t)e.addr) == ms_ptr_key(p);
}

/* Raised by services/control.c when the allocation path should call in (record.h). */
int ms_ctl_need_start;
