/* A thread that switches to a context stack of 4 KiB taken from malloc and stays there
 * while main() returns: the exit leak scan stops it there. Re-created after LLVM's LSan
 * test guard-page.c: a leak checker must not overrun such a stack (the arena header of
 * the block lies right below it) nor fault on it. Exits 0 without any tool.
 * usage: rb_ctx_stack [watch]
 *   watch: the 4 KiB stack is the top of a larger block whose rest holds a pattern; with
 *   the agent loaded a leak check (memsight_leak_check) stops the thread there, and the
 *   pattern is then compared: prints how many bytes below the stack were written and
 *   exits 1 when any was. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

int memsight_leak_check(char *path, unsigned long pathlen) __attribute__((weak));

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int on_ctx;
enum { STACK = 4096, BELOW = 12288, PATTERN = 0xa5 };
static unsigned char *stack_mem; /* STACK bytes, from malloc in both forms */

static void on_small_stack(void)
{
    pthread_mutex_lock(&mu);
    on_ctx = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    for (;;) /* still here when the process exits */
        __asm__ volatile("" ::: "memory");
}

static void *switcher(void *arg)
{
    (void)arg;
    static ucontext_t uc;
    if (getcontext(&uc) != 0) {
        perror("getcontext");
        exit(2);
    }
    uc.uc_stack.ss_sp = stack_mem;
    uc.uc_stack.ss_size = STACK;
    uc.uc_link = NULL;
    makecontext(&uc, on_small_stack, 0);
    setcontext(&uc);
    perror("setcontext");
    exit(2);
}

int main(int argc, char **argv)
{
    int watch = argc > 1 && strcmp(argv[1], "watch") == 0;
    unsigned char *block = malloc(watch ? BELOW + STACK : STACK);
    if (!block) {
        perror("malloc");
        return 2;
    }
    if (watch)
        memset(block, PATTERN, BELOW);
    stack_mem = watch ? block + BELOW : block;
    pthread_t t;
    pthread_mutex_lock(&mu);
    int rc = pthread_create(&t, NULL, switcher, NULL);
    if (rc != 0) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        return 2;
    }
    while (!on_ctx)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    printf("switched\n");
    if (!watch)
        return 0;
    if (!memsight_leak_check) {
        printf("no agent: nothing to watch\n");
        return 0;
    }
    char path[4096];
    int r = memsight_leak_check(path, sizeof path);
    size_t low = BELOW;
    while (low > 0 && block[low - 1] == PATTERN)
        low--;
    size_t first = 0; /* the lowest byte written */
    while (first < BELOW && block[first] == PATTERN)
        first++;
    printf("leak check %d; below the stack: %zu bytes written\n", r,
           first < BELOW ? BELOW - first : 0);
    return first < BELOW ? 1 : 0;
}
