/* Guard pages' sampling of a thread's first allocation: THREADS threads, one after the
 * other, each makes one allocation, its first, frees it and reads it (a use after free).
 * Run with guard=RATE and guard_recover=1, each use after free of a guarded block is
 * caught and the program runs on: the exit snapshot's guard_errors counts the threads
 * whose first allocation was guarded. Prints "threads N". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static __thread char *volatile kept; /* the compiler must not see the use after free */

static void *first(void *arg)
{
    (void)arg;
    kept = malloc(32);
    if (!kept)
        return NULL;
    free(kept);
    return (void *)(long)((volatile char *)kept)[0]; /* the use after free */
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, done = 0;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, first, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 2;
        done++;
    }
    printf("threads %d\n", done);
    return 0;
}
