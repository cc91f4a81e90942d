/* Recorded blocks by address (see addr_table.h): the filter of counters and, behind it,
 * 64 shards of open addressing (linear probing, deletion by backward shift: no
 * tombstones, so a table of steady size is never rebuilt) keyed by the block's address,
 * each under its own spinlock. Shards map their slots on first use and grow by doubling
 * (rehashed into a new mapping), so the table takes memory in proportion to the blocks it
 * keeps. Recorded blocks are few (one per sampling interval of allocated bytes), and a
 * plain block's free reaches this file only when the filter says "maybe". */
#define _GNU_SOURCE
#include "agent/tables/addr_table.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

int ms_addr_mode;
uint8_t ms_addr_filter[1u << MS_ADDR_FILTER_BITS];

#define SHARDS 64
#define EMPTY 0ull
#define MIN_CAP 64u

typedef struct slot {
    uint64_t key; /* ms_ptr_key of the block, or EMPTY */
    uint32_t idx;
    uint32_t pad;
} slot;

typedef struct shard {
    int lock;
    uint32_t cap;  /* slots (a power of two), 0 before the first insert */
    uint32_t live; /* keys */
    slot *s;
} __attribute__((aligned(64))) shard;

static shard shards[SHARDS];

int ms_addr_init(void)
{
    __atomic_store_n(&ms_addr_mode, 1, __ATOMIC_RELEASE);
    return 0;
}

/* Takes the lock another thread held (or holds). */
static MS_NOINLINE void lock_wait(shard *h)
{
    do
        while (__atomic_load_n(&h->lock, __ATOMIC_RELAXED))
            sched_yield();
    while (__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE));
}

static inline void lock(shard *h)
{
    if (MS_UNLIKELY(__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE)))
        lock_wait(h);
}

static void unlock(shard *h)
{
    __atomic_store_n(&h->lock, 0, __ATOMIC_RELEASE);
}

/* The product's top bits pick the shard, its low bits the first slot. */
static inline uint64_t key_hash(uint64_t key)
{
    return (key >> 4) * 0x9E3779B97F4A7C15ull;
}

static shard *shard_of(uint64_t h)
{
    return &shards[(h >> 58) & (SHARDS - 1)];
}

/* The slot holding key, or NULL. */
static slot *find(shard *h, uint64_t key, uint64_t hash)
{
    if (!h->cap)
        return NULL;
    uint32_t m = h->cap - 1;
    for (uint32_t i = (uint32_t)hash & m, n = 0; n < h->cap; i = (i + 1) & m, n++) {
        if (h->s[i].key == key)
            return &h->s[i];
        if (h->s[i].key == EMPTY)
            return NULL;
    }
    return NULL;
}

/* A new mapping of four slots per live key (at least MIN_CAP), the keys rehashed into
 * it. 0, or -ENOMEM (the old slots stay). */
static MS_NOINLINE int grow(shard *h)
{
    uint64_t cap = MIN_CAP;
    while (cap < (uint64_t)(h->live + 1) * 4)
        cap *= 2;
    if (cap > (1ull << 31))
        return -ENOMEM;
    slot *ns = ms_sys_mmap(cap * sizeof(slot));
    if (!ns) {
        MS_HEALTH_INC(table_grow_failures);
        return -ENOMEM;
    }
    uint32_t m = (uint32_t)cap - 1;
    for (uint32_t i = 0; i < h->cap; i++) {
        uint64_t k = h->s[i].key;
        if (k == EMPTY)
            continue;
        uint32_t j = (uint32_t)key_hash(k) & m;
        while (ns[j].key != EMPTY)
            j = (j + 1) & m;
        ns[j] = h->s[i];
    }
    if (h->s)
        ms_sys_munmap(h->s, (size_t)h->cap * sizeof(slot));
    h->s = ns;
    h->cap = (uint32_t)cap;
    return 0;
}

/* Room for one more key: at most half the slots hold keys (frees of plain blocks the
 * filter lets through probe to an empty slot: short runs keep them cheap); else the
 * shard grows. */
static inline int room(const shard *h)
{
    return MS_LIKELY(h->cap != 0) && (uint64_t)(h->live + 1) * 2 <= (uint64_t)h->cap;
}

/* 0, or -ENOMEM when the shard has no room and cannot grow. */
static int make_room(shard *h)
{
    return room(h) ? 0 : grow(h);
}

/* Empties slot i and shifts back the keys after it that probed past it, so that every
 * key stays reachable from its first slot without tombstones. */
static void delete_at(shard *h, uint32_t i)
{
    uint32_t m = h->cap - 1;
    for (uint32_t j = (i + 1) & m;; j = (j + 1) & m) {
        uint64_t k = h->s[j].key;
        if (k == EMPTY)
            break;
        uint32_t home = (uint32_t)key_hash(k) & m;
        /* k may move to i when its home is not within the cyclic range (i, j] */
        if (((j - home) & m) >= ((j - i) & m)) {
            h->s[i] = h->s[j];
            i = j;
        }
    }
    h->s[i].key = EMPTY;
    h->s[i].idx = 0;
}

