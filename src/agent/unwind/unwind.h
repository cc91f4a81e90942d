/* The unwind layer (src/agent/unwind): the walks of the calling thread's stack (cached
 * DWARF CFI, frame pointers, libunwind). It calls the platform layer, and one hook above
 * it (below). Runs inside the target: no malloc, no unchecked read of memory. */
#ifndef MS_AGENT_UNWIND_H
#define MS_AGENT_UNWIND_H

#include "agent/platform/platform.h"
#include "memsight/snapshot_format.h" /* MS_STACKF_* */

/* ===========================================================================
 * Unwinding (unwind.c, unwind_cfi.c).
 * ========================================================================= */
/* Walks the caller's stack, skipping the agent's own frames; pcs innermost first.
 * Returns the depth; *flags gets MS_STACKF_*. */
unsigned ms_unwind(uint64_t *pcs, unsigned max, unsigned *flags) MS_INTERNAL;
/* The same; a complete walk may also give (in *sid_slot, else NULL) the calling thread's
 * cached heap stack id of exactly these pcs, valid until the thread's next walk: when it
 * holds an id, that is the answer and pcs are not filled; when it holds 0, pcs are
 * complete and the caller stores their id there. */
unsigned ms_unwind_ctx(uint64_t *pcs, unsigned max, unsigned *flags, uint32_t **sid_slot) MS_INTERNAL;
int ms_unwind_init(void) MS_INTERNAL;
/* From a signal context (the first pc is the interrupted instruction); async-signal-safe,
 * reads only within the calling thread's known stack. */
unsigned ms_unwind_context(const void *uc, uint64_t *pcs, unsigned max, unsigned *flags) MS_INTERNAL;
const char *ms_unwind_name(void) MS_INTERNAL;
/* Called after dlclose: forget cached rules of unmapped code. */
void ms_unwind_invalidate(void) MS_INTERNAL;

/* Hook, implemented above (record/threads.c, which knows the main thread's stack from
 * the thread registry): fills ms_self.stack_lo/hi for the calling thread if not known
 * yet, so that a walk reads only within its stack. */
void ms_thread_bounds(void) MS_INTERNAL;

#endif