/* Unit tests of the Poisson byte sampler: its logarithm, the law of the distance between
 * samples, unbiased weights per block size, the 99% threshold, seeds and min_size.
 * Statistical checks use fixed seeds and tolerances of several standard deviations. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "agent/record/sampler.h"

static void test_neg_log_matches_libm(void **state)
{
    (void)state;
    ms_sampler_configure(4096, 0, 1, 1); /* fills the logarithm's tables */
    double worst = 0;
    for (double u = 1e-15; u <= 1.0; u *= 1.0137) {
        double want = -log(u), got = ms_sampler_neg_log(u);
        double err = fabs(got - want) / (want > 1e-300 ? want : 1.0);
        if (err > worst)
            worst = err;
    }
    assert_true(worst < 1e-13);
    assert_true(fabs(ms_sampler_neg_log(1.0)) < 1e-15);
    assert_true(fabs(ms_sampler_neg_log(0x1.0p-53) - 53 * log(2.0)) < 1e-12);
    /* the draws' own values (53-bit u), the table's interval edges among them */
    uint64_t x = 99;
    for (int i = 0; i < 2000000; i++) {
        double u = (double)((ms_sampler_splitmix64(&x) >> 11) + 1) * 0x1.0p-53;
        if (i & 1) /* a mantissa at an edge of the table's intervals, or just below one */
            u = ldexp(1.0 + (double)(i % 256) / 256.0 - (i & 2 ? 0x1.0p-52 : 0), -1 - i % 40);
        double want = -log(u), got = ms_sampler_neg_log(u);
        if (fabs(got - want) > 1e-15 + 1e-14 * want)
            fail_msg("-ln(%a): %.17g, libm %.17g", u, got, want);
    }
}

/* The distance to the next sample is geometric with p = 1/interval: mean = interval and
 * P(d > k) = (1-p)^k. */
static void test_distance_is_geometric(void **state)
{
    (void)state;
    const uint64_t interval = 4096;
    ms_sampler_configure(interval, 0, 1, 12345);
    ms_sampler_state st;
    ms_sampler_seed_state(&st, 777);
    const int n = 1000000;
    double sum = 0;
    uint64_t over[4] = {0};
    const uint64_t ks[4] = {1, 1024, 4096, 16384};
    uint64_t min = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        uint64_t d = ms_sampler_next_distance(&st);
        sum += (double)d;
        if (d < min)
            min = d;
        for (int j = 0; j < 4; j++)
            over[j] += d > ks[j];
    }
    double mean = sum / n;
    /* standard error of the mean: interval/sqrt(n) = 4.1 bytes; allow 5 sigma */
    assert_true(fabs(mean - (double)interval) < 5 * (double)interval / sqrt((double)n));
    assert_true(min >= 1);
    for (int j = 0; j < 4; j++) {
        double p = pow(1.0 - 1.0 / (double)interval, (double)ks[j]);
        double sd = sqrt(p * (1 - p) / n);
        double got = (double)over[j] / n;
        assert_true(fabs(got - p) < 5 * sd + 1e-9);
    }
}

/* Sum of weights over many blocks of one size estimates the bytes allocated. */
static void check_unbiased(uint64_t interval, uint64_t size, uint64_t seed)
{
    ms_sampler_configure(interval, 0, 1, seed);
    uint64_t total = 0, est = 0, nblocks = 0;
    const uint64_t target = 2000000000ULL;
    while (total < target && nblocks < 3000000) {
        uint64_t w = ms_sampler_weigh(size);
        if (w) {
            if (size < ms_sampler_cfg.threshold)
                assert_int_equal(w % interval, 0);
            else
                assert_int_equal(w, size);
        }
        est += w;
        total += size;
        nblocks++;
    }
    /* Var(estimate) <= total * interval (Poisson count of sampled bytes, times I^2) */
    double sd = sqrt((double)total * (double)interval);
    double diff = fabs((double)est - (double)total);
    if (diff > 5 * sd)
        fail_msg("size %llu: estimate %llu vs %llu (%.2f sd)", (unsigned long long)size,
                 (unsigned long long)est, (unsigned long long)total, diff / sd);
}

static void test_weights_unbiased_per_size(void **state)
{
    (void)state;
    const uint64_t sizes[] = {1, 16, 24, 100, 1000, 4095, 4096, 4097, 10000, 18000, 18861, 65536};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            check_unbiased(4096, sizes[i], seed * 1000003 + i);
    check_unbiased(524288, 100, 5);
    check_unbiased(524288, 300000, 6);
    check_unbiased(64, 40, 7);
}

