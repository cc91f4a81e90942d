/* Poisson byte sampling (heapprofd's semantics) and the minimum-size filter, per thread.
 * Runs inside the target on the allocation hot path: no malloc, no locks, no syscalls on
 * the fast path; the state lives in initial-exec TLS and starts zeroed (= uninitialised). */
#ifndef MS_AGENT_SAMPLER_H
#define MS_AGENT_SAMPLER_H

#include <stdint.h>

#define MS_SAMPLER_LIKELY(x) __builtin_expect(!!(x), 1)

/* Model: every byte the program allocates is sampled independently with probability
 * p = 1/interval. The distance to the next sampled byte is therefore geometric with mean
 * `interval`; it is drawn as ceil(E) with E exponential (rate -ln(1-p), mean ~interval),
 * which is exactly that geometric distribution. A block of `size` bytes that holds n
 * sampled bytes is recorded with weight n*interval (E[weight] = size: unbiased). A block
 * so large that P(n >= 1) > 99% (size >= threshold ~ 4.6*interval) is recorded with its
 * real size and does not consume the countdown (the process is memoryless). */
typedef struct ms_sampler_config {
    uint64_t interval;  /* mean bytes between samples; 0 = record every block */
    uint64_t min_size;  /* blocks smaller than this are never recorded (0 = no limit) */
    uint64_t threshold; /* blocks >= this are recorded at their real size */
    uint64_t fast_max;  /* bound of the fast path's budget: the threshold when sampling with
                         * an allocator that needs no re-entrancy flag, else 0 (no fast path) */
    double scale;       /* -1/ln(1-p): multiplies -ln(U) to give the next distance */
    uint64_t seed;      /* base seed when has_seed */
    int has_seed;
    int enabled;        /* interval > 0 or min_size > 0 */
} ms_sampler_config;

/* The countdown c to the next sampled byte (a block of n bytes is plain when n < c) is
 * split in two so that the fast path is one addition: the fast path's share (at most
 * cfg.fast_max, so no block at or above the threshold passes) is kept negated in `neg`,
 * and a block passes when neg + n does not carry (n < share: x86 adds to thread-local
 * memory and jumps on the carry, two instructions); the rest of the countdown waits in
 * `extra`. Closed (state not seeded, a decision pending, fast path off: every call of
 * one byte or more decides in the slow path; a block of 0 bytes never holds a sample
 * and passes) is a share of 1, neg = UINT64_MAX, which is also the initial value of
 * every thread's state. Once seeded, countdown = share + extra. */
typedef struct ms_sampler_state {
    uint64_t neg;       /* minus the bytes the fast path may take + 1 (see above) */
    uint64_t extra;     /* the rest of the countdown */
    uint64_t rng;       /* xorshift64* state, never 0 once seeded; 0 = not seeded yet */
    uint64_t epoch;     /* process epoch the state was seeded in (reseeded after fork) */
    uint64_t pending_w; /* weight decided by ms_sampler_pick, not yet recorded */
    uint64_t pending_size;
} ms_sampler_state;
#define MS_SAMPLER_CLOSED UINT64_MAX

/* The fast path's share: blocks smaller than this pass. */
static inline uint64_t ms_sampler_share(const ms_sampler_state *st)
{
    return -st->neg;
}

extern ms_sampler_config ms_sampler_cfg;
extern __thread ms_sampler_state ms_sampler_tls __attribute__((tls_model("initial-exec")));

/* Sets the process-wide configuration. Call once at agent start (before other threads
 * allocate through the agent) or in a test. interval 1 is the same as 0 (every byte). */
void ms_sampler_configure(uint64_t interval, uint64_t min_size, int has_seed, uint64_t seed);

/* In a forked child: makes every thread's state reseed on its next use, so that parent
 * and child draw different sequences (still deterministic with seed=). */
void ms_sampler_after_fork_child(void);

uint64_t ms_sampler_weigh_slow(ms_sampler_state *st, uint64_t size);
int ms_sampler_pick_slow(ms_sampler_state *st, uint64_t size);
void ms_sampler_unpark(ms_sampler_state *st);

/* The fast path: 1 (and the countdown taken) if a block of `size` bytes is plain without
 * any further decision. Blocks below min_size count down like any (a sample that falls
 * in one is dropped in the slow path): no compare of its own here. The sum is stored
 * before its carry is tested (GCC then makes it one addition to the thread-local word
 * and a jump); a block that does not pass takes it back in the cold path. */
