/* Unit tests of the leak scan's stop-the-world (src/agent/leak/leak_stop.c) in this process:
 * 64 threads each spinning with a known value in r12 are stopped with their registers
 * saved and run on after the release; a thread that blocks the signal is detected at
 * once (not after the timeout); threads exiting and being created meanwhile do not
 * break it; repeated stops work. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/platform/platform.h"
#include "agent/leak/leak_stop.h"

/* the agent's per-thread state, which sig_resume.c reads (stack bounds unknown here) */
__thread ms_tls ms_self;

#define MAGIC 0x5eed000000000000ull
enum { NT = 64 };
static volatile int run_flag = 1;
static uint32_t tids[NT];
static volatile uint64_t progress[NT];
static int started;

static void *spinner(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    tids[i] = (uint32_t)syscall(SYS_gettid);
    __atomic_fetch_add(&started, 1, __ATOMIC_ACQ_REL);
    register uint64_t r12 __asm__("r12") = MAGIC + i;
    while (run_flag) {
        /* yield with a bare syscall instruction: nothing touches r12 on the way */
        long ret;
        __asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_sched_yield), "r"(r12)
                         : "rcx", "r11", "memory");
        __asm__ volatile("" : "+r"(r12));
        progress[i]++;
    }
    return NULL;
}

static ms_lk_thread slots[1024];

static int sig(void)
{
    return SIGRTMAX - 3;
}

static void test_stop_64_threads(void **state)
{
    (void)state;
    pthread_t th[NT];
    run_flag = 1;
    started = 0;
    for (uintptr_t i = 0; i < NT; i++)
        assert_int_equal(pthread_create(&th[i], NULL, spinner, (void *)i), 0);
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < NT)
        usleep(1000);
    for (int round = 0; round < 2; round++) {
        /* static: a failed check leaves this frame, and stopped threads still read it */
        static ms_lk_world w;
        memset(&w, 0, sizeof w);
        w.t = slots;
        w.cap = 1024;
        /* generous: 64 spinners on a loaded 2-core machine answer late, and the stop
         * returns as soon as every one has */
        int rc = ms_lk_stop_world(&w, sig(), 30000);
        if (rc != 0 || w.timeout != 0) {
            ms_lk_resume_world(&w); /* the spinners must not stay stopped past the test */
            fail_msg("stop: rc %d, %zu of %zu threads did not answer in 30 s", rc,
                     (size_t)w.timeout, (size_t)w.n);
        }
        /* every spinner is stopped, with its own value in r12 */
        int found = 0;
        uint64_t before[NT];
        for (int i = 0; i < NT; i++)
            before[i] = progress[i];
        for (size_t k = 0; k < w.n; k++) {
            for (int i = 0; i < NT; i++) {
                if (w.t[k].tid != tids[i])
                    continue;
                assert_int_equal(w.t[k].state, MS_LKT_STOPPED);
                assert_int_equal(w.t[k].regs[REG_R12], MAGIC + (uint64_t)i);
                assert_true(w.t[k].sp != 0 && w.t[k].tp != 0);
                found++;
            }
        }
        assert_int_equal(found, NT);
        usleep(20000);
        for (int i = 0; i < NT; i++)
            assert_int_equal(progress[i], before[i]); /* nobody moved while stopped */
        ms_lk_resume_world(&w);
        usleep(50000);
        int moved = 0;
        for (int i = 0; i < NT; i++)
            moved += progress[i] != before[i];
        assert_true(moved > 0);
    }
    run_flag = 0;
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
}

static volatile int blocker_run = 1;
static void *blocker(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    __atomic_fetch_add(&started, 1, __ATOMIC_ACQ_REL);
    while (blocker_run)
        usleep(1000);
    return NULL;
}

static void *short_lived(void *arg)
{
    return arg;
}

static volatile int churn_run = 1;
static void *churner(void *arg)
{
    (void)arg;
    while (churn_run) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, NULL) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

static void test_blocked_and_exiting_threads(void **state)
{
    (void)state;
    pthread_t b, c[2];
    started = 0;
    blocker_run = churn_run = 1;
    assert_int_equal(pthread_create(&b, NULL, blocker, NULL), 0);
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < 1)
        usleep(1000);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&c[i], NULL, churner, NULL), 0);
    for (int round = 0; round < 3; round++) {
        ms_lk_world w;
        memset(&w, 0, sizeof w);
        w.t = slots;
        w.cap = 1024;
        uint64_t t0 = ms_lk_mono_ns();
        assert_int_equal(ms_lk_stop_world(&w, sig(), 5000), 0);
        uint64_t took = ms_lk_mono_ns() - t0;
        assert_true(w.timeout >= 1); /* the blocker */
        assert_true(took < 4000000000ull); /* found from SigBlk, not by the 5 s timeout */
        for (size_t k = 0; k < w.n; k++)
            assert_true(w.t[k].state == MS_LKT_STOPPED || w.t[k].state == MS_LKT_GONE ||
                        w.t[k].state == MS_LKT_TIMEOUT);
        ms_lk_resume_world(&w);
    }
    churn_run = 0;
    blocker_run = 0;
    for (int i = 0; i < 2; i++)
        pthread_join(c[i], NULL);
    pthread_join(b, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_64_threads),
        cmocka_unit_test(test_blocked_and_exiting_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
