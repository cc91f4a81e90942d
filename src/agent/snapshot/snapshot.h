/* The snapshot layer (src/agent/snapshot): writes the snapshot file from the tables and
 * registries below (docs/snapshot-format.md); helpers above append chunks through
 * ms_snapshot_add_hook. Runs inside the target: no malloc; one snapshot at a time. */
#ifndef MS_AGENT_SNAPSHOT_H
#define MS_AGENT_SNAPSHOT_H

#include "agent/record/record.h"

/* ===========================================================================
 * Snapshots (snapshot.c).
 * ========================================================================= */
/* Called with the open writer after the agent's own chunks, before END: a helper
 * appends its chunks (ms_sw_begin/put/end). Must not allocate. */
typedef void (*ms_snapshot_extra_fn)(ms_snap_writer *w, void *arg);
/* Writes <out>/memsight-<pid>-<NNNN>-<reason>.msnap atomically. `reason` is one of
 * exit|signal|interval|peak|trigger|leakcheck|api|fatal. The path written is copied to
 * path (if not NULL). Returns 0 or a negative errno. Thread-safe (one at a time). */
int ms_snapshot_write(const char *reason, ms_snapshot_extra_fn extra, void *arg, char *path,
                      size_t pathlen) MS_INTERNAL;
/* Registers a hook called by every snapshot (e.g. leak results, peak counters). */
int ms_snapshot_add_hook(ms_snapshot_extra_fn fn, void *arg) MS_INTERNAL;
/* 1 when the calling thread is inside ms_snapshot_write (holds its lock). */
int ms_snapshot_held_by_me(void) MS_INTERNAL;
void ms_snapshot_fork_child(void) MS_INTERNAL;
/* Maps memsight run's tally of the run's processes that cannot write their exit snapshot
 * (MEMSIGHT_TALLY), at start (snapshot.c). */
void ms_snapshot_tally_init(void) MS_INTERNAL;
/* Hook, implemented above (services/attach.c): META keys of an attached agent
 * (attached_ns, first_attached_ns, attach_sessions); returns how many it wrote (0 when
 * never attached). */
uint32_t ms_attach_meta(ms_snap_writer *w) MS_INTERNAL;

#endif