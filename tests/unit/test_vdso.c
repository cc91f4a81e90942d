/* Unit tests of the vDSO look-up (vdso.c): the clock_gettime it finds is the one the
 * dynamic loader knows for the vDSO (dlsym on linux-vdso.so.1, a look-up of its own), it
 * gives the coarse clock's time, and names the vDSO does not define give NULL. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <time.h>

#include <cmocka.h>

#include "agent/platform/vdso.h"

static uint64_t ns_of(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

static void *loader_vdso_sym(const char *name)
{
    void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return h ? dlsym(h, name) : NULL;
}

static void test_found_as_the_loader_finds_it(void **state)
{
    (void)state;
    if (!getauxval(AT_SYSINFO_EHDR))
        skip(); /* no vDSO here: the agent keeps the C library's clock_gettime */
    void *want = loader_vdso_sym(MS_ARCH_VDSO_CLOCK_GETTIME);
    assert_non_null(want);
    assert_ptr_equal(ms_vdso_func(MS_ARCH_VDSO_CLOCK_GETTIME), want);
    assert_ptr_equal(ms_clock_coarse_fn, (void *)clock_gettime);
    ms_vdso_init();
    assert_ptr_equal(ms_clock_coarse_fn, want);
}

static void test_gives_the_coarse_clock(void **state)
{
    (void)state;
    ms_vdso_init();
    for (int i = 0; i < 1000; i++) {
        struct timespec a, v, b;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &a);
        assert_int_equal(ms_clock_coarse_fn(CLOCK_MONOTONIC_COARSE, &v), 0);
        clock_gettime(CLOCK_MONOTONIC_COARSE, &b);
        assert_true(ns_of(&a) <= ns_of(&v) && ns_of(&v) <= ns_of(&b));
    }
}

static void test_unknown_names(void **state)
{
    (void)state;
    assert_null(ms_vdso_func("no_such_vdso_function"));
    assert_null(ms_vdso_func(""));
    assert_null(ms_vdso_func("__vdso_clock_gettim"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_as_the_loader_finds_it),
        cmocka_unit_test(test_gives_the_coarse_clock),
        cmocka_unit_test(test_unknown_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
