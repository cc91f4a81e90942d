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
static int threads_unstartable; /* ms_libc_threads_startable found two builds */

unsigned ms_libc_missing(void)
{
    return __atomic_load_n(&threads_unstartable, __ATOMIC_RELAXED) ? MS_LIBC_NO_THREADS : 0;
}

/* The build's banner in a module's read-only segments: libc.so.6 holds "GNU C Library
 * (Debian GLIBC 2.36-9+deb12u14) stable release version 2.36." and ld.so "ld.so (Debian
 * GLIBC 2.36-8) stable release version 2.36."; both name the package's version (glibc's
 * --with-pkgversion) and glibc's. */
typedef struct banner_find {
    int want_loader;
    char text[112]; /* from after the prefix to the end of the version */
} banner_find;

static int banner_in(const char *lo, const char *hi, const char *prefix, char *out, size_t cap)
{
    static const char key[] = " release version ";
    size_t pl = strlen(prefix);
    const char *p = lo;
    while (p < hi && (p = memmem(p, (size_t)(hi - p), key, sizeof key - 1)) != NULL) {
        const char *start = p;
        while (start > lo && start[-1] != 0 && start[-1] != '\n' && p - start < 200)
            start--;
        const char *end = p + sizeof key - 1;
        while (end < hi && ((*end >= '0' && *end <= '9') || (*end == '.' && end + 1 < hi &&
                                                              end[1] >= '0' && end[1] <= '9')))
            end++;
        if ((size_t)(p - start) > pl && !memcmp(start, prefix, pl)) {
            size_t n = (size_t)(end - start - (ptrdiff_t)pl);
            if (n >= cap)
                n = cap - 1;
            memcpy(out, start + pl, n);
            out[n] = 0;
            return 1;
        }
        p = end;
    }
    return 0;
}

static int banner_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    banner_find *f = data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (!(f->want_loader ? ms_libc_is_loader_path(name) : ms_libc_is_libc_path(name)))
        return 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) || (ph->p_flags & PF_W))
            continue;
        const char *lo = (const char *)(info->dlpi_addr + ph->p_vaddr);
        if (banner_in(lo, lo + ph->p_filesz, f->want_loader ? "ld.so " : "GNU C Library ",
                      f->text, sizeof f->text))
            return 1;
    }
    return 1; /* the module, without a banner */
}

int ms_libc_threads_startable(char *why, size_t cap)
{
    static int known; /* 0 not looked yet, 1 startable, -1 not */
    static char said[256];
    int k = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
    if (k == 0) {
        banner_find ld = {1, ""}, libc = {0, ""};
        dl_iterate_phdr(banner_cb, &ld);
        dl_iterate_phdr(banner_cb, &libc);
        /* a banner not found (another packaging): nothing to compare, threads are tried */
        k = ld.text[0] && libc.text[0] && strcmp(ld.text, libc.text) != 0 ? -1 : 1;
        if (k < 0) {
            size_t o = 0;
            const char *parts[] = {"ld.so ", ld.text, " / libc ", libc.text};
            for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
                for (const char *p = parts[i]; *p && o < sizeof said - 1; p++)
                    said[o++] = *p;
            said[o] = 0;
            __atomic_store_n(&threads_unstartable, 1, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&known, k, __ATOMIC_RELEASE);
    }
    if (cap) {
        size_t n = strnlen(said, sizeof said);
        if (n >= cap)
            n = cap - 1;
        memcpy(why, said, n);
        why[n] = 0;
    }
    return k > 0;
}

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
