/* musl form of the C-library layer (libc.h). musl has no __libc_stack_end, no dladdr1
 * and no mallinfo2; its dynamic loader is the C library itself (ld-musl-*.so.1), whose
 * own allocations use its internal allocator, never the interposed one; its dlsym skips
 * undefined symbols, so whatever dlsym returns is a definition. Its DTV is a plain word
 * array the scan reads as ordinary memory. Runs inside the target: no malloc. */
#define _GNU_SOURCE
#include "agent/libc/libc.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

const char *ms_libc_name(void) { return "musl"; }

/* musl's loader is the C library itself: one build */
int ms_libc_threads_startable(char *why, size_t cap)
{
    if (cap)
        why[0] = 0;
    return 1;
}

/* musl's own names are internal: the next definitions in the lookup (musl's dlsym
 * allocates nothing). */
int ms_libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*real)(int, const struct sigaction *, struct sigaction *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sigaction");
    return real ? real(sig, act, old) : -1;
}

ms_sighandler ms_libc_signal(int sig, ms_sighandler h)
{
    static ms_sighandler (*real)(int, ms_sighandler);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "signal");
    return real ? real(sig, h) : SIG_ERR;
}

unsigned ms_libc_missing(void)
{
    return MS_LIBC_NO_MALLINFO2 | MS_LIBC_NO_DTV_LAYOUT;
}

/* The stack pointer the process started with (/proc/self/stat, field 28): every frame
 * of the main thread is below it. Above it lie argv, the environment's text and the
 * auxiliary vector, which a walk of frame records must not take for frames: code
 * without frame pointers (musl's own start code) leaves any value in the frame-pointer
 * register, and one pointing into the environment's text made text into return
 * addresses. 0 when /proc cannot tell. */
static uintptr_t start_stack(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command's name may hold anything */
    if (!p)
        return 0;
    /* fields from the state (3) on, each after one space: 28 is the 26th */
    for (int field = 2; field < 28; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return 0;
    }
    uintptr_t v = 0;
    for (p++; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (uintptr_t)(*p - '0');
    return v;
}

uintptr_t ms_libc_main_stack_hi(void)
{
    uintptr_t sp = start_stack();
    if (sp)
        return sp;
    /* the kernel copies the executable's name to the very top of the main stack */
    uintptr_t fn = (uintptr_t)getauxval(AT_EXECFN);
    return fn ? (fn + 4095) & ~(uintptr_t)4095 : 0;
}

int ms_libc_is_libc_path(const char *path)
{
    const char *s = strrchr(path, '/');
    s = s ? s + 1 : path;
    return strncmp(s, "libc.so", 7) == 0 || strncmp(s, "ld-musl-", 8) == 0;
}

int ms_libc_is_loader_path(const char *path)
{
    (void)path;
    return 0;
}

/* musl's memalign and posix_memalign call aligned_alloc, which the agent interposes */
const char *ms_libc_memalign_name(void) { return "aligned_alloc"; }

int ms_libc_rtld_deepbind(void) { return 0; } /* musl has no RTLD_DEEPBIND */

int ms_libc_dladdr_def(const void *p, Dl_info *di)
{
    return p && dladdr(p, di) != 0;
}

int ms_libc_func_sizes_usable(void)
{
    return 0; /* not relied on: sleeps an agent signal cuts short are not resumed */
}

int ms_libc_dtv(uintptr_t tp, uintptr_t *slot, uintptr_t *bias)
{
    (void)tp;
    *slot = 0;
    *bias = 0;
    return 0;
}
