/* Ground truth for requests: the main thread sleeps in nanosleep (5 s) while memsight
 * dump and memsight leaks ask the agent; the sleep must end whole (0, not EINTR, after
 * the full time). The program has one thread: the agent starts no control thread for it,
 * and serves the requests on the sleeping thread. Prints READY, then SLEPT. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long secs = argc > 1 ? atol(argv[1]) : 5;
    void *volatile keep = malloc(100);
    printf("READY\n");
    fflush(stdout);
    struct timespec t0, t1, req = {secs, 0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = nanosleep(&req, NULL);
    int err = rc ? errno : 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    printf("SLEPT rc=%d errno=%d ms=%ld\n", rc, err, ms);
    free(keep);
    return 0;
}
