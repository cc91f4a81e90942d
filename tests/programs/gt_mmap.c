/* Ground truth: mmap regions with a split by partial munmap, a head trim, an mremap
 * that grows and moves, and a region unmapped whole. Keeps regions on purpose. */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
#define PG 4096ul

static void *map(size_t n)
{
    return mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

GT_NOINLINE void gt_map_split(void)
{
    char *p = map(16 * PG);
    munmap(p + 4 * PG, 2 * PG); /* two pieces: 4 + 10 pages */
    gt_keep[0] = p;
}

GT_NOINLINE void gt_map_trim(void)
{
    char *p = map(8 * PG);
    munmap(p, 2 * PG); /* 6 pages left */
    gt_keep[1] = p + 2 * PG;
    char *q = map(3 * PG);
    munmap(q, 3 * PG); /* gone */
    gt_keep[2] = q;
}

GT_NOINLINE void gt_map_for_remap(char **out)
{
    *out = map(4 * PG);
    gt_keep[3] = *out;
}

GT_NOINLINE void gt_remap(char *p)
{
    char *q = mremap(p, 4 * PG, 40 * PG, MREMAP_MAYMOVE);
    gt_keep[4] = q;
}

int main(void)
{
    char *r;
    gt_map_split();
    gt_map_trim();
    gt_map_for_remap(&r);
    gt_remap(r);
    gt_expect("gt_map_split", "mmap", 2, 14 * PG);
    gt_expect("gt_map_trim", "mmap", 1, 6 * PG);
    gt_expect("gt_map_for_remap", "mmap", 0, 0);
    gt_expect("gt_remap", "mmap", 1, 40 * PG);
    fflush(stdout);
    return 0;
}
