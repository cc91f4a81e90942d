/* Reachability core of the leak scan (see leak_mark.h): conservative mark, valgrind's
 * four classes, clique folding. Pure: no allocation, no recursion, no libc calls beyond
 * memcpy; every read of scanned memory goes through the view callback. */
#include "agent/leak/leak_mark.h"

#include <string.h>

#include "agent/arch/arch.h"
#include "memsight/snapshot_format.h"

/* ---------------------------------------------------------------------------
 * Sorting: LSD radix sort on the address, 8 bits per pass, skipping passes whose
 * digit is the same in every key.
 * ------------------------------------------------------------------------- */
void ms_lk_sort(ms_lk_block *b, size_t n, ms_lk_block *tmp)
{
    if (n < 2)
        return;
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        all_or |= b[i].addr;
        all_and &= b[i].addr;
    }
    ms_lk_block *src = b, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
            continue; /* this digit is constant: the pass would not move anything */
        size_t count[257];
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[((src[i].addr >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].addr >> shift) & 0xff]++] = src[i];
        ms_lk_block *t = src;
        src = dst;
        dst = t;
    }
    if (src != b)
        memcpy(b, src, n * sizeof *b);
}

/* ---------------------------------------------------------------------------
 * Lookup
 * ------------------------------------------------------------------------- */
static inline uint64_t blk_len(const ms_lk_block *b)
{
    return b->size ? b->size : 1; /* a pointer to a 0-byte block still refers to it */
}

void ms_lk_init(ms_lk_scan *s, ms_lk_block *b, size_t n, uint32_t *stack, size_t stack_cap,
                ms_lk_view_fn view, void *ctx)
{
    memset(s, 0, sizeof *s);
    s->b = b;
    s->n = n;
    s->stack = stack;
    s->stack_cap = stack_cap;
    s->view = view;
    s->ctx = ctx;
    s->lo = n ? b[0].addr : 1;
    s->hi = 0;
    s->idx = NULL;
    for (size_t i = 0; i < n; i++) {
        b[i].state = MS_LK_UNREACHED;
        b[i].flags = 0;
        b[i].heur = 0;
        b[i].leader = (uint32_t)i;
        uint64_t end = b[i].addr + blk_len(&b[i]);
        if (end > s->hi)
            s->hi = end;
    }
}

/* ---------------------------------------------------------------------------
 * Granule index: a binary search over a million blocks misses the cache at every step;
 * the index narrows it to the few dozen blocks of one 64 KiB granule.
 * ------------------------------------------------------------------------- */
static uint64_t gran_count(const ms_lk_scan *s)
{
    uint64_t cnt = 0, last = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t g0 = s->b[i].addr >> MS_LK_GRAN_SHIFT;
        uint64_t g1 = (s->b[i].addr + blk_len(&s->b[i]) - 1) >> MS_LK_GRAN_SHIFT;
        if (cnt && g0 <= last)
            g0 = last + 1;
        if (g1 >= g0)
            cnt += g1 - g0 + 1;
        if (!cnt || g1 > last)
            last = g1;
    }
    return cnt;
}

size_t ms_lk_index_size(const ms_lk_scan *s)
{
    uint64_t want = gran_count(s) * 2 + 16, cap = 16;
    while (cap < want)
        cap <<= 1;
    return (size_t)cap * sizeof(ms_lk_gran);
}

static inline uint64_t gran_hash(uint64_t g)
{
    g ^= g >> 29;
    g *= 0xbf58476d1ce4e5b9ull;
    g ^= g >> 32;
    return g;
}

static ms_lk_gran *gran_slot(ms_lk_gran *t, uint64_t mask, uint64_t g, int insert)
{
    for (uint64_t h = gran_hash(g) & mask;; h = (h + 1) & mask) {
        if (t[h].g == g + 1)
            return &t[h];
        if (t[h].g == 0) {
            if (!insert)
                return NULL;
            t[h].g = g + 1;
            return &t[h];
        }
    }
}

void ms_lk_index_build(ms_lk_scan *s, void *mem, size_t bytes)
{
    size_t cap = bytes / sizeof(ms_lk_gran);
    if (!mem || cap < 16 || (cap & (cap - 1)) || s->n >= UINT32_MAX ||
        bytes < ms_lk_index_size(s)) {
        s->idx = NULL;
        return;
    }
    ms_lk_gran *t = mem;
    uint64_t mask = cap - 1;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t g0 = s->b[i].addr >> MS_LK_GRAN_SHIFT;
        uint64_t g1 = (s->b[i].addr + blk_len(&s->b[i]) - 1) >> MS_LK_GRAN_SHIFT;
        for (uint64_t g = g0; g <= g1; g++) {
            ms_lk_gran *e = gran_slot(t, mask, g, 1);
            if (e->end == 0)
                e->first = (uint32_t)i;
            e->end = (uint32_t)i + 1;
        }
    }
    s->idx = t;
    s->idx_mask = mask;
}

