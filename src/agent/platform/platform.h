/* The platform layer (src/agent/platform, the bottom of the agent above arch/ and libc/):
 * what every other layer stands on. The per-thread state, the agent's lifecycle state,
 * clocks, raw system calls for its own memory, the real functions behind the
 * interposers, the health counters, the options it runs with, and the walks of the
 * loaded modules. Implemented in base.c and dl_guard.c; it calls nothing above it.
 * Runs inside the target: no malloc, no stdio, no lock held across fork. */
#ifndef MS_AGENT_PLATFORM_H
#define MS_AGENT_PLATFORM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "agent/arch/arch.h"
#include "agent/platform/vdso.h"
#include "core/agent_options.h"

#define MS_INTERNAL __attribute__((visibility("hidden")))
#define MS_LIKELY(x) __builtin_expect(!!(x), 1)
#define MS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MS_NOINLINE __attribute__((noinline))

/* The options the agent runs with (base.c; read at start by services/init.c); the table
 * and parser are in core/agent_options.c. Bad items are counted (bad_options) and
 * reported once (META option_errors, a line on stderr). */
extern ms_options ms_opt MS_INTERNAL;
/* the first bad item's message, then what ms_option_unavailable adds ("; ...") */
extern char ms_opt_errors[MS_OPT_ERR_MAX + 256] MS_INTERNAL;
/* Parses s (NULL: defaults) into ms_opt; `source` names where it came from in the line
 * said on stderr about bad items (MEMSIGHT_OPTIONS, memsight_start options...). */
void ms_options_read(const char *s, const char *source) MS_INTERNAL;
void ms_option_unavailable(const char *what) MS_INTERNAL;

/* ===========================================================================
 * Per-thread state (initial-exec TLS: no allocation, no lock on first access).
 * The leak scan roots every thread's whole static TLS, the agent's own variables
 * included (leak_scan.c, root_tls): no field here may hold a pointer to a program's
 * block (say, the last one allocated), or that block and all it points to would never
 * be reported lost. Such values live in the agent's mapped memory (the pending-change
 * table's last_ptr), which is never a root.
 * ========================================================================= */
struct ms_thread_slot;
#define MS_IDX_CACHE 256
typedef struct ms_tls {
    int busy;             /* >0 while inside the agent or the real allocator */
    uint32_t tid;
    uintptr_t stack_lo;   /* bounds for unwinding reads; 0 = not known yet */
    uintptr_t stack_hi;
    struct ms_thread_slot *slot;
    int exit_done;        /* thread-exit bookkeeping already ran */
    int counted;          /* 1: one of the program's threads alive (threads.c) */
    void *cfi;            /* unwinder state, mapped on first use (unwind_cfi.c) */
    void *scache;         /* recent-stack cache, mapped on first use (record.c) */
    void *pend;           /* unflushed live-total changes, mapped on first use (tables/totals.c) */
    uint64_t scache_clock;
    int count_own;        /* 1: adds to shard 0 of heap stacks' counters alone; -1: not */
    uintptr_t walk_fp;    /* frame record of the recording call a walk starts from (0: its own) */
    uint32_t nidx;        /* cached free live-table indices (live.c) */
    uint32_t idx[MS_IDX_CACHE];
} ms_tls;

extern __thread ms_tls ms_self __attribute__((tls_model("initial-exec"))) MS_INTERNAL;

static inline void ms_enter(void) { ms_self.busy++; }
static inline void ms_leave(void) { ms_self.busy--; }
uint32_t ms_gettid_slow(void) MS_INTERNAL;
/* Inline: the recording path asks for it on every block. */
static inline uint32_t ms_gettid(void)
{
    return MS_LIKELY(ms_self.tid != 0) ? ms_self.tid : ms_gettid_slow();
}

/* Pointers are compared and hashed without a top-byte tag (AArch64: Android's tagged
 * heap pointers, MTE): a block freed through a tagged pointer is still the agent's. */
static inline uint64_t ms_ptr_key(const void *p) { return ms_arch_untag((uintptr_t)p); }
/* The pointer the C library's allocator gave, from one the program gives back: glibc's
 * and musl's allocators hand out untagged memory, so a tag is the program's own. */
static inline void *ms_real_ptr(void *p) { return (void *)ms_arch_untag((uintptr_t)p); }

/* ===========================================================================
 * Lifecycle state, clocks and the agent's own memory (base.c). The start itself is
 * services/init.c's (ms_init, a hook of record.h).
 * ========================================================================= */
enum { MS_STATE_NONE = 0, MS_STATE_INITING = 1, MS_STATE_READY = 2, MS_STATE_DISABLED = 3 };
extern int ms_state MS_INTERNAL;
uint64_t ms_now_ns(void) MS_INTERNAL;   /* CLOCK_REALTIME */
uint64_t ms_start_ns(void) MS_INTERNAL; /* CLOCK_REALTIME when the agent started */
/* Blocks' timestamp: the coarse monotonic clock (the vDSO reads it without a system call,
 * called directly: vdso.h; jiffy resolution is enough for ages). Inline: the recording
 * path stamps every block. */
