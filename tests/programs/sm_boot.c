/* Ground truth for blocks of the agent's bootstrap arena (with boot_shim.c preloaded
 * before the agent): the shim's blocks, some allocated while the agent started, are
 * freed by the program's code once the agent runs, in whatever mode it runs; then the
 * program allocates and frees on. Prints "released N" and exits 0; a bootstrap block
 * handed to the C library's free aborts it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    int (*release)(void);
    *(void **)&release = dlsym(RTLD_DEFAULT, "bs_release");
    if (!release) {
        fprintf(stderr, "sm_boot: boot_shim is not preloaded\n");
        return 2;
    }
    int n = release();
    void *keep[256];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 256; i++) {
            keep[i] = malloc(16 + (size_t)(i * 37 % 2000));
            if (keep[i])
                memset(keep[i], i, 16);
        }
        for (int i = 0; i < 256; i++)
            free(keep[i]);
    }
    printf("released %d\n", n);
    return 0;
}
