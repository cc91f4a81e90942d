/* Lifecycle test program: the process must end as it would without the agent when its
 * main thread leaves through pthread_exit, and a child forked from a non-main thread must
 * end when that thread returns. Modes:
 *   alone   main allocates, then pthread_exit: glibc ends the process with status 0
 *   worker  main starts a worker, then pthread_exit; the worker allocates and returns
 *   pause   main starts a worker that waits in pause(), then pthread_exit: only a signal
 *           ends it (SIGTERM kills it, as without the agent)
 *   fork    a thread forks; the child allocates and returns from that thread's start
 *           routine (its only thread): the child must end with status 0 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile keep;

static void *worker(void *arg)
{
    (void)arg;
    keep = malloc(4321);
    printf("worker done\n");
    fflush(stdout);
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    keep = malloc(111);
    printf("waiting\n");
    fflush(stdout);
    for (;;)
        pause();
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    keep = malloc(222);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(3);
    }
    if (pid == 0) {
        keep = malloc(333); /* the child's agent starts its own control thread here */
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        return NULL; /* the child's only thread leaves: glibc ends the child, status 0 */
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        exit(4);
    }
    printf("child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    fflush(stdout);
    return NULL;
}

static pthread_t start(void *(*fn)(void *), int detach)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fn, NULL) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        exit(2);
    }
    if (detach)
        pthread_detach(t);
    return t;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "alone";
    keep = malloc(1234); /* the agent's control thread starts at this allocation */
    if (!strcmp(mode, "alone")) {
        printf("main leaves\n");
    } else if (!strcmp(mode, "worker")) {
        start(worker, 1);
        printf("main leaves\n");
    } else if (!strcmp(mode, "pause")) {
        start(waiter, 1);
    } else if (!strcmp(mode, "fork")) {
        pthread_join(start(forker, 0), NULL);
        printf("parent done\n");
        fflush(stdout);
        return 0;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    fflush(stdout);
    pthread_exit(NULL);
}
