/* The result of a thread that has exited and is not joined yet: pthread_join would
 * return it, and valgrind finds it in the dead thread's descriptor (still reachable,
 * with the block it points to). A joined thread's result that the program drops is
 * definitely lost. */
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lv_common.h"

static void *make_result(void *arg)
{
    (void)arg;
    void **r = lv_alloc(48);
    r[0] = lv_alloc(200);
    return r;
}

static volatile pid_t unjoined_tid;

static void *make_result_and_tell(void *arg)
{
    unjoined_tid = (pid_t)syscall(SYS_gettid);
    return make_result(arg);
}

/* 1 while the thread tid still exists (its /proc/self/task entry). */
static int alive(pid_t tid)
{
    char path[64] = "/proc/self/task/";
    size_t n = 16;
    char d[16];
    int k = 0;
    do {
        d[k++] = (char)('0' + tid % 10);
        tid /= 10;
    } while (tid);
    while (k)
        path[n++] = d[--k];
    path[n] = 0;
    return access(path, F_OK) == 0;
}

int main(void)
{
    pthread_t joined, unjoined;
    void *res = NULL;
    if (pthread_create(&joined, NULL, make_result, NULL) != 0 ||
        pthread_join(joined, &res) != 0)
        return 1;
    res = NULL; /* the joined thread's result is dropped: lost */
    lv_use(&res);
    if (pthread_create(&unjoined, NULL, make_result_and_tell, NULL) != 0)
        return 1;
    while (!unjoined_tid) /* until it has exited (a synchronisation, not a delay) */
        sched_yield();
    while (alive(unjoined_tid))
        sched_yield();
    return 0;
}
