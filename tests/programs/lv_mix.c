/* The classes side by side at exit: a lost list of 10 (1 definitely + 9 indirectly),
 * a lost cycle of 3, a block reachable only through an interior pointer (possibly lost)
 * and a reachable tree held by a global. */
#include "lv_common.h"

struct node {
    struct node *next;
    char pad[24];
};

static struct node *volatile list, *volatile cycle;
static char *volatile interior;
static void **volatile tree;

static struct node *chain(int n, int close)
{
    struct node *head = NULL, *tail = NULL;
    for (int i = 0; i < n; i++) {
        struct node *x = lv_alloc(sizeof *x);
        x->next = head;
        head = x;
        if (!tail)
            tail = x;
    }
    if (close)
        tail->next = head;
    return head;
}

int main(void)
{
    list = chain(10, 0);
    cycle = chain(3, 1);
    interior = (char *)lv_alloc(64) + 16;
    tree = lv_alloc(4 * sizeof(void *));
    for (int i = 0; i < 4; i++)
        tree[i] = lv_alloc(16 + (size_t)i);
    list = NULL;
    cycle = NULL;
    return 0;
}
