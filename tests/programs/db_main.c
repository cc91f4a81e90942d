/* Loads db_lib.so (next to this program) with RTLD_DEEPBIND, the way PHP loads its
 * extensions, and passes blocks both ways: the library frees and resizes the program's
 * blocks and the program frees the library's. Its output is the same with or without an
 * agent; its exit status is 0 when every string came back as built. Argument: "lazy" for
 * RTLD_LAZY (the default RTLD_NOW). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0)
        return 2;
    path[n] = 0;
    char *slash = strrchr(path, '/');
    strcpy(slash + 1, "libdb_lib.so");
    int lazy = argc > 1 && strcmp(argv[1], "lazy") == 0;
    void *h = dlopen(path, (lazy ? RTLD_LAZY : RTLD_NOW) | RTLD_DEEPBIND);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    char *(*swap)(char *, char **, size_t) = (char *(*)(char *, char **, size_t))dlsym(h, "db_swap");
    if (!swap)
        return 2;
    unsigned long sum = 0;
    int bad = 0;
    for (size_t i = 1; i < 3000; i++) {
        size_t len = i % 300 + 1;
        char *mine = malloc(len + 1), *grow = malloc(len + 1);
        if (!mine || !grow)
            return 2;
        memset(mine, 'a' + (int)(i % 26), len);
        mine[len] = 0;
        memset(grow, 'b', len);
        grow[len] = 0;
        char *back = swap(mine, &grow, len); /* mine is freed by the library */
        if (!back || strlen(back) != 2 * len || strlen(grow) != 3 * len ||
            back[0] != 'a' + (int)(i % 26) || back[len] != 'z' || grow[len] != 'g')
            bad++;
        else
            sum += (unsigned long)back[0] + strlen(back) + strlen(grow);
        free(back); /* the library's block */
        free(grow);
    }
    printf("deepbind %s sum %lu bad %d\n", lazy ? "lazy" : "now", sum, bad);
    return bad ? 1 : 0;
}
