/* Ground truth for reserved address space: 1 GiB reserved with PROT_NONE, 3 MiB of it
 * committed by mprotect and 2 MiB by mmap MAP_FIXED, 1 MiB of the mprotect'ed part given
 * back with PROT_NONE, 8 MiB of the reservation unmapped, and a plain mapping made
 * PROT_NONE whole. Prints what the agent must see ("expect FUNC KIND BLOCKS BYTES",
 * "total KIND BLOCKS BYTES"); test-only code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
#define MIB (1ul << 20)

GT_NOINLINE char *rv_reserve(size_t n)
{
    char *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    gt_keep[0] = p;
    return p == MAP_FAILED ? NULL : p;
}

GT_NOINLINE int rv_commit_protect(char *p, size_t n)
{
    int rc = mprotect(p, n, PROT_READ | PROT_WRITE);
    if (rc == 0)
        p[n - 1] = 1;
    gt_keep[1] = p;
    return rc;
}

GT_NOINLINE int rv_commit_fixed(char *p, size_t n)
{
    char *q = mmap(p, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (q != p)
        return -1;
    q[0] = 1;
    gt_keep[2] = q;
    return 0;
}

GT_NOINLINE int rv_release(char *p, size_t n)
{
    int rc = mprotect(p, n, PROT_NONE);
    gt_keep[3] = p;
    return rc;
}

GT_NOINLINE char *rv_plain_map(size_t n)
{
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gt_keep[4] = p;
    return p == MAP_FAILED ? NULL : p;
}

int main(void)
{
    char *r = rv_reserve(1024 * MIB); /* [0, 1024) MiB reserved */
    if (!r)
        return 2;
    /* [16, 19) committed: the reservation's stack, now as mmap */
    if (rv_commit_protect(r + 16 * MIB, 3 * MIB) != 0)
        return 3;
    /* [64, 66) committed by a new mapping: the caller's stack */
    if (rv_commit_fixed(r + 64 * MIB, 2 * MIB) != 0)
        return 4;
    /* [18, 19) back to PROT_NONE: it joins the reserved [19, 64) */
    if (rv_release(r + 18 * MIB, MIB) != 0)
        return 5;
    /* [512, 520) unmapped: the reserved [66, 1024) splits in two */
    if (munmap(r + 512 * MIB, 8 * MIB) != 0)
        return 6;
    /* a readable mapping made PROT_NONE whole */
    char *m = rv_plain_map(MIB);
    if (!m || rv_release(m, MIB) != 0)
        return 7;

    /* reserved: [0,16) [18,64) [66,512) [520,1024) from rv_reserve; m from rv_plain_map */
    unsigned long res_bytes = (16 + 46 + 446 + 504) * MIB;
    gt_expect("rv_reserve", "reserved", 4, res_bytes);
    gt_expect("rv_reserve", "mmap", 1, 2 * MIB);
    gt_expect("rv_commit_fixed", "mmap", 1, 2 * MIB);
    gt_expect("rv_commit_protect", "mmap", 0, 0);
    gt_expect("rv_release", "reserved", 0, 0);
    gt_expect("rv_plain_map", "reserved", 1, MIB);
    gt_expect("rv_plain_map", "mmap", 0, 0);
    printf("total reserved 5 %lu\n", res_bytes + MIB);
    printf("total mmap 2 %lu\n", 4 * MIB);
    fflush(stdout);
    return 0;
}