static inline int ms_sampler_fast(ms_sampler_state *st, uint64_t size)
{
    if (MS_SAMPLER_LIKELY(!__builtin_add_overflow(st->neg, size, &st->neg)))
        return 1;
    /* read back from memory: the sum need not live in a register on the fast path */
    __asm__ volatile("" : : : "memory");
    st->neg -= size;
    /* a signal handler's allocation between the two stores could leave a share larger
     * than fast_max (every later call would pass): the share is then given up to the
     * slow path */
    uint64_t share = ms_sampler_share(st);
    if (__builtin_expect(share - 1 >= ms_sampler_cfg.fast_max && share != 1, 0))
        st->neg = MS_SAMPLER_CLOSED;
    return 0;
}

/* Weight in bytes to account for a new block of `size` bytes, or 0 to skip it (not
 * unwound, not stored). Only call when ms_sampler_cfg.enabled. */
static inline uint64_t ms_sampler_weigh(uint64_t size)
{
    ms_sampler_state *st = &ms_sampler_tls;
    if (ms_sampler_fast(st, size))
        return 0;
    return ms_sampler_weigh_slow(st, size);
}

/* Before allocating (the agent gives recorded blocks a header, so it must know first):
 * 1 if a block of `size` bytes is to be recorded, its weight kept for
 * ms_sampler_take(); 0 if it is to be allocated plainly. While a decision is pending the
 * fast path is closed, so the same block asked again (realloc by copy goes through
 * malloc) reaches the slow path and gets the same answer. */
static inline int ms_sampler_pick(uint64_t size)
{
    ms_sampler_state *st = &ms_sampler_tls;
    if (ms_sampler_fast(st, size))
        return 0;
    return ms_sampler_pick_slow(st, size);
}

/* The weight of the block being recorded: the one ms_sampler_pick decided, else a
 * decision now (paths that record without picking first, e.g. realloc in place). */
static inline uint64_t ms_sampler_take(uint64_t size)
{
    ms_sampler_state *st = &ms_sampler_tls;
    uint64_t w = st->pending_w;
    if (w) {
        st->pending_w = 0;
        ms_sampler_unpark(st);
        if (st->pending_size == size)
            return w;
    }
    return ms_sampler_weigh(size);
}

/* A recorded block keeps its real size; how many samples it holds (its weight is
 * n*interval) rides in the top bits of its live-table tid field (tids are < 2^22).
 * n = 0 means "weight = size" (full mode, min_size mode, or a block above threshold). */
#define MS_SAMPLER_TID_BITS 22
#define MS_SAMPLER_TID_MASK ((1u << MS_SAMPLER_TID_BITS) - 1)
#define MS_SAMPLER_MAX_SAMPLES ((1u << (32 - MS_SAMPLER_TID_BITS)) - 1)

static inline uint32_t ms_sampler_tag_tid(uint32_t tid, uint64_t size, uint64_t weight)
{
    tid &= MS_SAMPLER_TID_MASK;
    if (weight == size || ms_sampler_cfg.interval == 0)
        return tid;
    return tid | (uint32_t)((weight / ms_sampler_cfg.interval) << MS_SAMPLER_TID_BITS);
}

static inline uint64_t ms_sampler_entry_weight(uint64_t size, uint32_t tid_field)
{
    uint32_t n = tid_field >> MS_SAMPLER_TID_BITS;
    return n ? (uint64_t)n * ms_sampler_cfg.interval : size;
}

/* Estimated number of blocks a record of `weight` bytes for a block of `size` bytes
 * stands for, rounded to nearest, at least 1 (bytes are unbiased; counts approximate). */
static inline uint64_t ms_sampler_count_estimate(uint64_t size, uint64_t weight)
{
    if (size == 0 || weight <= size)
        return 1;
    return (weight + size / 2) / size;
}

/* Pure helpers, exposed for the tests. */
double ms_sampler_neg_log(double u); /* -ln(u) for u in (0, 1], no libm; after configure */
uint64_t ms_sampler_splitmix64(uint64_t *x);
uint64_t ms_sampler_next_distance(ms_sampler_state *st); /* one geometric draw, >= 1 */
void ms_sampler_seed_state(ms_sampler_state *st, uint64_t seed);

#endif
