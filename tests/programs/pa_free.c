/* Ground-truth program for the allocator's free space: allocates BLOCKS blocks of SIZE
 * bytes (touched), frees every other one, so that glibc keeps the freed chunks (their
 * neighbours are in use: nothing coalesces, nothing returns to the kernel), and prints
 * what glibc's own mallinfo2() says before and after, then waits for stdin EOF.
 * Usage: pa_free BLOCKS SIZE [exit|_exit] (how it ends: exit() or _exit()). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out_buf[4096];

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 40000;
    size_t size = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
    int use_exit = !(argc > 3 && !strcmp(argv[3], "_exit"));
    if (n < 2 || n > 10000000 || size < 16 || size > 65536) {
        fprintf(stderr, "usage: pa_free BLOCKS(2..1e7) SIZE(16..65536) [exit|_exit]\n");
        return 2;
    }
    /* stdout's buffer is ours: no allocation between the measurement and the print */
    setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);
    char **p = malloc(n * sizeof *p);
    if (!p)
        return 1;
    for (size_t i = 0; i < n; i++) {
        p[i] = malloc(size);
        if (!p[i])
            return 1;
        memset(p[i], 7, size);
    }
    struct mallinfo2 before = mallinfo2();
    for (size_t i = 0; i < n; i += 2)
        free(p[i]);
    struct mallinfo2 after = mallinfo2();
    printf("pid=%d kept_blocks=%zu kept_bytes=%zu freed_blocks=%zu freed_free_bytes=%zu "
           "arena=%zu uordblks=%zu fordblks=%zu hblkhd=%zu keepcost=%zu\nready\n",
           (int)getpid(), n / 2, n / 2 * size, (n + 1) / 2, after.fordblks - before.fordblks,
           after.arena, after.uordblks, after.fordblks, after.hblkhd, after.keepcost);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    if (!use_exit)
        _exit(0);
    return 0;
}
