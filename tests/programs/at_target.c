/* Ground truth for `memsight attach`: a multi-threaded program driven line by line on
 * stdin (one reply line per command on stdout, so a test synchronises without sleeping).
 *   prep N   each of the 2 workers and main allocate N blocks ("pre-attach"), filled
 *   work     workers free half of their pre blocks and realloc the other half (grown, the
 *            contents checked), then allocate 100 x 48 bytes from at_thread_site; main
 *            allocates 200 x 32 bytes from at_main_site, 50 x 64 from at_freed_site and
 *            frees those, reallocs its own pre blocks to 80 bytes (at_realloc_site) and
 *            prints the checksum of every pre block's contents
 *   again    main allocates 70 x 24 bytes from at_again_site
 *   leak     main allocates 10 x 56 bytes from at_leak_site and drops every pointer
 *   release  everything still held is freed
 *   sigs     prints how many SIGUSR1 the program has handled
 *   binds    prints the file that defines malloc and free for a module loaded now (the
 *            definitions dlsym finds: an attach redirects them, a detach gives the
 *            ones that hand out memory back); not part of the compared output
 *   quit     exit status 3 (so a test sees it unchanged)
 * The workers wait in read() on pipes between commands; the output is the same with or
 * without an agent attached at any point. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MAXN 4096

typedef struct worker {
    pthread_t th;
    int cmd[2], done[2];
    char **pre;
    size_t npre;
    void *mine[100];
    uint64_t sum;
} worker;

static worker W[2];
static char *main_pre[MAXN];
static size_t main_npre;
static void *main_blocks[200], *again_blocks[70];
static size_t nagain;

static volatile sig_atomic_t usr1_count;
static void on_usr1(int sig)
{
    (void)sig;
    usr1_count++;
}

/* The file name (without directories) of the module defining `name` for a new module. */
static const char *definer(const char *name)
{
    Dl_info di;
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p || !dladdr(p, &di) || !di.dli_fname)
        return "?";
    const char *s = strrchr(di.dli_fname, '/');
    return s ? s + 1 : di.dli_fname;
}

static void fill(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(seed * 31 + i * 7);
}

static uint64_t sum_of(const char *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 131 + (unsigned char)p[i];
    return s;
}

NOINLINE static void *at_thread_site(size_t n) { return malloc(n); }
NOINLINE static void *at_main_site(size_t n) { return malloc(n); }
NOINLINE static void *at_freed_site(size_t n) { return calloc(1, n); }
NOINLINE static void *at_realloc_site(void *p, size_t n) { return realloc(p, n); }
NOINLINE static void *at_again_site(size_t n) { return malloc(n); }
NOINLINE static void at_leak_site(size_t n)
{
    void *volatile p = malloc(n);
    memset(p, 0, n);
    p = NULL; /* lost: no copy left anywhere */
}

static void worker_work(worker *w)
{
    w->sum = 0;
    for (size_t i = 0; i < w->npre; i++) {
        if (i % 2 == 0) {
            free(w->pre[i]); /* a block from before the attach, freed after it */
            w->pre[i] = NULL;
            continue;
        }
        char *q = realloc(w->pre[i], 200); /* moved or grown: the first 40 bytes kept */
        if (!q)
            abort();
        w->pre[i] = q;
        w->sum += sum_of(q, 40);
    }
    for (int i = 0; i < 100; i++)
        w->mine[i] = at_thread_site(48);
}

static void worker_release(worker *w)
{
    for (size_t i = 0; i < w->npre; i++) {
        free(w->pre[i]);
        w->pre[i] = NULL;
    }
    for (int i = 0; i < 100; i++) {
        free(w->mine[i]);
        w->mine[i] = NULL;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    char c;
    while (read(w->cmd[0], &c, 1) == 1) {
        if (c == 'p') {
            for (size_t i = 0; i < w->npre; i++) {
                w->pre[i] = malloc(40);
                fill(w->pre[i], 40, (unsigned)(i + (size_t)(w - W) * 1000));
            }
        } else if (c == 'w') {
            worker_work(w);
        } else if (c == 'r') {
            worker_release(w);
        }
        if (write(w->done[1], &c, 1) != 1)
            abort();
    }
    return NULL;
}

static void to_workers(char c)
{
    for (int i = 0; i < 2; i++)
        if (write(W[i].cmd[1], &c, 1) != 1)
            abort();
    for (int i = 0; i < 2; i++)
        if (read(W[i].done[0], &c, 1) != 1)
            abort();
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < 2; i++) {
        if (pipe(W[i].cmd) || pipe(W[i].done))
            return 1;
        W[i].pre = calloc(MAXN, sizeof(char *));
        pthread_create(&W[i].th, NULL, worker_main, &W[i]);
    }
    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "prep ", 5)) {
            size_t n = (size_t)strtoul(line + 5, NULL, 10);
            if (n > MAXN)
                n = MAXN;
            W[0].npre = W[1].npre = main_npre = n;
            to_workers('p');
            for (size_t i = 0; i < n; i++) {
                main_pre[i] = malloc(24);
                fill(main_pre[i], 24, (unsigned)(i + 5000));
            }
            printf("ok prep %zu\n", n);
        } else if (!strcmp(line, "work\n")) {
            to_workers('w');
            for (int i = 0; i < 200; i++)
                main_blocks[i] = at_main_site(32);
            for (int i = 0; i < 50; i++) {
                void *p = at_freed_site(64);
                free(p);
            }
            uint64_t s = W[0].sum ^ (W[1].sum << 1);
            for (size_t i = 0; i < main_npre; i++) {
                main_pre[i] = at_realloc_site(main_pre[i], 80);
                s += sum_of(main_pre[i], 24);
            }
            printf("ok work %016llx\n", (unsigned long long)s);
        } else if (!strcmp(line, "binds\n")) {
            printf("binds malloc=%s free=%s\n", definer("malloc"), definer("free"));
        } else if (!strcmp(line, "again\n")) {
            for (; nagain < 70; nagain++)
                again_blocks[nagain] = at_again_site(24);
            printf("ok again\n");
        } else if (!strcmp(line, "leak\n")) {
            for (int i = 0; i < 10; i++)
                at_leak_site(56);
            printf("ok leak\n");
        } else if (!strcmp(line, "release\n")) {
            to_workers('r');
            for (int i = 0; i < 200; i++) {
                free(main_blocks[i]);
                main_blocks[i] = NULL;
            }
            for (size_t i = 0; i < nagain; i++)
                free(again_blocks[i]);
            nagain = 0;
            for (size_t i = 0; i < main_npre; i++) {
                free(main_pre[i]);
                main_pre[i] = NULL;
            }
            printf("ok release\n");
        } else if (!strcmp(line, "sigs\n")) {
            printf("ok sigs %d\n", (int)usr1_count);
        } else if (!strcmp(line, "quit\n")) {
            printf("bye\n");
            return 3;
        } else {
            printf("? %s", line);
        }
    }
    return 0;
}
