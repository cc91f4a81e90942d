/* GOT-hook ground truth: allocates plainly, starts the agent (dlopen'ed and started with
 * memsight_start, or linked with -DGH_LINKED), allocates known counts and bytes from known
 * functions (also in threads it creates and joins), frees and reallocates blocks from before the start, dlopens a library that
 * allocates, writes a snapshot. Prints "expect FUNCTION KIND BLOCKS BYTES" (live) and "allocated FUNCTION KIND BLOCKS"
 * (cumulative) lines and
 * "snapshot PATH"; exits non-zero on any failed check of its own.
 * With -DGH_CUSTOM the program links gh_alloc (its own malloc family, which aborts on a
 * pointer it did not hand out) and checks that every pre-start free reached it.
 * usage: gh_dlopen OUT_DIR [AGENT_SO] [GH_LIB_SO]   (AGENT_SO defaults to $MS_AGENT) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef GH_LINKED
#include "memsight/memsight.h"
#endif
#ifdef GH_CUSTOM
long gh_alloc_live(void); /* gh_alloc.c: the program's own allocator */
#endif

typedef int (*gh_start_fn)(const char *);
typedef int (*gh_dump_fn)(char *, unsigned long);
typedef int (*gh_lib_fn)(unsigned long *);

#define GH_PRE 200
static void *gh_pre[GH_PRE];
static size_t gh_pre_size[GH_PRE];
static void *volatile gh_keep[64];
static int gh_nkeep;
static int gh_errors;

static void gh_fail(const char *what)
{
    fprintf(stderr, "gh_dlopen: %s\n", what);
    gh_errors++;
}

static void gh_fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 13);
}

static int gh_same(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 13))
            return 0;
    return 1;
}

/* Before the start: plain blocks of many sizes (small, medium, one mmap-backed). */
__attribute__((noinline)) static void gh_pre_alloc(void)
{
    for (int i = 0; i < GH_PRE; i++) {
        size_t n = (size_t)(i % 50) * 24 + 1;
        if (i == GH_PRE - 1)
            n = 300000; /* above glibc's mmap threshold */
        gh_pre[i] = malloc(n);
        gh_pre_size[i] = n;
        if (!gh_pre[i])
            gh_fail("pre-start malloc failed");
        else
            gh_fill(gh_pre[i], n, (unsigned)i);
    }
}

static void gh_keep_add(void *p)
{
    if (!p)
        gh_fail("allocation failed");
    gh_keep[gh_nkeep++] = p;
}

__attribute__((noinline)) static void gh_malloc_site(void)
{
    for (int i = 0; i < 10; i++)
        gh_keep_add(malloc(100));
}

__attribute__((noinline)) static void gh_calloc_site(void)
{
    for (int i = 0; i < 5; i++) {
        unsigned char *p = calloc(4, 50);
        gh_keep_add(p);
        for (int j = 0; p && j < 200; j++)
            if (p[j])
                gh_fail("calloc block not zeroed");
    }
}

__attribute__((noinline)) static void *gh_realloc_seed(void)
{
    return malloc(10);
}

__attribute__((noinline)) static void gh_realloc_site(void)
{
    for (int i = 0; i < 3; i++) {
        void *p = gh_realloc_seed();
        gh_keep_add(realloc(p, 300));
    }
}

__attribute__((noinline)) static void gh_memalign_site(void)
{
    for (int i = 0; i < 4; i++) {
        void *p = NULL;
        if (posix_memalign(&p, 64, 256) != 0 || ((uintptr_t)p & 63))
            gh_fail("posix_memalign");
        gh_keep_add(p);
    }
}

__attribute__((noinline)) static void gh_strdup_site(void)
{
    /* libc's own call to malloc: seen when libc's GOT slot is hooked too */
    for (int i = 0; i < 2; i++)
        gh_keep_add(strdup("hello world"));
}

__attribute__((noinline)) static void gh_mmap_site(void)
{
    void *a = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *b = mmap(NULL, 5 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED || b == MAP_FAILED || munmap(b, 5 * 4096) != 0)
        gh_fail("mmap");
    gh_keep_add(a);
}

#define GH_THREADS 3
#define GH_THREAD_BLOCKS 6
static void *volatile gh_thread_keep[GH_THREADS * GH_THREAD_BLOCKS];

__attribute__((noinline)) static void *gh_thread_body(void *arg)
{
    long t = (long)arg;
    for (int k = 0; k < GH_THREAD_BLOCKS; k++)
        gh_thread_keep[t * GH_THREAD_BLOCKS + k] = malloc(64);
    return NULL;
}

/* Threads created and joined after the start: their blocks stay, their stacks are gone. */
__attribute__((noinline)) static void gh_thread_site(void)
{
    pthread_t th[GH_THREADS];
    for (long t = 0; t < GH_THREADS; t++)
        if (pthread_create(&th[t], NULL, gh_thread_body, (void *)t) != 0)
            gh_fail("pthread_create");
    for (int t = 0; t < GH_THREADS; t++)
        if (pthread_join(th[t], NULL) != 0)
            gh_fail("pthread_join");
    for (int i = 0; i < GH_THREADS * GH_THREAD_BLOCKS; i++)
        if (!gh_thread_keep[i])
            gh_fail("thread allocation failed");
}

/* Blocks from before the start: usable size, realloc across many sizes (the content
 * must survive every move), then free. */
