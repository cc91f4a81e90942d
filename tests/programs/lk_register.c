/* Ground truth: a pointer kept only in a callee-saved register (r15, x28 on AArch64)
 * of another thread, which is spinning while the check runs, keeps its block reachable. */
#include <pthread.h>

#include "lk_common.h"

#if defined(__aarch64__)
#define LK_REG "x28"
#else
#define LK_REG "r15"
#endif

static int ready, done;

__attribute__((noinline)) static void *thread_main(void *arg)
{
    (void)arg;
    register uintptr_t r __asm__(LK_REG) = (uintptr_t)lk_alloc(96, 'R');
    __asm__ volatile("" : "+r"(r));
    lk_clear_stack();
    __asm__ volatile("" : "+r"(r));
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        __asm__ volatile("" : "+r"(r));
    free((void *)r);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        usleep(1000);
    lk_clear_stack();
    lk_check();
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    /* reachable: the block and the thread's DTV (allocated by the dynamic linker) */
    lk_say("EXPECT definite=0/0 indirect=0/0 possible=0/0 reachable>=1/96\n");
    /* valgrind sees the live thread's DTV only through glibc's dtv+1 interior pointer */
    lk_say("VALGRIND definite=0 indirect=0 possible=1 # glibc DTV of the live thread\n");
    return 0;
}
