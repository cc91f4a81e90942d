/* Ground truth: a lost tree of 1 + 8 blocks is one definitely lost root with eight
 * indirectly lost children, folded into one record of 9 blocks. Children are allocated
 * first (lower addresses) so the fold must absorb them under the root. */
#include "lk_common.h"

enum { N = 8 };

__attribute__((noinline)) static void run(void)
{
    void *kids[N];
    for (int i = 0; i < N; i++)
        kids[i] = lk_alloc(48, 'c');
    void **root = lk_alloc(N * sizeof(void *), 0);
    for (int i = 0; i < N; i++)
        root[i] = kids[i];
    memset(kids, 0, sizeof kids);
    lk_use(kids);
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/64 indirect=8/384 possible=0/0 reachable=0/0\n");
    lk_say("RECORD class=definitely_lost blocks=9 bytes=448\n");
    return 0;
}
