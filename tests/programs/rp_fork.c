/* Real-program test: allocates, forks; the child allocates in rp_child_work and exits
 * normally (it must write its own snapshot, named with its own pid), the parent waits.
 * Prints the child's pid so the test can find its snapshot. Leaks on purpose. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile keep[64];

__attribute__((noinline)) void rp_child_work(void)
{
    for (int i = 0; i < 7; i++)
        keep[i] = malloc(3000);
    keep[63] = 0;
}

__attribute__((noinline)) void rp_parent_work(void)
{
    for (int i = 0; i < 5; i++)
        keep[10 + i] = malloc(2000);
    keep[62] = 0;
}

int main(void)
{
    rp_parent_work();
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        rp_child_work();
        printf("child %d\n", (int)getpid());
        fflush(stdout);
        exit(0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("parent %d child-status %d\n", (int)getpid(), WEXITSTATUS(st));
    return 0;
}
