/* Unwinding front end: picks the backend (cached DWARF CFI, frame pointers, or
 * libunwind), cuts the agent's own frames, and reports truncation and failures.
 * Runs inside the target: every stack read is bounds-checked, nothing allocates. */
#include <stdint.h>

#include "agent/unwind/unwind.h"
#include "agent/arch/arch.h"
#include "agent/unwind/unwind_cfi.h"
#include "agent/unwind/unwind_fp.h"
#include "agent/unwind/unwind_libunwind.h"

static int ms_unwind_mode;

static inline int ms_is_self(uintptr_t pc)
{
    return pc >= ms_self_lo && pc < ms_self_hi;
}

int ms_unwind_init(void)
{
    ms_unwind_mode = (int)ms_opt.unwind;
    if (ms_unwind_mode == MS_UNWIND_LIBUNWIND && !ms_lu_available()) {
        ms_option_unavailable("unwind=libunwind: no libunwind in this build, the cached "
                              "CFI unwinder runs");
        ms_unwind_mode = MS_UNWIND_DWARF;
    }
    if (ms_unwind_mode == MS_UNWIND_AUTO)
        ms_unwind_mode = MS_UNWIND_DWARF;
    if (ms_unwind_mode == MS_UNWIND_DWARF && ms_cfi_init(ms_opt.pc_cache) != 0)
        ms_unwind_mode = ms_lu_available() ? MS_UNWIND_LIBUNWIND : MS_UNWIND_FP;
    /* libunwind also finishes the walks the cached unwinder cannot (signal frames) */
    if (ms_lu_available())
        ms_lu_no_fds();
    if (ms_unwind_mode == MS_UNWIND_LIBUNWIND)
        ms_lu_init();
    return 0;
}

const char *ms_unwind_name(void)
{
    switch (ms_unwind_mode) {
    case MS_UNWIND_FP: return "fp";
    case MS_UNWIND_LIBUNWIND: return "libunwind";
    default: return "dwarf-cached";
    }
}

void ms_unwind_invalidate(void)
{
    if (ms_unwind_mode == MS_UNWIND_DWARF)
        ms_cfi_invalidate();
    else if (ms_unwind_mode == MS_UNWIND_LIBUNWIND)
        ms_lu_flush();
}

static MS_NOINLINE unsigned ms_unwind_fp(uint64_t *pcs, unsigned max, unsigned *flags);

/* 1 when the agent runs on the thread's known stack (not a makecontext stack, a green
 * thread's or a signal stack, whose bounds the frame-pointer and cached walks lack). */
static int ms_on_known_stack(void)
{
    ms_thread_bounds();
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    return ms_self.stack_hi && fp < ms_self.stack_hi && fp >= ms_self.stack_lo;
}

static MS_NOINLINE unsigned ms_unwind_libunwind(uint64_t *pcs, unsigned max, unsigned *flags)
{
    void *buf[MS_MAX_DEPTH_LIMIT + 16];
    unsigned want = max + 16;
    /* libunwind walks the modules on a cache miss: not while a fork is being made. Not
     * waiting for the fork either: this thread may be inside a walk of the program's own
     * (a malloc from a dl_iterate_phdr callback) that an agent walk the fork waits for
     * is queued behind. For the few calls made during a fork, frame pointers; and
     * always where this build has no libunwind. */
    if (!ms_lu_available() || !ms_dl_begin(0))
        return ms_unwind_fp(pcs, max, flags);
    int n = ms_lu_backtrace(buf, (int)want);
    ms_dl_end();
    if (n <= 0) {
        *flags |= MS_STACKF_UNWIND_FAIL;
        MS_HEALTH_INC(unwind_failures);
        return 0;
    }
    unsigned i = 0, d = 0;
    while (i < (unsigned)n && ms_is_self((uintptr_t)buf[i]))
        i++;
    for (; i < (unsigned)n && d < max; i++)
        if (!ms_is_self((uintptr_t)buf[i])) /* e.g. the thread start trampoline */
            pcs[d++] = (uint64_t)(uintptr_t)buf[i];
    if (i < (unsigned)n || (unsigned)n == want) {
        *flags |= MS_STACKF_TRUNCATED;
        MS_HEALTH_INC(unwind_truncated);
    }
    return d;
}

static MS_NOINLINE unsigned ms_unwind_fp(uint64_t *pcs, unsigned max, unsigned *flags)
{
    ms_thread_bounds();
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t lo = fp, hi = ms_self.stack_hi;
    unsigned n = 0;
    if (!hi || fp >= hi || fp < ms_self.stack_lo) { /* not on the thread's known stack */
        *flags |= MS_STACKF_UNWIND_FAIL;
        MS_HEALTH_INC(unwind_failures);
        return 0;
    }
    int truncated;
    n = ms_fp_walk(fp, lo, hi, ms_self_lo, ms_self_hi, pcs, max, &truncated);
    if (truncated) {
        *flags |= MS_STACKF_TRUNCATED;
        MS_HEALTH_INC(unwind_truncated);
    }
    return n;
}

unsigned ms_unwind_ctx(uint64_t *pcs, unsigned max, unsigned *flags, uint32_t **sid_slot)
{
    if (sid_slot)
        *sid_slot = NULL;
    switch (ms_unwind_mode) {
    case MS_UNWIND_FP:
        if (MS_UNLIKELY(!ms_on_known_stack())) {
            MS_HEALTH_INC(unwind_fallbacks);
            return ms_unwind_libunwind(pcs, max, flags);
        }
        return ms_unwind_fp(pcs, max, flags);
    case MS_UNWIND_DWARF: {
        int r = ms_cfi_unwind(pcs, max, flags, sid_slot);
        if (MS_LIKELY(r >= 0))
            return (unsigned)r;
        MS_HEALTH_INC(unwind_fallbacks);
        *flags = 0;
        return ms_unwind_libunwind(pcs, max, flags);
    }
    default:
        return ms_unwind_libunwind(pcs, max, flags);
    }
}

unsigned ms_unwind(uint64_t *pcs, unsigned max, unsigned *flags)
{
    return ms_unwind_ctx(pcs, max, flags, NULL);
}

/* From a signal context (guard pages' fault handler): the cached rules where they are
 * set up, else the frame records; only within the interrupted thread's known stack. */
unsigned ms_unwind_context(const void *uc, uint64_t *pcs, unsigned max, unsigned *flags)
{
    uintptr_t pc, sp, fp;
    ms_arch_context_frame(uc, &pc, &sp, &fp);
    uintptr_t hi = ms_self.stack_hi;
    if (max == 0)
        return 0;
    if (!hi || sp >= hi || sp < ms_self.stack_lo) { /* bounds unknown: the pc alone */
        pcs[0] = pc;
        *flags |= MS_STACKF_UNWIND_FAIL;
        return 1;
    }
    unsigned n = 0;
    if (ms_unwind_mode == MS_UNWIND_DWARF) {
        n = (unsigned)ms_cfi_unwind_from(pc, sp, fp, hi, pcs, max, flags);
        goto cut;
    }
    pcs[n++] = pc;
    int truncated;
    n += ms_fp_walk(fp, sp, hi, 0, 0, pcs + 1, max - 1, &truncated);
cut:; /* the agent's own frames (its wrapper around main) are cut, as in every stack */
    unsigned d = 1;
    for (unsigned i = 1; i < n; i++)
        if (!ms_is_self((uintptr_t)pcs[i]))
            pcs[d++] = pcs[i];
    return n ? d : 0;
}
