/* Internal interface of the agent (libmemsight.so) shared by its files and by the
 * helpers built on it (sampling/control thread, reachability leak scan).
 * Everything here runs inside the target: no malloc, no stdio, no lock held across fork. */
#ifndef MS_AGENT_H
#define MS_AGENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "agent/arch/arch.h"
#include "agent/tables/chunks.h"
#include "agent/services/control.h"
#include "agent/platform/vdso.h"
#include "core/agent_options.h"
#include "core/snapshot_write.h"
#include "memsight/snapshot_format.h"

#define MS_INTERNAL __attribute__((visibility("hidden")))
#define MS_LIKELY(x) __builtin_expect(!!(x), 1)
#define MS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MS_NOINLINE __attribute__((noinline))

#define MS_HAVE_LEAK_OPTIONS 1
#define MS_HAVE_SAMPLING_OPTION 1
/* Leak scan at exit, before the exit snapshot (leak_api.c). */
void ms_leak_at_exit(void) MS_INTERNAL;

/* The options the agent runs with (init.c); the table and parser are in
 * core/agent_options.c. Bad items are counted (bad_options) and reported once (META
 * option_errors, a line on stderr). */
extern ms_options ms_opt MS_INTERNAL;
extern char ms_opt_errors[160] MS_INTERNAL;
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
    void *pend;           /* unflushed live-total changes, mapped on first use (control.c) */
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

/* ===========================================================================
 * Lifecycle (init.c).
 * ========================================================================= */
enum { MS_STATE_NONE = 0, MS_STATE_INITING = 1, MS_STATE_READY = 2, MS_STATE_DISABLED = 3 };
extern int ms_state MS_INTERNAL;
/* Initialises on first use; safe from any thread, idempotent. Returns 1 when ready. */
int ms_init(void) MS_INTERNAL;
/* Once the agent is ready: points malloc, free, calloc and realloc at the variants made
 * for its configuration (alloc.c). */
void ms_alloc_entries_pick(void) MS_INTERNAL;
/* main() is entered: closes the descriptor `memsight run --watch` waits on (init.c). */
void ms_signal_ready(void) MS_INTERNAL;
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
/* Attaches so far (memsight attach, attach.c): 0 when started any other way. */
uint32_t ms_attach_sessions(void) MS_INTERNAL;
/* memsight_start() succeeded: its snapshot directory and signal shown in
 * memsight_attach_info (state still "never attached") for the memsight command. */
void ms_attach_publish_start(void) MS_INTERNAL;
/* The agent's mode and options in memsight_attach_info (at start and at every attach). */
void ms_attach_publish_mode(void) MS_INTERNAL;
/* The answer to a request (control.h's code, the number its signal carried, 0 or an
 * errno), in memsight_attach_info for the command waiting on it. */
void ms_attach_reply(unsigned request, unsigned seq, int err) MS_INTERNAL;

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

/* Bootstrap arena: allocations made before the real functions are known. */
void *ms_boot_alloc(size_t n, size_t align) MS_INTERNAL;
#define MS_BOOT_SIZE (256 * 1024)
extern unsigned char ms_boot_arena[MS_BOOT_SIZE] MS_INTERNAL;
/* Inline: free() asks this for every pointer (one subtraction and compare). */
static inline int ms_boot_owns(const void *p)
{
    return (uintptr_t)p - (uintptr_t)ms_boot_arena < (uintptr_t)MS_BOOT_SIZE;
}
size_t ms_boot_size(const void *p) MS_INTERNAL;

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
    uint64_t metrics_errors;     /* metrics_listen= could not serve (metrics_serve.c) */
    uint64_t foreign_frees;      /* recorded blocks freed by an allocator's own entry point,
                                  * found when their address was handed out again */
    uint64_t deepbind_modules;   /* RTLD_DEEPBIND modules given the agent's malloc family (dl.c) */
    uint64_t deepbind_unhooked;  /* RTLD_DEEPBIND loads by a bare name or $ORIGIN: left alone */
} ms_health_t;
extern ms_health_t ms_health MS_INTERNAL;
#define MS_HEALTH_INC(f) __atomic_fetch_add(&ms_health.f, 1, __ATOMIC_RELAXED)
#define MS_HEALTH_ADD(f, v) __atomic_fetch_add(&ms_health.f, (v), __ATOMIC_RELAXED)
/* A table could not grow (no address space or memory): counted in table_grow_failures,
 * and told once on stderr (chunks.c). */
void ms_table_grow_failed(void) MS_INTERNAL;
/* One line "memsight: pid N: " + the parts on stderr, in one write() (snapshot.c). */
void ms_say(const char *const *parts, size_t nparts) MS_INTERNAL;

