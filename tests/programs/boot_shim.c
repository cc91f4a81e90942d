/* Test shim, preloaded before the agent: each dl_iterate_phdr call allocates a block and
 * keeps it (the first 64). The agent walks the loaded modules while it starts, when its
 * own allocations come from its bootstrap arena: some kept blocks are the arena's.
 * bs_release() frees them all, as a library would free what it allocated at start-up. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

typedef int (*walk_cb)(struct dl_phdr_info *, size_t, void *);

static void *kept[64];
static int nkept;

int dl_iterate_phdr(walk_cb cb, void *data)
{
    static int (*real)(walk_cb, void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
    int i = __atomic_fetch_add(&nkept, 1, __ATOMIC_RELAXED);
    if (i < 64) {
        kept[i] = malloc(40);
        if (kept[i])
            memset(kept[i], 0x5a, 40);
    }
    return real(cb, data);
}

/* Frees every kept block; the number freed. */
int bs_release(void)
{
    int n = 0;
    for (int i = 0; i < 64; i++) {
        void *p = __atomic_exchange_n(&kept[i], NULL, __ATOMIC_RELAXED);
        if (p) {
            free(p);
            n++;
        }
    }
    return n;
}
