/* GOT (PLT) hooks for an agent that was dlopen'ed instead of preloaded: points the
 * allocation, mmap, thread and dlopen/dlclose slots of every loaded module at the agent.
 * Runs inside the target: no malloc, no stdio; every ELF read is bounds-checked. */
#ifndef MS_GOT_HOOK_H
#define MS_GOT_HOOK_H

#include <stdint.h>

#include "agent/platform/platform.h"

typedef struct ms_got_stats {
    uint64_t modules;  /* modules in which at least one slot was patched */
    uint64_t slots;    /* GOT slots patched */
    uint64_t rejected; /* modules whose dynamic section failed a bounds check */
    uint64_t dlopens;  /* dlopen calls seen through the hook */
    uint64_t symbols;  /* definitions redirected in the defining modules' symbol tables */
    uint64_t restored; /* slots given back to the real functions by detaches */
    uint64_t deflog_lost; /* definitions redirected that a detach could not put back */
} ms_got_stats;

/* Resolves the agent's own functions for the hooked names; 0 or a negative errno. */
int ms_got_prepare(void) MS_INTERNAL;
/* Patches every loaded module (the agent's own slots too, so that its internal calls to
 * malloc/free reach its own functions) except the dynamic loader and the vdso, and points
 * the hooked names' definitions in the modules that define them (libc, a linked
 * allocator) at the agent, so that modules loaded later by any path (glibc's own NSS and
 * gconv loads) are bound to the agent by the loader itself. Modules already patched are
 * left as they are. Returns the number of slots patched now. */
uint64_t ms_got_hook_all(void) MS_INTERNAL;
/* 1 if the main program's lookup of `name` finds the agent's definition (preloaded, or
 * linked before libc): the agent's interposers are then in effect without hooks. */
int ms_got_default_is_own(const char *name) MS_INTERNAL;
/* The real `name` for a dlopen'ed agent: from the module that defines the program's
 * malloc (libc, or an allocator the program links), never a PLT stub, never the agent. */
void *ms_got_real_sym(const char *name) MS_INTERNAL;
void ms_got_get_stats(ms_got_stats *out) MS_INTERNAL;
/* Detach: gives the names that hand out memory (the malloc family's allocating half,
 * mmap, pthread_create, _exit, dlopen) their real functions back in every slot and
 * definition the agent holds; the names that take memory back stay hooked (blocks
 * recorded while attached carry a header). Returns the slots restored. */
uint64_t ms_got_unhook_gives(void) MS_INTERNAL;
/* Points the GOT slots of names[i] in the one module that holds address `in` (and in no
 * other) at fns[i], as ms_got_hook_all does for its names. Returns the slots written. */
uint64_t ms_got_patch_module(const void *in, const char *const *names, void *const *fns,
                             size_t n) MS_INTERNAL;

#endif
