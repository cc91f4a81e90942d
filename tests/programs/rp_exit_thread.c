/* Real-program test: a non-main thread calls exit(7) while main waits in join; the
 * exit snapshot is written from that thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *volatile keep;

static void *quitter(void *arg)
{
    (void)arg;
    keep = malloc(777);
    printf("exiting from a thread\n");
    fflush(stdout);
    exit(7);
}

int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, quitter, NULL);
    pthread_join(t, NULL);
    return 0;
}
