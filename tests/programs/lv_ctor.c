/* A registry allocated in a library constructor (lv_ctorlib.c), held in the library's
 * data: both of its blocks are still reachable; one more block lost by main. */
#include "lv_common.h"

struct lv_registry;
extern struct lv_registry *lv_registry;
static void *volatile g;

int main(void)
{
    g = lv_alloc(24);
    g = NULL;
    return lv_registry == NULL;
}
