/* Ground truth: allocations three calls deep (gt_level1 -> gt_level2 -> gt_level3 ->
 * malloc); all three callers must appear in the recorded stack. Leaks on purpose. */
#include <stdlib.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
static int nkeep;

GT_NOINLINE void gt_level3(size_t n)
{
    void *p = malloc(n);
    gt_keep[nkeep++] = p;
}

GT_NOINLINE void gt_level2(size_t n)
{
    gt_level3(n);
    gt_keep[nkeep] = 0;
}

GT_NOINLINE void gt_level1(size_t n)
{
    for (int i = 0; i < 12; i++)
        gt_level2(n + (size_t)i);
    gt_keep[nkeep] = 0;
}

int main(void)
{
    gt_level1(1000); /* 12 blocks, 12*1000 + 66 bytes */
    gt_expect("gt_level3", "heap", 12, 12 * 1000 + 66);
    gt_chain("gt_level3", "gt_level2", "gt_level1");
    fflush(stdout);
    return 0;
}
