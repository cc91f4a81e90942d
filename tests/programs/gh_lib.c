/* GOT-hook test library: dlopen'ed by gh_dlopen after memsight_start(); its allocations
 * (through its own GOT, patched by the agent's dlopen hook) have a known count and size. */
#include <stdlib.h>

#define GH_LIB_BLOCKS 7
#define GH_LIB_SIZE 333

static void *gh_lib_keep[GH_LIB_BLOCKS];

__attribute__((noinline)) void *gh_lib_alloc_one(unsigned i)
{
    void *p = malloc(GH_LIB_SIZE);
    if (p)
        ((volatile char *)p)[0] = (char)i;
    return p;
}

/* Allocates the library's blocks; returns how many, and their size in *size. */
__attribute__((noinline)) int gh_lib_alloc(unsigned long *size)
{
    for (unsigned i = 0; i < GH_LIB_BLOCKS; i++)
        if (!(gh_lib_keep[i] = gh_lib_alloc_one(i)))
            return -1;
    *size = GH_LIB_SIZE;
    return GH_LIB_BLOCKS;
}
