/* Allocation sites: the frame of a stack that a report names as "where it was allocated".
 * The innermost frame is often not the program's: strdup in libc, operator new in
 * libstdc++, std::vector's growth inlined from the C++ headers. Like heaptrack, reports
 * group by the innermost frame that belongs to the program instead, so every strdup of a
 * program is not one site. Tools only; computes, never prints. */
#ifndef MS_ANALYSIS_SITES_H
#define MS_ANALYSIS_SITES_H

#include <stddef.h>

#include "analysis/stack_agg.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

typedef enum ms_site_mode {
    MS_SITE_PROGRAM = 0, /* the innermost frame of the program (default) */
    MS_SITE_CALLER = 1,  /* the innermost frame: the allocator's direct caller */
} ms_site_mode;

/* 0 or -1 for an unknown name ("program", "caller"). */
int ms_site_mode_parse(const char *name, ms_site_mode *mode);

/* Whether a frame is the C or C++ runtime's rather than the program's: its module is
 * libc, libstdc++, libgcc_s, libm, the dynamic loader (glibc's or musl's), libc++ or the
 * agent, or its source is a system header (/usr/include/..., e.g. libstdc++'s templates
 * inlined into the program). A frame outside every module counts as the program's. */
int ms_site_is_runtime(const ms_frame *f);

/* Index of the site among frames f[0..n) (innermost first): with MS_SITE_PROGRAM the
 * innermost frame that is not the runtime's, the innermost one when all are. 0 when
 * n == 0. */
size_t ms_site_index(const ms_frame *f, size_t n, ms_site_mode mode);

/* Aggregates the stacks of s by site: one ms_agg stack per (kind, site), its frames the
 * kind's root ([mmap], [thread stacks]; none for the heap) and the site named "function
 * file:line" (or module+offset), nsrc the number of recorded stacks it sums; reserved
 * address space is left out. NULL + message on out of memory. */
ms_agg *ms_sites_build(const ms_snapshot *s, ms_symbolizer *sym, ms_site_mode mode, char *err,
                       size_t errlen);

#endif
