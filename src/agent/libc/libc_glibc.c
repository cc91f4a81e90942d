/* glibc form of the C-library layer (libc.h): __libc_stack_end, the TCB's DTV
 * pointer (tcbhead_t), libc.so.6 and ld-linux. Runs inside the target: no malloc. */
#define _GNU_SOURCE
#include "agent/libc/libc.h"

#include <signal.h>
#include <string.h>

#include "agent/arch/arch.h"

extern void *__libc_stack_end;

const char *ms_libc_name(void) { return "glibc"; }

/* glibc exports both under names of their own: no look-up, nothing allocated. */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
extern ms_sighandler bsd_signal(int, ms_sighandler); /* = signal */

int ms_libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return __sigaction(sig, act, old);
}

ms_sighandler ms_libc_signal(int sig, ms_sighandler h)
{
    return bsd_signal(sig, h);
}
unsigned ms_libc_missing(void) { return 0; }

/* Not rounded up to its page: above __libc_stack_end lie argv and the environment's
 * text, which a walk of frame records must not take for frames (a frame pointer that code
 * without frame pointers left pointing there made text into return addresses). */
uintptr_t ms_libc_main_stack_hi(void)
{
    return (uintptr_t)__libc_stack_end;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int ms_libc_is_libc_path(const char *path)
{
    return strncmp(base_name(path), "libc.so", 7) == 0;
}

int ms_libc_is_loader_path(const char *path)
{
    return strstr(path, "/ld-linux") != NULL || strstr(path, "/ld.so") != NULL;
}

const char *ms_libc_memalign_name(void) { return "memalign"; }

int ms_libc_rtld_deepbind(void) { return RTLD_DEEPBIND; }

int ms_libc_dladdr_def(const void *p, Dl_info *di)
{
    const ElfW(Sym) *sym = NULL;
    if (!p || !dladdr1(p, di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
        return 0;
    return sym->st_shndx != SHN_UNDEF;
}

int ms_libc_func_sizes_usable(void) { return 1; }

int ms_libc_dtv(uintptr_t tp, uintptr_t *slot, uintptr_t *bias)
{
    /* tcbhead_t: x86-64 { void *tcb; dtv_t *dtv; ... } at tp; AArch64 { dtv_t *dtv;
     * void *private; } at tp. The pointer is one 16-byte dtv_t into its block. */
    *slot = tp + (MS_ARCH_TLS_ABOVE_TP ? 0 : 8);
    *bias = 16;
    return 1;
}
