/* Waits for signals and says which came: each of TERM, USR1, USR2 appends its name to
 * the file given (write(2) in the handler); TERM and USR2 then end the program with
 * status 0. Prints "ready PID" once its handlers are in place. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fd = -1;

static void on_signal(int sig)
{
    const char *name = sig == SIGTERM ? "TERM\n" : sig == SIGUSR1 ? "USR1\n" : "USR2\n";
    if (write(fd, name, strlen(name)) < 0)
        _exit(3);
    if (sig != SIGUSR1)
        _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: lm_wait FILE\n");
        return 2;
    }
    fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    void *volatile keep = malloc(100); /* the agent's control thread starts */
    (void)keep;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
