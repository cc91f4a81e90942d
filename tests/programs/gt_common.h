/* Ground-truth helpers for the agent's test programs: each program prints what it
 * expects the agent to see ("expect FUNC KIND LIVE_BLOCKS LIVE_BYTES") on stdout.
 * Test-only code: never linked into memsight itself. */
#ifndef GT_COMMON_H
#define GT_COMMON_H
#include <stdio.h>

/* Keeps pointers reachable and defeats tail calls (a function whose last act is a call
 * would otherwise vanish from the stack). */
#define GT_KEEP_MAX 65536
extern void *volatile gt_keep[GT_KEEP_MAX];
#define GT_NOINLINE __attribute__((noinline, noclone))

static inline void gt_expect(const char *fn, const char *kind, unsigned long blocks, unsigned long bytes)
{
    printf("expect %s %s %lu %lu\n", fn, kind, blocks, bytes);
}
/* "allocs F K N B": the stacks whose innermost frame of the program is F, of kind K,
 * counted N allocations of B bytes in all (freed ones included). */
static inline void gt_expect_allocs(const char *fn, const char *kind, unsigned long blocks,
                                    unsigned long bytes)
{
    printf("allocs %s %s %lu %lu\n", fn, kind, blocks, bytes);
}
/* "frame F K N B": the stacks of kind K that hold frame F anywhere keep N blocks of B
 * bytes live in all. */
static inline void gt_expect_frame(const char *fn, const char *kind, unsigned long blocks,
                                   unsigned long bytes)
{
    printf("frame %s %s %lu %lu\n", fn, kind, blocks, bytes);
}
/* "chain A B C": frames A, B and C all appear, innermost first, in some stack. */
static inline void gt_chain(const char *a, const char *b, const char *c)
{
    printf("chain %s %s %s\n", a, b, c);
}
#endif
