/* A program that walks its own stack with libunwind before anything else in the process
 * did: libunwind's first walk maps its caches with mmap while it holds its own lock, with
 * every signal blocked (as tcmalloc's walks do when it grows its heap). An agent that
 * walked the stack with libunwind from that mmap would wait for that lock forever. Prints
 * whether each walk found frames; exits 0 when all did. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <pthread.h>
#include <stdio.h>

static int walk(void)
{
    void *pcs[64];
    return unw_backtrace(pcs, 64) > 1;
}

static void *thread_walk(void *arg)
{
    (void)arg;
    return (void *)(long)walk();
}

int main(void)
{
    int ok = walk();
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, thread_walk, NULL) != 0 || pthread_join(t, &r) != 0)
        return 2;
    printf("walks %s %s\n", ok ? "ok" : "empty", r ? "ok" : "empty");
    return ok && r ? 0 : 1;
}
