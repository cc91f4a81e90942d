/* A small program linked with another allocator (jemalloc, tcmalloc or mimalloc, chosen
 * at build time: -DALLOC_JE, -DALLOC_TC, -DALLOC_MI), for bench/matrix.sh. Four threads
 * allocate, fill, reallocate and free blocks of many sizes through the C entry points
 * (malloc, calloc, realloc, posix_memalign, aligned_alloc, strdup, free) and through the
 * allocator's own ones (mallocx/dallocx, tc_malloc/tc_free, mi_malloc/mi_free), a child
 * is forked in the middle, and the program prints a checksum of everything it read back:
 * the same numbers whatever allocator or agent is underneath. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(ALLOC_JE)
#include <jemalloc/jemalloc.h>
#define OWN_NAME "jemalloc"
static void *own_alloc(size_t n) { return mallocx(n, 0); }
static void own_free(void *p) { dallocx(p, 0); }
#elif defined(ALLOC_TC)
#include <gperftools/tcmalloc.h>
#define OWN_NAME "tcmalloc"
static void *own_alloc(size_t n) { return tc_malloc(n); }
static void own_free(void *p) { tc_free(p); }
#elif defined(ALLOC_MI)
#include <mimalloc.h>
#define OWN_NAME "mimalloc"
static void *own_alloc(size_t n) { return mi_malloc(n); }
static void own_free(void *p) { mi_free(p); }
#else
#define OWN_NAME "libc"
static void *own_alloc(size_t n) { return malloc(n); }
static void own_free(void *p) { free(p); }
#endif

#define SLOTS 512
#define ROUNDS 40000

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* the bytes a block's contents are written and read at: all of a small block, the first
 * and last 128 and one in each 4 KiB page of a large one (the whole block would be
 * gigabytes of byte loops over the run) */
static size_t next_pos(size_t i, size_t n) {
    if (n <= 256 || i < 127 || i + 129 >= n)
        return i + 1;
    size_t page = (i | 4095) + 1; /* the next page's first byte, or the last 128 */
    return page < n - 128 ? page : n - 128;
}

static void fill(unsigned char *p, size_t n, uint64_t tag) {
    for (size_t i = 0; i < n; i = next_pos(i, n))
        p[i] = (unsigned char)(tag + i * 31);
}

static uint64_t sum(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i = next_pos(i, n))
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

struct slot {
    unsigned char *p;
    size_t n;
    uint64_t tag;
    int how; /* 0 libc free, 1 own free */
};

static void *worker(void *arg) {
    uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), acc = 0;
    struct slot s[SLOTS];
    memset(s, 0, sizeof s);
    for (int r = 0; r < ROUNDS; r++) {
        struct slot *x = &s[rnd(&seed) % SLOTS];
        if (x->p) { /* read back what was written, then free or grow */
            acc += sum(x->p, x->n);
            if (x->how == 0 && x->n < 300000 && rnd(&seed) % 4 == 0) {
                size_t m = x->n * 2 + 1;
                unsigned char *q = realloc(x->p, m);
                if (!q)
                    abort();
                acc += sum(q, x->n); /* realloc keeps the old contents */
                fill(q, m, x->tag);
                x->p = q;
                x->n = m;
                continue;
            }
            if (x->how == 1)
                own_free(x->p);
            else
                free(x->p);
            x->p = NULL;
            continue;
        }
        uint64_t k = rnd(&seed);
        size_t n = (k >> 8) % 8 == 0 ? 4096 + (k >> 16) % 200000 : 1 + (k >> 16) % 600;
        x->tag = k & 0xff;
        x->how = 0;
        void *p = NULL;
        switch (k % 6) {
        case 0: p = malloc(n); break;
        case 1: p = calloc(1, n); if (p) acc += sum(p, n); break; /* zeroed */
        case 2: if (posix_memalign(&p, 64, n) != 0) p = NULL; break;
        case 3: p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095); break;
        case 4: p = own_alloc(n); x->how = 1; break;
        default: {
            char buf[64];
            snprintf(buf, sizeof buf, "block %zu", n);
            char *d = strdup(buf);
            if (!d) abort();
            acc += sum((unsigned char *)d, strlen(d));
            free(d);
            p = malloc(n);
        }
        }
        if (!p)
            abort();
        fill(p, n, x->tag);
        x->p = p;
        x->n = n;
    }
    for (int i = 0; i < SLOTS; i++)
        if (s[i].p) {
            acc += sum(s[i].p, s[i].n);
            if (s[i].how == 1)
                own_free(s[i].p);
            else
                free(s[i].p);
        }
    return (void *)(uintptr_t)acc;
}

int main(void) {
    pthread_t t[4];
    uint64_t total = 0;
    for (uintptr_t i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 2;
    pid_t child = fork(); /* a fork while the other threads allocate */
    if (child == 0) {
        char *p = malloc(1000);
        if (!p) _exit(3);
        fill((unsigned char *)p, 1000, 7);
        _exit(sum((unsigned char *)p, 1000) == sum((unsigned char *)p, 1000) ? 0 : 4);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uintptr_t)r;
    }
    int st = 0;
    if (child < 0 || waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 5;
    printf("%s checksum %016llx\n", OWN_NAME, (unsigned long long)total);
    return 0;
}
