/* Throughput of malloc/free pairs with 1 or N threads for bench/bench-overhead.sh:
 * argv[1] threads, argv[2] pairs per thread. Prints "threads N pairs P seconds S". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;

static void *work(void *arg)
{
    unsigned x = (unsigned)(long)arg * 2654435761u + 1;
    void *keep[64] = {0};
    for (long i = 0; i < pairs; i++) {
        x = x * 1103515245u + 12345u;
        unsigned k = (x >> 8) & 63;
        free(keep[k]);
        keep[k] = malloc(16 + ((x >> 16) & 1023)); /* no shared writes: threads only meet
                                                       in the allocator and the agent */
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1;
    pairs = argc > 2 ? atol(argv[2]) : 2000000;
    if (n < 1 || n > 64 || pairs < 1)
        return 2;
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, work, (void *)(long)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("threads %d pairs %ld seconds %.6f\n", n, pairs,
           (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
