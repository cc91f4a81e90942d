/* The vDSO's functions called directly (vdso.c). */
#ifndef MS_AGENT_VDSO_H
#define MS_AGENT_VDSO_H

#include <time.h>

#include "agent/arch/arch.h"

#define MS_VDSO_INTERNAL __attribute__((visibility("hidden")))

typedef int (*ms_clock_fn)(clockid_t, struct timespec *);
/* clock_gettime for the blocks' timestamps: the vDSO's (MS_ARCH_VDSO_CLOCK_GETTIME) once
 * ms_vdso_init found it, the C library's before and without one. */
extern ms_clock_fn ms_clock_coarse_fn MS_VDSO_INTERNAL;
/* The vDSO's function `name` (a defined STT_FUNC inside its loaded image), or NULL. */
void *ms_vdso_func(const char *name) MS_VDSO_INTERNAL;
/* Finds the vDSO's clock_gettime (once, at start-up: the vDSO stays where it is for the
 * process's life, forks included). */
void ms_vdso_init(void) MS_VDSO_INTERNAL;

#endif
