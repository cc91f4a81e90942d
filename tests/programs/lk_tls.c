/* Ground truth: static TLS variables (initial-exec model, in the main program) of the
 * main thread and of another, waiting, thread keep their blocks reachable. */
#include <pthread.h>

#include "lk_common.h"

static __thread void *tls_p;
static int ready, done;

__attribute__((noinline)) static void *thread_main(void *arg)
{
    (void)arg;
    tls_p = lk_alloc(40, 'T');
    lk_clear_stack();
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        usleep(1000);
    free(tls_p);
    return NULL;
}

__attribute__((noinline)) static void run(void)
{
    tls_p = lk_alloc(72, 'M');
}

int main(void)
{
    pthread_t t;
    run();
    pthread_create(&t, NULL, thread_main, NULL);
    while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        usleep(1000);
    lk_clear_stack();
    lk_check();
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    lk_say("EXPECT definite=0/0 indirect=0/0 possible=0/0 reachable>=2/112\n");
    lk_say("VALGRIND definite=0 indirect=0 possible=1 # glibc DTV of the live thread\n");
    return 0;
}
