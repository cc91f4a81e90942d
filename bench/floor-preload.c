/* The floor of any LD_PRELOAD allocation interposer: malloc, free, calloc and realloc that
 * only jump to the C library's (found with dlsym(RTLD_NEXT) by a constructor: glibc 2.34
 * and later allocate nothing in a dlsym that succeeds, and nothing calls the allocator
 * before a preloaded library's constructor). What a program pays for the extra call and
 * jump alone; bench-overhead.sh prints it beside memsight's ratios. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);

__attribute__((constructor)) static void floor_init(void)
{
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    if (!real_malloc || !real_free || !real_calloc || !real_realloc) {
        fputs("floor-preload: the C library's allocator not found\n", stderr);
        _exit(127);
    }
}

void *malloc(size_t n) { return real_malloc(n); }
void free(void *p) { real_free(p); }
void *calloc(size_t a, size_t b) { return real_calloc(a, b); }
void *realloc(void *p, size_t n) { return real_realloc(p, n); }