/* ===========================================================================
 * Stack table (stacks.c): interned (kind, pcs), lock-free, ids from 1.
 * ========================================================================= */
typedef struct ms_stack_rec {
    uint64_t hash;
    uint64_t pcs_off;     /* index into the pc arena */
    uint32_t depth;
    uint16_t flags;       /* MS_STACKF_* */
    uint8_t kind;
    uint8_t thread_ref;   /* a thread's creation stack: written even with no allocation */
    uint64_t alloc_blocks, alloc_bytes; /* cumulative, relaxed atomics */
    uint64_t free_blocks, free_bytes;
    uint32_t id;
    uint32_t pad2;
} __attribute__((aligned(64))) ms_stack_rec;

int ms_stacks_init(uint64_t capacity) MS_INTERNAL;
/* Returns the id of (kind, pcs[0..depth)), inserting it; 0 when the table is full. */
uint32_t ms_stack_intern(unsigned kind, const uint64_t *pcs, unsigned depth, unsigned flags) MS_INTERNAL;
ms_stack_rec *ms_stack_get(uint32_t id) MS_INTERNAL; /* NULL if unknown */
extern ms_chunks ms_stack_recs MS_INTERNAL;
/* 16K records (1 MiB) per chunk: ms_own_ranges keeps a few hundred mappings at 1M stacks */
#define MS_STACK_RECS_SHIFT 14
/* The record of an id this thread had from ms_stack_intern (directly or through a cache):
 * no bounds check and no call, for the recording path; id 0 has none. */
static inline ms_stack_rec *ms_stack_known(uint32_t id)
{
    return id ? MS_CHUNKS_AT(&ms_stack_recs, id, MS_STACK_RECS_SHIFT, ms_stack_rec) : NULL;
}
/* Agent memory the stack tables hold (records, shards, pcs, index). */
uint64_t ms_stacks_bytes_mapped(void) MS_INTERNAL;
void ms_stacks_fork_prepare(void) MS_INTERNAL;
void ms_stacks_fork_parent(void) MS_INTERNAL;
void ms_stacks_fork_child(void) MS_INTERNAL;
const uint64_t *ms_stack_pcs(const ms_stack_rec *r) MS_INTERNAL;
uint32_t ms_stack_max_id(void) MS_INTERNAL; /* ids are 1..max_id */
/* Counters of a stack at a moment; live = alloc - free. */
void ms_stack_counters(const ms_stack_rec *r, ms_snap_counters *c) MS_INTERNAL;
/* Full mode with no live-total tracking (no sampling, no min_size, no peak/trigger):
 * free() does not touch the heap stack's record (a cold cache line and a locked add per
 * call); the free counters of heap stacks are then derived when needed from the live
 * table: free = alloc - live. ms_stack_live_sums() gives live blocks/bytes per heap
 * stack id (array of max_id+1, mmap'ed; release with ms_sys_munmap(p, *len)). */
extern int ms_heap_frees_derived MS_INTERNAL;
typedef struct ms_live_sum {
    uint64_t blocks, bytes;
    /* the stack's allocations still in the threads' tables (ms_pend_sums), read when
     * the array was made: one pass over the tables, not one per stack */
    uint64_t pend_blocks, pend_bytes;
} ms_live_sum;
ms_live_sum *ms_stack_live_sums(uint32_t max_id, size_t *len) MS_INTERNAL;
/* The same array with no live sums yet, for a caller that walks the live table itself and
 * adds each entry with ms_stack_live_sum_add (a snapshot's block list: one pass for both). */
ms_live_sum *ms_stack_live_sums_new(uint32_t max_id, size_t *len) MS_INTERNAL;
static inline void ms_stack_live_sum_add(ms_live_sum *s, uint32_t max_id, uint32_t stack_id,
                                         uint64_t size)
{
    if (stack_id <= max_id) {
        s[stack_id].blocks++;
        s[stack_id].bytes += size;
    }
}
/* A stack's counters now, its live ones from sums (of ms_stack_live_sums up to max_id, or
 * NULL) when its frees are derived. A stack above max_id (interned after the sums were
 * taken) keeps the counters it has. */
void ms_stack_counters_with(const ms_stack_rec *r, const ms_live_sum *sums, uint32_t max_id,
                            ms_snap_counters *c) MS_INTERNAL;
/* Live bytes and blocks of every kind, summed over the stacks as a snapshot sums them. */
void ms_stack_live_totals(uint64_t bytes[MS_KIND_COUNT], uint64_t blocks[MS_KIND_COUNT]) MS_INTERNAL;

