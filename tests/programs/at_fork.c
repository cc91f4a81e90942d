/* Ground truth for `memsight detach` of a parent whose children were forked while it was
 * attached (a server's workers after a reload). Driven line by line on stdin:
 *   fork N   forks N children; each allocates 64 blocks of 100 bytes (at_child_site) and
 *            waits on a pipe, freeing and allocating one block every 20 ms; the reply
 *            lists their pids
 *   quit     the children are told to leave (their pipe closes), waited for; exit 3 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXK 16

static __attribute__((noinline)) void *at_child_site(size_t n)
{
    return malloc(n);
}

static void child(int rd)
{
    void *keep[64];
    for (int i = 0; i < 64; i++)
        keep[i] = at_child_site(100);
    struct pollfd p = {.fd = rd, .events = POLLIN};
    for (unsigned k = 0;; k++) {
        if (poll(&p, 1, 20) != 0)
            break; /* the parent closed the pipe */
        free(keep[k % 64]);
        keep[k % 64] = at_child_site(100);
    }
    for (int i = 0; i < 64; i++)
        free(keep[i]);
    _exit(0);
}

int main(void)
{
    int kids[MAXK], nk = 0, wr[MAXK];
    char line[128];
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "fork ", 5)) {
            int n = atoi(line + 5);
            printf("ok fork");
            for (int i = 0; i < n && nk < MAXK; i++) {
                int fd[2];
                if (pipe(fd) != 0)
                    return 1;
                fflush(stdout);
                int c = fork();
                if (c == 0) {
                    close(fd[1]);
                    child(fd[0]);
                }
                close(fd[0]);
                wr[nk] = fd[1];
                kids[nk++] = c;
                printf(" %d", c);
            }
            printf("\n");
        } else if (!strcmp(line, "quit\n")) {
            break;
        } else {
            printf("unknown %s", line);
        }
    }
    for (int i = 0; i < nk; i++)
        close(wr[i]);
    for (int i = 0; i < nk; i++)
        waitpid(kids[i], NULL, 0);
    return 3;
}
