/* Agent lifecycle: lazy, recursion-free initialisation on first use (bootstrap arena
 * while dlsym resolves the real functions), constructor/destructor, fork and exec.
 * Runs inside the target: no malloc of our own, no lock held across fork. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/tables/addr_table.h"
#include "agent/services/services.h"
#include "agent/platform/elf_mod.h"
#include "agent/services/guard_fault.h"
#include "agent/platform/sig_resume.h"
#include "agent/libc/libc.h"
#include "agent/platform/got_hook.h"
#include "agent/leak/leak_scan.h"
#include "agent/services/start.h"

static pid_t ms_pid;      /* the process the agent's state belongs to */
static int ms_exit_done;  /* the exit snapshot was written */

/* ===========================================================================
 * Initialisation
 * ========================================================================= */
extern char **environ;

static void *ms_sym(const char *name)
{
    /* dlopen'ed and started by memsight_start (start.c): the real functions are the
     * ones the program's own lookup finds (libc's, or an allocator it links: got_hook.c) */
    return ms_start_deferred_mode ? ms_got_real_sym(name) : dlsym(RTLD_NEXT, name);
}

static void ms_resolve(void)
{
#define R(f) *(void **)&ms_real.f = ms_sym(#f)
    R(malloc);
    R(free);
    R(calloc);
    R(realloc);
    *(void **)&ms_real.memalign = ms_sym(ms_libc_memalign_name());
    R(posix_memalign);
    R(aligned_alloc);
    R(valloc);
    R(pvalloc);
    R(malloc_usable_size);
    R(mmap);
    *(void **)&ms_real.mmap_lfs64 = ms_sym("mmap64");
    R(munmap);
    R(mremap);
    R(pthread_create);
    R(pthread_join);
    R(pthread_tryjoin_np);
    R(pthread_timedjoin_np);
    R(pthread_clockjoin_np);
    R(pthread_detach);
    R(pthread_exit);
    R(dlclose);
#undef R
    /* glibc's malloc makes its own mmap calls internally, never through an interposer:
     * a plain (unsampled) block then needs no re-entrancy flag around the real call */
    const char *file = NULL; /* not dladdr: it scans every symbol of the module */
    ms_real_malloc_is_libc = ms_real.malloc &&
                             ms_mod_func_at((void *)ms_real.malloc, NULL, &file, NULL) && file &&
                             ms_libc_is_libc_path(file);
}

/* The agent's own file as the dynamic loader opened it (its string, never freed while
 * the agent is loaded): LD_PRELOAD may name a copy under another name. */
static const char *ms_self_path;

static int ms_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (me >= lo && me < hi) {
            ms_self_lo = lo;
            ms_self_hi = hi;
            ms_self_path = info->dlpi_name;
            return 1;
        }
    }
    return 0;
}

static const char *ms_base_name(const char *p, size_t n)
{
    const char *b = p;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/')
            b = p + i + 1;
    return b;
}

/* Whether an LD_PRELOAD item of n bytes names the agent: any file called libmemsight.so,
 * or the agent's own file under another name (a copy the user made): the same file for
 * a path, the same name for a bare name (the loader searched the library path for it). */
static int ms_preload_item_is_self(const char *tok, size_t n, const struct stat *self)
{
    const char *b = ms_base_name(tok, n);
    size_t bn = n - (size_t)(b - tok);
    if (bn == 14 && memcmp(b, "libmemsight.so", 14) == 0)
        return 1;
    if (!ms_self_path || !*ms_self_path)
        return 0;
    if (b == tok) {
        const char *sb = ms_base_name(ms_self_path, strlen(ms_self_path));
        return strlen(sb) == n && memcmp(sb, tok, n) == 0;
    }
    char path[4096];
    struct stat st;
    if (!self || n >= sizeof path)
        return 0;
    memcpy(path, tok, n);
    path[n] = 0;
    return stat(path, &st) == 0 && st.st_dev == self->st_dev && st.st_ino == self->st_ino;
}

/* Without follow_exec, remove our library from LD_PRELOAD in place (the string lives
 * in the process's environment block; no allocation), so programs started by exec,
 * system() or posix_spawn run without the agent. */
