/* Preloaded before the agent: says on stderr each fsync the process makes, then makes it
 * (test files_sync: the agent's sync= option). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <unistd.h>

int fsync(int fd)
{
    static const char line[] = "fsync_shim: fsync\n";
    int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (write(2, line, sizeof line - 1) < 0) {
        /* nothing to do: the message is the test's, the fsync the program's */
    }
    return real ? real(fd) : 0;
}
