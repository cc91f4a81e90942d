/* Real-program test: 64 threads allocating and freeing concurrently (each keeps 10
 * blocks of 100 bytes from rp_thread_keep), all joined; prints a checksum. */
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
    printf("threads %d checksum %lu\n", NT, total);
    return 0;
}
