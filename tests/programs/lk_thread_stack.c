/* Ground truth: a pointer on another (blocked) thread's stack keeps its block
 * reachable; the same thread's lost block is definitely lost. */
#include <pthread.h>

#include "lk_common.h"

static int ready, done;

__attribute__((noinline)) static void lose(void)
{
    void *volatile p = lk_alloc(24, 'X');
    lk_use((void *)&p);
}

__attribute__((noinline)) static void *thread_main(void *arg)
{
    (void)arg;
    void *volatile p = lk_alloc(136, 'P');
    lose();
    lk_clear_stack();
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        usleep(1000);
    free(p);
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
    lk_say("EXPECT definite=1/24 indirect=0/0 possible=0/0 reachable>=1/136\n");
    lk_say("VALGRIND definite=1 indirect=0 possible=1 # glibc DTV of the live thread\n");
    return 0;
}
