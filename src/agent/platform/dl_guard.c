/* Keeps fork() from splitting a walk of the loaded modules. glibc's dl_iterate_phdr
 * holds the loader's write lock during the walk and its fork() does not reset that lock
 * in the child: a child forked while another thread walks inherits it locked, and its
 * first dl_iterate_phdr (the agent's exit snapshot, an unwinder's module refresh, C++
 * exception handling) blocks forever. So every walk the agent makes is counted here and
 * the fork prepare handler waits until none is running. Walks are never exclusive among
 * themselves (glibc already serialises them); only fork is. Runs inside the target: no
 * malloc, no lock held across fork. */
#define _GNU_SOURCE
#include <link.h>
#include <sched.h>

#include "agent/platform/platform.h"

static int dl_active;  /* walks in progress, counting each thread once */
static int dl_forking; /* fork prepare handlers waiting or past their wait */
static __thread int dl_depth __attribute__((tls_model("initial-exec")));
static __thread int dl_fork_skipped __attribute__((tls_model("initial-exec")));

int ms_dl_begin(int wait)
{
    if (dl_depth++ > 0)
        return 1; /* nested in this thread's own walk: already counted */
    for (;;) {
        __atomic_fetch_add(&dl_active, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&dl_forking, __ATOMIC_SEQ_CST))
            return 1;
        __atomic_fetch_sub(&dl_active, 1, __ATOMIC_SEQ_CST);
        if (!wait) {
            dl_depth--;
            return 0;
        }
        while (__atomic_load_n(&dl_forking, __ATOMIC_SEQ_CST))
            sched_yield();
    }
}

void ms_dl_end(void)
{
    if (--dl_depth == 0)
        __atomic_fetch_sub(&dl_active, 1, __ATOMIC_RELEASE);
}

int ms_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
    ms_dl_begin(1);
    int rc = dl_iterate_phdr(cb, arg);
    ms_dl_end();
    return rc;
}

void ms_dl_fork_prepare(void)
{
    /* fork() from a signal handler that interrupted this thread's own walk: waiting
     * would never end, and the loader lock is this thread's anyway */
    dl_fork_skipped = dl_depth > 0;
    if (dl_fork_skipped)
        return;
    __atomic_fetch_add(&dl_forking, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&dl_active, __ATOMIC_SEQ_CST))
        sched_yield();
}

void ms_dl_fork_parent(void)
{
    if (!dl_fork_skipped)
        __atomic_fetch_sub(&dl_forking, 1, __ATOMIC_SEQ_CST);
}

void ms_dl_fork_child(void)
{
    /* only this thread exists now: no other walk, no other fork */
    dl_forking = 0;
    dl_active = dl_depth > 0 ? 1 : 0;
}
