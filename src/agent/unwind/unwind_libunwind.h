/* libunwind as the agent's reference unwinder and the cached unwinder's fallback
 * (unwind_libunwind.c), or its absence (unwind_nolibunwind.c: a target without a
 * libunwind of its own, musl or a cross build without the target's -dev packages; then
 * frame pointers take its place). The build compiles exactly one of the two.
 * Runs inside the target: nothing here allocates through the program's malloc. */
#ifndef MS_AGENT_UNWIND_LIBUNWIND_H
#define MS_AGENT_UNWIND_LIBUNWIND_H

#include "agent/unwind/unwind.h"

int ms_lu_available(void) MS_INTERNAL;
void ms_lu_init(void) MS_INTERNAL;
void ms_lu_flush(void) MS_INTERNAL;
/* Before libunwind's first use: its memory validation made without a pipe (no
 * descriptor of libunwind's in the program). */
void ms_lu_no_fds(void) MS_INTERNAL;
/* Return addresses of the calling thread's stack, innermost first; the count, or <= 0. */
int ms_lu_backtrace(void **buf, int n) MS_INTERNAL;

#endif
