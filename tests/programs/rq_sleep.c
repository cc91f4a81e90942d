/* Ground truth for requests: the main thread sleeps in nanosleep (5 s) while memsight
 * dump and memsight leaks ask the agent; the sleep must end whole (0, not EINTR, after
 * the full time). Prints READY once the agent's control thread exists, then SLEPT. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int control_thread_runs(void)
{
    DIR *d = opendir("/proc/self/task");
    int found = 0;
    struct dirent *e;
    while (d && !found && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "re");
        if (f) {
            found = fgets(comm, sizeof comm, f) && !strcmp(comm, "memsight-ctl\n");
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    long secs = argc > 1 ? atol(argv[1]) : 5;
    void *volatile keep = malloc(100); /* the first allocation after main starts it */
    while (!control_thread_runs())
        sched_yield();
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
