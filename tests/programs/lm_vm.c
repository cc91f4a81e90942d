/* Allocates until malloc fails (under `ulimit -v`), frees everything and prints how much
 * it got. big: 1 MiB blocks (mmap'ed by glibc, address space only); small: 64-byte
 * blocks (the agent's live table must grow with them); stacks: 1 MiB blocks until the
 * limit, 16 of them given back, then 64-byte blocks from 2^17 distinct call stacks (the
 * agent's stack tables must grow with them, and cannot: prints the small blocks made);
 * vmsize: prints its address space (VmSize, KiB) after one allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_LEVELS 17

static volatile unsigned sink;
static void *walk(unsigned bits, int level);

/* two call sites per level: the bits of a number choose the path, one stack per number */
__attribute__((noinline)) static void *left(unsigned bits, int level)
{
    void *p = walk(bits, level);
    sink++; /* no tail call: this frame stays in the stack */
    return p;
}

__attribute__((noinline)) static void *right(unsigned bits, int level)
{
    void *p = walk(bits, level);
    sink += 2;
    return p;
}

__attribute__((noinline)) static void *walk(unsigned bits, int level)
{
    if (level == 0)
        return malloc(64);
    return (bits & 1) ? left(bits >> 1, level - 1) : right(bits >> 1, level - 1);
}

static int print_vmsize(void)
{
    free(malloc(64));
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmSize:", 7)) {
            printf("%lu KiB\n", strtoul(line + 7, NULL, 10));
            return 0;
        }
    return 2;
}

int main(int argc, char **argv)
{
    const char *mode = argc < 2 ? "big" : argv[1];
    if (!strcmp(mode, "vmsize"))
        return print_vmsize();
    int big = strcmp(mode, "small") != 0;
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
    size_t made = 0;
    if (!strcmp(mode, "stacks")) {
        for (int i = 0; i < 16 && n > 0; i++)
            free(v[--n]);
        void **s = malloc(sizeof *s << STACK_LEVELS);
        for (unsigned b = 0; s && b < 1u << STACK_LEVELS; b++)
            if ((s[made] = walk(b, STACK_LEVELS)) != NULL)
                made++;
        for (size_t i = 0; i < made; i++)
            free(s[i]);
        free(s);
    }
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
    if (!strcmp(mode, "stacks"))
        printf("%zu %s\n", made, "blocks");
    else
        printf("%zu %s\n", big ? n : n * size >> 20, "MiB");
    return 0;
}
