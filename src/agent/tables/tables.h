/* The tables layer (src/agent/tables): what the agent knows, in memory of its own. The
 * call-stack table with its counters, the threads' pending changes and the live total
 * with its peak (totals.c), the live heap blocks (live.c, live_hot.h), the address table
 * (addr_table.h) and the chunked arrays they grow in (chunks.h). It calls the platform
 * layer, and one hook above it (totals.h). Runs inside the target: no malloc, no lock held
 * across fork. */
#ifndef MS_AGENT_TABLES_H
#define MS_AGENT_TABLES_H

#include "agent/platform/platform.h"
#include "agent/tables/chunks.h"
#include "agent/tables/live.h"
#include "agent/tables/stacks.h"
#include "agent/tables/totals.h"

/* A table could not grow (no address space or memory): counted in table_grow_failures,
 * and told once on stderr (chunks.c). */
void ms_table_grow_failed(void) MS_INTERNAL;

#endif
