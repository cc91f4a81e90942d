/* Ground truth for the agent's walk cache: one allocating function reached through two
 * callers whose frames have the same size, alternately, so that every call enters the
 * agent at the same pc and sp while the outer frames differ. Each path's chain must
 * appear in the stacks (a cache that trusted the first frame alone would give every
 * call the first path's stack). Leaks on purpose. */
#include <stdlib.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
static volatile int nkeep;

GT_NOINLINE void gt_leaf(int i)
{
    gt_keep[nkeep] = malloc(40 + (size_t)(i & 1) * 8); /* 40 or 48 bytes */
    nkeep = nkeep + 1;
}

GT_NOINLINE void gt_mid(int i)
{
    gt_leaf(i);
    nkeep = nkeep + 0; /* no tail call */
}

/* Same shape, different bodies (identical functions could be merged by the compiler). */
GT_NOINLINE void gt_outer_a(int i)
{
    gt_mid(i);
    nkeep = nkeep + 0;
}

GT_NOINLINE void gt_outer_b(int i)
{
    gt_mid(i | 1);
    nkeep = nkeep - 0;
}

int main(void)
{
    for (int i = 0; i < 200; i++) {
        if (i & 1)
            gt_outer_b(i);
        else
            gt_outer_a(i);
    }
    /* outer_a: 100 blocks of 40 bytes; outer_b: 100 of 48 */
    gt_expect("gt_leaf", "heap", 200, 100 * 40 + 100 * 48);
    gt_chain("gt_leaf", "gt_mid", "gt_outer_a");
    gt_chain("gt_leaf", "gt_mid", "gt_outer_b");
    fflush(stdout);
    return 0;
}
