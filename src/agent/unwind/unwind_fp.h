/* Bounds of stack reads and the frame-record walk, shared by every unwinder of the agent
 * (unwind.c, unwind_cfi.c). Pure: they read only words inside the [lo, hi) they are
 * given, whatever the words hold, so a unit test feeds them random frames
 * (tests/unit/test_unwind_walk.c). */
#ifndef MS_AGENT_UNWIND_FP_H
#define MS_AGENT_UNWIND_FP_H

#include <stdint.h>

#include "agent/arch/arch.h"

/* 1 when the n bytes at a lie inside [lo, hi). No sum that can wrap: a frame pointer of
 * 0xfffffffffffffff0 plus 16 is 0, which `a + n <= hi` would take for inside. */
static inline int ms_span_in(uintptr_t a, uintptr_t n, uintptr_t lo, uintptr_t hi)
{
    return a >= lo && a <= hi && hi - a >= n;
}

/* Follows frame records from fp (the caller's fp at fp, the return address one word
 * above), each aligned, inside [lo, hi) and above the one before, until a return address
 * below 4096. Return addresses in [skip_lo, skip_hi) are passed over (the agent's own
 * frames); up to max others go to pcs. *truncated: 1 when a frame was left for lack of
 * room. Returns how many were stored. */
static inline unsigned ms_fp_walk(uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t skip_lo,
                                  uintptr_t skip_hi, uint64_t *pcs, unsigned max,
                                  int *truncated)
{
    unsigned n = 0;
    *truncated = 0;
    while (ms_span_in(fp, 2 * sizeof(uintptr_t), lo, hi) && !(fp & (sizeof(uintptr_t) - 1))) {
        uintptr_t next = ((const uintptr_t *)fp)[0];
        uintptr_t ra = ms_arch_strip_pc(((const uintptr_t *)fp)[1]);
        if (ra < 4096)
            break;
        if (ra < skip_lo || ra >= skip_hi) {
            if (n == max) {
                *truncated = 1;
                break;
            }
            pcs[n++] = ra;
        }
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

#endif
