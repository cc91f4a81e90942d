/* pthread_create + pthread_join cost, for bench-threads.sh: creates N threads one after
 * the other (each returns at once) and joins each, then N more created detached, timed in
 * the process with CLOCK_MONOTONIC; prints ns per create+join and per detached create.
 * With "alloc", each thread allocates and frees one block before it returns (what an
 * agent does at a thread's first allocation is then in the cost).
 * usage: bench-threads N [alloc] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *nothing(void *a)
{
    return a;
}

static void *one_block(void *a)
{
    void *volatile p = malloc(32);
    free(p);
    return a;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000;
    void *(*fn)(void *) = argc > 2 && !strcmp(argv[2], "alloc") ? one_block : nothing;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, fn, NULL) || pthread_join(t, NULL))
            return 1;
    }
    double t1 = now_ns();
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, &at, fn, NULL))
            return 1;
    }
    double t2 = now_ns();
    printf("join_ns=%.0f detached_ns=%.0f\n", (t1 - t0) / n, (t2 - t1) / n);
    return 0;
}