/* Allocation counters are sharded: threads allocating from one call site would otherwise
 * bounce the record's cache line on every locked add. Shard 0 is the record's own
 * alloc_blocks/alloc_bytes; shards 1..MS_STACK_SHARDS-1 live in a side array (one
 * {blocks, bytes} pair per stack per shard, each shard a separate table that grows with
 * the records), chosen by the thread id. Readers sum them (ms_stack_counters,
 * ms_stack_used): exact once quiet. */
#define MS_STACK_SHARDS 4
extern ms_chunks ms_stack_shards[MS_STACK_SHARDS - 1] MS_INTERNAL; /* [shard-1]: id -> pair */
/* Heap stacks: shard 0 belongs to one thread, the first that records a block (usually the
 * main thread: the whole program when it is single-threaded), which adds to it without a
 * locked instruction (ms_arch_add_own); every other thread adds to shards 1.. with
 * relaxed atomics by its thread id. Only one thread ever writes shard 0, so the sums stay
 * exact. Region stacks (mmap.c) keep the shards by thread id: their records are other
 * records. */
/* The owner's adds inline (one test of count_own); the claim and the other threads'
 * shards out of line (stacks.c). */
void ms_stack_count_heap_alloc_other(ms_stack_rec *r, uint64_t blocks, uint64_t bytes) MS_INTERNAL;
static inline void ms_stack_count_heap_alloc(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    if (MS_UNLIKELY(ms_self.count_own <= 0)) {
        ms_stack_count_heap_alloc_other(r, blocks, bytes);
        return;
    }
    ms_arch_add_own(&r->alloc_blocks, blocks);
    ms_arch_add_own(&r->alloc_bytes, bytes);
}
/* 1 if the stack ever had an allocation counted (sum over shards). */
int ms_stack_used(const ms_stack_rec *r) MS_INTERNAL;

/* ---------------------------------------------------------------------------
 * The live total and the peak (dump_at_peak, on by default; trigger_bytes). Every
 * recorded change is first added to the calling thread's own table of pending changes
 * (plain stores on memory no other thread touches), keyed by stack id; the table is
 * flushed into the shared per-stack slots and the total every MS_PEND_FLUSH_EVENTS
 * changes, when the thread's pending bytes fall by MS_PEND_FLUSH_BYTES, at thread exit
 * and before the thread writes a snapshot, and as soon as they grow by more than the
 * `room` computed at the last flush: the distance from the total to the peak (or to the
 * byte trigger) then, plus a grain of 1/256 of the peak (1 KiB to MS_PEND_FLUSH_BYTES).
 * So a single-threaded program's peak is exact to within the grain, and with several
 * threads within the grain plus what the other threads hold unflushed; the ramp towards
 * a new peak flushes once per grain, and no shared cache line is written per call. The same table counts temporary allocations (a block freed by the thread
 * that allocated it, before it allocated anything else: heaptrack's definition) and the
 * allocation size histogram (full mode).
 * ------------------------------------------------------------------------- */
#define MS_PEND_WAYS 256
#define MS_PEND_FLUSH_EVENTS 4096
#define MS_PEND_FLUSH_BYTES (64 * 1024)
#define MS_HIST_BUCKETS 65 /* 0 bytes, then [2^(b-1), 2^b) for b = 1..64 */
typedef struct ms_pend_ent {
    uint32_t sid;          /* 0: empty; else listed in ms_pend.dirty (a flush empties the
                            * ways it lists, a way is listed when it is filled) */
    /* at most one per change each: a flush comes within MS_PEND_FLUSH_EVENTS + 1 */
    uint16_t temps;
    uint16_t alloc_blocks; /* heap blocks allocated from the stack (one block a change) */
    int64_t blocks, bytes; /* the stack's live change */
    uint64_t alloc_bytes;  /* their bytes */
} ms_pend_ent;             /* 32 bytes: the way's address is a shift */
/* The heap blocks' allocation counters are kept here instead of in the stack's record
 * (one per-thread record per call): a flush adds them to the record's shard, and readers
 * of the counters add what is still here (ms_pend_unflushed). */
_Static_assert(MS_PEND_FLUSH_EVENTS + 1 <= UINT16_MAX, "a way's 16-bit counts overflow");
typedef struct ms_pend {
    int64_t bytes;        /* the sum of the entries' bytes: this thread's unflushed share */
    uint64_t band;        /* room + MS_PEND_FLUSH_BYTES - 1 (ms_pend_due) */
    uint32_t events_left; /* changes until the periodic flush */
    uint32_t flush_due;   /* a deferred flush (ms_control_note_id) */
    uint64_t last_ptr;    /* the block this thread allocated last (temporaries) */
    struct ms_pend *next; /* every table ever made, for the counters' readers */
    uint32_t in_use;      /* a thread's; 0: given back at its exit, for the next thread */
    uint32_t ndirty;
    uint16_t dirty[MS_PEND_WAYS]; /* entries changed since the last flush */
    ms_pend_ent ent[MS_PEND_WAYS] __attribute__((aligned(64))); /* a way in one line */
    uint64_t hist[MS_HIST_BUCKETS];
} ms_pend;
ms_pend *ms_pend_new(void) MS_INTERNAL;
void ms_pend_flush(ms_pend *p) MS_INTERNAL;
/* Heap allocations of stack sid still in the threads' tables (added to *blocks, *bytes):
 * with the record's shards, the stack's allocation counters. Tables are read without a
 * lock (never unmapped: a table is given back at thread exit and reused): exact once the
 * threads are quiet, as the shards are; while a thread flushes, a read may count its
 * stack's changes in both places or in neither for a moment. */
