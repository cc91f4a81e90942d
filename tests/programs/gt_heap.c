/* Ground truth: the C allocation functions (malloc, calloc, realloc chains, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc) with known live counts and bytes per
 * calling function at exit. Leaks on purpose. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
static int nkeep;

GT_NOINLINE static void keep(void *p) { gt_keep[nkeep++] = p; }

GT_NOINLINE void gt_malloc_some(void)
{
    for (int i = 0; i < 10; i++)
        keep(malloc(100 + i)); /* 10 blocks, 1045 bytes */
    void *tmp[5];
    for (int i = 0; i < 5; i++)
        tmp[i] = malloc(1000);
    for (int i = 0; i < 5; i++)
        free(tmp[i]);
}

GT_NOINLINE void gt_calloc_some(void)
{
    for (int i = 0; i < 7; i++)
        keep(calloc(3, 24)); /* 7 blocks x 72 */
    free(calloc(10, 10));
}

GT_NOINLINE void gt_realloc_chain(void)
{
    /* one block grown step by step: only the last size stays live */
    char *p = realloc(NULL, 16);
    for (int i = 1; i <= 20; i++) {
        p = realloc(p, 16 + (size_t)i * 100);
        p[0] = (char)i;
    }
    keep(p); /* 1 block, 2016 bytes */
    char *q = reallocarray(NULL, 8, 16);
    q = reallocarray(q, 8, 32);
    keep(q); /* 1 block, 256 bytes */
    char *r = malloc(50);
    r = realloc(r, 0); /* frees (glibc) */
    if (r)
        free(r);
}

GT_NOINLINE void gt_aligned_some(void)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, 300) == 0)
        keep(p); /* 300 */
    keep(aligned_alloc(128, 512)); /* 512 */
    keep(memalign(32, 77));        /* 77 */
    keep(valloc(1000));            /* 1000 */
    void *f = NULL;
    if (posix_memalign(&f, 256, 999) == 0)
        free(f);
}

int main(void)
{
    gt_malloc_some();
    gt_calloc_some();
    gt_realloc_chain();
    gt_aligned_some();
    gt_expect("gt_malloc_some", "heap", 10, 1045);
    gt_expect("gt_calloc_some", "heap", 7, 7 * 72);
    gt_expect("gt_realloc_chain", "heap", 2, 2016 + 256);
    gt_expect("gt_aligned_some", "heap", 4, 300 + 512 + 77 + 1000);
    fflush(stdout);
    return 0;
}
