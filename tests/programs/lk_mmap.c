/* Ground truth: a block whose only pointer lives in an anonymous mmap region the program
 * made itself is still reachable (tracked mmap regions are roots). */
#include <sys/mman.h>

#include "lk_common.h"

static uintptr_t region_inv; /* the region's address, inverted (not a pointer) */

__attribute__((noinline)) static void run(void)
{
    void **r = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        _exit(2);
    r[1000] = lk_alloc(88, 'm');
    region_inv = ~(uintptr_t)r;
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    munmap((void *)~region_inv, 65536);
    lk_say("EXPECT definite=0/0 indirect=0/0 possible=0/0 reachable=1/88\n");
    return 0;
}
