/* Ground truth: allocations made on stacks the program switches to itself with
 * makecontext/swapcontext (a coroutine on a malloc'ed stack, one on an mmap'ed stack),
 * outside the thread stack the agent knows: each must still carry its call stack. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "gt_common.h"

void *volatile gt_keep[GT_KEEP_MAX];
static int nkeep;
static ucontext_t main_ctx, co_ctx;

GT_NOINLINE static void keep(void *p) { gt_keep[nkeep++] = p; }

GT_NOINLINE void gt_coro_alloc(size_t n)
{
    void *p = malloc(n);
    memset(p, 1, n);
    keep(p);
}

GT_NOINLINE void gt_coro_body(void)
{
    for (int i = 0; i < 5; i++) {
        gt_coro_alloc(100 + (size_t)i); /* 5 blocks, 510 bytes per run */
        swapcontext(&co_ctx, &main_ctx);
    }
}

GT_NOINLINE static void run_on(void *stack, size_t size)
{
    getcontext(&co_ctx);
    co_ctx.uc_stack.ss_sp = stack;
    co_ctx.uc_stack.ss_size = size;
    co_ctx.uc_link = &main_ctx;
    makecontext(&co_ctx, gt_coro_body, 0);
    for (int k = 0; k < 6; k++)
        swapcontext(&main_ctx, &co_ctx);
}

int main(void)
{
    size_t size = 64 * 1024; /* below glibc's mmap threshold: inside the heap */
    void *heap_stack = malloc(size);
    run_on(heap_stack, size);
    void *map_stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    run_on(map_stack, size);
    free(heap_stack);
    munmap(map_stack, size);
    gt_expect("gt_coro_alloc", "heap", 10, 2 * 510);
    printf("chain gt_coro_alloc gt_coro_body\n");
    fflush(stdout);
    return 0;
}
