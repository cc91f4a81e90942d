/* Real-program test: constructors that run before any of main's code install a signal
 * handler that allocates, raise it, and start and join a thread that allocates (the
 * LeakSanitizer-style early-init crash); prints what the handler and thread saw. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int handled;
static void *volatile keep[4];

static void on_usr1(int sig)
{
    (void)sig;
    keep[0] = malloc(64); /* not async-signal-safe in general; fine in this test */
    handled = 1;
}

static void *early_thread(void *arg)
{
    (void)arg;
    keep[1] = malloc(128);
    return strdup("thread-ok");
}

__attribute__((constructor(101))) static void early(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR1);
    pthread_t t;
    void *r = NULL;
    if (pthread_create(&t, NULL, early_thread, NULL) == 0)
        pthread_join(t, &r);
    printf("ctor: handled=%d %s\n", handled, r ? (char *)r : "no-thread");
    free(r);
}

int main(void)
{
    printf("main\n");
    return 0;
}
