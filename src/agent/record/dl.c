/* dlclose and dlopen interposers. dlclose: code may be unmapped, so cached unwind rules
 * for it are dropped. dlopen: the loader finds RUNPATH, $ORIGIN and the namespace from
 * the caller's address, so every call reaches the real dlopen by a jump (the program's
 * own return address), except one that loads a module with RTLD_DEEPBIND by a path:
 * such a module binds malloc, free and the rest to the C library's definitions, ahead
 * of the agent's in the global scope, and would hand the program's blocks (headers
 * below them) to the C library's free. Its slots (PLT and GOT) of those names are pointed
 * at the agent's functions as soon as it is loaded, through the GOT-hook machinery
 * (got_hook.c). Runs inside the target: no malloc of ours, no lock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include "agent/record/record.h"
#include "agent/platform/got_hook.h"
#include "agent/libc/libc.h"

#define MS_EXPORT __attribute__((visibility("default")))
#define MS_SIBCALLS __attribute__((optimize("optimize-sibling-calls")))

__attribute__((visibility("default"))) int dlclose(void *h)
{
    ms_init();
    if (!ms_real.dlclose)
        return -1;
    int rc = ms_real.dlclose(h);
    if (ms_state == MS_STATE_READY) {
        MS_HEALTH_INC(dlclose_calls);
        ms_unwind_invalidate();
    }
    return rc;
}

typedef void *(*ms_dlopen_fn)(const char *, int);
static ms_dlopen_fn ms_dlopen_real;

static MS_NOINLINE ms_dlopen_fn ms_dlopen_resolve(void)
{
    ms_dlopen_fn f;
    *(void **)&f = dlsym(RTLD_NEXT, "dlopen");
    __atomic_store_n(&ms_dlopen_real, f, __ATOMIC_RELEASE);
    return f;
}

/* The names whose slots a RTLD_DEEPBIND module gets pointed at the agent. */
static const char *const ms_deep_names[] = {
    "malloc",  "free",          "calloc",         "realloc",       "reallocarray",
    "memalign", "posix_memalign", "aligned_alloc", "valloc",        "pvalloc",
    "malloc_usable_size", "cfree"};
#define MS_DEEP_N (sizeof ms_deep_names / sizeof ms_deep_names[0])

typedef struct ms_deep_walk {
    int n0;          /* modules before the load */
    int i;
    size_t nnew;
    uintptr_t in[64]; /* an address inside each module loaded by the call */
} ms_deep_walk;

static int ms_deep_count(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    ((ms_deep_walk *)arg)->n0++;
    return 0;
}

static int ms_deep_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    ms_deep_walk *w = arg;
    if (w->i++ < w->n0 || w->nnew >= sizeof w->in / sizeof w->in[0])
        return 0;
    for (int k = 0; k < info->dlpi_phnum; k++)
        if (info->dlpi_phdr[k].p_type == PT_LOAD) {
            w->in[w->nnew++] = info->dlpi_addr + info->dlpi_phdr[k].p_vaddr;
            break;
        }
    return 0;
}

/* RTLD_DEEPBIND by a path (no '/': the caller's RUNPATH would be searched; '$': its
 * $ORIGIN; both left to a jump into the real dlopen, counted). The real dlopen from here,
 * then every module it loaded gets, for each name above that it would find in the C
 * library (the function the agent wraps) while the program finds the agent's, the
 * agent's function in its slots. A module that defines a name itself, or finds another
 * allocator's, keeps it. */
static MS_NOINLINE MS_SIBCALLS void *ms_dlopen_deep(const char *name, int flags, ms_dlopen_fn real)
{
    if (!name || !strchr(name, '/') || strchr(name, '$') ||
        __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) != MS_STATE_READY) {
        if (__atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY)
            MS_HEALTH_INC(deepbind_unhooked);
        return real(name, flags);
    }
    ms_deep_walk w;
    memset(&w, 0, sizeof w);
    ms_dl_iterate(ms_deep_count, &w);
    void *h = real(name, flags);
    if (!h)
        return h;
    int saved = errno;
    const char *names[MS_DEEP_N];
    void *fns[MS_DEEP_N];
    size_t n = 0;
    for (size_t i = 0; i < MS_DEEP_N; i++) {
        void *own = dlsym(RTLD_DEFAULT, ms_deep_names[i]);
        void *theirs = dlsym(h, ms_deep_names[i]);
        void *wrapped = dlsym(RTLD_NEXT, ms_deep_names[i]);
        if (own && theirs && theirs != own && theirs == wrapped &&
            (uintptr_t)own - ms_self_lo < ms_self_hi - ms_self_lo) {
            names[n] = ms_deep_names[i];
            fns[n++] = own;
        }
    }
    if (n) {
        ms_dl_iterate(ms_deep_collect, &w);
        for (size_t k = 0; k < w.nnew; k++)
            if (ms_got_patch_module((const void *)w.in[k], names, fns, n))
                MS_HEALTH_INC(deepbind_modules);
    }
    errno = saved;
    return h;
}

MS_EXPORT MS_SIBCALLS void *dlopen(const char *name, int flags)
{
    ms_dlopen_fn real = __atomic_load_n(&ms_dlopen_real, __ATOMIC_ACQUIRE);
    if (MS_UNLIKELY(!real) && !(real = ms_dlopen_resolve()))
        return NULL;
    int deep = ms_libc_rtld_deepbind();
    if (MS_LIKELY(!deep || !(flags & deep)))
        return real(name, flags); /* a jump: the loader sees the program's call */
    return ms_dlopen_deep(name, flags, real);
}
