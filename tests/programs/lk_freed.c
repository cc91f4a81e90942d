/* Ground truth: a freed block whose old contents still point to a live block does not
 * keep it alive: the live block is definitely lost. */
#include "lk_common.h"

__attribute__((noinline)) static void run(void)
{
    void *live = lk_alloc(80, 'V');
    void **gone = lk_alloc(64, 0);
    gone[4] = live; /* offset 32: the allocator's free-list words (0..15) leave it */
    free(lk_use(gone));
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/80 indirect=0/0 possible=0/0 reachable=0/0\n");
    return 0;
}
