/* Unit tests of the watch trackers: spec parsing, N consecutive exceedances before a
 * firing, cooldown, the per-run trigger budget, growth over a window, below-thresholds
 * (memavail), on synthetic series whose answers are known. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/watch.h"

static void test_parse(void **state)
{
    (void)state;
    ms_tracker t;
    char err[256];
    assert_int_equal(ms_tracker_parse(&t, "rss>500M", 3, 1000, err, sizeof err), 0);
    assert_int_equal(t.metric, MS_MET_RSS);
    assert_int_equal(t.kind, MS_TRK_ABOVE);
    assert_true(t.threshold == 500.0 * 1024);
    assert_int_equal(t.consecutive, 3);
    assert_int_equal(t.cooldown_ms, 1000);
    assert_int_equal(ms_tracker_parse(&t, "pss+1.5G/10s,n=5,cooldown=250ms", 3, 1000, err, sizeof err), 0);
    assert_int_equal(t.kind, MS_TRK_GROWTH);
    assert_true(t.threshold == 1.5 * 1024 * 1024);
    assert_int_equal(t.window_ms, 10000);
    assert_int_equal(t.consecutive, 5);
    assert_int_equal(t.cooldown_ms, 250);
    assert_int_equal(ms_tracker_parse(&t, "memavail<5%", 3, 0, err, sizeof err), 0);
    assert_int_equal(t.kind, MS_TRK_BELOW);
    assert_true(t.threshold == 5);
    assert_int_equal(ms_tracker_parse(&t, "threads>750", 3, 0, err, sizeof err), 0);
    assert_int_equal(ms_tracker_parse(&t, "fds>1000", 3, 0, err, sizeof err), 0);
    assert_int_equal(ms_tracker_parse(&t, "vmsize>3.5G", 3, 0, err, sizeof err), 0);
    assert_true(t.threshold == 3.5 * 1024 * 1024);
    assert_int_equal(ms_tracker_parse(&t, "native_heap+10M/1s", 3, 0, err, sizeof err), 0);
    assert_int_equal(t.metric, MS_MET_CAT_FIRST + MS_CAT_NATIVE_HEAP);
    assert_true(t.threshold == 10 * 1024);
    assert_int_equal(ms_tracker_parse(&t, "anon>1G", 3, 0, err, sizeof err), 0);
    assert_string_equal(ms_watch_metric_name((enum ms_watch_metric)t.metric), "anon");
    assert_int_equal(ms_tracker_parse(&t, "rss>1024", 3, 0, err, sizeof err), 0);
    assert_true(t.threshold == 1024); /* bare numbers are kB */

    static const char *const bad[] = {"rss", "heap>5", "rss>", "rss>5X", "threads>5M",
                                      "rss+5M", "rss+5M/0s", "rss+5M/x", "memavail<120%",
                                      "memavail+1/1s", "rss>5M,n=0", "rss>5M,foo=1",
                                      "rss>-5", ">5", "rss>5M,cooldown=abc", "native>5",
                                      "anon_kb>5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ms_tracker_parse(&t, bad[i], 3, 0, err, sizeof err) == 0)
            fail_msg("'%s' was accepted", bad[i]);
}

static ms_watch_sample S(uint64_t t_ms, uint64_t rss)
{
    ms_watch_sample s;
    memset(&s, 0, sizeof s);
    s.t_ms = t_ms;
    s.rss_kb = rss;
    s.mem_total_kb = 1000;
    s.mem_available_kb = rss; /* reused for the memavail test */
    return s;
}

/* Runs t over the series and returns the indexes where it fired (as a bit mask). */
static uint64_t run(ms_tracker *t, const ms_watch_sample *s, size_t n, int budget)
{
    uint64_t mask = 0;
    int used = 0;
    for (size_t i = 1; i <= n; i++)
        if (ms_tracker_eval(t, s, i, budget < 0 || used < budget)) {
            mask |= 1ull << (i - 1);
            used++;
        }
    return mask;
}

