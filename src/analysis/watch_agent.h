/* What `memsight watch` learns from the agent inside the watched process: its newest
 * snapshot in the agent's output directory (memsight-PID-NNNN-*.msnap, highest NNNN),
 * read again only when it changes. The agent writes one every interval= milliseconds;
 * watch never signals the process for it. Tools only. */
#ifndef MS_ANALYSIS_WATCH_AGENT_H
#define MS_ANALYSIS_WATCH_AGENT_H

#include <stddef.h>
#include <time.h>

#include "core/snapshot.h"

typedef struct ms_watch_agent {
    char name[256];          /* the snapshot read last, and its mtime */
    struct timespec mtime;
} ms_watch_agent;

/* The newest snapshot of pid in dir when it is not the one read last (the caller frees
 * it); NULL when there is none newer, or when it cannot be read: then err says why
 * (once per file; err is "" otherwise). */
ms_snapshot *ms_watch_agent_newer(ms_watch_agent *a, const char *dir, int pid, char *err,
                                  size_t errlen);

#endif
