/* A program linked with another allocator (jemalloc, tcmalloc or mimalloc: FA_JEMALLOC,
 * FA_TCMALLOC, FA_MIMALLOC), which replaces malloc for the whole process. It mixes the
 * C entry points (malloc, calloc, realloc, posix_memalign, aligned_alloc, free,
 * malloc_usable_size) with the allocator's own (mallocx/dallocx, tc_*, mi_*) both ways:
 * a block from the allocator's own entry points freed by free(), and a block from
 * malloc() freed, resized or measured by the allocator's own functions, which is legal
 * because the allocator is malloc. Page-sized and page-aligned blocks (whose 16 bytes
 * below are on another page, often unmapped), threads (pthread_getattr_np frees such a
 * block), and a checksum of every byte it wrote: its output is the same with or without
 * an agent, and its exit status is 0 only when every block held what was written. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(FA_JEMALLOC)
#include <jemalloc/jemalloc.h>
#define FA_NAME "jemalloc"
static void *own_alloc(size_t n) { return mallocx(n, 0); }
static void *own_alloc_aligned(size_t n, size_t a) { return mallocx(n, MALLOCX_ALIGN(a)); }
static void own_free(void *p) { dallocx(p, 0); }
static void *own_realloc(void *p, size_t n) { return rallocx(p, n, 0); }
static size_t own_size(void *p) { return sallocx(p, 0); }
#elif defined(FA_TCMALLOC)
#include <gperftools/tcmalloc.h>
#define FA_NAME "tcmalloc"
static void *own_alloc(size_t n) { return tc_malloc(n); }
static void *own_alloc_aligned(size_t n, size_t a) { return tc_memalign(a, n); }
static void own_free(void *p) { tc_free(p); }
static void *own_realloc(void *p, size_t n) { return tc_realloc(p, n); }
static size_t own_size(void *p) { return tc_malloc_size(p); }
#elif defined(FA_MIMALLOC)
#include <mimalloc.h>
#define FA_NAME "mimalloc"
static void *own_alloc(size_t n) { return mi_malloc(n); }
static void *own_alloc_aligned(size_t n, size_t a) { return mi_malloc_aligned(n, a); }
static void own_free(void *p) { mi_free(p); }
static void *own_realloc(void *p, size_t n) { return mi_realloc(p, n); }
static size_t own_size(void *p) { return mi_usable_size(p); }
#else
#error "FA_JEMALLOC, FA_TCMALLOC or FA_MIMALLOC"
#endif

static int bad;
static void *volatile kept;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 31);
}

/* Adds the block's bytes to the checksum; a byte that is not what fill() wrote is an error. */
static uint64_t sum(const unsigned char *p, size_t n, unsigned seed)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != (unsigned char)(seed + i * 31)) {
            bad++;
            return 0;
        }
        s = s * 1099511628211ull + p[i];
    }
    return s;
}

static size_t sizes[] = {1, 8, 16, 24, 48, 100, 4080, 4096, 4097, 8192, 16384, 65536, 200000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Every combination of who allocates and who frees, for every size. */
static uint64_t mix(unsigned seed)
{
    uint64_t s = 0;
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        unsigned char *a = malloc(n), *b = own_alloc(n), *c = calloc(1, n), *d = NULL;
        if (posix_memalign((void **)&d, 4096, n) != 0)
            d = NULL;
        unsigned char *e = aligned_alloc(64, (n + 63) & ~(size_t)63);
        unsigned char *f = own_alloc_aligned(n, 4096);
        unsigned char *g = own_alloc(n);
        if (!a || !b || !c || !d || !e || !f || !g) {
            bad++;
            return 0;
        }
        for (size_t i = 0; i < n; i++)
            if (c[i])
                bad++;
        if (malloc_usable_size(a) < n || own_size(b) < n || malloc_usable_size(b) < n ||
            own_size(a) < n || malloc_usable_size(d) < n || own_size(f) < n)
            bad++;
        fill(a, n, seed + 1);
        fill(b, n, seed + 2);
        fill(c, n, seed + 3);
        fill(d, n, seed + 4);
        fill(e, n, seed + 5);
        fill(f, n, seed + 6);
        fill(g, n, seed + 7);
        /* grown by the other side's realloc: the bytes move with the block */
        a = own_realloc(a, n * 2 + 1);
        b = realloc(b, n * 2 + 1);
        g = realloc(g, n / 2 + 1);
        if (!a || !b || !g) {
            bad++;
            return 0;
        }
        s += sum(a, n, seed + 1) + sum(b, n, seed + 2) + sum(c, n, seed + 3) +
             sum(d, n, seed + 4) + sum(e, n, seed + 5) + sum(f, n, seed + 6) +
             sum(g, n / 2 + 1, seed + 7);
        own_free(a); /* malloc's block, the allocator's own free */
        free(b);     /* the allocator's own block, free() */
        own_free(c);
        free(d);
        own_free(e);
        free(f);
        free(g);
    }
    return s;
}

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    uint64_t s = 0;
    for (int r = 0; r < 2; r++)
        s += mix(id * 100 + (unsigned)r);
    /* a block the main thread frees */
    uint64_t *out = own_alloc(sizeof *out);
    if (out)
        *out = s;
    return out;
}

int main(void)
{
    uint64_t total = mix(7);
    pthread_t th[4];
    for (unsigned i = 0; i < 4; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
            return 2;
    for (unsigned i = 0; i < 4; i++) {
        void *r = NULL;
        pthread_join(th[i], &r);
        if (!r) {
            bad++;
            continue;
        }
        total += *(uint64_t *)r;
        free(r);
    }
    /* many small blocks kept, then freed the other way round */
    enum { N = 20000 };
    void **keep = malloc(N * sizeof *keep);
    if (!keep)
        return 2;
    for (int i = 0; i < N; i++)
        keep[i] = (i & 1) ? own_alloc(16 + (size_t)(i % 200)) : malloc(16 + (size_t)(i % 200));
    for (int i = 0; i < N; i++) {
        if (!keep[i])
            bad++;
        else if (i & 1)
            free(keep[i]);
        else
            own_free(keep[i]);
    }
    free(keep);
    /* a block of known size kept to the end, for the snapshot */
    kept = malloc(12345);
    if (kept)
        memset(kept, 1, 12345);
    printf("%s checksum %llx errors %d\n", FA_NAME, (unsigned long long)total, bad);
    return bad ? 1 : 0;
}
