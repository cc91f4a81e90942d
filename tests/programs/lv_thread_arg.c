/* pthread_create's argument, never read by the thread, which is still running at exit:
 * the C library keeps it in the thread's descriptor, so it (and the block it points to)
 * is still reachable for valgrind. The agent passes its own slot to the C library and
 * keeps the argument there: the slot must be a root. */
#include <pthread.h>
#include <unistd.h>

#include "lv_common.h"

static int pipefd[2];

static void *idle(void *arg)
{
    (void)arg;
    char c;
    (void)!read(pipefd[0], &c, 1); /* never written: blocks until the process exits */
    return NULL;
}

int main(void)
{
    if (pipe(pipefd) != 0)
        return 1;
    void **arg = lv_alloc(64);
    arg[0] = lv_alloc(100);
    pthread_t t;
    if (pthread_create(&t, NULL, idle, arg) != 0)
        return 1;
    arg = NULL;
    lv_use(&arg);
    return 0;
}
