/* Ground-truth program for the watch tests: grows its RSS at a steady rate (MB per
 * second, in steps), touching every page, for a given time, then holds still until
 * stdin closes. Usage: pa_grow RATE_MB_PER_S STEP_MS SECONDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    double rate = argc > 1 ? atof(argv[1]) : 10;
    long step_ms = argc > 2 ? atol(argv[2]) : 100;
    double secs = argc > 3 ? atof(argv[3]) : 5;
    if (rate <= 0 || step_ms <= 0 || secs < 0)
        return 2;
    size_t per_step = (size_t)(rate * 1048576.0 * (double)step_ms / 1000.0);
    long steps = (long)(secs * 1000 / (double)step_ms);
    printf("pid=%d step_bytes=%zu steps=%ld\nready\n", (int)getpid(), per_step, steps);
    fflush(stdout);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < steps; i++) {
        char *p = malloc(per_step);
        if (!p)
            return 1;
        memset(p, (int)(i & 0xff) | 1, per_step);
        next.tv_nsec += step_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("done\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
