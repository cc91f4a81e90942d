/* Ground truth: a lost cycle of three blocks is one definitely lost block (the one at
 * the lowest address leads, as in valgrind) and two indirectly lost ones. */
#include "lk_common.h"

static uintptr_t a_addr, b_addr, c_addr;

__attribute__((noinline)) static void run(void)
{
    void **a = lk_alloc(24, 0), **b = lk_alloc(40, 0), **c = lk_alloc(56, 0);
    a[0] = b;
    b[0] = c;
    c[0] = a;
    /* remembered inverted: the program's own bookkeeping must not hold them */
    a_addr = ~(uintptr_t)a;
    b_addr = ~(uintptr_t)b;
    c_addr = ~(uintptr_t)c;
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    uintptr_t a = ~a_addr, b = ~b_addr, c = ~c_addr;
    size_t lead = 24;
    if (b < a && b < c)
        lead = 40;
    else if (c < a && c < b)
        lead = 56;
    lk_say("EXPECT definite=1/%zu indirect=2/%zu possible=0/0 reachable=0/0\n", lead,
           (size_t)120 - lead);
    lk_say("RECORD class=definitely_lost blocks=3 bytes=120\n");
    return 0;
}
