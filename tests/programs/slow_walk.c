/* Test shim, preloaded before the agent: every dl_iterate_phdr walk pauses 200 us per
 * module while glibc holds the loader's lock, so that a fork() made by another thread
 * lands inside a walk almost every time instead of once in thousands. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <time.h>

typedef int (*walk_cb)(struct dl_phdr_info *, size_t, void *);
struct slow {
    walk_cb cb;
    void *data;
};

static int slow_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct slow *s = arg;
    struct timespec ts = {0, 200 * 1000};
    nanosleep(&ts, NULL);
    return s->cb(info, size, s->data);
}

int dl_iterate_phdr(walk_cb cb, void *data)
{
    static int (*real)(walk_cb, void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
    struct slow s = {cb, data};
    return real(slow_cb, &s);
}
