/* Sampled guard pages (guard=RATE, guard_pool=N), in the manner of GWP-ASan: one
 * allocation in RATE gets a page of its own between inaccessible guard pages, so that an
 * overflow, underflow or use after free faults at the bad access. Runs inside the
 * target: the hot path is one thread-local countdown and one address-range compare;
 * nothing here calls the watched allocator, no lock is held across fork. */
#ifndef MS_AGENT_GUARD_H
#define MS_AGENT_GUARD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/record/entry.h"
#include "agent/record/record.h"

/* Allocations that pass before the next one decides (the slow path decides when it
 * goes below 0, e.g. at the thread's first allocation). With guard=0 the slow path sets
 * it out of reach. Signed, so that the tick is one decrement of thread-local memory and
 * a jump on its sign. */
extern __thread int32_t ms_guard_left __attribute__((tls_model("initial-exec"))) MS_INTERNAL;
/* The pool's address range ([lo, lo + span), span 0 until reserved): in the entry
 * points' cache line, since free() tests every pointer against it (entry.h). */
#define ms_guard_lo (ms_entry.s.guard_lo)
#define ms_guard_span (ms_entry.s.guard_span)

/* 1 when this allocation's turn has come (or the countdown must be set up). */
static inline int ms_guard_tick(void)
{
    return MS_UNLIKELY(--ms_guard_left < 0);
}
/* 1 when p lies in the pool (its blocks and guard pages): free and realloc must not read
 * the 16 bytes below such a pointer (they may be a guard page). */
static inline int ms_guard_owns(const void *p)
{
    return MS_UNLIKELY(ms_ptr_key(p) - ms_guard_lo < ms_guard_span);
}

/* After ms_guard_tick: a guarded block of n bytes aligned to `align` (a power of two),
 * zeroed, or NULL when this one is not to be guarded (guard off, the agent busy or not
 * ready, too large, pool full: counted) and the caller allocates as usual. */
void *ms_guard_alloc(size_t n, size_t align) MS_INTERNAL;
/* free() of a pointer in the pool: frees its slot, or reports a double or invalid free
 * and aborts. */
void ms_guard_free(void *p) MS_INTERNAL;
/* The bytes a pool block holds (its size asked); a double/invalid pointer is reported. */
size_t ms_guard_usable(void *p) MS_INTERNAL;

/* The rate countdowns are drawn at now: guard=RATE, doubled while the guard_budget is
 * exceeded (HLTH guard_rate_now). */
uint64_t ms_guard_rate_now(void) MS_INTERNAL;

void ms_guard_init(void) MS_INTERNAL;
void ms_guard_fork_prepare(void) MS_INTERNAL;
void ms_guard_fork_parent(void) MS_INTERNAL;
void ms_guard_fork_child(void) MS_INTERNAL;

/* ---------------------------------------------------------------------------
 * Between the pool (guard.c) and the fault reporter (guard_report.c).
 * ------------------------------------------------------------------------- */
enum {
    MS_GUARD_SLOT_NEVER = 0, /* never handed out */
    MS_GUARD_SLOT_LIVE = 1,
    MS_GUARD_SLOT_FREED = 2,
    MS_GUARD_SLOT_BUSY = 3, /* being handed out or freed */
    MS_GUARD_SLOT_CHECKING = 4, /* live, its slack being checked by a snapshot (free waits) */
    MS_GUARD_SLOT_RETIRED = 5,  /* guard_recover: its page left accessible after an error,
                                 * never handed out again */
};
/* ms_guard_slot.flags */
#define MS_GUARD_SLOTF_REPORTED 1u /* an error of this slot was reported: later ones counted */
typedef struct ms_guard_slot {
    uint64_t ptr;          /* the program's pointer (0: never used) */
    uint64_t size;         /* bytes asked */
    uint32_t state;        /* MS_GUARD_SLOT_* (atomic) */
    uint32_t alloc_sid, free_sid; /* heap stack ids (stacks.c) */
    uint32_t alloc_tid, free_tid;
    uint32_t live_idx;     /* live-table entry (0: not recorded) */
    uint32_t flags;        /* MS_GUARD_SLOTF_* (atomic) */
} ms_guard_slot;

/* The byte every guarded block's page holds outside the block (its alignment slack after
 * it, the rest of the page before or after it), checked at free, realloc and in every
 * snapshot: a write there is an overflow or underflow no guard page can catch. */
#define MS_GUARD_FILL 0xbb

extern ms_guard_slot *ms_guard_slots MS_INTERNAL;
extern uint32_t ms_guard_nslots MS_INTERNAL;
extern size_t ms_guard_page MS_INTERNAL;
/* Slot i's page is page 2i+1 of the pool; the even pages are guards. */
static inline uintptr_t ms_guard_slot_addr(uint32_t i)
{
    return ms_guard_lo + (2 * (uintptr_t)i + 1) * ms_guard_page;
}

/* Checks the fill of every live guarded block's page (before a snapshot is written: not
 * for the `guard` and `fatal` snapshots); an error is reported and the program runs on. */
void ms_guard_check_live(void) MS_INTERNAL;
/* guard_recover=1, in the fault handler after the report: the page at addr (a slot's or a
 * guard page) is made accessible for good, a slot's retired. */
void ms_guard_recover_page(uintptr_t addr) MS_INTERNAL;
/* The slot an address in the pool is about, and the error kind an access there means. */
int ms_guard_classify(uintptr_t addr, unsigned *kind) MS_INTERNAL;

/* ---------------------------------------------------------------------------
 * Hooks, implemented above (services/guard_report.c, services/guard_fault.c): the
 * pool's only calls upward, none on the allocation path's common case.
 * ------------------------------------------------------------------------- */
/* Writes the report of an error (enum ms_guard_kind, snapshot_format.h) at addr (the
 * faulting address, or the pointer given to free) found by a fault (uc: its signal
 * context) or by free (uc NULL: the caller's stack is the access stack): stderr and a
 * `guard` snapshot. Async-signal-safe; the first error of each slot (and one no slot
 * explains), up to MS_GUARD_MAX_REPORTS a process: later errors are only counted. */
#define MS_GUARD_MAX_REPORTS 16
void ms_guard_report(unsigned kind, uintptr_t addr, int slot, const void *uc) MS_INTERNAL;
/* The same for an error found in a snapshot (no access stack: the block is live). */
void ms_guard_report_found(unsigned kind, uintptr_t addr, int slot) MS_INTERNAL;
/* Gives the calling thread an alternate signal stack if it has none (at a thread's first
 * guarded allocation), and unmaps it when the thread exits (record/threads.c). */
void ms_guard_altstack(void) MS_INTERNAL;
void ms_guard_thread_exit(void) MS_INTERNAL;

#endif
