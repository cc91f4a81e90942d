/* Real-program test: allocations made on stacks the program switches to itself
 * (makecontext/swapcontext on a malloc'ed and on an mmap'ed stack), which the agent's
 * stack bounds do not cover: it must not walk there blindly. Prints a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static unsigned long sum;

static void coroutine(void)
{
    for (int i = 0; i < 2000; i++) {
        char *p = malloc((size_t)(i % 100) + 1);
        memset(p, 1, (size_t)(i % 100) + 1);
        sum += (unsigned char)p[0];
        free(p);
        if (i % 100 == 0)
            swapcontext(&co_ctx, &main_ctx);
    }
}

static void run_on(void *stack, size_t size)
{
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, coroutine, 0);
    for (int k = 0; k < 21; k++)
        swapcontext(&main_ctx, &co_ctx);
}

int main(void)
{
    size_t size = 256 * 1024;
    void *heap_stack = malloc(size);
    run_on(heap_stack, size);
    void *map_stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    run_on(map_stack, size);
    printf("sum %lu\n", sum);
    free(heap_stack);
    munmap(map_stack, size);
    return 0;
}
