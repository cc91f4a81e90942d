/* Ground truth for the exactness of the agent's walk cache: one allocation site reached
 * through chains that differ in one frame only, at each depth in turn. Both functions of
 * a level have the same shape, so every call enters the agent at the same pc and sp and
 * only the return address (and, built with frame pointers, the saved frame pointer) of
 * that one level differs. The two chains of a depth alternate irregularly, both kept in
 * the cache; each must be counted exactly (a look-up that accepted a walk without
 * checking one of its words would move counts from one chain to the other). Leaks on
 * purpose. */
#include <stdlib.h>

#include "gt_common.h"

#define LEVELS 6
void *volatile gt_keep[GT_KEEP_MAX];
static volatile int nkeep;
static volatile unsigned gt_sink;
/* called through this table, so that the compiler cannot fold the levels together */
static void (*volatile gt_next[LEVELS + 1][2])(unsigned path, size_t size);

GT_NOINLINE void gt_leaf(unsigned path, size_t size)
{
    (void)path;
    gt_keep[nkeep] = malloc(size);
    nkeep = nkeep + 1;
}

/* Level j, function a or b (chosen by bit j-1 of path): calls level j-1's function
 * (level 0 is the leaf). The store after the call keeps it from being a tail call, its
 * constant the two bodies distinct. */
#define GT_LEVEL(j, v, k)                                                                  \
    GT_NOINLINE void gt_l##j##v(unsigned path, size_t size)                                \
    {                                                                                      \
        gt_next[(j) - 1][((path << 1) >> ((j) - 1)) & 1](path, size);                      \
        gt_sink = gt_sink + (k);                                                           \
    }
GT_LEVEL(1, a, 11) GT_LEVEL(1, b, 12)
GT_LEVEL(2, a, 21) GT_LEVEL(2, b, 22)
GT_LEVEL(3, a, 31) GT_LEVEL(3, b, 32)
GT_LEVEL(4, a, 41) GT_LEVEL(4, b, 42)
GT_LEVEL(5, a, 51) GT_LEVEL(5, b, 52)
GT_LEVEL(6, a, 61) GT_LEVEL(6, b, 62)

int main(void)
{
    void (*fa[LEVELS])(unsigned, size_t) = {gt_l1a, gt_l2a, gt_l3a, gt_l4a, gt_l5a, gt_l6a};
    void (*fb[LEVELS])(unsigned, size_t) = {gt_l1b, gt_l2b, gt_l3b, gt_l4b, gt_l5b, gt_l6b};
    static const char *na[LEVELS] = {"gt_l1a", "gt_l2a", "gt_l3a", "gt_l4a", "gt_l5a", "gt_l6a"};
    static const char *nb[LEVELS] = {"gt_l1b", "gt_l2b", "gt_l3b", "gt_l4b", "gt_l5b", "gt_l6b"};
    gt_next[0][0] = gt_next[0][1] = gt_leaf;
    for (int j = 1; j <= LEVELS; j++) {
        gt_next[j][0] = fa[j - 1];
        gt_next[j][1] = fb[j - 1];
    }
    unsigned long na_blocks[LEVELS] = {0}, na_bytes[LEVELS] = {0};
    unsigned long nb_blocks[LEVELS] = {0}, nb_bytes[LEVELS] = {0};
    unsigned long blocks = 0, bytes = 0;
    /* depth d: the all-a chain and the one whose level d is b, in an irregular order */
    for (int d = 1; d <= LEVELS; d++) {
        for (int i = 0; i < 90; i++) {
            unsigned path = (i * 7 + d) % 5 < 2 ? 1u << (d - 1) : 0;
            size_t size = path ? 24 + 8 * (size_t)d : 16;
            gt_next[LEVELS][(path >> (LEVELS - 1)) & 1](path, size);
            for (int j = 0; j < LEVELS; j++) {
                if ((path >> j) & 1) {
                    nb_blocks[j]++;
                    nb_bytes[j] += size;
                } else {
                    na_blocks[j]++;
                    na_bytes[j] += size;
                }
            }
            blocks++;
            bytes += size;
        }
    }
    gt_expect("gt_leaf", "heap", blocks, bytes);
    for (int j = 0; j < LEVELS; j++) {
        gt_expect_frame(na[j], "heap", na_blocks[j], na_bytes[j]);
        gt_expect_frame(nb[j], "heap", nb_blocks[j], nb_bytes[j]);
    }
    gt_chain("gt_leaf", "gt_l1b", "gt_l6a");
    gt_chain("gt_leaf", "gt_l1a", "gt_l6b");
    fflush(stdout);
    return 0;
}
