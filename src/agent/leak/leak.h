/* The leak layer (src/agent/leak): the reachability scan of a stopped process (the
 * roots: leak_maps.c; the mark: leak_mark.c; stopping the threads: leak_stop.c; the
 * scan: leak_scan.c) and its entry points (leak_api.c). It calls the layers below it
 * and one hook above (below). Runs inside the target: no malloc. */
#ifndef MS_AGENT_LEAK_H
#define MS_AGENT_LEAK_H

#include "agent/leak/leak_scan.h"
#include "agent/snapshot/snapshot.h"

#define MS_HAVE_LEAK_OPTIONS 1
#define MS_HAVE_SAMPLING_OPTION 1
/* Leak scan at exit, before the exit snapshot (leak_api.c). */
void ms_leak_at_exit(void) MS_INTERNAL;

/* Hook, implemented above (services/attach.c): attaches so far, 0 when the agent was
 * started any other way (a scan after memsight attach roots what it cannot enumerate). */
uint32_t ms_attach_sessions(void) MS_INTERNAL;

#endif