long ms_lk_find(const ms_lk_scan *s, uint64_t v)
{
    if (v < s->lo || v >= s->hi)
        return -1;
    /* last block with addr <= v */
    size_t lo = 0, hi = s->n;
    if (s->idx) {
        const ms_lk_gran *e = gran_slot(s->idx, s->idx_mask, v >> MS_LK_GRAN_SHIFT, 0);
        if (!e)
            return -1;
        lo = e->first;
        hi = e->end;
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->b[mid].addr <= v)
            lo = mid;
        else
            hi = mid;
    }
    const ms_lk_block *b = &s->b[lo];
    if (v >= b->addr && v - b->addr < blk_len(b))
        return (long)lo;
    return -1;
}

/* The block a word refers to, or -1. One interior pointer is not a reference: a
 * 16-byte-aligned address in the last 8 bytes of a block is where glibc's next chunk
 * header starts (it overlaps the block's tail), and the allocator's own lists and top
 * pointer (main_arena, in libc's data) hold exactly such addresses. */
static inline long ref(const ms_lk_scan *s, uint64_t v)
{
    long i = ms_lk_find(s, v);
    if (i >= 0) {
        const ms_lk_block *b = &s->b[i];
        if (v != b->addr && (v & 15) == 0 && v + 8 >= b->addr + b->size)
            return -1;
    }
    return i;
}

/* ---------------------------------------------------------------------------
 * Interior-pointer heuristics (valgrind's, in its order, and LeakSanitizer's rule). They
 * run only for an interior pointer into a block not reached yet, and read at most two
 * words of the block (and, for multipleinheritance, two vtables) through the view.
 * ------------------------------------------------------------------------- */
static int read_word(const ms_lk_scan *s, uint64_t addr, uint64_t *out)
{
    uint64_t avail = 0;
    const void *p = s->view(s->ctx, addr, 8, &avail);
    if (!p || avail < 8)
        return 0;
    memcpy(out, p, 8);
    return 1;
}

static int vtable_like(const ms_lk_scan *s, uint64_t w)
{
    return (w & 7) == 0 && w >= 4096 && s->is_vtable(s->vtable_ctx, ms_arch_untag(w));
}

void ms_lk_set_heuristics(ms_lk_scan *s, unsigned set, ms_lk_vtable_fn is_vtable, void *ctx)
{
    s->heur = set & ((1u << MS_LEAK_H_COUNT) - 1);
    s->is_vtable = is_vtable;
    s->vtable_ctx = ctx;
}

/* Runs only for interior pointers into blocks not reached yet. The block's first two
 * words are read once, in one view. */
unsigned ms_lk_heuristic(const ms_lk_scan *s, size_t i, uint64_t v,
                                                  unsigned set)
{
    const ms_lk_block *b = &s->b[i];
    uint64_t off = v - b->addr, w[2] = {0, 0}, avail = 0;
    unsigned have = 0; /* words of w[] read */
    if ((off == 8 || off == 24 || (set & MS_LEAK_H_MULTIPLEINHERITANCE)) && b->size >= 8) {
        const void *p = s->view(s->ctx, b->addr, b->size >= 16 ? 16 : 8, &avail);
        if (p && avail >= 8) {
            have = avail >= 16 ? 2 : 1;
            memcpy(w, p, have * 8);
        }
    }
    /* old libstdc++ (copy-on-write) std::string: length, capacity, refcount, then the
     * characters and their terminating zero, the pointer at the characters */
    if ((set & MS_LEAK_H_STDSTRING) && off == 24 && have == 2 && w[1] < b->size &&
        24 + w[1] + 1 == b->size && w[0] <= w[1])
        return 1;
    /* a 64-bit length of the rest, the pointer after it (sqlite3's allocator) */
    if ((set & MS_LEAK_H_LENGTH64) && off == 8 && have && w[0] > 0 && b->size - 8 == w[0])
        return 2;
    /* new T[n] of a T with a destructor: the count n, the pointer at the elements */
    if ((set & MS_LEAK_H_NEWARRAY) && off == 8 && have && w[0] > 0 && (b->size - 8) % w[0] == 0)
        return 3;
    /* a base class after the first: the pointer at its vtable pointer, the block starting
     * with the first one */
    uint64_t at = 0;
    if ((set & MS_LEAK_H_MULTIPLEINHERITANCE) && s->is_vtable && have && (v & 7) == 0 &&
        read_word(s, v, &at) && (at & 7) == 0 && at >= 4096 && vtable_like(s, at) &&
        vtable_like(s, w[0]))
        return 4;
    if (set & MS_LEAK_H_INTERIOR)
        return 5;
    return 0;
}

