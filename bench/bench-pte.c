/* What the page-table changes of one guarded block cost on this machine, one system call
 * at a time, beside the cost of a system call that changes nothing: the guard pages'
 * pool layout (a slot page between two guard pages marked MADV_DONTDUMP, so that each
 * mprotect changes one mapping in place), and for each step the mean over N rounds:
 *   syscall       getppid: entering and leaving the kernel
 *   open_fresh    mprotect PROT_NONE -> RW of a slot never used (no page yet)
 *   open_reused   mprotect PROT_NONE -> RW of a slot whose page holds a freed block (what
 *                 each reuse of a slot costs at allocation: the page-table entry changes,
 *                 no TLB flush, since access only grows)
 *   close         mprotect RW -> PROT_NONE of the page just written (each guarded free:
 *                 the entry changes and the page is flushed from the TLB)
 *   close_empty   the same on a slot with no page (no entry to change, nothing to flush)
 *   touch_fresh   the first write to a fresh slot page (a page fault)
 * On hardware the flush is one instruction; under a hypervisor that shadows the guest's
 * page tables every change of an entry and every flush may leave the guest, which these
 * lines show against `syscall`.
 * usage: bench-pte [ROUNDS]   prints "step us_per_call" lines */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4000;
    if (n < 1)
        n = 1;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    int slots = 64;
    char *pool = mmap(NULL, (2 * (size_t)slots + 1) * pg, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool == MAP_FAILED) {
        perror("bench-pte: mmap");
        return 1;
    }
    for (int i = 0; i <= slots; i++)
        madvise(pool + 2 * (size_t)i * pg, pg, MADV_DONTDUMP);
    double t0, sys = 0, open_fresh = 0, open_reused = 0, close_touched = 0, close_empty = 0,
               touch = 0;
    int fresh = 0;
    for (int r = 0; r < n; r++) {
        t0 = now();
        getppid();
        sys += now() - t0;
        char *s = pool + (2 * (size_t)(r % slots) + 1) * pg;
        if (r < slots) { /* first use: no page yet */
            t0 = now();
            mprotect(s, pg, PROT_READ | PROT_WRITE);
            open_fresh += now() - t0;
            t0 = now();
            mprotect(s, pg, PROT_NONE);
            close_empty += now() - t0;
            mprotect(s, pg, PROT_READ | PROT_WRITE);
            t0 = now();
            s[0] = 1;
            touch += now() - t0;
            fresh++;
        } else {
            t0 = now();
            mprotect(s, pg, PROT_READ | PROT_WRITE);
            open_reused += now() - t0;
        }
        memset(s, 0xbb, pg); /* the fill, as the guard writes it */
        t0 = now();
        mprotect(s, pg, PROT_NONE);
        close_touched += now() - t0;
    }
    int reused = n - fresh;
    printf("syscall %.2f\n", sys / n * 1e6);
    printf("open_fresh %.2f\n", open_fresh / fresh * 1e6);
    printf("open_reused %.2f\n", reused ? open_reused / reused * 1e6 : 0.0);
    printf("close %.2f\n", close_touched / n * 1e6);
    printf("close_empty %.2f\n", close_empty / fresh * 1e6);
    printf("touch_fresh %.2f\n", touch / fresh * 1e6);
    return 0;
}
