/* Live heap blocks: address -> (size, stack, tid, time). 1024 stripes, each an
 * open-addressing (linear probing, backward-shift delete) array of 32-byte entries
 * with its own spinlock, grown by 1.5x in place of a global lock or a global resize.
 * Runs inside the target: memory from mmap only; locks are never held across fork. */
#include <sched.h>
#include <string.h>

#include "agent/agent.h"

#define MS_STRIPE_BITS 10
#define MS_NSTRIPES (1u << MS_STRIPE_BITS)
#define MS_STRIPE_MIN_SLOTS 128u /* one 4 KiB page */

typedef struct ms_stripe {
    int lock;
    uint32_t count;
    uint32_t cap;   /* slots */
    uint32_t limit; /* max entries (capacity share) */
    ms_live_entry *slots;
} __attribute__((aligned(64))) ms_stripe;

static ms_stripe *ms_stripes;

static inline uint64_t live_hash(uint64_t a)
{
    uint64_t h = (a >> 4) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static inline uint32_t live_home(uint64_t h, uint32_t cap)
{
    return (uint32_t)(((h & 0xffffffffull) * cap) >> 32);
}

static inline ms_stripe *live_stripe(uint64_t h)
{
    return &ms_stripes[h >> (64 - MS_STRIPE_BITS)];
}

static inline void stripe_lock(ms_stripe *s)
{
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_load_n(&s->lock, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE))
            return;
        if (spins > 64)
            sched_yield();
        else
            __builtin_ia32_pause();
    }
}

static inline void stripe_unlock(ms_stripe *s)
{
    __atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}

int ms_live_init(uint64_t capacity)
{
    ms_stripes = ms_sys_mmap(sizeof(ms_stripe) * MS_NSTRIPES);
    if (!ms_stripes)
        return -1;
    uint64_t per = capacity / MS_NSTRIPES;
    per = per + per / 8 + 16;
    if (per > 0x3fffffffu)
        per = 0x3fffffffu;
    for (unsigned i = 0; i < MS_NSTRIPES; i++)
        ms_stripes[i].limit = (uint32_t)per;
    return 0;
}

/* Inserts without checks into a table known to have room. */
static void stripe_put(ms_live_entry *slots, uint32_t cap, const ms_live_entry *e)
{
    uint32_t i = live_home(live_hash(e->addr), cap);
    while (slots[i].addr)
        i = i + 1 == cap ? 0 : i + 1;
    slots[i] = *e;
}

static int stripe_grow(ms_stripe *s)
{
    uint64_t ncap = s->cap ? (uint64_t)s->cap + s->cap / 2 : MS_STRIPE_MIN_SLOTS;
    uint64_t bytes = (ncap * sizeof(ms_live_entry) + 4095) & ~4095ull;
    ncap = bytes / sizeof(ms_live_entry);
    if (ncap > 0xffffffffull)
        return -1;
    ms_live_entry *n = ms_sys_mmap(bytes);
    if (!n)
        return -1;
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->slots[i].addr)
            stripe_put(n, (uint32_t)ncap, &s->slots[i]);
    ms_sys_munmap(s->slots, (size_t)s->cap * sizeof(ms_live_entry));
    s->slots = n;
    s->cap = (uint32_t)ncap;
    return 0;
}

int ms_live_insert(const ms_live_entry *e)
{
    uint64_t h = live_hash(e->addr);
    ms_stripe *s = live_stripe(h);
    stripe_lock(s);
    if (MS_UNLIKELY((uint64_t)(s->count + 1) * 4 > (uint64_t)s->cap * 3)) {
        if (s->count >= s->limit || stripe_grow(s) != 0) {
            stripe_unlock(s);
            return -1;
        }
    }
    uint32_t cap = s->cap;
    uint32_t i = live_home(h, cap);
    ms_live_entry *slots = s->slots;
    while (slots[i].addr) {
        if (slots[i].addr == e->addr) { /* stale entry (missed free): replace */
            ms_account_forget(&slots[i]);
            slots[i] = *e;
            stripe_unlock(s);
            return 0;
        }
        i = i + 1 == cap ? 0 : i + 1;
    }
    slots[i] = *e;
    s->count++;
    stripe_unlock(s);
    return 0;
}

