/* Ground truth: pointers in globals (.bss and .data) keep their blocks reachable; one
 * block whose only pointer was overwritten is definitely lost. */
#include "lk_common.h"

void *g_bss;
static int anchor = 1;
void *g_data = &anchor;

__attribute__((noinline)) static void run(void)
{
    g_bss = lk_alloc(128, 'B');
    g_data = lk_alloc(32, 'D');
    void *volatile lost = lk_alloc(16, 'L');
    lk_use((void *)&lost);
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/16 indirect=0/0 possible=0/0 reachable=2/160\n");
    return 0;
}
