/* Live heap blocks (live.c, live_hot.h). Part of the tables layer (tables.h).
 * Runs inside the target: no malloc, no lock per call. */
#ifndef MS_AGENT_LIVE_H
#define MS_AGENT_LIVE_H

#include "agent/platform/platform.h"

/* ===========================================================================
 * Live heap blocks (live.c): a dense array of entries; each tracked block's header
 * (below) names its entry, so allocation and free write one entry and never search.
 * Whether an entry is in use is a byte of its own, in a dense array beside the entries
 * (live_hot.h): a free writes that byte only, not the entry's cold line.
 * ========================================================================= */
typedef struct ms_live_entry {
    uint64_t addr;       /* the program's pointer (kept after the block is freed) */
    uint64_t size;       /* bytes asked for */
    uint64_t ticks;      /* ms_ticks() at allocation; ms_ticks_to_ns() converts */
    uint32_t stack_id;
    uint32_t tid;
} ms_live_entry;         /* 32 bytes */

int ms_live_init(uint64_t capacity) MS_INTERNAL;
/* Taking and giving back entry indices, storing and clearing entries: live_hot.h
 * (inline, for the recording path). */
int ms_live_get(uint32_t idx, ms_live_entry *out) MS_INTERNAL;
/* Gives the calling thread's cached indices back (thread exit). */
void ms_live_thread_exit(void) MS_INTERNAL;
/* Looks a program pointer up through its header; 1 and *out if it is a live block. */
int ms_live_find(uint64_t addr, ms_live_entry *out) MS_INTERNAL;
/* Exact number of live entries (scans the used part of the array: not for hot paths). */
uint64_t ms_live_count(void) MS_INTERNAL;
uint64_t ms_live_bytes_reserved(void) MS_INTERNAL; /* agent memory used by the table */
#define MS_ITER_NOLOCK 0x1u /* accepted for compatibility: iteration takes no lock */
/* Calls fn for every live heap block. Entries are read without a lock (a block freed
 * meanwhile may or may not be seen). fn must not allocate; a non-zero return stops. */
typedef int (*ms_live_fn)(const ms_live_entry *e, unsigned kind, void *arg);
int ms_live_foreach(ms_live_fn fn, void *arg, unsigned flags) MS_INTERNAL;
void ms_live_fork_prepare(void) MS_INTERNAL;
void ms_live_fork_parent(void) MS_INTERNAL;
void ms_live_fork_child(void) MS_INTERNAL;

#endif
