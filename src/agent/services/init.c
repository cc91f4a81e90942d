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
#include "agent/agent.h"
#include "agent/platform/elf_mod.h"
#include "agent/record/guard.h"
#include "agent/platform/sig_resume.h"
#include "agent/libc/libc.h"
#include "agent/platform/got_hook.h"
#include "agent/leak/leak_scan.h"
#include "agent/services/start.h"

__thread ms_tls ms_self __attribute__((tls_model("initial-exec")));
int ms_state;
ms_real_fns ms_real;
ms_health_t ms_health;
uintptr_t ms_self_lo, ms_self_hi;
static pid_t ms_pid;      /* the process the agent's state belongs to */
static int ms_exit_done;  /* the exit snapshot was written */

/* ===========================================================================
 * Raw system calls and time
 * ========================================================================= */
/* The agent's own mappings, so that a scan that roots anonymous memory it cannot
 * enumerate (after memsight attach) leaves the agent's tables out. A slot is claimed by
 * a CAS on lo; hi is stored after it (a reader skips a slot whose hi is still 0). */
static struct {
    uint64_t lo, hi;
} ms_own[MS_OWN_MAX];
static uint64_t ms_own_lost;

static void ms_own_add(uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < MS_OWN_MAX; i++) {
        uint64_t z = 0;
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&ms_own[i].lo, &z, lo, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ms_own[i].hi, hi, __ATOMIC_RELEASE);
            return;
        }
    }
    __atomic_fetch_add(&ms_own_lost, 1, __ATOMIC_RELAXED);
}

size_t ms_own_ranges(uint64_t *lo, uint64_t *hi, size_t cap, uint64_t *lost)
{
    size_t n = 0;
    for (size_t i = 0; i < MS_OWN_MAX && n < cap; i++) {
        uint64_t h = __atomic_load_n(&ms_own[i].hi, __ATOMIC_ACQUIRE);
        uint64_t l = __atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED);
        if (l && h > l) {
            lo[n] = l;
            hi[n++] = h;
        }
    }
    *lost = __atomic_load_n(&ms_own_lost, __ATOMIC_RELAXED);
    return n;
}

void *ms_sys_mmap(size_t len)
{
    long r = syscall(SYS_mmap, 0, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    ms_own_add((uint64_t)r, (uint64_t)r + ((len + 4095) & ~(size_t)4095));
    return (void *)r;
}

void ms_sys_munmap(void *p, size_t len)
{
    if (!p)
        return;
    syscall(SYS_munmap, p, len);
    for (size_t i = 0; i < MS_OWN_MAX; i++)
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)p) {
            __atomic_store_n(&ms_own[i].hi, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].lo, 0, __ATOMIC_RELEASE);
            break;
        }
}

void *ms_sys_mremap(void *old, size_t old_len, size_t new_len)
{
    long r = syscall(SYS_mremap, old, old_len, new_len, MREMAP_MAYMOVE);
    if (r < 0 && r > -4096)
        return NULL;
    /* the table moved or grew: the registry follows, or a scan after memsight attach
     * would take the moved table for the program's memory and root what it points to */
    uint64_t lo = (uint64_t)r, hi = lo + ((new_len + 4095) & ~(size_t)4095);
    for (size_t i = 0; i < MS_OWN_MAX; i++)
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)old) {
            __atomic_store_n(&ms_own[i].hi, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].lo, lo, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].hi, hi, __ATOMIC_RELEASE);
            return (void *)r;
        }
    ms_own_add(lo, hi);
    return (void *)r;
}

uint32_t ms_gettid_slow(void)
{
    ms_self.tid = (uint32_t)syscall(SYS_gettid);
    return ms_self.tid;
}

uint64_t ms_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Blocks are stamped with a cheap monotonic tick; snapshots convert to wall time with
 * the pair (ticks, realtime) taken at init and at snapshot time. */
static uint64_t ms_tick0, ms_ns0;

uint64_t ms_start_ns(void)
{
    return ms_ns0;
}

uint64_t ms_ticks_to_ns(uint64_t t)
{
    return ms_ns0 + (t - ms_tick0);
}

/* ===========================================================================
 * Bootstrap arena: dlsym may call calloc/malloc before we know the real functions.
 * Blocks carry a 16-byte header with their size; free() of them is a no-op. Each is held
 * in the address filter, where free() in the address modes finds it behind a "maybe".
 * ========================================================================= */
int ms_real_malloc_is_libc;
unsigned char ms_boot_arena[MS_BOOT_SIZE] __attribute__((aligned(64)));
static size_t ms_boot_used;

