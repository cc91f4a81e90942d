/* Ground truth: a block reachable only through an interior pointer is possibly lost,
 * and so is the block it points to (a start pointer from a possibly lost block). */
#include "lk_common.h"

char *g_inside;

__attribute__((noinline)) static void run(void)
{
    void **p = lk_alloc(64, 0);
    p[4] = lk_alloc(32, 'q');
    g_inside = (char *)p + 16; /* not one of valgrind's heuristic offsets (8, 24) */
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=0/0 indirect=0/0 possible=2/96 reachable=0/0\n");
    return 0;
}