__attribute__((noinline)) static void gh_pre_release(void)
{
    for (int i = 0; i < GH_PRE; i++) {
        if (!gh_pre[i])
            continue;
        if (malloc_usable_size(gh_pre[i]) < gh_pre_size[i])
            gh_fail("malloc_usable_size of a pre-start block too small");
        if (!gh_same(gh_pre[i], gh_pre_size[i], (unsigned)i))
            gh_fail("pre-start block changed");
    }
    /* every third block goes through realloc: grow, shrink, grow past the mmap threshold */
    static const size_t sizes[] = {1, 17, 100, 4000, 33, 250000, 64, 1000000, 8, 4096};
    for (int i = 0; i < GH_PRE; i += 3) {
        if (!gh_pre[i])
            continue;
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            size_t n = sizes[(k + (size_t)i) % (sizeof sizes / sizeof sizes[0])];
            size_t keep = n < gh_pre_size[i] ? n : gh_pre_size[i];
            unsigned char *q = realloc(gh_pre[i], n);
            if (!q) {
                gh_fail("realloc of a pre-start block failed");
                break;
            }
            if (!gh_same(q, keep, (unsigned)i))
                gh_fail("realloc lost the content of a pre-start block");
            gh_fill(q, n, (unsigned)i);
            gh_pre[i] = q;
            gh_pre_size[i] = n;
        }
    }
    for (int i = 0; i < GH_PRE; i++) {
        free(gh_pre[i]);
        gh_pre[i] = NULL;
    }
}

/* Bytes of writable mappings of files whose path contains `needle` (/proc/self/maps):
 * patching a GOT slot in a RELRO page must leave the page read-only again. */
static unsigned long gh_writable_bytes(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    unsigned long total = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[1] == 'w' &&
            strstr(line, needle))
            total += hi - lo;
    }
    if (f)
        fclose(f);
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gh_dlopen OUT_DIR [AGENT_SO] [GH_LIB_SO]\n");
        return 2;
    }
    static char opts[1024];
    snprintf(opts, sizeof opts, "out=%s", argv[1]);
    gh_pre_alloc();
    gh_start_fn start;
    gh_dump_fn dump;
#ifdef GH_LINKED
    start = memsight_start;
    dump = memsight_dump;
    const char *given = NULL; /* MEMSIGHT_OPTIONS from the environment */
#else
    const char *agent = argc > 2 ? argv[2] : getenv("MS_AGENT");
    if (!agent) {
        fprintf(stderr, "gh_dlopen: no agent (argument or MS_AGENT)\n");
        return 2;
    }
    void *h = dlopen(agent, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "gh_dlopen: dlopen %s: %s\n", agent, dlerror());
        return 2;
    }
    *(void **)&start = dlsym(h, "memsight_start");
    *(void **)&dump = dlsym(h, "memsight_dump");
    const char *given = opts;
#endif
    if (!start || !dump) {
        fprintf(stderr, "gh_dlopen: memsight_start/memsight_dump not found\n");
        return 2;
    }
    unsigned long libc_w0 = gh_writable_bytes("/libc.so"), self_w0 = gh_writable_bytes(argv[0]);
    int rc = start(given);
    if (rc != 0) {
        fprintf(stderr, "gh_dlopen: memsight_start: %d\n", rc);
        return 3;
    }
    if (start(given) != 0) /* idempotent */
        gh_fail("second memsight_start failed");
    if (gh_writable_bytes("/libc.so") != libc_w0 || gh_writable_bytes(argv[0]) != self_w0)
        gh_fail("writable mappings of libc or of the program changed across memsight_start");
    gh_malloc_site();
    gh_calloc_site();
    gh_realloc_site();
    gh_memalign_site();
    gh_strdup_site();
    gh_mmap_site();
    gh_thread_site();
#ifdef GH_CUSTOM
    long live0 = gh_alloc_live();
#endif
    gh_pre_release();
#ifdef GH_CUSTOM
    long live1 = gh_alloc_live();
    printf("custom allocator: %ld live blocks before releasing the pre-start ones, %ld after\n",
           live0, live1);
    if (live1 != live0 - GH_PRE)
        gh_fail("the frees of pre-start blocks did not all reach the program's allocator");
#endif
    printf("expect gh_malloc_site heap 10 1000\n");
    printf("expect gh_calloc_site heap 5 1000\n");
    printf("expect gh_realloc_site heap 3 900\n");
    printf("expect gh_realloc_seed heap 0 0\n");
    printf("expect gh_memalign_site heap 4 1024\n");
    printf("expect gh_strdup_site heap 2 24\n");
    printf("expect gh_mmap_site mmap 1 12288\n");
    printf("expect gh_pre_release heap 0 0\n");
    printf("expect gh_thread_body heap %d %d\n", GH_THREADS * GH_THREAD_BLOCKS,
           GH_THREADS * GH_THREAD_BLOCKS * 64);
    printf("expect gh_thread_site stack 0 0\n");
    printf("allocated gh_thread_site stack %d\n", GH_THREADS); /* recorded, then released */

    const char *lib = argc > 3 ? argv[3] : getenv("GH_LIB");
    if (lib) {
        void *l = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        gh_lib_fn f = NULL;
        if (l)
            *(void **)&f = dlsym(l, "gh_lib_alloc");
        unsigned long size = 0;
        int n = f ? f(&size) : -1;
        if (n < 0) {
            fprintf(stderr, "gh_dlopen: %s: %s\n", lib, l ? "gh_lib_alloc failed" : dlerror());
            return 4;
        }
        printf("expect gh_lib_alloc_one heap %d %lu\n", n, (unsigned long)n * size);
    }
    char path[4096];
    rc = dump(path, sizeof path);
    if (rc != 0) {
        fprintf(stderr, "gh_dlopen: memsight_dump: %d\n", rc);
        return 5;
    }
    printf("snapshot %s\n", path);
    fflush(stdout);
    for (int i = 0; i < gh_nkeep; i++)
        if (i != gh_nkeep - 1) /* the last one is the mmap region: left mapped */
            free(gh_keep[i]);
    return gh_errors ? 1 : 0;
}