static void test_consecutive_and_cooldown(void **state)
{
    (void)state;
    /* rss>100: above at samples 1,2 (broken at 3), 4,5,6 (fires at 6), 7..15 above. */
    uint64_t rss[] = {50, 200, 200, 50, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200};
    ms_watch_sample s[16];
    for (int i = 0; i < 16; i++)
        s[i] = S((uint64_t)i * 100, rss[i]);
    ms_tracker t;
    char err[64];
    assert_int_equal(ms_tracker_parse(&t, "rss>100", 3, 500, err, sizeof err), 0);
    uint64_t m = run(&t, s, 16, -1);
    /* First firing at index 6 (the third in a row after the break), then the cooldown of
     * 500 ms holds until t=1100 (index 11), which has a fresh streak of >= 3. */
    assert_true(m == ((1ull << 6) | (1ull << 11)));
    assert_int_equal(t.fire_count, 2);

    /* Without cooldown: every third exceedance (the streak restarts at each firing). */
    assert_int_equal(ms_tracker_parse(&t, "rss>100,cooldown=0", 3, 500, err, sizeof err), 0);
    m = run(&t, s, 16, -1);
    assert_true(m == ((1ull << 6) | (1ull << 9) | (1ull << 12) | (1ull << 15)));

    /* The budget stops it after one; n=1 fires on the first exceedance. */
    assert_int_equal(ms_tracker_parse(&t, "rss>100,cooldown=0,n=1", 3, 0, err, sizeof err), 0);
    m = run(&t, s, 16, 1);
    assert_true(m == (1ull << 1));
}

static void test_growth_window(void **state)
{
    (void)state;
    /* Flat for 5 samples, then +10 per 100 ms. Growth over 300 ms above 25: the window
     * holds 4 samples (t-300..t); +30 appears once the window spans three increases. */
    ms_watch_sample s[20];
    for (int i = 0; i < 20; i++)
        s[i] = S((uint64_t)i * 100, i < 5 ? 1000 : 1000 + (uint64_t)(i - 4) * 10);
    ms_tracker t;
    char err[64];
    assert_int_equal(ms_tracker_parse(&t, "rss+25/300ms", 2, 10000, err, sizeof err), 0);
    uint64_t m = run(&t, s, 20, -1);
    /* Exceeds from index 7 (1030 - 1000 = 30 > 25); second in a row at 8: fires at 8. */
    assert_true(m == (1ull << 8));
    assert_true(t.value == 30);
    assert_true(t.exceeded);
}

static void test_memavail(void **state)
{
    (void)state;
    ms_watch_sample s[5];
    uint64_t avail[] = {500, 40, 40, 40, 600}; /* of 1000: 50%, 4%, 4%, 4%, 60% */
    for (int i = 0; i < 5; i++)
        s[i] = S((uint64_t)i * 1000, avail[i]);
    ms_tracker t;
    char err[64];
    assert_int_equal(ms_tracker_parse(&t, "memavail<5%", 3, 0, err, sizeof err), 0);
    assert_true(run(&t, s, 5, -1) == (1ull << 3));
    assert_true(ms_watch_metric_value(&s[4], MS_MET_MEMAVAIL) == 60.0);
}

static void test_sample_self(void **state)
{
    (void)state;
    ms_watch_sample s;
    char err[256];
    assert_int_equal(ms_watch_sample_once(getpid(), &s, 1, err, sizeof err), 0);
    assert_true(s.has_cats);
    uint64_t sum = 0;
    for (int c = 0; c < MS_CAT_COUNT; c++)
        sum += s.cat_rss_kb[c];
    /* The categories come from smaps read just after the rollup: the same process, so
     * within the little this test allocates in between. */
    assert_true(sum + 256 >= s.rss_kb && sum <= s.rss_kb + 256);
    assert_true(s.cat_rss_kb[MS_CAT_CODE] > 0);
    assert_true(s.rss_kb > 0 && s.pss_kb > 0 && s.pss_kb <= s.rss_kb);
    assert_true(s.uss_kb <= s.rss_kb);
    assert_int_equal(s.threads, 1);
    assert_true(s.fds >= 3);
    assert_true(s.vmsize_kb >= s.rss_kb);
    assert_true(s.mem_total_kb > 0 && s.mem_available_kb <= s.mem_total_kb);
    assert_true(ms_watch_sample_once(999999999, &s, 0, err, sizeof err) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),        cmocka_unit_test(test_consecutive_and_cooldown),
        cmocka_unit_test(test_growth_window), cmocka_unit_test(test_memavail),
        cmocka_unit_test(test_sample_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
