/* Real-program test: 64 threads allocating and freeing concurrently (each keeps 10
 * blocks of 100 bytes from rp_thread_keep), all joined, then one thread with a small
 * (64 KiB) stack, which the agent's thread-local state must leave room for; prints a
 * checksum. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 64
void *volatile keep[NT * 10];

__attribute__((noinline)) void rp_thread_keep(int t)
{
    for (int i = 0; i < 10; i++)
        keep[t * 10 + i] = malloc(100);
    keep[t * 10] = keep[t * 10];
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    unsigned long sum = 0;
    for (int i = 0; i < 3000; i++) {
        char *p = malloc((size_t)(i % 300) + 1);
        memset(p, t, (size_t)(i % 300) + 1);
        sum += (unsigned char)p[0];
        p = realloc(p, (size_t)(i % 500) + 8);
        free(p);
    }
    rp_thread_keep(t);
    return (void *)sum;
}

int main(void)
{
    pthread_t th[NT];
    for (long i = 0; i < NT; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
            return 1;
    unsigned long total = 0;
    for (int i = 0; i < NT; i++) {
        void *r;
        pthread_join(th[i], &r);
        total += (unsigned long)r;
    }
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    pthread_t small;
    void *r = NULL;
    if (pthread_create(&small, &a, worker, (void *)(long)(NT - 1)) != 0)
        return 2;
    pthread_join(small, &r);
    pthread_attr_destroy(&a);
    printf("threads %d checksum %lu small %lu\n", NT, total, (unsigned long)r);
    return 0;
}
