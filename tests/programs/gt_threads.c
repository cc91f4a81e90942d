/* Ground truth: 4 threads and the main thread allocating and freeing concurrently (each
 * keeps a known number of blocks, and the allocations are counted too: with max_depth=1
 * all five share one stack, whose counters the main thread adds to without atomics and
 * the others with), joined; one detached thread that exits; one thread still running
 * at exit, whose blocks were allocated after the others' were freed (so that its thread's
 * table of pending changes still holds their allocation counts at exit: the snapshot
 * must add them). Thread stacks: joined and exited-detached ones are gone, the running
 * one is live with its requested size. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
#define ITER 20000
#define KEEP 250

GT_NOINLINE void gt_worker_alloc(int t)
{
    void *ring[64] = {0};
    for (int i = 0; i < ITER; i++) {
        int k = i & 63;
        free(ring[k]);
        ring[k] = malloc(16 + (size_t)(i % 200));
    }
    for (int k = 0; k < 64; k++)
        free(ring[k]);
    for (int i = 0; i < KEEP; i++)
        gt_keep[t * KEEP + i] = malloc(64);
}

static void *worker(void *arg)
{
    gt_worker_alloc((int)(long)arg);
    return NULL;
}

static volatile int sleeper_started;
#define PARKED 100

GT_NOINLINE void gt_parked_alloc(void)
{
    for (int i = 0; i < PARKED; i++)
        gt_keep[6000 + i] = malloc(48);
}

static void *sleeper(void *arg)
{
    (void)arg;
    gt_parked_alloc();
    sleeper_started = 1;
    for (;;)
        pause();
    return NULL;
}

static void *detached_fn(void *arg)
{
    (void)arg;
    return NULL;
}

static int count_tasks(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

GT_NOINLINE void gt_spawn_workers(void)
{
    pthread_t th[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, worker, (void *)i);
    gt_worker_alloc(4);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    gt_keep[5000] = 0;
}

GT_NOINLINE void gt_spawn_detached(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    pthread_t t;
    int before = count_tasks();
    pthread_create(&t, &a, detached_fn, NULL);
    pthread_attr_destroy(&a);
    /* wait until it has really exited */
    for (int i = 0; i < 5000 && count_tasks() > before; i++)
        usleep(1000);
    gt_keep[5001] = 0;
}

GT_NOINLINE void gt_spawn_sleeper(void)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 512 * 1024);
    pthread_t t;
    pthread_create(&t, &a, sleeper, NULL);
    pthread_attr_destroy(&a);
    while (!sleeper_started)
        usleep(1000);
    gt_keep[5002] = 0;
}

int main(void)
{
    gt_spawn_workers();
    gt_spawn_detached();
    gt_spawn_sleeper();
    gt_expect("gt_worker_alloc", "heap", 5 * KEEP, 5 * KEEP * 64);
    unsigned long bytes = 0;
    for (int i = 0; i < ITER; i++)
        bytes += 16 + (unsigned long)(i % 200);
    gt_expect_allocs("gt_worker_alloc", "heap", 5ul * (ITER + KEEP), 5 * (bytes + KEEP * 64ul));
    gt_expect("gt_parked_alloc", "heap", PARKED, PARKED * 48);
    gt_expect_allocs("gt_parked_alloc", "heap", PARKED, PARKED * 48);
    gt_expect("gt_spawn_workers", "stack", 0, 0);
    gt_expect("gt_spawn_detached", "stack", 0, 0);
    gt_expect("gt_spawn_sleeper", "stack", 1, 512 * 1024);
    fflush(stdout);
    exit(0);
}