static int stripe_lookup(ms_stripe *s, uint64_t h, uint64_t addr, uint32_t *at)
{
    uint32_t cap = s->cap;
    if (!cap)
        return 0;
    uint32_t i = live_home(h, cap);
    ms_live_entry *slots = s->slots;
    while (slots[i].addr) {
        if (slots[i].addr == addr) {
            *at = i;
            return 1;
        }
        i = i + 1 == cap ? 0 : i + 1;
    }
    return 0;
}

int ms_live_remove(uint64_t addr, ms_live_entry *out)
{
    uint64_t h = live_hash(addr);
    ms_stripe *s = live_stripe(h);
    stripe_lock(s);
    uint32_t i;
    if (!stripe_lookup(s, h, addr, &i)) {
        stripe_unlock(s);
        return 0;
    }
    ms_live_entry *slots = s->slots;
    uint32_t cap = s->cap;
    *out = slots[i];
    /* backward-shift deletion keeps every probe chain unbroken without tombstones */
    uint32_t j = i;
    for (;;) {
        j = j + 1 == cap ? 0 : j + 1;
        if (!slots[j].addr)
            break;
        uint32_t k = live_home(live_hash(slots[j].addr), cap);
        int move = (j > i) ? (k <= i || k > j) : (k <= i && k > j);
        if (move) {
            slots[i] = slots[j];
            i = j;
        }
    }
    slots[i].addr = 0;
    s->count--;
    stripe_unlock(s);
    return 1;
}

int ms_live_find(uint64_t addr, ms_live_entry *out)
{
    uint64_t h = live_hash(addr);
    ms_stripe *s = live_stripe(h);
    stripe_lock(s);
    uint32_t i;
    int found = stripe_lookup(s, h, addr, &i);
    if (found)
        *out = s->slots[i];
    stripe_unlock(s);
    return found;
}

uint64_t ms_live_count(void)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < MS_NSTRIPES; i++)
        n += __atomic_load_n(&ms_stripes[i].count, __ATOMIC_RELAXED);
    return n;
}

uint64_t ms_live_bytes_reserved(void)
{
    uint64_t n = sizeof(ms_stripe) * MS_NSTRIPES;
    for (unsigned i = 0; i < MS_NSTRIPES; i++)
        n += (uint64_t)__atomic_load_n(&ms_stripes[i].cap, __ATOMIC_RELAXED) * sizeof(ms_live_entry);
    return n;
}

int ms_live_foreach(ms_live_fn fn, void *arg, unsigned flags)
{
    for (unsigned i = 0; i < MS_NSTRIPES; i++) {
        ms_stripe *s = &ms_stripes[i];
        if (!(flags & MS_ITER_NOLOCK))
            stripe_lock(s);
        int stop = 0;
        for (uint32_t j = 0; j < s->cap && !stop; j++)
            if (s->slots[j].addr)
                stop = fn(&s->slots[j], MS_KIND_HEAP, arg);
        if (!(flags & MS_ITER_NOLOCK))
            stripe_unlock(s);
        if (stop)
            return stop;
    }
    return 0;
}

void ms_live_fork_prepare(void)
{
    for (unsigned i = 0; i < MS_NSTRIPES; i++)
        stripe_lock(&ms_stripes[i]);
}

void ms_live_fork_parent(void)
{
    for (unsigned i = 0; i < MS_NSTRIPES; i++)
        stripe_unlock(&ms_stripes[i]);
}

void ms_live_fork_child(void)
{
    ms_live_fork_parent();
}
