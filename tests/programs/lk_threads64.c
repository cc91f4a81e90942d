/* Ground truth under load: 64 threads each keep one block on their stack and lose one,
 * while 4 more threads keep creating and joining short-lived threads, so that threads
 * exit during the stop. Three scans in a row; each must find exactly 64 lost blocks. */
#include <pthread.h>

#include "lk_common.h"

enum { NT = 64, NCHURN = 4 };
static int ready, done;

__attribute__((noinline)) static void lose(int i)
{
    void *volatile p = lk_alloc(16, 'a' + i % 26);
    lk_use((void *)&p);
}

__attribute__((noinline)) static void *worker(void *arg)
{
    int i = (int)(intptr_t)arg;
    void *volatile keep = lk_alloc(32, 'k');
    lose(i);
    lk_clear_stack();
    __atomic_fetch_add(&ready, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        usleep(2000);
    free(keep);
    return NULL;
}

static void *nothing(void *arg)
{
    return arg;
}

static void *churn(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) == 0)
            pthread_join(t, NULL);
    }
    return NULL;
}

int main(void)
{
    pthread_t w[NT], c[NCHURN];
    for (int i = 0; i < NT; i++)
        pthread_create(&w[i], NULL, worker, (void *)(intptr_t)i);
    while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < NT)
        usleep(1000);
    for (int i = 0; i < NCHURN; i++)
        pthread_create(&c[i], NULL, churn, NULL);
    lk_clear_stack();
    for (int k = 0; k < 3; k++)
        lk_check();
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < NCHURN; i++)
        pthread_join(c[i], NULL);
    for (int i = 0; i < NT; i++)
        pthread_join(w[i], NULL);
    lk_say("EXPECT definite=64/1024 indirect=0/0 possible=0/0 reachable>=64/2048\n");
    return 0;
}
