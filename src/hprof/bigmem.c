/* Huge-page advice for the large arrays (bigmem.h). */
#include "hprof/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MS_HBIG_MIN (4u << 20) /* below this, malloc's own pages are fine */

void ms_hbig_advise(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (!p || bytes < MS_HBIG_MIN)
        return;
    uintptr_t a = ((uintptr_t)p + ((uintptr_t)2 << 20) - 1) & ~(((uintptr_t)2 << 20) - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(((uintptr_t)2 << 20) - 1);
    if (e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#else
    (void)p;
    (void)bytes;
#endif
}

void *ms_hbig_malloc(size_t bytes)
{
    void *p = malloc(bytes);
    ms_hbig_advise(p, bytes);
    return p;
}

void *ms_hbig_calloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p && n)
        ms_hbig_advise(p, n * size); /* calloc checked the product */
    return p;
}
