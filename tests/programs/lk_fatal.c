/* Ground truth for fatal_snapshot=1: loses a list of 4 blocks (1 definitely + 3
 * indirectly lost), keeps one block in a global, then dies from the signal its argument
 * names (segv: a write through a null pointer; abort). The last snapshot must hold the
 * leak scan of that moment. */
#include <signal.h>

#include "lk_common.h"

static void *volatile kept;

struct node {
    struct node *next;
    char pad[56];
};

__attribute__((noinline)) static void lose_list(void)
{
    struct node *head = NULL;
    for (int i = 0; i < 4; i++) {
        struct node *n = lk_alloc(sizeof *n, 'N');
        n->next = head;
        head = n;
    }
    lk_use(&head);
}

int main(int argc, char **argv)
{
    kept = lk_alloc(100, 'K');
    lose_list();
    lk_clear_stack();
    lk_say("EXPECT definite=1/64 indirect=3/192 possible=0/0 reachable=1/100\n");
    if (argc > 1 && !strcmp(argv[1], "abort"))
        abort();
    *(volatile int *)lk_use(NULL) = 1;
    return 0;
}
