/* Asks every allocation function for more than the machine has (2^41 bytes and
 * SIZE_MAX/2: requests that must fail, as test suites make on purpose), checks each
 * failed, then keeps KEPT blocks of 100 bytes live and prints how many requests failed.
 * Under the agent no block was dropped: a refused request records nothing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>

#define KEPT 200

int main(void)
{
    static void *keep[KEPT];
    const size_t huge[] = {(size_t)1 << 41, SIZE_MAX / 2};
    int failed = 0, asked = 0;
    for (int i = 0; i < 2; i++) {
        size_t n = huge[i];
        void *p, *q = malloc(16);
        asked += 6;
        failed += (p = malloc(n)) == NULL;
        free(p);
        failed += (p = calloc(1, n)) == NULL;
        free(p);
        p = realloc(q, n);
        failed += p == NULL;
        free(p ? p : q);
        failed += (p = aligned_alloc(64, n)) == NULL;
        free(p);
        failed += posix_memalign(&p, 4096, n) != 0;
        failed += (p = memalign(128, n)) == NULL;
        free(p);
    }
    for (int i = 0; i < KEPT; i++)
        keep[i] = malloc(100);
    printf("%d of %d failed\n", failed, asked);
    for (int i = 0; i < KEPT; i++)
        if (!keep[i])
            return 2;
    return failed == asked ? 0 : 1;
}
