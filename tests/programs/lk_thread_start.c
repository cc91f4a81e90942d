/* Ground truth: pthread_create's argument (a block holding another) is still reachable
 * while the new thread has not run yet: the C library keeps it for the thread. The
 * check comes right after pthread_create with the process on one CPU, so the thread
 * has usually not started; the answer is the same whether it has or not (it never
 * reads its argument until the check is over). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "lk_common.h"

static int go;

static void *wait_for_check(void *arg)
{
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        sched_yield();
    void **a = arg;
    free(a[0]);
    free(a);
    return NULL;
}

int main(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    sched_setaffinity(0, sizeof one, &one);
    void **arg = lk_alloc(32, 'A');
    arg[0] = lk_alloc(80, 'B');
    pthread_t t;
    if (pthread_create(&t, NULL, wait_for_check, arg) != 0)
        return 1;
    arg = NULL;
    lk_use(&arg);
    lk_clear_stack();
    lk_check();
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    lk_say("EXPECT definite=0/0 indirect=0/0 possible=0/0 reachable>=2/112\n");
    lk_say("VALGRIND definite=0 indirect=0 possible=1 # glibc DTV of the live thread\n");
    return 0;
}
