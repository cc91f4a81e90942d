/* Shared helpers of the valgrind-agreement programs (lv_*.c): each runs to its end and
 * exits, and the test compares valgrind's exit leak check with memsight's exit scan
 * class by class. No stdio: its buffer would be one more block in both tools. */
#ifndef LV_COMMON_H
#define LV_COMMON_H

#include <stdlib.h>
#include <string.h>

/* Hides a value from the optimiser so that allocations and stores really happen. */
__attribute__((noinline, unused)) static void *lv_use(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline, unused)) static void *lv_alloc(size_t n)
{
    void *p = lv_use(malloc(n));
    if (n)
        memset(p, 0x5a, n);
    return p;
}

#endif
