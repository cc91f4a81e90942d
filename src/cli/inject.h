/* Loading a library into a running process and calling one of its functions, for
 * `memsight attach`: ptrace (PTRACE_SEIZE, one thread at a time), the loader's own dlopen
 * in the target, and registers put back so that the thread goes on as if nothing had
 * happened. No step leaves the target stopped or half-changed, even if this process is
 * killed in the middle: the code written into the target puts every register back by
 * itself. The per-CPU part is inject_arch.h. */
#ifndef MS_CLI_INJECT_H
#define MS_CLI_INJECT_H

#include <stddef.h>

typedef struct ms_inject_req {
    int pid;
    const char *lib;   /* the library's path as the target sees it */
    const char *entry; /* function to call after dlopen: int entry(const char *arg) */
    const char *arg;
    double timeout;    /* seconds to wait for the loader and the entry */
} ms_inject_req;

typedef struct ms_inject_result {
    int tid;           /* the thread that made the calls */
    long rc;           /* the entry's result */
    int rounds;        /* rounds of stopping threads until one was in a safe place */
    double stop_ms;    /* that thread stopped: from its stop to its release */
    double call_ms;    /* of which the loader and the entry ran */
    char where[160];   /* where the thread was stopped (for messages) */
} ms_inject_result;

/* 0 when the entry ran (its result in res->rc), -1 with err otherwise. */
int ms_inject(const ms_inject_req *q, ms_inject_result *res, char *err, size_t errlen);

/* Why `pid` cannot be traced by this process, from /proc and the Yama setting, or NULL
 * if nothing explains it (msg holds the text). */
const char *ms_inject_why_eperm(int pid, char *msg, size_t cap);

#endif
