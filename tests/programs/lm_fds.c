/* Lists the descriptors the program can see, after allocating from main, from a thread
 * and from a signal handler (a walk through a signal frame, which the cached unwinder
 * hands to libunwind): one line per descriptor, "NUMBER TARGET" with pipe and socket
 * inode numbers left out, so that runs with and without the agent compare equal. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *volatile keep[3];

static void on_usr1(int sig)
{
    (void)sig;
    keep[0] = malloc(48); /* allocates inside a signal handler: a walk through the frame */
}

static void *worker(void *arg)
{
    (void)arg;
    keep[1] = malloc(64);
    return NULL;
}

int main(void)
{
    keep[2] = malloc(32);
    signal(SIGUSR1, on_usr1);
    raise(SIGUSR1);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) == 0)
        pthread_join(t, NULL);
    DIR *d = opendir("/proc/self/fd");
    if (!d) {
        perror("/proc/self/fd");
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
            continue;
        char path[300], target[512];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        char *bracket = strchr(target, '[');
        if (bracket)
            *bracket = 0; /* "pipe:[1234]" -> "pipe:" */
        printf("%s %s\n", e->d_name, target);
    }
    closedir(d);
    return 0;
}
