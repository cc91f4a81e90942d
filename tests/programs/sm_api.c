/* memsight_dump() from the program itself, found at run time (the program does not link
 * the agent): prints the snapshot's path, or "no agent" when the agent is not loaded.
 * Keeps 3 blocks of 100000 bytes from sm_api_keep live while it asks. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINL __attribute__((noinline, noclone))
static void *volatile sink[3];
static volatile int nkept;
/* the store after the call keeps malloc from being a tail call */
NOINL void sm_api_keep(size_t n) { sink[nkept] = malloc(n); nkept++; }

int main(void)
{
    for (int i = 0; i < 3; i++)
        sm_api_keep(100000);
    int (*dump)(char *, unsigned long);
    *(void **)&dump = dlsym(RTLD_DEFAULT, "memsight_dump");
    if (!dump) {
        printf("no agent\n");
        return 0;
    }
    char path[4096];
    int rc = dump(path, sizeof path);
    if (rc != 0) {
        printf("error %d\n", rc);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