void ms_pend_unflushed(uint32_t sid, uint64_t *blocks, uint64_t *bytes) MS_INTERNAL;
/* The same for every stack at once: added to s[sid].pend_* for sid <= max_id. */
struct ms_live_sum;
void ms_pend_sums(struct ms_live_sum *s, uint32_t max_id) MS_INTERNAL;
void ms_pend_thread_exit(void) MS_INTERNAL;
/* Applies a change to the shared slot of stack sid and to the total at once (a thread
 * without a table: exiting, or out of memory). */
void ms_control_apply_now(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps) MS_INTERNAL;

/* The way of stack sid in a thread's table (256 ways). */
static inline unsigned ms_pend_way(uint32_t sid)
{
    return (sid * 0x9E3779B1u) >> 24;
}

/* A change that brought the thread's pending bytes to b is the one to flush at: the
 * MS_PEND_FLUSH_EVENTS-th since the last flush, b at `room` or at -MS_PEND_FLUSH_BYTES.
 * One unsigned compare for both bounds: band is room + MS_PEND_FLUSH_BYTES - 1 (room >= 0;
 * a new table's band of 0 flushes at its first change, which sets both). */
static inline int ms_pend_due(ms_pend *p, int64_t b)
{
    return --p->events_left == 0 || (uint64_t)(b + MS_PEND_FLUSH_BYTES - 1) >= p->band;
}

static inline ms_pend *ms_pend_self(void)
{
    ms_pend *p = (ms_pend *)ms_self.pend;
    if (MS_UNLIKELY(!p))
        p = ms_pend_new();
    return p;
}

/* The note's rarer parts (no table yet, a flush due, the way held by another stack or
 * empty): out of line, so that the inline part keeps nothing live across a call and its
 * callers' frames stay small. */
void ms_control_note_slow(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
                          int defer, int counted) MS_INTERNAL;

/* defer: an allocation noted before its block is in the live table (ms_record_prepare):
 * a flush it makes due waits for the thread's next change (or snapshot, or exit), so that
 * a byte trigger's snapshot sees the block, and the commit calls nothing.
 * counted: one heap block's allocation (blocks 1), whose stack counters the note keeps;
 * without a table they go to the stack's record at once. */
static inline void ms_control_note_id(uint32_t sid, int64_t bytes, int64_t blocks, uint64_t temps,
                                      int defer, int counted)
{
    ms_pend *p = (ms_pend *)ms_self.pend; /* none while nothing is tracked (ms_pend_new) */
    if (MS_LIKELY(p != NULL) && MS_LIKELY(!p->flush_due)) {
        ms_pend_ent *e = &p->ent[ms_pend_way(sid)];
        if (MS_LIKELY(e->sid == sid)) { /* listed as dirty: a flush empties the way */
            e->bytes += bytes;
            e->blocks += blocks;
            e->temps += (uint16_t)temps;
            if (counted) {
                e->alloc_blocks++;
                e->alloc_bytes += (uint64_t)bytes;
            }
            int64_t b = p->bytes + bytes;
            p->bytes = b;
            if (MS_UNLIKELY(ms_pend_due(p, b))) {
                if (defer)
                    p->flush_due = 1;
                else
                    ms_pend_flush(p);
            }
            return;
        }
    }
    ms_control_note_slow(sid, bytes, blocks, temps, defer, counted);
}

static inline void ms_control_note(const ms_stack_rec *r, int64_t bytes, int64_t blocks)
{
    ms_control_note_id(r->id, bytes, blocks, 0, bytes > 0, 0);
}

/* blocks > 1: a sampled record standing for several blocks. ms_control_note keeps the
 * total and the peak. */