static inline uint64_t ms_ticks(void)
{
    struct timespec ts;
    ms_clock_coarse_fn(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t ms_ticks_to_ns(uint64_t t) MS_INTERNAL;
/* Raw syscalls for the agent's own memory (never recorded, never malloc). */
void *ms_sys_mmap(size_t len) MS_INTERNAL;           /* MAP_NORESERVE anonymous */
void ms_sys_munmap(void *p, size_t len) MS_INTERNAL;
/* MREMAP_MAYMOVE of a mapping made by ms_sys_mmap, kept in the registry below; NULL when
 * it cannot grow (the old mapping stays). */
void *ms_sys_mremap(void *old, size_t old_len, size_t new_len) MS_INTERNAL;
/* The agent's own live mappings made by ms_sys_mmap (at most cap; *lost: mappings that
 * did not fit in the registry of MS_OWN_MAX and so cannot be told apart). */
#define MS_OWN_MAX 4096
size_t ms_own_ranges(uint64_t *lo, uint64_t *hi, size_t cap, uint64_t *lost) MS_INTERNAL;
/* Takes the pair (ticks, realtime) that ms_ticks_to_ns converts with (at start). */
void ms_clock_start(void) MS_INTERNAL;

/* The real functions behind our interposers. */
typedef struct ms_real_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*memalign)(size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    /* musl's headers make mmap64 a macro of mmap: a name of its own here */
    void *(*mmap_lfs64)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    int (*pthread_join)(pthread_t, void **);
    int (*pthread_tryjoin_np)(pthread_t, void **);
    int (*pthread_timedjoin_np)(pthread_t, void **, const struct timespec *);
    int (*pthread_clockjoin_np)(pthread_t, void **, clockid_t, const struct timespec *);
    int (*pthread_detach)(pthread_t);
    void (*pthread_exit)(void *) __attribute__((noreturn));
    int (*dlclose)(void *);
} ms_real_fns;
extern ms_real_fns ms_real MS_INTERNAL;
/* 1 when the real malloc is the C library's (it never calls an interposed function). */
extern int ms_real_malloc_is_libc MS_INTERNAL;

/* The agent's own text range (its frames are cut from every stack). */
extern uintptr_t ms_self_lo MS_INTERNAL, ms_self_hi MS_INTERNAL;

/* ===========================================================================
 * Health counters (reported in HLTH). Relaxed atomics, updated off the fast path.
 * ========================================================================= */
typedef struct ms_health {
    uint64_t dropped_blocks;     /* live table full */
    uint64_t dropped_stacks;     /* stack table full: recorded under stack 0 */
    uint64_t dropped_regions;    /* region table full */
    uint64_t dropped_threads;    /* thread registry full */
    uint64_t unwind_failures;    /* walks that stopped on an error */
    uint64_t unwind_truncated;   /* walks that hit max_depth */
    uint64_t pc_cache_misses;    /* unwind rules computed from .eh_frame */
    uint64_t pc_cache_full;      /* rules that could not be cached */
    uint64_t unwind_fallbacks;   /* walks handed to libunwind */
    uint64_t unknown_frees;      /* free() of a pointer the agent did not track */
    uint64_t boot_allocs;        /* served from the bootstrap arena */
    uint64_t bad_options;        /* unknown keys / bad values in MEMSIGHT_OPTIONS */
    uint64_t table_grow_failures; /* a table could not map its next chunk (chunks.c) */
    uint64_t snapshot_errors;    /* snapshots not written (a line on stderr says why) */
    uint64_t snapshot_last_errno; /* why the last one was not: ENOSPC, EFBIG, ENOMEM... */
    uint64_t snapshot_renamed;   /* written under the next number: the name was taken */
    uint64_t agent_ns;           /* time spent writing snapshots */
    uint64_t module_refreshes;
    uint64_t dlclose_calls;
    uint64_t leak_sigchld_forks; /* scan children that had to signal SIGCHLD (qemu-user) */
    uint64_t leak_scan_failures; /* scans whose child ended before it sent its result */
    uint64_t leak_scan_child_signal; /* the last such child: the signal that killed it, */
    uint64_t leak_scan_child_exit;   /* or its exit status (leak_scan.c says which means what) */
    uint64_t guard_allocs;       /* blocks given a guarded page (guard.c) */
    uint64_t guard_pool_full;    /* picked but every slot was live: the normal allocator */
    uint64_t guard_too_large;    /* picked but larger than a page (or over-aligned) */
    uint64_t guard_errors;       /* errors the guard pages caught */
    uint64_t guard_failures;     /* pool or signal stack could not be mapped, mprotect failed */
    uint64_t guard_budget_stretches; /* guard_budget: times the rate was doubled (guard.c) */
    uint64_t guard_spent_ns;     /* guard_budget: ns measured in guarded allocations and frees */
    uint64_t metrics_errors;     /* metrics_listen= could not serve (metrics_serve.c) */
    uint64_t foreign_frees;      /* recorded blocks freed by an allocator's own entry point,
                                  * found when their address was handed out again */
    uint64_t deepbind_modules;   /* RTLD_DEEPBIND modules given the agent's malloc family (dl.c) */
    uint64_t deepbind_unhooked;  /* RTLD_DEEPBIND loads by a bare name or $ORIGIN: left alone */
} ms_health_t;
extern ms_health_t ms_health MS_INTERNAL;
#define MS_HEALTH_INC(f) __atomic_fetch_add(&ms_health.f, 1, __ATOMIC_RELAXED)
#define MS_HEALTH_ADD(f, v) __atomic_fetch_add(&ms_health.f, (v), __ATOMIC_RELAXED)
/* One line "memsight: pid N: " + the parts on stderr, in one write() (snapshot.c). */
void ms_say(const char *const *parts, size_t nparts) MS_INTERNAL;

/* ===========================================================================
 * Walks of the loaded modules that fork() must not split (dl_guard.c).
 * ========================================================================= */
struct dl_phdr_info;
int ms_dl_begin(int wait) MS_INTERNAL; /* 0: a fork is under way and wait was 0 */
void ms_dl_end(void) MS_INTERNAL;
int ms_dl_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg) MS_INTERNAL;
void ms_dl_fork_prepare(void) MS_INTERNAL;
void ms_dl_fork_parent(void) MS_INTERNAL;
void ms_dl_fork_child(void) MS_INTERNAL;

#endif