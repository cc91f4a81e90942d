/* libmemsight-metrics.so: /metrics for the process the agent lives in (agent option
 * metrics_listen=, docs/fleet.md). The agent loads it with dlopen only when asked, and
 * calls its one entry on a thread of the agent's own, whose allocations the agent does
 * not record. Every scrape reads /proc/self as memsight watch samples a process, asks the
 * agent for its numbers, and renders the same exposition text as watch (fleet/metrics.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fleet/metrics.h"
#include "fleet/metrics_agent.h"

typedef struct plugin_ctx {
    ms_metrics *m;
    int pid;
    const ms_metrics_plugin_args *a;
} plugin_ctx;

static void refresh(void *arg)
{
    plugin_ctx *c = arg;
    ms_watch_sample s;
    char err[256];
    if (ms_watch_sample_once(c->pid, &s, 0, err, sizeof err) == 0) {
        if (s.fds)
            s.fds--; /* the directory opened to count them is not one of the process's */
        ms_metrics_set_sample(c->m, c->pid, &s, NULL, 0);
    }
    ms_metrics_agent an;
    memset(&an, 0, sizeof an);
    c->a->agent_numbers(&an);
    ms_metrics_set_agent(c->m, c->pid, &an);
}

__attribute__((visibility("default"))) int memsight_metrics_plugin_serve(const ms_metrics_plugin_args *a)
{
    if (a->abi != MS_METRICS_PLUGIN_ABI) {
        snprintf(a->err, a->errlen, "%s is of another memsight version (interface %u, the agent's %u)",
                 MS_METRICS_PLUGIN_NAME, MS_METRICS_PLUGIN_ABI, a->abi);
        close(a->listen_fd);
        return -1;
    }
    plugin_ctx c = {.m = ms_metrics_new(NULL), .pid = (int)getpid(), .a = a};
    char comm[64] = "";
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
    }
    if (!c.m || ms_metrics_add(c.m, c.pid, comm) != 0) {
        snprintf(a->err, a->errlen, "out of memory");
        ms_metrics_free(c.m);
        close(a->listen_fd);
        return -1;
    }
    int rc = ms_metrics_serve_here(c.m, a->listen_fd, a->wake_fd, refresh, &c, a->fds, a->err,
                                   a->errlen);
    ms_metrics_free(c.m);
    return rc;
}
