/* The agent's own /metrics (option metrics_listen=ADDR:PORT, docs/fleet.md): a thread of
 * the agent's binds the address, loads the metrics plugin (libmemsight-metrics.so, beside
 * the agent) with dlopen and serves from it. Nothing of it exists when the option is off. */
#ifndef MS_AGENT_METRICS_SERVE_H
#define MS_AGENT_METRICS_SERVE_H

#include <stdint.h>

/* Starts the thread once per session when metrics_listen= is set (the control thread's
 * lazy start calls it, after main() has been entered). */
void ms_metrics_start(void);
/* Wakes the thread and waits up to wait_ms for it to end (exit, detach, the program's
 * last thread leaving); a later ms_metrics_start starts it again. */
void ms_metrics_stop(unsigned wait_ms);
/* In a forked child: the parent's thread is not there; its descriptors are closed and
 * the child serves nothing (the address is its parent's). */
void ms_metrics_fork_child(void);
/* The serving thread's id (0 if none): an agent thread, never stopped or a root. */
uint32_t ms_metrics_tid(void);
/* Whether the option asks for it (the lazy start must then run with control=0 too). */
int ms_metrics_wanted(void);

#endif
