/* Ground truth for reserved address space: 1 GiB reserved with PROT_NONE, 3 MiB of it
 * committed by mprotect and 2 MiB by mmap MAP_FIXED, 1 MiB of the mprotect'ed part given
 * back with PROT_NONE, 8 MiB of the reservation unmapped, a plain mapping made PROT_NONE
 * whole, two 4 MiB reservations committed page by page (mprotect; mmap MAP_FIXED: one
 * block each, the region table stays small) and a guard page set on a running thread's
 * stack (left alone). Prints what the agent must see ("expect FUNC KIND BLOCKS BYTES",
 * "total KIND BLOCKS BYTES", "health NAME<= N"); test-only code. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
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

GT_NOINLINE char *rv_reserve_paged(size_t n)
{
    char *p = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    gt_keep[5] = p;
    return p == MAP_FAILED ? NULL : p;
}

GT_NOINLINE int rv_commit_pages_fixed(char *p, size_t n)
{
    for (size_t o = 0; o < n; o += 4096)
        if (mmap(p + o, 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p + o)
            return -1;
    gt_keep[6] = p;
    return 0;
}

static int rv_started;

static void *rv_sleeper(void *arg)
{
    (void)arg;
    __atomic_store_n(&rv_started, 1, __ATOMIC_RELEASE);
    for (;;) /* still running when main returns */
        pause();
    return NULL;
}

/* A running thread whose lowest stack page the program makes a guard page, as the JVM
 * does for its threads: the stack stays one stack block of its full size. */
GT_NOINLINE int rv_spawn_guarded(pthread_t *t)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 512 * 1024);
    int rc = pthread_create(t, &a, rv_sleeper, NULL);
    pthread_attr_destroy(&a);
    if (rc != 0)
        return -1;
    while (!__atomic_load_n(&rv_started, __ATOMIC_ACQUIRE)) /* its stack is recorded */
        usleep(1000);
    void *lo;
    size_t sz;
    if (pthread_getattr_np(*t, &a) != 0)
        return -1;
    rc = pthread_attr_getstack(&a, &lo, &sz);
    pthread_attr_destroy(&a);
    if (rc != 0)
        return -1;
    return mprotect(lo, 4096, PROT_NONE);
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

    /* committed page by page: one mmap block per reservation, nothing reserved left */
    char *g = rv_reserve_paged(4 * MIB);
    if (!g)
        return 8;
    for (size_t o = 0; o < 4 * MIB; o += 4096)
        if (rv_commit_protect(g + o, 4096) != 0)
            return 9;
    char *h = rv_reserve_paged(4 * MIB);
    if (!h || rv_commit_pages_fixed(h, 4 * MIB) != 0)
        return 10;
    pthread_t t;
    if (rv_spawn_guarded(&t) != 0)
        return 11;
    /* failures pass through with the kernel's errno and change nothing */
    errno = 0;
    if (mprotect(r + 1, 4096, PROT_READ) != -1 || errno != EINVAL)
        return 12;

    /* reserved: [0,16) [18,64) [66,512) [520,1024) from rv_reserve; m from rv_plain_map */
    unsigned long res_bytes = (16 + 46 + 446 + 504) * MIB;
    gt_expect("rv_reserve", "reserved", 4, res_bytes);
    gt_expect("rv_reserve", "mmap", 1, 2 * MIB);
    gt_expect("rv_commit_fixed", "mmap", 1, 2 * MIB);
    gt_expect("rv_commit_protect", "mmap", 0, 0);
    gt_expect("rv_release", "reserved", 0, 0);
    gt_expect("rv_plain_map", "reserved", 1, MIB);
    gt_expect("rv_plain_map", "mmap", 0, 0);
    gt_expect("rv_reserve_paged", "mmap", 1, 4 * MIB);
    gt_expect("rv_reserve_paged", "reserved", 0, 0);
    gt_expect("rv_commit_pages_fixed", "mmap", 1, 4 * MIB);
    gt_expect("rv_spawn_guarded", "stack", 1, 512 * 1024);
    gt_expect("rv_spawn_guarded", "reserved", 0, 0);
    printf("total reserved 5 %lu\n", res_bytes + MIB);
    printf("total mmap 4 %lu\n", 12 * MIB);
    /* the region table: the regions above, the thread's stack and what the C library
     * maps itself, never one per committed page */
    printf("health region_table_used<= 16\n");
    fflush(stdout);
    return 0;
}
