/* Ground truth for pointer tags (AArch64 top-byte ignore, as Android's tagged heap
 * pointers and MTE use): blocks referenced only through pointers whose top byte carries
 * a tag must be found reachable by the leak scan, and a block freed through a tagged
 * pointer must be recognised as the agent's block and leave the live set.
 *   a: 100 bytes, held by a global only as a tagged pointer             reachable
 *   b: 200 bytes, held by a global only as a tagged pointer             reachable
 *   c: 300 bytes, held only by b, as a tagged pointer                   reachable
 *   d: 400 bytes, freed through a tagged pointer                        gone
 *   e: 500 bytes, no reference                                          definitely lost
 *   f: 600 bytes, grown to 700 by realloc through a tagged pointer (its
 *      usable size asked through one too), held only as a tagged pointer  reachable
 * Built for AArch64 only (on x86-64 a tagged pointer faults). */
#include <malloc.h>

#include "lk_common.h"

static void *volatile held[3];

static void *tag(void *p, unsigned t)
{
    return (void *)(((uintptr_t)p & 0x00ffffffffffffffull) | ((uintptr_t)t << 56));
}

__attribute__((noinline)) static void run(void)
{
    char *a = lk_alloc(100, 'a');
    char *b = lk_alloc(200, 'b');
    char *c = lk_alloc(300, 'c');
    char *d = lk_alloc(400, 'd');
    lk_use(lk_alloc(500, 'e'));
    ((void **)b)[0] = tag(c, 0x5c);
    held[0] = tag(a, 0x2a);
    held[1] = tag(b, 0xb4);
    /* the program reads through tagged pointers, as on a device */
    ((char *)tag(a, 0x2a))[1] = 'A';
    free(tag(d, 0x77));
    char *f = lk_alloc(600, 'f');
    f = realloc(tag(f, 0x3c), 700);
    if (!f || f[599] != 'f' || malloc_usable_size(tag(f, 0x91)) < 700) {
        lk_say("FAIL realloc or malloc_usable_size through a tagged pointer\n");
        exit(1);
    }
    held[2] = tag(f, 0xe1);
    a = b = c = d = f = NULL;
    lk_use(&a);
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/500 indirect=0/0 possible=0/0 reachable=4/1300\n");
    lk_say("RECORD class=definitely_lost blocks=1 bytes=500\n");
    return 0;
}
