/* Takes every byte of address space its limit (ulimit -v) leaves, with untouched
 * PROT_NONE mappings, then exits normally: whoever maps memory after it (the agent's
 * exit snapshot writer) gets ENOMEM. Prints "took N MiB" and exits 0. */
#include <stdio.h>
#include <sys/mman.h>

int main(void)
{
    size_t got = 0;
    for (size_t sz = (size_t)1 << 36; sz >= 4096; sz /= 2)
        while (mmap(NULL, sz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) !=
               MAP_FAILED)
            got += sz;
    printf("took %zu MiB\n", got >> 20);
    return 0;
}
