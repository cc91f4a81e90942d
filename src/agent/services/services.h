/* The services layer (src/agent/services), the top: the agent's start and fork
 * handling (init.c), the control thread (control.c), memsight attach (attach.c) and
 * memsight_start (start.c), the metrics server, fatal-signal snapshots, guard-page
 * faults and reports. It may call every layer below.
 * Runs inside the target: no malloc, no stdio, no lock held across fork. */
#ifndef MS_AGENT_SERVICES_H
#define MS_AGENT_SERVICES_H

#include "agent/leak/leak.h"
#include "agent/services/control.h"
#include "agent/services/metrics_serve.h"

/* main() is entered: closes the descriptor `memsight run --watch` waits on (init.c). */
void ms_signal_ready(void) MS_INTERNAL;
/* memsight_start() succeeded: its snapshot directory and signal shown in
 * memsight_attach_info (state still "never attached") for the memsight command. */
void ms_attach_publish_start(void) MS_INTERNAL;
/* The agent's mode and options in memsight_attach_info (at start and at every attach). */
void ms_attach_publish_mode(void) MS_INTERNAL;
/* The answer to a request (control.h's code, the number its signal carried, 0 or an
 * errno), in memsight_attach_info for the command waiting on it. */
void ms_attach_reply(unsigned request, unsigned seq, int err) MS_INTERNAL;

/* ===========================================================================
 * Fatal signals (fatal.c): with fatal_snapshot=1, a last snapshot (and the leak scan
 * with leak_check=exit) from the handler of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
 * then the signal's default action. Installed only where the program has none.
 * ========================================================================= */
void ms_fatal_init(void) MS_INTERNAL;

#endif