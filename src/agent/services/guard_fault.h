/* Guard pages, the services side: the fault handler (guard_fault.c) and the reports
 * (guard_report.c) behind the pool of record/guard.c.
 * Runs inside the target: async-signal-safe, no malloc. */
#ifndef MS_AGENT_GUARD_FAULT_H
#define MS_AGENT_GUARD_FAULT_H

#include "agent/record/guard.h"
#include "agent/services/services.h"

/* Maps the report's buffer (guard=RATE only). */
void ms_guard_report_init(void) MS_INTERNAL;
/* Installs the fault handler (after fatal.c's, which it passes other faults to). */
void ms_guard_fault_init(void) MS_INTERNAL;

#endif
