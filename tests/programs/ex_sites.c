/* Ground truth for call sites, temporary allocations, churn and the size histogram.
 * worker() allocates at two lines of one function: one churns (N blocks of 40000 bytes,
 * each freed before anything else is allocated: N temporaries, nothing live), one keeps
 * (KEEP blocks of 3000 bytes, live at exit). pairs() allocates two blocks (9000 and 20000
 * bytes) and frees them in order, N/4 times: no temporary, since a free comes between
 * each allocation and the free of the first. Usage: ex_sites N (N a multiple of 4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 100
#define TEMP_SIZE 40000
#define KEEP_SIZE 3000
#define PAIR_A 9000
#define PAIR_B 20000

void *kept[KEEP]; /* global: live at exit, reachable */
void *volatile escape; /* every block is stored here: the compiler may not drop the pairs */

__attribute__((noinline)) void worker(long n)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(TEMP_SIZE); /* the churning line */
        escape = p;
        free(p);
    }
    for (int i = 0; i < KEEP; i++)
        kept[i] = malloc(KEEP_SIZE); /* the keeping line */
}

__attribute__((noinline)) void pairs(long n)
{
    for (long i = 0; i < n; i++) {
        char *a = malloc(PAIR_A);
        char *b = malloc(PAIR_B);
        escape = a;
        escape = b;
        free(a);
        free(b);
    }
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 800000;
    if (n < 4 || n % 4 || n > 100000000) {
        fprintf(stderr, "usage: ex_sites N (a multiple of 4)\n");
        return 2;
    }
    worker(n);
    pairs(n / 4);
    printf("ex_sites: %ld temporaries, %d kept\n", n, KEEP);
    return 0;
}