void *ms_boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    MS_HEALTH_INC(boot_allocs);
    for (;;) {
        size_t old = __atomic_load_n(&ms_boot_used, __ATOMIC_RELAXED);
        size_t start = (old + 16 + align - 1) & ~(align - 1);
        if (n > MS_BOOT_SIZE || start + n > MS_BOOT_SIZE)
            return NULL;
        if (__atomic_compare_exchange_n(&ms_boot_used, &old, start + n, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            memcpy(ms_boot_arena + start - 16, &n, sizeof n);
            ms_addr_hold(ms_boot_arena + start); /* free() in the address modes */
            return ms_boot_arena + start;
        }
    }
}

size_t ms_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - 16, sizeof n);
    return n;
}

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

ms_options ms_opt;
char ms_opt_errors[160];

/* Where the options came from, for the warnings: the environment, or the argument of
 * memsight_start() or memsight_attach() (a user grepping MEMSIGHT_OPTIONS for a typo
 * would look in the wrong place). */
static const char *ms_opt_source = "MEMSIGHT_OPTIONS";

/* "memsight: <source>: <what><more>; ignored" on stderr, without stdio. */
static void ms_say_option(const char *what, const char *more)
{
    char line[320];
    size_t o = 0;
    const char *parts[] = {"memsight: ", ms_opt_source, ": ", what, more, "; ignored\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (const char *p = parts[i]; *p && o < sizeof line - 1; p++)
            line[o++] = *p;
    if (write(2, line, o) < 0) {
        /* no stderr: the snapshot still says it */
    }
}

/* Bad options are said once per process: on stderr (the program's, before it runs) and
 * in every snapshot (META option_errors, HLTH bad_options). */
static void ms_parse_options(const char *s)
{
    static int warned;
    unsigned bad = ms_options_parse(&ms_opt, s, ms_opt_errors, sizeof ms_opt_errors);
    __atomic_store_n(&ms_health.bad_options, bad, __ATOMIC_RELAXED);
    if (!bad || warned)
        return;
    warned = 1;
    char more[48] = "", num[12];
    size_t k = 0;
    if (bad > 1) { /* " (and N more)" without stdio */
        unsigned v = bad - 1;
        do {
            num[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && k < sizeof num);
        size_t m = 0;
        for (const char *p = " (and "; *p; p++)
            more[m++] = *p;
        while (k)
            more[m++] = num[--k];
        for (const char *p = " more)"; *p; p++)
            more[m++] = *p;
        more[m] = 0;
    }
    ms_say_option(ms_opt_errors, more);
}

/* An option this build or platform cannot honour (unwind=libunwind without libunwind):
 * counted and said like a bad one, once, and the agent goes on without it. */
void ms_option_unavailable(const char *what)
{
    static int said;
    MS_HEALTH_INC(bad_options);
    size_t n = strnlen(ms_opt_errors, sizeof ms_opt_errors - 1);
    if (n && n + 2 < sizeof ms_opt_errors - 1) {
        ms_opt_errors[n++] = ';';
        ms_opt_errors[n++] = ' ';
    }
    for (const char *p = what; *p && n < sizeof ms_opt_errors - 1; p++)
        ms_opt_errors[n++] = *p;
    ms_opt_errors[n] = 0;
    if (!said) {
        said = 1;
        ms_say_option(what, "");
    }
}

static void ms_read_options(void)
{
    const char *s = NULL;
    if (ms_start_options) { /* given to memsight_start() */
        ms_options_from_env_done = 1;
        ms_opt_source = ms_start_options_source;
        ms_parse_options(ms_start_options);
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
    ms_parse_options(s);
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
    ms_tick0 = ms_ticks();
    ms_ns0 = ms_now_ns();
    ms_read_options();
    ms_snapshot_tally_init();
    ms_dl_iterate(ms_find_self, (void *)(uintptr_t)&ms_init_slow);
    int ok = ms_real.malloc && ms_real.free && ms_real.calloc && ms_real.realloc &&
             ms_stacks_init(ms_opt.stack_capacity) == 0 && ms_live_init(ms_opt.capacity) == 0 &&
             ms_regions_init(ms_opt.region_capacity) == 0 &&
             ms_threads_init(ms_opt.thread_capacity) == 0 && ms_unwind_init() == 0;
    ms_pid = getpid();
    if (ok) {
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
        ms_guard_init(); /* after fatal.c: its handler gets the faults not in the pool */
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
