/* A block whose only pointer, a global, is overwritten before exit: definitely lost for
 * valgrind. The agent's own frames must leave no copy of its address that the exit scan
 * could find in the exit path's frames (they reuse the stack the allocation used). */
#include "lv_common.h"

static void *volatile g;

int main(void)
{
    g = malloc(1024);
    g = NULL;
    return 0;
}
