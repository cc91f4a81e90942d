/* A program with a large heap for `memsight leaks` to scan (the scan's child then lives
 * long enough to be watched): N blocks of 32 bytes in a list held by a global, none lost.
 * Prints "READY PID" and waits (up to 120 s, or until killed). Usage: lk_many [N] */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct node {
    struct node *next;
    char pad[24];
};

struct node *volatile g_head;

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000000;
    for (long i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        if (!x)
            return 2;
        x->next = g_head;
        g_head = x;
    }
    printf("READY %d\n", (int)getpid());
    fflush(stdout);
    for (int i = 0; i < 1200; i++)
        usleep(100000);
    return 0;
}
