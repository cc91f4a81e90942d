/* fork() from many threads at once while others allocate: 8 threads each fork 10
 * children; every child allocates, frees, sleeps argv[1] ms (default 0) while still
 * allocating now and then, and leaves with exit(0) (so an agent writes its own snapshot);
 * the parent waits for all of them. Exit status 0 only if every child exited 0. A
 * deadlock shows as a timeout of the test. */
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 8
#define NFORKS 10
static void *volatile sink;
static volatile int done;
static long child_ms;

static void *allocator(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
        for (int i = 0; i < 1000; i++)
            free(sink = malloc(16 + (i % 512)));
    }
    return NULL;
}

static void *forker(void *arg)
{
    long bad = 0;
    (void)arg;
    for (int i = 0; i < NFORKS; i++) {
        void *p = malloc(1000);
        pid_t pid = fork();
        if (pid == 0) {
            for (int k = 0; k < 1000; k++)
                free(sink = malloc(64));
            sink = malloc(4096); /* live at the child's exit */
            free(p);
            for (long t = 0; t < child_ms; t += 10) {
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
                free(malloc(100));
            }
            exit(0);
        }
        free(p);
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            bad++;
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    child_ms = argc > 1 ? atol(argv[1]) : 0;
    pthread_t a[2], f[NTHREADS];
    for (int i = 0; i < 2; i++)
        pthread_create(&a[i], NULL, allocator, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&f[i], NULL, forker, NULL);
    long bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        pthread_join(f[i], &r);
        bad += (long)r;
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(a[i], NULL);
    printf("forks %d bad %ld\n", NTHREADS * NFORKS, bad);
    return bad ? 1 : 0;
}