/* Many blocks of mixed sizes, as a program allocates them (mostly small, a few large):
 * the sum of the weights estimates the bytes allocated (a draw biased by its logarithm
 * would show here: weights are counts of draws). */
static void test_weights_unbiased_mixed(void **state)
{
    (void)state;
    ms_sampler_configure(4096, 0, 1, 4242);
    uint64_t x = 17, total = 0, est = 0;
    for (int i = 0; i < 4000000; i++) {
        uint64_t r = ms_sampler_splitmix64(&x);
        uint64_t size = r % 100 == 0 ? 4096 + (r >> 20) % 60000 : 8 + (r >> 8) % 400;
        est += ms_sampler_weigh(size);
        total += size;
    }
    double sd = sqrt((double)total * 4096.0);
    double diff = fabs((double)est - (double)total);
    if (diff > 5 * sd || diff > 0.01 * (double)total)
        fail_msg("estimate %llu vs %llu bytes (%.2f sd)", (unsigned long long)est,
                 (unsigned long long)total, diff / sd);
}

/* A block big enough to be hit with > 99% probability is recorded at its real size, and
 * the threshold is the smallest such size. */
static void test_threshold_99_percent(void **state)
{
    (void)state;
    const uint64_t intervals[] = {2, 64, 4096, 524288, 1ULL << 30};
    for (size_t i = 0; i < sizeof intervals / sizeof intervals[0]; i++) {
        uint64_t I = intervals[i];
        ms_sampler_configure(I, 0, 1, 42);
        uint64_t t = ms_sampler_cfg.threshold;
        double q = 1.0 - 1.0 / (double)I;
        assert_true(1.0 - pow(q, (double)t) > 0.99);
        assert_true(1.0 - pow(q, (double)(t - 1)) <= 0.99 + 1e-9);
        assert_int_equal(ms_sampler_weigh(t), t);
        assert_int_equal(ms_sampler_weigh(t * 3 + 7), t * 3 + 7);
    }
    ms_sampler_configure(4096, 0, 1, 1);
    assert_true(ms_sampler_cfg.threshold > 18800 && ms_sampler_cfg.threshold < 18900);
}

/* A block of size s below the threshold may hold several samples: weight n*interval
 * with n ~ Binomial(s, 1/interval), mean s/interval. */
static void test_multiple_samples_per_block(void **state)
{
    (void)state;
    ms_sampler_configure(1000, 0, 1, 99);
    uint64_t size = 4000; /* threshold is ~4603: still sampled */
    assert_true(size < ms_sampler_cfg.threshold);
    uint64_t hist[16] = {0};
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        uint64_t w = ms_sampler_weigh(size);
        uint64_t k = w / 1000;
        hist[k < 15 ? k : 15]++;
    }
    /* Poisson(4) approximation of Binomial(4000, 1/1000): P(0)=0.0183, P(4)=0.195 */
    assert_true(fabs((double)hist[0] / n - 0.01829) < 0.003);
    assert_true(fabs((double)hist[4] / n - 0.1954) < 0.006);
    assert_true(hist[8] > 0);
}

static void test_seed_reproducible(void **state)
{
    (void)state;
    uint64_t a[64], b[64];
    ms_sampler_configure(4096, 0, 1, 2024);
    for (int i = 0; i < 64; i++)
        a[i] = ms_sampler_weigh(1000);
    ms_sampler_configure(4096, 0, 1, 2024);
    for (int i = 0; i < 64; i++)
        b[i] = ms_sampler_weigh(1000);
    assert_memory_equal(a, b, sizeof a);
    ms_sampler_configure(4096, 0, 1, 2025);
    int same = 1;
    for (int i = 0; i < 64; i++) {
        b[i] = ms_sampler_weigh(1000);
        same &= a[i] == b[i];
    }
    assert_false(same);
}