static inline void ms_stack_count_alloc_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    unsigned sh = ms_self.tid & (MS_STACK_SHARDS - 1); /* 0 (shard 0) until the tid is known */
    uint64_t *c = &r->alloc_blocks;
    if (sh) /* every stack interned has its shards mapped (stacks.c) */
        c = (uint64_t *)ms_chunks_at(&ms_stack_shards[sh - 1], r->id);
    __atomic_fetch_add(&c[0], blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c[1], bytes, __ATOMIC_RELAXED);
}
static inline void ms_stack_account_alloc_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    ms_stack_count_alloc_n(r, blocks, bytes);
    ms_control_note(r, (int64_t)bytes, (int64_t)blocks);
}
static inline void ms_stack_account_free_n(ms_stack_rec *r, uint64_t blocks, uint64_t bytes)
{
    __atomic_fetch_add(&r->free_blocks, blocks, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->free_bytes, bytes, __ATOMIC_RELAXED);
    ms_control_note(r, -(int64_t)bytes, -(int64_t)blocks);
}
static inline void ms_stack_account_alloc(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_alloc_n(r, 1, bytes);
}
static inline void ms_stack_account_free(ms_stack_rec *r, uint64_t bytes)
{
    ms_stack_account_free_n(r, 1, bytes);
}

/* ===========================================================================
 * Live heap blocks (live.c): a dense array of entries; each tracked block's header
 * (below) names its entry, so allocation and free write one entry and never search.
 * Whether an entry is in use is a byte of its own, in a dense array beside the entries
 * (live_hot.h): a free writes that byte only, not the entry's cold line.
 * ========================================================================= */
typedef struct ms_live_entry {
    uint64_t addr;       /* the program's pointer (kept after the block is freed) */
    uint64_t size;       /* bytes asked for */
    uint64_t ticks;      /* ms_ticks() at allocation; ms_ticks_to_ns() converts */
    uint32_t stack_id;
    uint32_t tid;
} ms_live_entry;         /* 32 bytes */

int ms_live_init(uint64_t capacity) MS_INTERNAL;
/* Taking and giving back entry indices, storing and clearing entries: live_hot.h
 * (inline, for the recording path). */
int ms_live_get(uint32_t idx, ms_live_entry *out) MS_INTERNAL;
/* Gives the calling thread's cached indices back (thread exit). */
void ms_live_thread_exit(void) MS_INTERNAL;
/* Looks a program pointer up through its header; 1 and *out if it is a live block. */
int ms_live_find(uint64_t addr, ms_live_entry *out) MS_INTERNAL;
/* Exact number of live entries (scans the used part of the array: not for hot paths). */
uint64_t ms_live_count(void) MS_INTERNAL;
uint64_t ms_live_bytes_reserved(void) MS_INTERNAL; /* agent memory used by the table */
#define MS_ITER_NOLOCK 0x1u /* accepted for compatibility: iteration takes no lock */
/* Calls fn for every live heap block. Entries are read without a lock (a block freed
 * meanwhile may or may not be seen). fn must not allocate; a non-zero return stops. */
typedef int (*ms_live_fn)(const ms_live_entry *e, unsigned kind, void *arg);
int ms_live_foreach(ms_live_fn fn, void *arg, unsigned flags) MS_INTERNAL;
void ms_live_fork_prepare(void) MS_INTERNAL;
void ms_live_fork_parent(void) MS_INTERNAL;
void ms_live_fork_child(void) MS_INTERNAL;

/* ===========================================================================
 * Heap block header (alloc.c): every block the agent hands out while ready carries 16
 * bytes just below the program's pointer. For memalign-family blocks with alignment
 * A > 16 the real block starts A bytes below the pointer (align_log2 = log2 A).
 *   u32 index   live entry (0: not tracked, e.g. table full)
 *   u32 check   (hash of pointer and a per-process secret) & ~63 | e, where e is 0 for
 *               a 16-byte header and align_log2 - 4 (1..59) for an over-aligned block:
 *               a valid check differs from the pointer's hash in its low bits only, by at
 *               most 59 (one compare in free, where a field of align_log2 itself, with
 *               1..4 invalid, took five instructions)
 *   u64 meta    size asked (low 40 bits) | stack id (high 24 bits)
 * A block without a valid check (allocated before init, by an agent thread, or by
 * another path) is passed to the real functions unchanged. Only when the real malloc is
 * the C library's, whose own chunk header lies below every block it hands out (so the
 * 16 bytes read below any pointer its free may receive are mapped): with another
 * allocator every mode records by address, without a header (control.c).
 * ========================================================================= */
typedef struct ms_hdr {
    uint32_t index;
    uint32_t check;
    uint64_t meta;
} ms_hdr;
#define MS_HDR_SIZE 16u
#define MS_HDR_SIZE_BITS 40
#define MS_HDR_SIZE_MASK ((1ull << MS_HDR_SIZE_BITS) - 1)
#define MS_HDR_MAX_STACK ((1u << 24) - 1)
extern uint64_t ms_hdr_secret MS_INTERNAL;
/* Pointers are compared and hashed without a top-byte tag (AArch64: Android's tagged
 * heap pointers, MTE): a block freed through a tagged pointer is still the agent's. */
