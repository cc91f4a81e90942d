/* Allocates until malloc fails (under `ulimit -v`), frees everything and prints how much
 * it got. big: 1 MiB blocks (mmap'ed by glibc, address space only); small: 64-byte
 * blocks (the agent's live table must grow with them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int big = argc < 2 || strcmp(argv[1], "small") != 0;
    size_t size = big ? 1u << 20 : 64, cap = 1u << 20, n = 0;
    void **v = malloc(cap * sizeof *v);
    if (!v)
        return 2;
    for (;;) {
        if (n == cap) {
            void **w = realloc(v, 2 * cap * sizeof *v);
            if (!w)
                break;
            v = w;
            cap *= 2;
        }
        void *p = malloc(size);
        if (!p)
            break;
        v[n++] = p;
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    printf("%zu %s\n", big ? n : n * size >> 20, "MiB");
    return 0;
}