static void ms_strip_preload(void)
{
    if (!environ)
        return;
    struct stat self;
    int have_self = ms_self_path && *ms_self_path && stat(ms_self_path, &self) == 0;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            continue;
        char *s = *e + 11, *w = s;
        const char *r = s;
        while (*r) {
            while (*r == ' ' || *r == ':')
                r++;
            const char *tok = r;
            while (*r && *r != ' ' && *r != ':')
                r++;
            size_t n = (size_t)(r - tok);
            if (!n)
                continue;
            if (ms_preload_item_is_self(tok, n, have_self ? &self : NULL))
                continue;
            if (w != s)
                *w++ = ':';
            memmove(w, tok, n);
            w += n;
        }
        *w = 0;
    }
}

static void ms_atfork_prepare(void);
static void ms_atfork_parent(void);
static void ms_atfork_child(void);
static int ms_options_from_env_done;

static void ms_read_options(void)
{
    const char *s = NULL;
    if (ms_start_options) { /* given to memsight_start() */
        ms_options_from_env_done = 1;
        ms_options_read(ms_start_options, ms_start_options_source);
        return;
    }
    if (environ) {
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "MEMSIGHT_OPTIONS=", 17) == 0) {
                s = *e + 17;
                break;
            }
        ms_options_from_env_done = 1;
    }
    ms_options_read(s, "MEMSIGHT_OPTIONS");
}

static int ms_init_slow(void)
{
    int expected = MS_STATE_NONE;
    if (!__atomic_compare_exchange_n(&ms_state, &expected, MS_STATE_INITING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        /* Another thread initialises (or we re-entered): do not wait on it, the caller
         * serves itself from the bootstrap arena or the real function. */
        return expected == MS_STATE_READY;
    }
    ms_enter();
    ms_resolve();
    ms_sig_resume_init();
    const uint64_t *rnd = (const uint64_t *)getauxval(AT_RANDOM);
    ms_hdr_secret = (rnd ? rnd[0] ^ rnd[1] : 0) ^ (uint64_t)(uintptr_t)&expected ^
                    ((uint64_t)getpid() << 32) ^ 0x6d656d7369676874ull;
    ms_vdso_init();
    ms_clock_start();
    ms_read_options();
    ms_snapshot_tally_init();
    ms_dl_iterate(ms_find_self, (void *)(uintptr_t)&ms_init_slow);
    int ok = ms_real.malloc && ms_real.free && ms_real.calloc && ms_real.realloc &&
             ms_stacks_init(ms_opt.stack_capacity) == 0 && ms_live_init(ms_opt.capacity) == 0 &&
             ms_regions_init(ms_opt.region_capacity) == 0 &&
             ms_threads_init(ms_opt.thread_capacity) == 0 && ms_unwind_init() == 0;
    ms_pid = getpid();
    if (ok) {
        ms_snapshot_add_hook(ms_tlife_write, NULL); /* THRL, first of the helpers' chunks */
        ms_threads_register_main();
        pthread_atfork(ms_atfork_prepare, ms_atfork_parent, ms_atfork_child);
        ms_production_init(); /* sampler, control thread (started later), peak */
        ms_fatal_init();
        if (ms_opt.guard && !ms_real_malloc_is_libc) {
            /* the allocator's own free (tc_free, dallocx, mi_free) would get the pool's
             * blocks, which it never handed out */
            ms_opt.guard = 0;
            ms_option_unavailable("guard= (the program's malloc is not the C library's)");
        }
        ms_guard_init();
        if (ms_opt.guard) {
            ms_guard_report_init();
            ms_guard_fault_init(); /* after fatal.c: its handler gets the faults not in the pool */
        }
        /* the peak and byte triggers follow frees through the header's stack id; blocks
         * known by address count their frees as the sampled modes do */
        ms_heap_frees_derived = ms_opt.sample_interval == 0 && ms_opt.min_size == 0 &&
                                !ms_addr_mode;
    }
    ms_leave();
    __atomic_store_n(&ms_state, ok ? MS_STATE_READY : MS_STATE_DISABLED, __ATOMIC_RELEASE);
    if (ok)
        ms_alloc_entries_pick();
    return ok;
}

int ms_init(void)
{
    int s = __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE);
    if (MS_LIKELY(s == MS_STATE_READY))
        return 1;
    if (s != MS_STATE_NONE)
        return 0;
    return ms_init_slow();
}

