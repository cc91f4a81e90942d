/* GOT-hook test allocator: a shared library the program links before libc, so that its
 * malloc family is the program's. Every block carries a 32-byte header with a magic;
 * a free/realloc/usable-size of a pointer it did not hand out aborts. Counts live blocks
 * (gh_alloc_live) so a test can see that frees reach it. Never used outside tests. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define GH_MAGIC 0x67685f616c6c6f63ull
typedef struct gh_head {
    uint64_t magic;
    uint64_t base;
    uint64_t size;
    uint64_t poison; /* where a foreign allocator would read its chunk size: invalid */
} gh_head;

static long gh_live;

long gh_alloc_live(void)
{
    return __atomic_load_n(&gh_live, __ATOMIC_RELAXED);
}

static gh_head *gh_head_of(void *p)
{
    gh_head *h = (gh_head *)p - 1;
    if (h->magic != (GH_MAGIC ^ (uint64_t)(uintptr_t)p))
        abort(); /* not ours: a wrong pointer reached this allocator */
    return h;
}

static void *gh_alloc(size_t align, size_t n)
{
    size_t off = align > sizeof(gh_head) ? align : sizeof(gh_head);
    if (n > SIZE_MAX - off) {
        errno = ENOMEM;
        return NULL;
    }
    char *b = align > 16 ? __libc_memalign(align, n + off) : __libc_malloc(n + off);
    if (!b)
        return NULL;
    char *p = b + off;
    gh_head *h = (gh_head *)p - 1;
    h->magic = GH_MAGIC ^ (uint64_t)(uintptr_t)p;
    h->base = (uint64_t)(uintptr_t)b;
    h->size = n;
    h->poison = 3;
    __atomic_fetch_add(&gh_live, 1, __ATOMIC_RELAXED);
    return p;
}

void *malloc(size_t n) { return gh_alloc(16, n); }

void free(void *p)
{
    if (!p)
        return;
    gh_head *h = gh_head_of(p);
    h->magic = 0;
    __atomic_fetch_sub(&gh_live, 1, __ATOMIC_RELAXED);
    __libc_free((void *)(uintptr_t)h->base);
}

void *calloc(size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = gh_alloc(16, n);
    if (p)
        memset(p, 0, n);
    return p;
}

void *realloc(void *old, size_t n)
{
    if (!old)
        return malloc(n);
    if (!n) {
        free(old);
        return NULL;
    }
    size_t have = gh_head_of(old)->size;
    void *p = malloc(n);
    if (!p)
        return NULL;
    memcpy(p, old, have < n ? have : n);
    free(old);
    return p;
}

void *reallocarray(void *old, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(old, n);
}

void *memalign(size_t align, size_t n) { return gh_alloc(align < 16 ? 16 : align, n); }
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
void *valloc(size_t n) { return memalign((size_t)getpagesize(), n); }
void *pvalloc(size_t n)
{
    size_t pg = (size_t)getpagesize();
    return memalign(pg, (n + pg - 1) & ~(pg - 1));
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

size_t malloc_usable_size(void *p)
{
    return p ? gh_head_of(p)->size : 0;
}
