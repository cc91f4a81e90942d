/* Poisson byte sampler: the slow path (seeding, geometric draws, multi-sample weights).
 * Runs inside the target, called from malloc: never allocates, never locks, no libm
 * (the logarithm is computed here), one clock read per thread at most when unseeded. */
#include "agent/record/sampler.h"

#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

ms_sampler_config ms_sampler_cfg;
extern int ms_real_malloc_is_libc __attribute__((weak, visibility("hidden")));
/* Closed until seeded: the initial image every thread's copy starts from (a zeroed
 * state would be an open share of 2^64 bytes) */
__thread ms_sampler_state ms_sampler_tls
    __attribute__((tls_model("initial-exec"))) = {.neg = MS_SAMPLER_CLOSED};

static _Atomic uint64_t thread_ordinal;
static _Atomic uint64_t process_epoch = 1;

#define MS_LN2 0.69314718055994530942
#define MS_LN100 4.60517018598809136804
#define MS_SQRT2 1.41421356237309504880

/* ------------------------------------------------------------------------------------
 * Arithmetic without libm
 * ---------------------------------------------------------------------------------- */

/* ln(x) for a positive normal double: x = m*2^e with m in [sqrt(1/2), sqrt(2)), then
 * ln(m) = 2*atanh(z), z = (m-1)/(m+1), |z| <= 0.1716, series to z^21 (error < 1e-16).
 * The series' coefficients are constants and it is summed in a tree (Estrin), so the
 * chain of dependent operations is short: one draw per sample, on the allocation path. */