static inline uint64_t ms_ptr_key(const void *p) { return ms_arch_untag((uintptr_t)p); }
/* The pointer the C library's allocator gave, from one the program gives back: glibc's
 * and musl's allocators hand out untagged memory, so a tag is the program's own. */
static inline void *ms_real_ptr(void *p) { return (void *)ms_arch_untag((uintptr_t)p); }
static inline uint32_t ms_hdr_check(const void *p, unsigned align_log2)
{
    uint64_t h = (ms_ptr_key(p) ^ ms_hdr_secret) * 0x9E3779B97F4A7C15ull;
    /* align_log2 is 0 or 5..63 (alignments above the header's 16 bytes) */
    return ((uint32_t)(h >> 32) & ~63u) | (align_log2 ? (align_log2 - 4) & 63u : 0);
}
static inline ms_hdr *ms_hdr_of(const void *p)
{
    return (ms_hdr *)((char *)(uintptr_t)p - MS_HDR_SIZE);
}
/* Sampled and min_size modes give most blocks no header, so the 16 bytes below a
 * pointer are usually the allocator's (or the previous block's data): a matching check
 * is then confirmed exactly (control.c's ms_hdr_confirm: the live entry names p, or an
 * untracked header carries a second 64-bit mark of p). */
extern int ms_hdr_confirm_needed MS_INTERNAL;
int ms_hdr_confirm(const void *p) MS_INTERNAL;
uint64_t ms_hdr_mark(const void *p) MS_INTERNAL;
/* 1 if the 16 bytes below p look like an agent header (the check matches); in sampled
 * and min_size modes ms_hdr_confirm must still say yes (ms_hdr_valid does both). */
static inline int ms_hdr_check_matches(const void *p)
{
    if (((uintptr_t)p & 15) != 0 || (uintptr_t)p < 4096)
        return 0;
    return (ms_hdr_of(p)->check ^ ms_hdr_check(p, 0)) <= 59u;
}
/* 1 if p carries a header written by the agent. */
static inline int ms_hdr_valid(const void *p)
{
    return ms_hdr_check_matches(p) && (MS_LIKELY(!ms_hdr_confirm_needed) || ms_hdr_confirm(p));
}
static inline void *ms_hdr_base(void *p)
{
    unsigned e = ms_hdr_of(p)->check & 63u;
    return (char *)p - (e ? (1ull << (e + 4)) : MS_HDR_SIZE);
}

/* ===========================================================================
 * Regions (mmap.c): live mmap regions (kind mmap), PROT_NONE reservations (kind reserved)
 * and thread stacks (kind stack), in a sorted array under one spinlock (mmap is a system
 * call anyway).
 * ========================================================================= */
int ms_regions_init(uint64_t capacity) MS_INTERNAL;
void ms_region_add(uint64_t addr, uint64_t size, unsigned kind, uint32_t stack_id, uint32_t tid) MS_INTERNAL;
/* Removes [addr, addr+len) from every region it overlaps (trim/split). */
void ms_region_remove_range(uint64_t addr, uint64_t len) MS_INTERNAL;
/* Removes the region that starts exactly at addr with the given kind. */
int ms_region_remove_exact(uint64_t addr, unsigned kind) MS_INTERNAL;
/* After a successful mprotect of [addr, addr+len): the parts of mmap and reserved regions
 * inside move to kind mmap (accessible) or reserved (PROT_NONE), splitting regions; a
 * moved part keeps its region's call stack (interned for the new kind). Thread stacks
 * are left alone. */
void ms_region_protect(uint64_t addr, uint64_t len, int accessible) MS_INTERNAL;
/* Kind of the region holding addr (MS_KIND_MMAP when none does). */
unsigned ms_region_kind_at(uint64_t addr) MS_INTERNAL;
int ms_regions_foreach(ms_live_fn fn, void *arg, unsigned flags) MS_INTERNAL;
uint64_t ms_regions_count(void) MS_INTERNAL;
void ms_regions_fork_prepare(void) MS_INTERNAL;
void ms_regions_fork_parent(void) MS_INTERNAL;
void ms_regions_fork_child(void) MS_INTERNAL;

/* ===========================================================================
 * Threads (threads.c): registry of the process's threads with their stack bounds.
 * ========================================================================= */
