/* Allocation of the large per-object and per-edge arrays of the HPROF analysis: plain
 * malloc / calloc memory (free with free()), asked to be backed by transparent huge pages
 * where the system grants them on request: one page fault per 2 MB instead of one per
 * 4 KB. On a virtual machine each fault is expensive: a tenth of a read's time went to
 * them. Advice only: where it is refused nothing changes. */
#ifndef MS_HPROF_BIGMEM_H
#define MS_HPROF_BIGMEM_H

#include <stddef.h>

void *ms_hbig_malloc(size_t bytes);
void *ms_hbig_calloc(size_t n, size_t size);
/* The same advice for memory already allocated (after a realloc). */
void ms_hbig_advise(void *p, size_t bytes);

#endif