/* The mark works through a FIFO ring rather than a stack: blocks are taken in the
 * order they were found, so the ones coming next are known and their memory can be
 * prefetched while the current one is scanned (the scan is bound by memory latency).
 * Each block is queued at most once per phase, so a ring of n entries never fills. */
static inline void push(ms_lk_scan *s, size_t i)
{
    if (s->tail - s->head < s->stack_cap)
        s->stack[s->tail++ % s->stack_cap] = (uint32_t)i;
    else
        s->overflow++;
}

/* ---------------------------------------------------------------------------
 * Phase 1: start pointers from roots and reached blocks. An interior pointer only
 * flags its target; phase 2 turns flagged blocks into possibly reachable ones.
 * ------------------------------------------------------------------------- */
/* An interior pointer into a block not reached yet, with heuristics on (out of line: the
 * mark's loop stays as small as without them). */
__attribute__((noinline)) static void hit_heuristic(ms_lk_scan *s, size_t i, uint64_t v)
{
    ms_lk_block *b = &s->b[i];
    unsigned h = ms_lk_heuristic(s, i, v, s->heur);
    if (h) {
        b->state = MS_LK_REACHED;
        b->heur = (uint8_t)h;
        push(s, i);
    } else {
        b->flags |= MS_LK_F_INTERIOR;
    }
}

static inline void hit_definite(ms_lk_scan *s, uint64_t v)
{
    long i = ref(s, v);
    if (i < 0)
        return;
    ms_lk_block *b = &s->b[i];
    if (v == b->addr) {
        if (b->state != MS_LK_REACHED) {
            b->state = MS_LK_REACHED;
            push(s, (size_t)i);
        } else if (b->heur) {
            b->heur = 0; /* a start pointer reaches it after all: no heuristic needed */
        }
    } else if (b->state != MS_LK_REACHED) {
        if (s->heur)
            hit_heuristic(s, (size_t)i, v);
        else
            b->flags |= MS_LK_F_INTERIOR;
    }
}

/* Phase 2: anything reached from a possibly reachable block is possibly reachable. */
static inline void hit_possible(ms_lk_scan *s, uint64_t v)
{
    long i = ref(s, v);
    if (i < 0)
        return;
    ms_lk_block *b = &s->b[i];
    if (b->state == MS_LK_UNREACHED) {
        b->state = MS_LK_POSSIBLE;
        push(s, (size_t)i);
    }
}

/* Phase 3: the clique of the current leader. */
static inline void hit_clique(ms_lk_scan *s, uint64_t v, size_t leader)
{
    long i = ref(s, v);
    if (i < 0 || (size_t)i == leader)
        return;
    ms_lk_block *b = &s->b[i];
    if (b->state == MS_LK_UNREACHED) {
        b->state = MS_LK_INDIRECT;
        b->leader = (uint32_t)leader;
        push(s, (size_t)i);
    } else if (b->state == MS_LK_LEADER) {
        /* an earlier leader is held by this clique: it and everything it claimed join it
         * (its members keep pointing at it; the chain is resolved at the end) */
        b->state = MS_LK_INDIRECT;
        b->leader = (uint32_t)leader;
    }
}

enum { PH_DEFINITE, PH_POSSIBLE, PH_CLIQUE };

static void scan_words(ms_lk_scan *s, uint64_t lo, uint64_t hi, int phase, size_t leader)
{
    lo = (lo + 7) & ~(uint64_t)7;
    while (lo + 8 <= hi) {
        uint64_t avail = 0;
        const void *p = s->view(s->ctx, lo, hi - lo, &avail);
        if (avail == 0 || avail > hi - lo)
            avail = hi - lo; /* a broken view must not loop forever */
        if (!p) {
            s->skipped_bytes += avail;
            lo = (lo + avail + 7) & ~(uint64_t)7;
            continue;
        }
        size_t nw = (size_t)(avail / 8);
        const uint64_t *w = p;
        s->words += nw;
        uint64_t lob = s->lo, hib = s->hi;
        for (size_t k = 0; k < nw; k++) {
            uint64_t v;
            memcpy(&v, &w[k], 8);
            v = ms_arch_untag(v); /* a tagged pointer (AArch64 TBI) refers all the same */
            if (v < lob || v >= hib)
                continue;
            if (phase == PH_DEFINITE)
                hit_definite(s, v);
            else if (phase == PH_POSSIBLE)
                hit_possible(s, v);
            else
                hit_clique(s, v, leader);
        }
        if (nw == 0)
            nw = 1; /* view gave less than a word: step over it */
        lo += (uint64_t)nw * 8;
    }
}

