/* What the agent knows of its process, as the metrics carry it, and the interface of the
 * metrics plugin (libmemsight-metrics.so) that the agent loads with dlopen when it is
 * asked to serve /metrics (option metrics_listen=). The agent includes only this header:
 * it links neither the HTTP library nor the exposition code, which live in the plugin. */
#ifndef MS_FLEET_METRICS_AGENT_H
#define MS_FLEET_METRICS_AGENT_H

#include <stdint.h>

#include "memsight/snapshot_format.h"

/* What the agent tracks: from its newest snapshot (memsight watch --agent-dir) or read
 * live by the agent itself (the plugin). */
typedef struct ms_metrics_agent {
    uint64_t live_bytes, live_blocks;     /* tracked heap (malloc family) */
    uint64_t mmap_live_bytes;             /* tracked mmap regions */
    uint64_t snapshot_unix_s;             /* when these numbers were taken */
    int has_leaks;                        /* a leak scan has run */
    uint64_t leak_bytes[MS_LEAK_CLASS_COUNT], leak_blocks[MS_LEAK_CLASS_COUNT];
    uint64_t dropped;                     /* records the agent lost (health counters) */
    int has_threads;                      /* thread lives are known (THRL, thread_life.c) */
    uint64_t leaked_threads;              /* threads ended, never joined nor detached */
    char labels[512];                     /* the labels ("k=v;k=v") */
    char host[65];                        /* the process's hostname (uname), "" unknown */
} ms_metrics_agent;

/* ---- the plugin ---- */
#define MS_METRICS_PLUGIN_NAME "libmemsight-metrics.so"
#define MS_METRICS_PLUGIN_ENTRY "memsight_metrics_plugin_serve"
#define MS_METRICS_PLUGIN_ABI 2u /* 2: ms_metrics_agent.host */

typedef struct ms_metrics_plugin_args {
    uint32_t abi;       /* MS_METRICS_PLUGIN_ABI */
    int listen_fd;      /* bound and listening; the plugin closes it */
    int wake_fd;        /* readable: stop serving and return */
    int *fds;           /* [2]: the plugin publishes its listening and epoll descriptors
                         * here while it serves, -1 before it closes them (a forked
                         * child closes what is published) */
    /* the agent's numbers, read afresh for every scrape (on the plugin's caller's thread) */
    void (*agent_numbers)(ms_metrics_agent *out);
    char *err;          /* why it could not serve */
    uint32_t errlen;
} ms_metrics_plugin_args;

/* Serves /metrics for the calling process until wake_fd is readable: 0, or -1 with err. */
typedef int (*ms_metrics_plugin_fn)(const ms_metrics_plugin_args *a);

#endif
