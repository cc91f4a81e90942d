/* Shared helpers of the leak ground-truth programs (lk_*.c): a mid-run check through
 * memsight_leak_check() when the agent is preloaded and VALGRIND_DO_LEAK_CHECK under
 * valgrind, stack clearing, and the EXPECT line each program prints about itself.
 * Programs never use stdio before the check: its buffer would be one more block. */
#ifndef LK_COMMON_H
#define LK_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/memcheck.h>

int memsight_leak_check(char *path, unsigned long pathlen) __attribute__((weak));

/* Hides a value from the optimiser so that allocations and stores really happen. */
__attribute__((noinline)) static void *lk_use(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noinline, unused)) static void *lk_alloc(size_t n, int fill)
{
    void *p = lk_use(malloc(n));
    memset(p, fill, n);
    return p;
}

/* Overwrites the dead stack below the caller, where stale copies of pointers remain. */
__attribute__((noinline, unused)) static void lk_clear_stack(void)
{
    volatile char buf[32768];
    memset((char *)buf, 0, sizeof buf);
    lk_use((void *)buf);
}

static void lk_say(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void lk_say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(1, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The check, in both worlds. Prints "SNAPSHOT <path>" for the memsight one. */
__attribute__((noinline, unused)) static void lk_check(void)
{
    if (memsight_leak_check) {
        char path[1024] = "";
        int rc = memsight_leak_check(path, sizeof path);
        lk_say("SNAPSHOT rc=%d %s\n", rc, path);
    }
    VALGRIND_DO_LEAK_CHECK;
}

#endif