void ms_lk_root_range(ms_lk_scan *s, uint64_t lo, uint64_t hi)
{
    if (hi > lo)
        scan_words(s, lo, hi, PH_DEFINITE, 0);
}

void ms_lk_root_value(ms_lk_scan *s, uint64_t v)
{
    hit_definite(s, ms_arch_untag(v));
}

void ms_lk_root_start(ms_lk_scan *s, uint64_t v)
{
    long i = ms_lk_find(s, ms_arch_untag(v));
    if (i >= 0)
        hit_definite(s, s->b[i].addr);
}

static void drain(ms_lk_scan *s, int phase, size_t leader)
{
    enum { AHEAD = 8, LINES = 4 };
    while (s->tail > s->head) {
        ms_lk_block *b = &s->b[s->stack[s->head++ % s->stack_cap]];
        if (s->tail - s->head > AHEAD) {
            /* the first lines of a block queued a few places behind this one; the
             * hardware streams the rest once the scan walks into it */
            const ms_lk_block *nb = &s->b[s->stack[(s->head + AHEAD) % s->stack_cap]];
            uint64_t lines = nb->size / 64 + 1;
            for (uint64_t l = 0; l < lines && l < LINES; l++)
                __builtin_prefetch((const char *)(uintptr_t)nb->addr + l * 64);
        }
        scan_words(s, b->addr, b->addr + b->size, phase, leader);
    }
}

void ms_lk_mark(ms_lk_scan *s)
{
    drain(s, PH_DEFINITE, 0);
    for (size_t i = 0; i < s->n; i++) {
        ms_lk_block *b = &s->b[i];
        if (b->state == MS_LK_UNREACHED && (b->flags & MS_LK_F_INTERIOR)) {
            b->state = MS_LK_POSSIBLE;
            push(s, i);
        }
    }
    drain(s, PH_POSSIBLE, 0);
}

/* ---------------------------------------------------------------------------
 * Cliques (valgrind's algorithm): each block still unreached, in address order, becomes
 * a leader and claims every unreached block it reaches; a former leader it reaches joins
 * with its whole clique. What survives as a leader is definitely lost, one per leaked
 * structure (one per cycle too); the rest is indirectly lost, folded under its leader.
 * ------------------------------------------------------------------------- */
void ms_lk_classify(ms_lk_scan *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->b[i].state != MS_LK_UNREACHED)
            continue;
        s->b[i].state = MS_LK_LEADER;
        s->b[i].leader = (uint32_t)i;
        push(s, i);
        drain(s, PH_CLIQUE, i);
    }
    /* resolve leader chains (each link points to a later leader, so they end) */
    for (size_t i = 0; i < s->n; i++) {
        if (s->b[i].state != MS_LK_INDIRECT)
            continue;
        size_t r = s->b[i].leader;
        while (s->b[r].state == MS_LK_INDIRECT && r != s->b[r].leader)
            r = s->b[r].leader;
        /* compress the path */
        size_t j = i;
        while (s->b[j].state == MS_LK_INDIRECT && s->b[j].leader != r) {
            size_t next = s->b[j].leader;
            s->b[j].leader = (uint32_t)r;
            j = next;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        ms_lk_block *b = &s->b[i];
        switch (b->state) {
        case MS_LK_REACHED: b->state = MS_LEAK_REACHABLE; break;
        case MS_LK_POSSIBLE: b->state = MS_LEAK_POSSIBLE; break;
        case MS_LK_LEADER: b->state = MS_LEAK_DEFINITE; b->leader = (uint32_t)i; break;
        case MS_LK_INDIRECT: b->state = MS_LEAK_INDIRECT; break;
        default: b->state = MS_LEAK_DEFINITE; b->leader = (uint32_t)i; break;
        }
    }
}

size_t ms_lk_fold_root(const ms_lk_scan *s, size_t i)
{
    return s->b[i].leader < s->n ? s->b[i].leader : i;
}