static void test_min_size_and_full(void **state)
{
    (void)state;
    /* min_size alone (Raphael): exact sizes at or above, nothing below */
    ms_sampler_configure(0, 1024, 0, 0);
    assert_true(ms_sampler_cfg.enabled);
    assert_int_equal(ms_sampler_weigh(1023), 0);
    assert_int_equal(ms_sampler_weigh(1024), 1024);
    assert_int_equal(ms_sampler_weigh(1 << 20), 1 << 20);
    /* sampling plus min_size: small blocks never recorded, but their bytes count down
     * like any (a sample that falls in one is dropped): the fast path has no compare of
     * its own for min_size */
    ms_sampler_configure(4096, 512, 1, 3);
    (void)ms_sampler_weigh(600); /* seeds this thread's countdown */
    uint64_t before = ms_sampler_share(&ms_sampler_tls);
    assert_true(before > 1 && before <= ms_sampler_cfg.fast_max);
    uint64_t small = 0;
    while (small + 100 < before) { /* passed over by the fast path, counted down */
        assert_int_equal(ms_sampler_weigh(100), 0);
        small += 100;
    }
    assert_int_equal(ms_sampler_share(&ms_sampler_tls), before - small);
    for (int i = 0; i < 1000; i++) /* past samples too: never recorded */
        assert_int_equal(ms_sampler_weigh(100), 0);
    assert_true(ms_sampler_share(&ms_sampler_tls) <= ms_sampler_cfg.fast_max);
    /* nothing configured: not enabled (the agent records everything itself) */
    ms_sampler_configure(0, 0, 0, 0);
    assert_false(ms_sampler_cfg.enabled);
    assert_int_equal(ms_sampler_weigh(5), 5);
}

/* The fast path's share is kept negated (a block passes when neg + size does not carry):
 * a block that ends one byte before the next sampled byte is plain, the next byte is the
 * sample, and a block that reaches it is recorded. */
static void test_countdown_exact(void **state)
{
    (void)state;
    int checked = 0;
    for (uint64_t seed = 1; seed <= 400; seed++) {
        ms_sampler_configure(4096, 0, 1, seed);
        (void)ms_sampler_weigh(1); /* seeds this thread's countdown */
        ms_sampler_state saved = ms_sampler_tls;
        uint64_t c = ms_sampler_share(&saved) + saved.extra; /* the next sampled byte */
        assert_true(ms_sampler_share(&saved) >= 1 &&
                    ms_sampler_share(&saved) <= ms_sampler_cfg.fast_max);
        if (c >= ms_sampler_cfg.threshold)
            continue; /* such blocks are recorded at their real size */
        checked++;
        if (c > 1)
            assert_int_equal(ms_sampler_weigh(c - 1), 0);
        assert_int_equal(ms_sampler_weigh(1), 4096);
        ms_sampler_tls = saved;
        assert_true(ms_sampler_weigh(c) >= 4096);
        ms_sampler_tls = saved;
        assert_int_equal(ms_sampler_weigh(0), 0); /* no bytes, no sample */
        assert_int_equal(ms_sampler_tls.neg, saved.neg);
    }
    assert_true(checked > 300);
}

/* A thread's state starts closed (the TLS image, not zeroes: zero would be a share of
 * 2^64 bytes, every block plain for good): its first block of a byte or more decides. */
static void *fresh_thread(void *arg)
{
    uint64_t *out = arg;
    out[0] = ms_sampler_tls.neg;
    out[1] = (uint64_t)ms_sampler_fast(&ms_sampler_tls, 0);
    out[2] = (uint64_t)ms_sampler_fast(&ms_sampler_tls, 1);
    out[3] = ms_sampler_weigh(100);
    out[4] = ms_sampler_tls.rng != 0;
    return NULL;
}

static void test_new_thread_closed(void **state)
{
    (void)state;
    ms_sampler_configure(64, 0, 1, 11);
    uint64_t out[5] = {0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fresh_thread, out), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(out[0] == MS_SAMPLER_CLOSED);
    assert_int_equal(out[1], 1); /* 0 bytes: nothing to sample */
    assert_int_equal(out[2], 0); /* 1 byte: the slow path seeds */
    assert_int_equal(out[4], 1);
    (void)out[3];
}

static void test_count_estimate(void **state)
{
    (void)state;
    assert_int_equal(ms_sampler_count_estimate(16, 4096), 256);
    assert_int_equal(ms_sampler_count_estimate(100000, 100000), 1);
    assert_int_equal(ms_sampler_count_estimate(3000, 4096), 1);
    assert_int_equal(ms_sampler_count_estimate(1000, 8192), 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neg_log_matches_libm),
        cmocka_unit_test(test_distance_is_geometric),
        cmocka_unit_test(test_weights_unbiased_per_size),
        cmocka_unit_test(test_weights_unbiased_mixed),
        cmocka_unit_test(test_threshold_99_percent),
        cmocka_unit_test(test_multiple_samples_per_block),
        cmocka_unit_test(test_seed_reproducible),
        cmocka_unit_test(test_min_size_and_full),
        cmocka_unit_test(test_countdown_exact),
        cmocka_unit_test(test_new_thread_closed),
        cmocka_unit_test(test_count_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
