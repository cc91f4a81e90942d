/* The agent's per-C-library layer: what the agent learns from the C library beyond the
 * standard interfaces (the main thread's stack, the thread control block, which module
 * is the C library or its loader, whether a dynamic symbol is a real definition, the
 * allocator's own figures). One file per C library (libc_glibc.c, libc_musl.c, chosen
 * by the build); the rest of the agent does not see past this header. Features a C
 * library lacks are reported in the snapshot's health (ms_libc_missing), not guessed.
 * Runs inside the target: nothing here calls malloc. */
#ifndef MS_AGENT_LIBC_H
#define MS_AGENT_LIBC_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#define MS_INTERNAL_LIBC __attribute__((visibility("hidden")))

/* "glibc", "musl" (META libc). */
const char *ms_libc_name(void) MS_INTERNAL_LIBC;

/* Features of glibc the agent uses where they exist and does without elsewhere (bits of
 * ms_libc_missing(); HLTH libc_missing). */
enum {
    MS_LIBC_NO_MALLINFO2 = 0x1,  /* no mallinfo2_* in HLTH (the allocator's own figures) */
    MS_LIBC_NO_DTV_LAYOUT = 0x2, /* the DTV's place in the TCB unknown: scanned as memory */
    MS_LIBC_NO_THREADS = 0x4,    /* no thread can start (ms_libc_threads_startable) */
};
unsigned ms_libc_missing(void) MS_INTERNAL_LIBC;

/* 1 when a new thread can start. 0 when the dynamic loader and the C library come from two
 * different builds of glibc (a sysroot that mixes them: the loader of a cross toolchain,
 * the distribution's libc.so.6): the C library then reads the loader's shared state at
 * the offsets of its own build, and pthread_create walks a list that never ends (its
 * thread-stack cache, 8 bytes off) without a system call. Then `why` gets both builds'
 * banners ("ld.so (...) ... / libc (...) ..."), and ms_libc_missing() has
 * MS_LIBC_NO_THREADS from then on. Looked at once (the result is kept); reads only the
 * two modules' read-only segments; no malloc. The first call walks the modules with
 * dl_iterate_phdr: the caller counts it as a walk (platform.h ms_dl_begin), or a fork
 * made meanwhile would copy the loader's lock held into its child. */
int ms_libc_threads_startable(char *why, size_t cap) MS_INTERNAL_LIBC;

/* Upper end of the main thread's stack, above its every frame and below argv and the
 * environment's text (glibc: __libc_stack_end; musl: the initial stack pointer), 0 if
 * unknown. */
uintptr_t ms_libc_main_stack_hi(void) MS_INTERNAL_LIBC;

/* 1 when `path` (a module's file name) is the C library, whose malloc never calls an
 * interposed function back. */
int ms_libc_is_libc_path(const char *path) MS_INTERNAL_LIBC;
/* 1 when `path` is a dynamic loader distinct from the C library (its allocations made
 * for modules are held by loader structures the leak scan cannot see). */
int ms_libc_is_loader_path(const char *path) MS_INTERNAL_LIBC;

/* The C library function the agent's over-aligned blocks come from ("memalign" or
 * "aligned_alloc"): one that does not call another interposed function. */
const char *ms_libc_memalign_name(void) MS_INTERNAL_LIBC;

/* dlopen's flag that puts a module's own dependencies ahead of the global scope in its
 * symbol lookups (glibc's RTLD_DEEPBIND); 0 where the C library has none. */
int ms_libc_rtld_deepbind(void) MS_INTERNAL_LIBC;

/* dladdr of p, and whether p is a real definition (not the PLT stub a non-PIE program
 * exports as an undefined symbol for a function whose address it takes). Returns 1 for
 * a definition with *di filled, 0 otherwise. */
int ms_libc_dladdr_def(const void *p, Dl_info *di) MS_INTERNAL_LIBC;

/* 1 when the sizes of the C library's dynamic function symbols bound its wrappers of
 * system calls (sig_resume.c resumes sleeps cut short inside them); 0 when they are not
 * relied on. */
int ms_libc_func_sizes_usable(void) MS_INTERNAL_LIBC;

/* The thread's DTV as the scan should see it, from its thread pointer: *slot gets the
 * address of the DTV pointer in the TCB and *bias how far into its block that pointer
 * points. Returns 0 when the layout is not known (TLS is then scanned as memory). */
int ms_libc_dtv(uintptr_t tp, uintptr_t *slot, uintptr_t *bias) MS_INTERNAL_LIBC;

/* The C library's own sigaction and signal, whatever the agent exports under those names
 * (guard pages keep their SIGSEGV handler in place: guard_fault.c). */
struct sigaction;
int ms_libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old) MS_INTERNAL_LIBC;
typedef void (*ms_sighandler)(int);
ms_sighandler ms_libc_signal(int sig, ms_sighandler h) MS_INTERNAL_LIBC;

#endif
