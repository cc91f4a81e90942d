/* Workload of bench-memory.sh: allocates BLOCKS small blocks (16 to 112 bytes, from four
 * call sites) and keeps them all live to the end, then prints its resident set before and
 * after (VmRSS of /proc/self/status) so that the script can divide what a tool adds by
 * the number of blocks. Not freed: the exit snapshot sees them all live. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

__attribute__((noinline)) static void *site(unsigned k, size_t n)
{
    switch (k & 3) {
    case 0: return malloc(n);
    case 1: return calloc(1, n);
    case 2: return malloc(n + 16);
    default: return malloc(n + 48);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void **keep = calloc((size_t)n, sizeof *keep);
    if (!keep)
        return 1;
    memset(keep, 0, (size_t)n * sizeof *keep); /* its pages are in the first reading */
    long before = rss_kb();
    for (long i = 0; i < n; i++) {
        keep[i] = site((unsigned)i, 16 + (size_t)(i % 4) * 16);
        if (!keep[i])
            return 1;
        memset(keep[i], 1, 16);
    }
    long after = rss_kb();
    printf("blocks=%ld rss_before_kb=%ld rss_after_kb=%ld\n", n, before, after);
    return 0;
}
