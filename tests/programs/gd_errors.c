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
    } else if (!strcmp(m, "uaf_beside")) {
        /* right-aligned: the first byte past a freed block is in the guard page */
        char *p = gd_make(32);
        memset(p, 7, 32);
        gd_release(p);
        say("MARK\n");
        v = gd_read(p, 32);
    } else if (!strcmp(m, "invalid_free_before")) {
        /* left-aligned: the byte before the block is in the guard page */
        char *p = gd_make(32);
        say("MARK\n");
        gd_release_inside(p - 1);
    } else if (!strcmp(m, "slack_free") || !strcmp(m, "slack_realloc") ||
               !strcmp(m, "slack_under") || !strcmp(m, "slack_snapshot")) {
        /* right-aligned 40 bytes end 8 bytes before the guard page (16-byte alignment):
         * the writes below touch no guard page, the fill around the block keeps them */
        char *p = gd_make(40);
        memset(p, 7, 40);
        if (m[6] == 'u') {
            gd_write(p, -1);
            gd_write(p, -2);
        } else {
            gd_write(p, 40);
            if (m[6] == 'f') {
                gd_write(p, 41);
                gd_write(p, 42);
            }
        }
        say("MARK\n");
        if (m[6] == 'r') {
            p = gd_grow(p, 100);
        } else if (m[6] == 's') {
            say("AFTER\n");
            return 0; /* never freed: the exit snapshot finds it */
        } else {
            gd_release(p);
        }
    } else if (!strcmp(m, "strncpy_overflow")) {
        /* LLVM's strncpy-overflow: 10 bytes copied into a 9-byte block */
        char *hello = gd_make(6);
        strcpy(hello, "hello");
        char *short_buffer = gd_make(9);
        volatile size_t ten = 10;
        strncpy(short_buffer, hello, ten);
        say("MARK\n");
        gd_release(short_buffer);
    } else if (!strcmp(m, "recover")) {
        /* guard_recover=1 (guard_side=right): one error of each kind, the program runs
         * on past each; a second error of a slot is counted, not reported */
        say("MARK\n");
        char *a = gd_make(32);
        gd_release(a);
        v += gd_read(a, 8);  /* use after free: its page opened, the slot retired */
        v += gd_read(a, 9);  /* the page is open: no fault */
        char *b = gd_make(32);
        gd_write(b, 32);     /* overflow into the guard page, now open */
        gd_write(b, 33);
        gd_release(b);
        char *c = gd_make(32);
        gd_release(c);
        gd_release_again(c); /* double free: ignored */
        char *d = gd_make(32);
        gd_release_inside(d + 8); /* invalid free: ignored, d stays live */
        d[31] = 1;
        gd_release(d);
        char *e = gd_make(40);
        gd_write(e, 40);
        gd_release(e);       /* the fill: reported at free, freed */
        gd_release_again(a); /* a's slot reported already: counted */
        char *f = gd_make(64);
        memset(f, 3, 64);
        gd_release(f);
        printf("AFTER %d\n", v);
        return 0;
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
