/* Ground-truth program for the /proc accounting tests: holds known amounts of native
 * heap (main arena and a thread's arena), one anonymous mmap, thread stacks touched to a
 * known depth, shared memory (memfd, /dev/shm), a deleted file whose name has spaces,
 * and optionally many small mappings. Prints what it holds, then waits for stdin EOF. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t opt(int argc, char **argv, const char *name, size_t def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return (size_t)strtoull(argv[i + 1], NULL, 10);
    return def;
}

static size_t g_stack_kb, g_arena_mb;
static pthread_barrier_t g_ready;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_tids[4096];
static size_t g_arena_blocks;

/* Touches kb of this thread's stack, page by page, through a volatile pointer so the
 * compiler cannot drop the writes. */
static __attribute__((noinline)) void touch_stack(size_t kb)
{
    char buf[64 * 1024];
    volatile char *v = buf;
    for (size_t i = 0; i < sizeof buf; i += 512)
        v[i] = 1;
    if (kb > 64)
        touch_stack(kb - 64);
    v[0] = 2;
}

static void *thread_main(void *arg)
{
    int arena = arg != NULL;
    if (arena) {
        size_t n = g_arena_mb * 1024 * 1024 / 4000;
        for (size_t i = 0; i < n; i++) {
            char *p = malloc(4000);
            if (!p)
                abort();
            memset(p, 3, 4000);
        }
        g_arena_blocks = n;
    }
    touch_stack(g_stack_kb);
    pthread_mutex_lock(&g_lock);
    size_t l = strlen(g_tids);
    snprintf(g_tids + l, sizeof g_tids - l, "%s%ld", l ? "," : "", (long)syscall(SYS_gettid));
    pthread_mutex_unlock(&g_lock);
    pthread_barrier_wait(&g_ready);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    size_t heap_mb = opt(argc, argv, "--heap-mb", 16);
    size_t mmap_mb = opt(argc, argv, "--mmap-mb", 24);
    size_t nthreads = opt(argc, argv, "--threads", 3);
    size_t shm_mb = opt(argc, argv, "--shm-mb", 4);
    size_t nmaps = opt(argc, argv, "--maps", 0);
    g_stack_kb = opt(argc, argv, "--stack-kb", 1024);
    g_arena_mb = opt(argc, argv, "--arena-mb", 8);
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

    /* Native heap in the main arena: blocks below the mmap threshold. */
    size_t nblocks = heap_mb * 1024 * 1024 / 4000;
    for (size_t i = 0; i < nblocks; i++) {
        char *p = malloc(4000);
        if (!p)
            return 1;
        memset(p, 1, 4000);
    }
    /* One anonymous mmap, every page touched. */
    size_t mlen = mmap_mb << 20;
    char *m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    memset(m, 2, mlen);
    /* Shared memory: a memfd and a /dev/shm file, each shm_mb, touched. */
    size_t slen = shm_mb << 20;
    int mfd = memfd_create("pa_layout", 0);
    if (mfd < 0 || ftruncate(mfd, (off_t)slen) != 0)
        return 1;
    char *s1 = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    char shm_path[256];
    snprintf(shm_path, sizeof shm_path, "/dev/shm/pa_layout.%d", (int)getpid());
    int sfd = open(shm_path, O_RDWR | O_CREAT | O_EXCL, 0600);
    char *s2 = MAP_FAILED;
    if (sfd >= 0 && ftruncate(sfd, (off_t)slen) == 0)
        s2 = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
    if (s1 == MAP_FAILED || s2 == MAP_FAILED)
        return 1;
    memset(s1, 4, slen);
    memset(s2, 5, slen);
    unlink(shm_path);
    /* A file with spaces in its name, mapped, then deleted. */
    char sp_path[512];
    snprintf(sp_path, sizeof sp_path, "%s/pa layout %d (x).dat", dir, (int)getpid());
    int ffd = open(sp_path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (ffd < 0 || ftruncate(ffd, 65536) != 0)
        return 1;
    char *f = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE, ffd, 0);
    if (f == MAP_FAILED)
        return 1;
    memset(f, 6, 65536);
    unlink(sp_path);
    /* Many small mappings that cannot merge (alternating protections). */
    for (size_t i = 0; i < nmaps; i++) {
        char *q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED)
            return 1;
        q[0] = 1;
        mprotect(q + 4096, 4096, (i & 1) ? PROT_READ : PROT_NONE);
    }
    /* Threads with stacks touched to stack_kb; the first also fills its own arena. */
    pthread_barrier_init(&g_ready, NULL, (unsigned)nthreads + 1);
    for (size_t i = 0; i < nthreads; i++) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, (g_stack_kb + 1024) * 1024);
        if (pthread_create(&t, &a, thread_main, i == 0 ? (void *)1 : NULL) != 0)
            return 1;
        pthread_attr_destroy(&a);
    }
    pthread_barrier_wait(&g_ready);
    printf("pid=%d heap_bytes=%zu heap_blocks=%zu arena_bytes=%zu mmap_addr=%p mmap_bytes=%zu "
           "threads=%zu stack_touch_kb=%zu shm_bytes=%zu maps=%zu tids=%s\nready\n",
           (int)getpid(), nblocks * 4000, nblocks, g_arena_blocks * 4000, (void *)m, mlen,
           nthreads, g_stack_kb, 2 * slen, nmaps, g_tids);
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
