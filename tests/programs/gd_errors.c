/* Guard pages' ground truth: one memory error per mode, made on purpose. Run with guard=1
 * every block is guarded, so the error must be caught at the bad access itself: the
 * program prints MARK just before it and AFTER just after (which must never appear).
 * The blocks are made in gd_make*, freed in gd_release/gd_grow and touched in
 * gd_read/gd_write/gd_release_again/gd_release_inside: the report's stacks name them. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void say(const char *s)
{
    if (write(1, s, strlen(s)) < 0)
        _exit(3);
}

NOINLINE char *gd_make(size_t n)
{
    char *p = malloc(n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

NOINLINE char *gd_make_aligned(size_t align, size_t n)
{
    char *p = memalign(align, n);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}

NOINLINE void gd_release(char *p)
{
    free(p);
    __asm__ volatile("" ::: "memory");
}

NOINLINE void gd_release_again(char *p)
{
    free(p);
    __asm__ volatile("" ::: "memory");
}

NOINLINE void gd_release_inside(char *p)
{
    free(p);
    __asm__ volatile("" ::: "memory");
}

NOINLINE char *gd_grow(char *p, size_t n)
{
    char *q = realloc(p, n);
    __asm__ volatile("" ::"r"(q) : "memory");
    return q;
}

NOINLINE int gd_read(const char *p, long off)
{
    int v = ((const volatile char *)p)[off];
    __asm__ volatile("" ::: "memory");
    return v;
}

NOINLINE void gd_write(char *p, long off)
{
    ((volatile char *)p)[off] = 42;
    __asm__ volatile("" ::: "memory");
}

static char *thread_block;

/* The program's own SIGSEGV handler, installed after the agent's. */
static void own_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    say("HANDLER\n");
    _exit(42);
}

static int install_own(void)
{
    struct sigaction sa, back;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = own_handler;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGSEGV, NULL, &back) != 0)
        return -1;
    return back.sa_sigaction == own_handler ? 0 : -1; /* reads back what it set */
}

static void *thread_main(void *arg)
{
    (void)arg;
    thread_block = gd_make(32);
    memset(thread_block, 1, 32);
    gd_release(thread_block);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *m = argv[1];
    int v = 0;
    if (!strcmp(m, "uaf_read") || !strcmp(m, "uaf_write")) {
        char *p = gd_make(32);
        memset(p, 7, 32);
        gd_release(p);
        say("MARK\n");
        if (m[4] == 'r')
            v = gd_read(p, 8);
        else
            gd_write(p, 8);
    } else if (!strcmp(m, "overflow")) {
        char *p = gd_make(32);
        memset(p, 7, 32); /* the whole block is fine */
        say("MARK\n");
        gd_write(p, 32);
    } else if (!strcmp(m, "underflow")) {
        char *p = gd_make(32);
        memset(p, 7, 32);
        say("MARK\n");
        v = gd_read(p, -1);
    } else if (!strcmp(m, "double_free")) {
        char *p = gd_make(32);
        gd_release(p);
        say("MARK\n");
        gd_release_again(p);
    } else if (!strcmp(m, "invalid_free")) {
        char *p = gd_make(32);
        say("MARK\n");
        gd_release_inside(p + 8);
    } else if (!strcmp(m, "realloc_uaf")) {
        char *p = gd_make(16);
        memset(p, 5, 16);
        char *q = gd_grow(p, 48);
        if (!q || q[15] != 5 || malloc_usable_size(q) < 48)
            return 4;
        say("MARK\n");
        v = gd_read(p, 0);
    } else if (!strcmp(m, "memalign_overflow")) {
        char *p = gd_make_aligned(64, 100);
        if (((uintptr_t)p & 63) != 0 || malloc_usable_size(p) != 100)
            return 5;
        memset(p, 7, 100);
        p[127] = 1; /* alignment slack: inside the page, not caught (docs) */
        say("MARK\n");
        gd_write(p, 128);
    } else if (!strcmp(m, "own_handler") || !strcmp(m, "wild")) {
        /* a fault outside the pool: the program's handler (or the default) has it */
        char *p = gd_make(32);
        if (m[0] == 'o' && install_own() != 0)
            return 8;
        say("MARK\n");
        gd_write((char *)(uintptr_t)16, p[0]);
    } else if (!strcmp(m, "own_handler_uaf")) {
        /* a fault in the pool with the program's handler installed: still reported */
        char *p = gd_make(32);
        if (install_own() != 0)
            return 8;
        gd_release(p);
        say("MARK\n");
        v = gd_read(p, 8);
    } else if (!strcmp(m, "thread_uaf")) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
            return 6;
        say("MARK\n");
        v = gd_read(thread_block, 0);
    } else if (!strcmp(m, "fork_uaf")) {
        /* the child frees the parent's block and touches it: caught in the child; the
         * parent's copy is untouched and still its own */
        char *p = gd_make(32);
        memset(p, 9, 32);
        pid_t c = fork();
        if (c == 0) {
            gd_release(p);
            say("MARK\n");
            v = gd_read(p, 0);
            say("AFTER\n");
            _exit(v);
        }
        int st = 0;
        if (c < 0 || waitpid(c, &st, 0) != c)
            return 7;
        printf("child %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
        p[31] = 1;
        gd_release(p);
        char *q = gd_make(64);
        gd_release(q);
        printf("parent ok %d\n", p == q);
        return 0;
    } else {
        return 2;
    }
    say("AFTER\n");
    return v & 1;
}
