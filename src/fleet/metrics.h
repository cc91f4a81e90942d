/* Process memory as Prometheus metrics: a registry of watched processes (their latest
 * sample, trigger firings and what their agent's newest snapshot says), rendered in the
 * text exposition format (version 0.0.4) for /metrics or for node_exporter's textfile
 * collector. Thread-safe: watch loops update it while the HTTP server renders it. */
#ifndef MS_FLEET_METRICS_H
#define MS_FLEET_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/watch.h"
#include "fleet/metrics_agent.h"
#include "memsight/snapshot_format.h"

typedef struct ms_metrics ms_metrics;


/* `labels`: the user's labels for every series ("k=v;k=v", checked by the caller; may
 * be NULL). Returns NULL when out of memory. */
ms_metrics *ms_metrics_new(const char *labels);
void ms_metrics_free(ms_metrics *m);

/* Adds a process (no-op when present); `program` is its name (comm). */
int ms_metrics_add(ms_metrics *m, int pid, const char *program);
/* The latest sample and the trackers' state (fire counts) of a process. */
void ms_metrics_set_sample(ms_metrics *m, int pid, const ms_watch_sample *s,
                           const ms_tracker *trackers, size_t ntrackers);
void ms_metrics_set_agent(ms_metrics *m, int pid, const ms_metrics_agent *a);
/* The process went away: its series stop (Prometheus marks them stale). */
void ms_metrics_remove(ms_metrics *m, int pid);

/* The exposition text, malloc'ed (*len bytes, NUL-terminated), or NULL. */
char *ms_metrics_render(ms_metrics *m, size_t *len);
/* Writes the text to path for the textfile collector: 0600, a temporary name renamed
 * into place, so the collector never reads half a file. Returns 0 or -1 with err. */
int ms_metrics_write_file(ms_metrics *m, const char *path, char *err, size_t errlen);

/* ---- serving /metrics (metrics_http.c) ---- */
typedef struct ms_metrics_server ms_metrics_server;
/* Listens on "ADDR:PORT" ("127.0.0.1:9464", "[::1]:9464", ":9464" for every address;
 * port 0 picks a free one) and serves GET /metrics from a thread of libmicrohttpd's.
 * Returns NULL with err. */
ms_metrics_server *ms_metrics_serve(ms_metrics *m, const char *listen, char *err, size_t errlen);
/* The port actually bound. */
int ms_metrics_server_port(const ms_metrics_server *srv);
void ms_metrics_server_stop(ms_metrics_server *srv);
/* Serves on the listening socket fd (taken over: closed on return) from the calling thread,
 * until wake_fd is readable or polling fails; refresh(ctx) runs before every render. The
 * listening and epoll descriptors are published in fds[0..1] while it serves (-1 before
 * they are closed), so that a forked child can close its copies. Returns 0, or -1 with
 * err when it cannot start. */
int ms_metrics_serve_here(ms_metrics *m, int fd, int wake_fd, void (*refresh)(void *ctx), void *ctx,
                          int *fds, char *err, size_t errlen);

#endif