static void filter_add(const void *p, int d)
{
    uint8_t *c = &ms_addr_filter[ms_addr_hash(p)];
    uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);
    for (;;) {
        if (v == 255) /* saturated: stays (a "maybe" for good) */
            return;
        uint8_t nv = (uint8_t)(v + d);
        if (__atomic_compare_exchange_n(c, &v, nv, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return;
    }
}

void ms_addr_hold(const void *p)
{
    filter_add(p, 1);
}

/* Under h's lock, with room for one more key: p -> idx. */
static inline void put_locked(shard *h, const void *p, uint64_t key, uint64_t hash, uint32_t idx,
                              uint32_t *stale)
{
    uint32_t m = h->cap - 1, i = (uint32_t)hash & m;
    while (h->s[i].key != EMPTY && h->s[i].key != key)
        i = (i + 1) & m;
    if (h->s[i].key != key) {
        h->live++;
        filter_add(p, 1); /* before free() can see the block: it is not returned yet */
        *stale = 0;
    } else {
        *stale = h->s[i].idx;
    }
    h->s[i].key = key;
    h->s[i].idx = idx;
}

static inline uint32_t remove_locked(shard *h, const void *p, uint64_t key, uint64_t hash)
{
    slot *s = find(h, key, hash);
    uint32_t idx = 0;
    if (s) {
        idx = s->idx;
        delete_at(h, (uint32_t)(s - h->s));
        h->live--;
        filter_add(p, -1);
    }
    return idx;
}

/* Insert and remove call nothing on their way when the lock is free and the shard has
 * room: the waits and the growth are these functions, entered by a jump, so that the
 * common path saves no registers (inline, their calls cost five saved and restored on
 * every call). */
#define MS_SIBCALLS __attribute__((optimize("optimize-sibling-calls")))

static MS_NOINLINE int insert_slow(shard *h, const void *p, uint32_t idx, int locked,
                                   uint32_t *stale)
{
    uint64_t key = ms_ptr_key(p), hash = key_hash(key);
    if (!locked)
        lock_wait(h);
    *stale = 0;
    int rc = make_room(h);
    if (rc == 0)
        put_locked(h, p, key, hash, idx, stale);
    unlock(h);
    return rc;
}

MS_SIBCALLS int ms_addr_insert(const void *p, uint32_t idx, uint32_t *stale)
{
    uint64_t key = ms_ptr_key(p), hash = key_hash(key);
    shard *h = shard_of(hash);
    if (MS_UNLIKELY(__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE)))
        return insert_slow(h, p, idx, 0, stale);
    if (MS_UNLIKELY(!room(h)))
        return insert_slow(h, p, idx, 1, stale);
    put_locked(h, p, key, hash, idx, stale);
    unlock(h);
    return 0;
}

static MS_NOINLINE uint32_t remove_slow(shard *h, const void *p)
{
    uint64_t key = ms_ptr_key(p), hash = key_hash(key);
    lock_wait(h);
    uint32_t idx = remove_locked(h, p, key, hash);
    unlock(h);
    return idx;
}

MS_SIBCALLS uint32_t ms_addr_remove(const void *p)
{
    uint64_t key = ms_ptr_key(p), hash = key_hash(key);
    shard *h = shard_of(hash);
    if (MS_UNLIKELY(__atomic_exchange_n(&h->lock, 1, __ATOMIC_ACQUIRE)))
        return remove_slow(h, p);
    uint32_t idx = remove_locked(h, p, key, hash);
    unlock(h);
    return idx;
}

uint64_t ms_addr_count(void)
{
    uint64_t n = 0;
    for (int i = 0; i < SHARDS; i++)
        n += __atomic_load_n(&shards[i].live, __ATOMIC_RELAXED);
    return n;
}

uint64_t ms_addr_bytes_reserved(void)
{
    if (!ms_addr_mode)
        return 0;
    uint64_t n = (uint64_t)1 << MS_ADDR_FILTER_BITS;
    for (int i = 0; i < SHARDS; i++)
        n += (uint64_t)__atomic_load_n(&shards[i].cap, __ATOMIC_RELAXED) * sizeof(slot);
    return n;
}

void ms_addr_fork_prepare(void)
{
    for (int i = 0; i < SHARDS; i++)
        lock(&shards[i]);
}

void ms_addr_fork_parent(void)
{
    for (int i = SHARDS - 1; i >= 0; i--)
        unlock(&shards[i]);
}

void ms_addr_fork_child(void)
{
    for (int i = 0; i < SHARDS; i++)
        shards[i].lock = 0;
}