enum {
    MS_THR_USED = 0x1,     /* slot in use */
    MS_THR_DETACHED = 0x2, /* detached (attribute or pthread_detach) */
    MS_THR_EXITED = 0x4,   /* start routine returned / pthread_exit */
    MS_THR_STACK_DROPPED = 0x8,
    MS_THR_MAIN = 0x10,
    MS_THR_STARTED = 0x20,
    /* how it was created and how it ended (THRL flags, snapshot_format.h) */
    MS_THR_ATTR_DETACHED = MS_THRL_F_ATTR_DETACHED,
    MS_THR_RETURNED = MS_THRL_F_RETURNED,
    MS_THR_PTHREAD_EXIT = MS_THRL_F_PTHREAD_EXIT,
    MS_THR_CANCELLED = MS_THRL_F_CANCELLED,
};
typedef struct ms_thread_slot {
    uint32_t state;        /* MS_THR_* (atomic) */
    uint32_t tid;
    pthread_t handle;
    uintptr_t stack_lo, stack_hi; /* usable stack, for unwinding and leak scans */
    uint64_t stack_rec_addr;      /* region recorded for the stack (0 = none) */
    uint64_t stack_rec_size;
    uint32_t stack_id;            /* pthread_create call stack */
    uint32_t creator_tid;
    void *(*start)(void *);
    void *arg;  /* pthread_create's argument: glibc keeps ours in its thread descriptor, */
    void *ret;  /* so these two are leak-scan roots until the thread is joined */
    /* its life, for the thread-leak report (thread_life.c) */
    uint64_t create_ns, exit_ns;  /* CLOCK_REALTIME; exit_ns 0 while it runs */
    uint64_t guard_size;
    char name[16];                /* its name when it exited (comm) */
} ms_thread_slot;

int ms_threads_init(uint64_t capacity) MS_INTERNAL;
/* Calls fn for every live thread slot (MS_THR_USED and not exited). */
typedef int (*ms_thread_fn)(const ms_thread_slot *t, void *arg);
int ms_threads_foreach(ms_thread_fn fn, void *arg) MS_INTERNAL;
/* The same for every slot in use: not started yet, running, or exited and not joined. */
int ms_threads_foreach_used(ms_thread_fn fn, void *arg) MS_INTERNAL;
void ms_threads_register_main(void) MS_INTERNAL;
void ms_threads_fork_child(void) MS_INTERNAL;
/* Live threads other than the caller and the control thread, from /proc (0 if unknown). */
int ms_proc_other_threads(void) MS_INTERNAL;
/* Starts a joinable thread of the agent's (the real pthread_create, so the registry does
 * not count it; a 256 KiB stack) with every signal blocked: fn sets its own mask. 0 or an
 * errno. */
int ms_agent_thread_create(pthread_t *th, void *(*fn)(void *)) MS_INTERNAL;
/* Fills ms_self.stack_lo/hi for the calling thread if not known yet. */
void ms_thread_bounds(void) MS_INTERNAL;

/* Thread lives (thread_life.c): counters and the THRL chunk of every snapshot. */
enum ms_tlife_event {
    MS_TLIFE_CREATED,   /* pthread_create succeeded (registered or not) */
    MS_TLIFE_UNTRACKED, /* ... but the registry was full: not in THRL */
    MS_TLIFE_JOINED,    /* a join succeeded */
    MS_TLIFE_DETACHED,  /* detached by attribute or pthread_detach */
    MS_TLIFE_EXITED,    /* a registered thread ended (return, pthread_exit, cancel) */
    MS_TLIFE_COUNT
};
void ms_tlife_init(void) MS_INTERNAL;
void ms_tlife_count(enum ms_tlife_event e) MS_INTERNAL;
/* The calling thread's slot is about to be marked exited: when, how, its name. */
void ms_tlife_exiting(ms_thread_slot *s, uint32_t how) MS_INTERNAL;
/* The registry is full: said once on stderr (dropped_threads counts each). */
void ms_tlife_table_full(void) MS_INTERNAL;
void ms_tlife_fork_child(void) MS_INTERNAL;

/* ===========================================================================
 * Unwinding (unwind.c, unwind_cfi.c).
 * ========================================================================= */
/* Walks the caller's stack, skipping the agent's own frames; pcs innermost first.
 * Returns the depth; *flags gets MS_STACKF_*. */
unsigned ms_unwind(uint64_t *pcs, unsigned max, unsigned *flags) MS_INTERNAL;
/* The same; a complete walk may also give (in *sid_slot, else NULL) the calling thread's
 * cached heap stack id of exactly these pcs, valid until the thread's next walk: when it
 * holds an id, that is the answer and pcs are not filled; when it holds 0, pcs are
 * complete and the caller stores their id there. */
unsigned ms_unwind_ctx(uint64_t *pcs, unsigned max, unsigned *flags, uint32_t **sid_slot) MS_INTERNAL;
int ms_unwind_init(void) MS_INTERNAL;
/* From a signal context (the first pc is the interrupted instruction); async-signal-safe,
 * reads only within the calling thread's known stack. */
