/* What full mode's 16-byte block header costs a program by itself: malloc, calloc,
 * realloc and free that give every block 16 bytes more below the program's pointer (a
 * mark there, nothing recorded) and pass everything else to the C library, as
 * floor-preload.c does. Preloaded beside memsight (bench-cachesim.sh), it separates the
 * allocator's and the program's cost of larger blocks (next size class, less dense heap)
 * from the agent's own work. A block without the mark (from memalign, or allocated
 * before this library's constructor) is the C library's and goes back to it as it is. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static size_t (*real_usable)(void *);

#define HDR 16
#define MARK 0x5a17c0de9e3779b9ull

__attribute__((constructor)) static void hdr_init(void)
{
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_usable = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    if (!real_malloc || !real_free || !real_calloc || !real_realloc || !real_usable) {
        fputs("header-preload: the C library's allocator not found\n", stderr);
        _exit(127);
    }
}

/* as the agent: at least 9 bytes of block, plus the header */
static size_t real_size(size_t n) { return (n < 9 ? 9 : n) + HDR; }
static int marked(const void *p) { return p && ((const uint64_t *)p)[-1] == (MARK ^ (uintptr_t)p); }
static void *give(char *r)
{
    if (!r)
        return NULL;
    char *p = r + HDR;
    ((uint64_t *)p)[-2] = 0;
    ((uint64_t *)p)[-1] = MARK ^ (uintptr_t)p;
    return p;
}
static void *take(void *p) /* the real block of a marked p, unmarked */
{
    ((uint64_t *)p)[-1] = 0;
    return (char *)p - HDR;
}

void *malloc(size_t n) { return n > SIZE_MAX - 64 ? NULL : give(real_malloc(real_size(n))); }
void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n) || n > SIZE_MAX - 64)
        return NULL;
    return give(real_calloc(1, real_size(n)));
}
void free(void *p) { real_free(marked(p) ? take(p) : p); }
size_t malloc_usable_size(void *p) { return marked(p) ? real_usable((char *)p - HDR) - HDR : real_usable(p); }
void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (!marked(p) || n > SIZE_MAX - 64)
        return real_realloc(p, n);
    char *r = real_realloc((char *)p - HDR, real_size(n));
    return r ? give(r) : NULL; /* on failure the old block is intact, mark included */
}
