/* Cached DWARF CFI unwinder for x86-64: per-pc rules (CFA = rsp/rbp + off or
 * *(rbp + off), return address at CFA-8, rbp saved at CFA+k) computed once from the
 * modules' .eh_frame_hdr/.eh_frame and kept in a lock-free preallocated table.
 * Runs inside the target: no malloc, every stack read is bounds-checked. */
#ifndef MS_AGENT_UNWIND_CFI_H
#define MS_AGENT_UNWIND_CFI_H

#include <stdint.h>

int ms_cfi_init(uint64_t cache_entries);
/* Walks the caller's stack. Returns the depth, or -1 when a frame needs rules this
 * unwinder does not model (the caller then falls back to libunwind). If sid_slot is not
 * NULL, a complete walk (not truncated, no error) may set *sid_slot (else NULL) to the
 * thread's walk-cache place for the heap stack id of exactly these pcs, valid until the
 * thread's next walk: when it holds an id, pcs are not filled (the walk was recognised
 * without walking); when it holds 0, pcs are complete and the caller stores the id. */
int ms_cfi_unwind(uint64_t *pcs, unsigned max, unsigned *flags, uint32_t **sid_slot);
/* The heap stack id the walk cache holds for the walk that would start from the frame
 * record walk_fp (a recording call's, as ms_self.walk_fp names it to a walk; 0: none,
 * walk): the look-up alone, without a walk's set-up, for the recording path. 0 when this
 * thread has no walker state (another unwinder is in use) or the agent is not built with
 * frame records. */
uint32_t ms_cfi_cached_id(unsigned max, uintptr_t walk_fp);
/* Walks from a signal context's pc (the interrupted instruction), sp and bp, reading only
 * within [sp, hi); async-signal-safe. Returns the depth (the first pc is the exact pc). */
int ms_cfi_unwind_from(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t hi, uint64_t *pcs,
                       unsigned max, unsigned *flags);
/* Releases the calling thread's walker state (thread exit). */
void ms_cfi_thread_exit(void);
/* Modules may have been unloaded: cached rules and the module list are refreshed. */
void ms_cfi_invalidate(void);
uint64_t ms_cfi_cache_used(void);

/* For tests: computes the rule for pc (0 if none); see unwind_cfi.c for its layout. */
uint64_t ms_cfi_rule_for(uintptr_t pc);

#endif