unsigned ms_unwind_context(const void *uc, uint64_t *pcs, unsigned max, unsigned *flags) MS_INTERNAL;
const char *ms_unwind_name(void) MS_INTERNAL;
/* Called after dlclose: forget cached rules of unmapped code. */
void ms_unwind_invalidate(void) MS_INTERNAL;

/* ===========================================================================
 * Recording (alloc.c hot path; record.c slow parts).
 * ========================================================================= */
/* Records a new heap block at p (its 16 header bytes below p are ours to write):
 * unwinds, interns, accounts, takes a live entry and writes the header. */
void ms_record_heap(void *p, size_t size, unsigned align_log2) MS_INTERNAL;
/* The same in two steps around the real allocation, so that no copy of the block's
 * address is left in the agent's dead frames (record.c): prepare before (unwinds,
 * accounts, takes the live index), then commit with the block (stores only, returns p),
 * or abort when the allocation failed. */
typedef struct ms_rec_prep {
    uint64_t weight; /* 0: sampled mode, not taken (an untracked header); with idx 0 and
                      * weight non-zero the block was dropped (no room, too large) */
    uint64_t ticks;
    uint32_t sid, idx; /* idx 0: not tracked */
    uint32_t tid;
} ms_rec_prep;
void ms_record_prepare(ms_rec_prep *rp, size_t size) MS_INTERNAL;
void *ms_record_commit(void *p, size_t size, unsigned align_log2,
                       const ms_rec_prep *rp) MS_INTERNAL;
void ms_record_abort(const ms_rec_prep *rp, size_t size) MS_INTERNAL;
/* The commit's live entry alone, for a block that has no header (guard pages). */
void ms_record_commit_entry(const void *p, size_t size, const ms_rec_prep *rp) MS_INTERNAL;
/* Forgets a block whose header is valid, before it is freed (entry and counters). */
void ms_forget_heap(void *p) MS_INTERNAL;
/* The same from what the header held: live entry idx of p, size asked, stack id. */
void ms_forget_entry(const void *p, uint32_t idx, uint64_t size, uint32_t sid) MS_INTERNAL;
/* Takes a block just removed from the live table out of its stack's counters (its
 * weight when it was sampled). */
void ms_account_forget(const ms_live_entry *e) MS_INTERNAL;
/* Unwinds the caller and returns its stack id for `kind` (0 if none). */
uint32_t ms_current_stack(unsigned kind) MS_INTERNAL;
/* Releases the calling thread's recent-stack cache (thread exit). */
void ms_scache_thread_exit(void) MS_INTERNAL;

/* ===========================================================================
 * Snapshots (snapshot.c).
 * ========================================================================= */
/* Called with the open writer after the agent's own chunks, before END: a helper
 * appends its chunks (ms_sw_begin/put/end). Must not allocate. */
typedef void (*ms_snapshot_extra_fn)(ms_snap_writer *w, void *arg);
/* Writes <out>/memsight-<pid>-<NNNN>-<reason>.msnap atomically. `reason` is one of
 * exit|signal|interval|peak|trigger|leakcheck|api|fatal. The path written is copied to
 * path (if not NULL). Returns 0 or a negative errno. Thread-safe (one at a time). */
int ms_snapshot_write(const char *reason, ms_snapshot_extra_fn extra, void *arg, char *path,
                      size_t pathlen) MS_INTERNAL;
/* Registers a hook called by every snapshot (e.g. leak results, peak counters). */
int ms_snapshot_add_hook(ms_snapshot_extra_fn fn, void *arg) MS_INTERNAL;
/* 1 when the calling thread is inside ms_snapshot_write (holds its lock). */
int ms_snapshot_held_by_me(void) MS_INTERNAL;

/* ===========================================================================
 * Fatal signals (fatal.c): with fatal_snapshot=1, a last snapshot (and the leak scan
 * with leak_check=exit) from the handler of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT,
 * then the signal's default action. Installed only where the program has none.
 * ========================================================================= */
void ms_fatal_init(void) MS_INTERNAL;
void ms_snapshot_fork_child(void) MS_INTERNAL;
/* Maps memsight run's tally of the run's processes that cannot write their exit snapshot
 * (MEMSIGHT_TALLY), at start (snapshot.c). */
void ms_snapshot_tally_init(void) MS_INTERNAL;
/* META keys of an attached agent (attach.c): attached_ns, first_attached_ns,
 * attach_sessions; returns how many it wrote (0 when never attached). */
uint32_t ms_attach_meta(ms_snap_writer *w) MS_INTERNAL;

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
