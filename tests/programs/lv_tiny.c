/* Lost blocks of 0 to 8 bytes, the last one just below glibc's top chunk: all nine are
 * definitely lost. With a 16-byte header in front, a block of 8 bytes or less would
 * begin where the next chunk begins, and the allocator's top pointer (and free lists)
 * would name it. One tiny block kept in a global is still reachable. */
#include "lv_common.h"

static void *volatile keep;
static void *volatile g;

int main(void)
{
    keep = lv_alloc(8);
    for (size_t n = 0; n <= 8; n++) {
        g = lv_alloc(n);
        g = NULL;
    }
    return 0;
}
