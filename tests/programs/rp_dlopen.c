/* Real-program test: dlopen/dlclose a library (zlib) 30 times, compressing with it in
 * between, with allocations before and after; prints the compressed sizes. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*compress2_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long, int);

int main(void)
{
    unsigned char src[20000], dst[30000];
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)((i * 7) % 31);
    unsigned long last = 0;
    for (int round = 0; round < 30; round++) {
        void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        compress2_fn c = (compress2_fn)dlsym(h, "compress2");
        unsigned long n = sizeof dst;
        if (!c || c(dst, &n, src, sizeof src, 6) != 0)
            return 2;
        char *p = malloc(n);
        memcpy(p, dst, n);
        free(p);
        last = n;
        dlclose(h);
    }
    printf("compressed %lu\n", last);
    return 0;
}
