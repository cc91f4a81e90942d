/* Throughput of malloc/free pairs with 1 or N threads for bench/bench-overhead.sh:
 * argv[1] threads, argv[2] pairs per thread. Prints "threads N pairs P seconds S".
 * 0 threads: the pairs run on the main thread and the program never creates a thread
 * (single-threaded for the C library: its allocator takes no locks). With argv[3] = B,
 * each thread allocates B blocks of 16-64 bytes, then frees them all, and so on (more
 * than glibc's per-thread cache holds: the arena's paths, where its locks are). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs, batch;

/* B blocks allocated, then all freed */
static void work_batches(void)
{
    void **b = malloc(sizeof(void *) * (size_t)batch);
    for (long i = 0; b && i < pairs; i += batch) {
        for (long k = 0; k < batch; k++)
            b[k] = malloc(16 + (size_t)(k & 3) * 16);
        for (long k = 0; k < batch; k++)
            free(b[k]);
    }
    free(b);
}

static void *work(void *arg)
{
    if (batch > 0) {
        work_batches();
        return NULL;
    }
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
    batch = argc > 3 ? atol(argv[3]) : 0;
    if (n < 0 || n > 64 || pairs < 1)
        return 2;
    pthread_t t[64];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (n == 0)
        work(NULL);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, work, (void *)(long)i);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("threads %d pairs %ld seconds %.6f\n", n, pairs,
           (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
    return 0;
}
