/* Ground truth: a pointer lost from the stack (its frame returned) is definitely lost;
 * one still held in a live frame is still reachable. */
#include "lk_common.h"

__attribute__((noinline)) static void lose_from_stack(void)
{
    void *volatile p = lk_alloc(200, 'S');
    lk_use((void *)&p);
}

__attribute__((noinline)) static void run(void)
{
    void *volatile kept = lk_alloc(48, 'K');
    lose_from_stack();
    lk_clear_stack();
    lk_check();
    lk_use(kept);
}

int main(void)
{
    run();
    lk_say("EXPECT definite=1/200 indirect=0/0 possible=0/0 reachable=1/48\n");
    return 0;
}
