/* A library loaded with RTLD_DEEPBIND (db_main.c): its malloc-family calls bind to the C
 * library's definitions first, ahead of the global scope where a preloaded agent is.
 * Every call mixes blocks with the program: it frees and resizes the program's blocks
 * and hands out blocks the program frees. The addresses of its free and malloc are also
 * taken (a function pointer read from the GOT: a GLOB_DAT relocation, not a PLT slot). */
#include <stdlib.h>
#include <string.h>

/* Takes the program's block (freed here), grows its second block, returns a new one. */
char *db_swap(char *theirs, char **grow, size_t n)
{
    size_t len = strlen(theirs);
    char *mine = malloc(len + n + 1);
    if (!mine)
        return NULL;
    memcpy(mine, theirs, len + 1);
    free(theirs);
    char *g = realloc(*grow, n * 3 + 1);
    if (g) {
        memset(g + n, 'g', n * 2);
        g[n * 3] = 0;
        *grow = g;
    }
    char *z = calloc(n + 1, 1);
    if (z) {
        memset(z, 'z', n);
        strcat(mine, z);
        void (*volatile release)(void *) = free;
        release(z);
    }
    return mine;
}
