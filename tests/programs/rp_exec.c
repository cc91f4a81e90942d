/* Real-program test: allocates, then execs a shell that prints whether the agent is
 * still preloaded ("[...]" holds LD_PRELOAD) and exits with status 5. */
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    void *volatile p = malloc(100);
    (void)p;
    execl("/bin/sh", "sh", "-c", "echo \"preload=[$LD_PRELOAD]\"; exit 5", (char *)NULL);
    return 127;
}