static double ms_ln(double x)
{
    union {
        double d;
        uint64_t u;
    } v = {x};
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    v.u = (v.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    double m = v.d;
    if (m > MS_SQRT2) {
        m *= 0.5;
        e++;
    }
    double z = (m - 1.0) / (m + 1.0), w = z * z, w2 = w * w, w4 = w2 * w2, w8 = w4 * w4;
    /* s = sum over k = 0..10 of w^k / (2k + 1) */
    double a0 = 1.0 + w * (1.0 / 3), a1 = 1.0 / 5 + w * (1.0 / 7), a2 = 1.0 / 9 + w * (1.0 / 11),
           a3 = 1.0 / 13 + w * (1.0 / 15), a4 = 1.0 / 17 + w * (1.0 / 19);
    double b0 = a0 + w2 * a1, b1 = a2 + w2 * a3, b2 = a4 + w2 * (1.0 / 21);
    double s = (b0 + w4 * b1) + w8 * b2;
    return (double)e * MS_LN2 + 2.0 * z * s;
}

/* The draws' logarithm: ln(x) = e*ln(2) + ln(c_i) + ln(1 + t) where c_i is the middle of
 * the interval of 2^-LN_BITS that x's mantissa m lies in (picked by its top bits) and
 * t = m/c_i - 1, |t| < 2^-(LN_BITS+1), so five terms of ln(1 + t)'s series leave an error
 * below 1e-17. Two table loads and a few multiplications, no division: ms_ln's
 * division and long series were a sixth of the agent's time at sample=4096 (one draw per
 * sample). The tables are filled by ms_sampler_configure before any draw. */
#define LN_BITS 8
static double ln_mid[1 << LN_BITS];  /* ln(c_i) */
static double inv_mid[1 << LN_BITS]; /* 1 / c_i */
static int ln_ready;

static void ln_tables_fill(void)
{
    if (ln_ready)
        return;
    for (int i = 0; i < 1 << LN_BITS; i++) {
        double c = 1.0 + (i + 0.5) / (double)(1 << LN_BITS);
        ln_mid[i] = ms_ln(c);
        inv_mid[i] = 1.0 / c;
    }
    ln_ready = 1;
}

static inline double ms_ln_fast(double x)
{
    union {
        double d;
        uint64_t u;
    } v = {x};
    int e = (int)((v.u >> 52) & 0x7ff) - 1023;
    unsigned i = (unsigned)(v.u >> (52 - LN_BITS)) & ((1u << LN_BITS) - 1);
    v.u = (v.u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
    double t = v.d * inv_mid[i] - 1.0, t2 = t * t;
    double p = t * ((1.0 - 0.5 * t) + t2 * ((1.0 / 3 - 0.25 * t) + t2 * 0.2));
    return (double)e * MS_LN2 + ln_mid[i] + p;
}

double ms_sampler_neg_log(double u)
{
    return -ms_ln_fast(u);
}

/* ln(1-p) for p in (0, 1): a series when p is small (1-p would lose digits). */
static double ms_ln_one_minus(double p)
{
    if (p < 1e-3) {
        double term = p, sum = 0;
        for (int k = 1; k <= 8; k++) {
            sum += term / k;
            term *= p;
        }
        return -sum;
    }
    return ms_ln(1.0 - p);
}

/* ------------------------------------------------------------------------------------
 * Random numbers: splitmix64 to seed, xorshift64* to draw
 * ---------------------------------------------------------------------------------- */

uint64_t ms_sampler_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t xorshift64s(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

void ms_sampler_seed_state(ms_sampler_state *st, uint64_t seed)
{
    uint64_t s = seed;
    st->rng = ms_sampler_splitmix64(&s);
    if (st->rng == 0)
        st->rng = 0x853C49E6748FEA9BULL;
    st->neg = MS_SAMPLER_CLOSED;
    st->extra = 0;
}

/* Sets the countdown c >= 1: the fast path's share up to fast_max (kept negated:
 * sampler.h), the rest aside. */
static void set_countdown(ms_sampler_state *st, uint64_t c)
{
    uint64_t r = c < ms_sampler_cfg.fast_max ? c : ms_sampler_cfg.fast_max;
    if (r == 0)
        r = 1; /* no fast path: a share of 1 lets only blocks of 0 bytes pass */
    st->neg = -r;
    st->extra = c - r;
}

/* The countdown of a seeded state. */
static uint64_t countdown(const ms_sampler_state *st)
{
    return ms_sampler_share(st) + st->extra;
}

uint64_t ms_sampler_next_distance(ms_sampler_state *st)
{
    /* u in (0, 1]: never 0, so -ln(u) is finite */
    double u = (double)((xorshift64s(&st->rng) >> 11) + 1) * 0x1.0p-53;
    double x = -ms_ln_fast(u) * ms_sampler_cfg.scale;
    if (!(x < 4e18))
        return (uint64_t)4e18;
    /* below 4e18 < 2^63: the signed conversion, one instruction where the unsigned one
     * tests for the top half; x is 0 or a hair below for u = 1 (d = 0, then 1) */
    int64_t d = (int64_t)x;
    if ((double)d < x)
        d++; /* ceil: P(d > k) = (1-p)^k, the geometric law of the next sampled byte */
    return d > 0 ? (uint64_t)d : 1;
}

static void init_thread_state(ms_sampler_state *st)
{
    uint64_t epoch = atomic_load_explicit(&process_epoch, memory_order_relaxed);
    uint64_t ord = atomic_fetch_add_explicit(&thread_ordinal, 1, memory_order_relaxed);
    uint64_t base;
    if (ms_sampler_cfg.has_seed) {
        base = ms_sampler_cfg.seed;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        base = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
        base ^= (uint64_t)syscall(SYS_gettid) << 32;
        base ^= (uint64_t)(uintptr_t)st;
    }
    ms_sampler_seed_state(st, base ^ (ord * 0xD1B54A32D192ED03ULL) ^
                                  (epoch * 0xABC98388FB8FAC03ULL));
    st->epoch = epoch;
}

/* ------------------------------------------------------------------------------------
 * Configuration and the slow path
 * ---------------------------------------------------------------------------------- */

/* The next use seeds the state again. */
static void forget_state(ms_sampler_state *st)
{
    st->neg = MS_SAMPLER_CLOSED;
    st->extra = 0;
    st->rng = 0;
    st->pending_w = 0;
}

void ms_sampler_configure(uint64_t interval, uint64_t min_size, int has_seed, uint64_t seed)
{
    ms_sampler_config c = {0};
    ln_tables_fill();
    c.min_size = min_size;
    c.has_seed = has_seed;
    c.seed = seed;
    if (interval > 1) {
        c.interval = interval;
        c.scale = -1.0 / ms_ln_one_minus(1.0 / (double)interval);
        /* smallest size whose chance of holding at least one sample exceeds 99% */
        double t = c.scale * MS_LN100;
        c.threshold = t >= 1.8e19 ? UINT64_MAX : (uint64_t)t + 1;
        /* the fast path jumps into the real malloc without the re-entrancy flag: only
         * for the C library's (the unit tests link this file alone: no agent there) */
        c.fast_max = !&ms_real_malloc_is_libc || ms_real_malloc_is_libc ? c.threshold : 0;
    } else {
        c.interval = 0;
        c.threshold = 0;
        c.fast_max = 0; /* every call goes to the slow path: min_size filter or record */
    }
    c.enabled = c.interval > 0 || min_size > 0;
    ms_sampler_cfg = c;
    atomic_store_explicit(&thread_ordinal, 0, memory_order_relaxed);
    forget_state(&ms_sampler_tls);
}

void ms_sampler_after_fork_child(void)
{
    atomic_fetch_add_explicit(&process_epoch, 1, memory_order_relaxed);
    forget_state(&ms_sampler_tls); /* the only thread left in the child */
}

/* The control thread starts from the allocation path (control.c); in sampled modes most
 * allocations never reach the recording code, so the slow path here offers the moment
 * too (weak: the unit tests link this file alone). */
extern int ms_ctl_need_start __attribute__((weak));
void ms_control_start_slow(void) __attribute__((weak));

uint64_t ms_sampler_weigh_slow(ms_sampler_state *st, uint64_t size)
{
    if (&ms_ctl_need_start && ms_control_start_slow &&
        __builtin_expect(__atomic_load_n(&ms_ctl_need_start, __ATOMIC_RELAXED) != 0, 0))
        ms_control_start_slow();
    int small = size < ms_sampler_cfg.min_size;
    if (ms_sampler_cfg.interval == 0 || size >= ms_sampler_cfg.threshold)
        return small ? 0 : size; /* full or min_size mode, or certain enough to be hit */
    uint64_t c = countdown(st);
    if (st->rng == 0) {
        init_thread_state(st);
        c = ms_sampler_next_distance(st);
    }
    uint64_t left = size, n = 0;
    while (left >= c) {
        left -= c;
        n++;
        c = ms_sampler_next_distance(st);
    }
    set_countdown(st, c - left);
    if (small) /* its bytes counted down like any: a sample in it is dropped */
        return 0;
    if (n > MS_SAMPLER_MAX_SAMPLES) /* needs size > ~1000 intervals: above threshold */
        n = MS_SAMPLER_MAX_SAMPLES;
    return n * ms_sampler_cfg.interval;
}

int ms_sampler_pick_slow(ms_sampler_state *st, uint64_t size)
{
    if (st->pending_w) {
        if (st->pending_size == size)
            return 1; /* already decided for this block */
        st->pending_w = 0; /* left over by an allocation that failed */
        ms_sampler_unpark(st);
    }
    uint64_t w = ms_sampler_weigh_slow(st, size);
    if (!w)
        return 0;
    st->pending_w = w;
    st->pending_size = size;
    /* park the fast path's budget until the decision is taken */
    st->extra += ms_sampler_share(st) - 1;
    st->neg = MS_SAMPLER_CLOSED;
    return 1;
}

void ms_sampler_unpark(ms_sampler_state *st)
{
    set_countdown(st, countdown(st));
}