/* `memsight run --watch` waits for the program to run before it samples: it hands the
 * write end of a pipe down (MEMSIGHT_READY_FD); closing it when main() is entered
 * (control.c) says that start-up (loading, constructors) is over. The variable is emptied in place (no allocation), so that
 * programs this one execs do not close a descriptor of the same number. */
void ms_signal_ready(void)
{
    if (!environ)
        return;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "MEMSIGHT_READY_FD=", 18) != 0)
            continue;
        char *v = *e + 18;
        int fd = 0, digits = 0;
        for (; *v >= '0' && *v <= '9' && digits < 7; v++, digits++)
            fd = fd * 10 + (*v - '0');
        int ok = digits && !*v;
        (*e)[18] = 0;
        struct stat st;
        /* only the pipe memsight run made: a write end, inherited, not close-on-exec */
        if (ok && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
            (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
            close(fd);
    }
}

__attribute__((constructor(101))) static void ms_constructor(void)
{
    if (__atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_NONE) {
        /* the look-up asks the loader (dlopen of the agent itself), which allocates: the
         * agent's own work, neither recorded nor the allocation that starts the agent */
        ms_enter();
        int deferred = ms_start_deferred();
        ms_leave();
        if (deferred)
            return; /* dlopen'ed: memsight_start() initialises and hooks */
    }
    ms_init();
    if (!ms_options_from_env_done && environ && ms_state == MS_STATE_READY) {
        /* First use came before the environment was set up: read options now. */
        ms_read_options();
    }
    if (!ms_opt.follow_exec)
        ms_strip_preload();
}

/* The exit snapshot, once per process: from our destructor (exit(), return from main)
 * or from _exit/_Exit (shells such as dash leave with _exit). Not in a vfork child or a
 * raw clone sharing our memory: its pid is not the one the agent knows. */
static void ms_exit_snapshot(void)
{
    if (ms_state != MS_STATE_READY || !ms_opt.exit_snapshot || getpid() != ms_pid)
        return;
    if (__atomic_exchange_n(&ms_exit_done, 1, __ATOMIC_ACQ_REL))
        return;
    ms_leak_at_exit(); /* with leak_check=exit, adds its result to the exit snapshot */
    ms_snapshot_write("exit", NULL, NULL, NULL, 0);
}

__attribute__((destructor(101))) static void ms_destructor(void)
{
    ms_exit_snapshot();
}

/* exit(): notes where it began (the exit scan reads this thread's stack from there),
 * then the C library's exit. A return from main is noted by the main() wrapper. */
__attribute__((visibility("default"), noreturn, noinline)) void exit(int status)
{
    MS_LEAK_NOTE_EXIT();
    static void (*real_exit)(int) __attribute__((noreturn));
    if (!real_exit)
        *(void **)&real_exit = dlsym(RTLD_NEXT, "exit");
    if (real_exit && real_exit != exit)
        real_exit(status);
    /* no C library exit found (cannot happen with glibc): what it would leave undone */
    ms_exit_snapshot();
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

__attribute__((visibility("default"), noreturn, noinline)) void _exit(int status)
{
    MS_LEAK_NOTE_EXIT();
    ms_exit_snapshot();
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
    _exit(status);
}

/* ===========================================================================
 * fork: no agent lock may be held across fork; the child keeps recording under its
 * own pid with its own snapshot sequence.
 * ========================================================================= */
static void ms_atfork_prepare(void)
{
    ms_enter();
    ms_dl_fork_prepare();
    ms_regions_fork_prepare();
    ms_stacks_fork_prepare(); /* after the regions: an mprotect interns under their lock */
    ms_live_fork_prepare();
    ms_addr_fork_prepare();
    ms_guard_fork_prepare();
}

static void ms_atfork_parent(void)
{
    ms_guard_fork_parent();
    ms_addr_fork_parent();
    ms_live_fork_parent();
    ms_stacks_fork_parent();
    ms_regions_fork_parent();
    ms_dl_fork_parent();
    ms_leave();
}

static void ms_atfork_child(void)
{
    ms_self.tid = 0;
    ms_pid = getpid();
    ms_exit_done = 0;
    ms_guard_fork_child();
    ms_addr_fork_child();
    ms_live_fork_child();
    ms_stacks_fork_child();
    ms_regions_fork_child();
    ms_dl_fork_child();
    ms_threads_fork_child();
    ms_snapshot_fork_child();
    ms_production_fork_child();
    ms_leave();
}
