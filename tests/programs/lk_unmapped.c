/* Robustness: a tracked block whose memory the program unmapped behind the allocator's
 * back, and a tracked mmap region made unreadable (PROT_NONE), must not break a scan:
 * the unreadable bytes are skipped, the block still counts (reachable from a global),
 * and a block held only from the unreadable region is reported definitely lost. */
#include <sys/mman.h>

#include "lk_common.h"

void *g_big;
static uintptr_t region_inv;

__attribute__((noinline)) static void run(void)
{
    /* 1 MiB: the allocator serves it with its own mapping; unmap the pages under it */
    char *p = lk_alloc(1 << 20, 'u');
    g_big = p;
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
    if (munmap((void *)page, (1 << 20) + 4096) != 0)
        _exit(3);
    void **r = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        _exit(2);
    r[5] = lk_alloc(40, 'h');
    mprotect(r, 8192, PROT_NONE);
    region_inv = ~(uintptr_t)r;
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/40 indirect=0/0 possible=0/0 reachable=1/1048576\n");
    /* MS_LEAK_F_READ_ERRORS: unreadable memory was skipped */
    lk_say("FLAGS 2\n");
    lk_say("SKIPPED>=%d\n", (1 << 20) + 8192);
    return 0;
}
