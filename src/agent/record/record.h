/* The record layer (src/agent/record): the interposed entry points (the malloc family,
 * mmap, munmap, mremap, mprotect, pthread_create and the joins, dlopen, dlclose), the
 * heap block header, the region and thread registries, the sampler, the guard-page
 * pool, and the recording of a block (unwind, intern, account). It calls the layers
 * below (platform, tables, unwind) and, on rare paths only, the hooks listed at the end.
 * Runs inside the target: no malloc of its own, no lock held across fork. */
#ifndef MS_AGENT_RECORD_H
#define MS_AGENT_RECORD_H

#include "agent/tables/tables.h"
#include "agent/unwind/unwind.h"

/* Once the agent is ready: points malloc, free, calloc and realloc at the variants made
 * for its configuration (alloc.c). */
void ms_alloc_entries_pick(void) MS_INTERNAL;

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
 * allocator every mode records by address, without a header (services/control.c).
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
 * is then confirmed exactly (record.c's ms_hdr_confirm: the live entry names p, or an
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
int ms_agent_thread_create(pthread_t *th, void *(*fn)(void *)) MS_INTERNAL;/* Thread lives (thread_life.c): counters and the THRL chunk of every snapshot. */
enum ms_tlife_event {
    MS_TLIFE_CREATED,   /* pthread_create succeeded (registered or not) */
    MS_TLIFE_UNTRACKED, /* ... but the registry was full: not in THRL */
    MS_TLIFE_JOINED,    /* a join succeeded */
    MS_TLIFE_DETACHED,  /* detached by attribute or pthread_detach */
    MS_TLIFE_EXITED,    /* a registered thread ended (return, pthread_exit, cancel) */
    MS_TLIFE_COUNT
};
/* The THRL chunk (a snapshot hook: services/init.c registers it at start). */
void ms_tlife_write(ms_snap_writer *w, void *arg) MS_INTERNAL;
void ms_tlife_count(enum ms_tlife_event e) MS_INTERNAL;
/* The calling thread's slot is about to be marked exited: when, how, its name. */
void ms_tlife_exiting(ms_thread_slot *s, uint32_t how) MS_INTERNAL;
/* The registry is full: said once on stderr (dropped_threads counts each). */
void ms_tlife_table_full(void) MS_INTERNAL;
void ms_tlife_fork_child(void) MS_INTERNAL;

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

/* Recording without a header (record_addr.c): commit a prepared record (ms_record_prepare)
 * for the block p the allocator gave; nothing when the record was not taken; the record
 * undone when p is NULL (the allocation failed). Returns p. */
void *ms_record_commit_addr(void *p, size_t size, const ms_rec_prep *rp) MS_INTERNAL;
/* Forgets p before it is freed or moved: 1 when it was a recorded block (its size asked
 * in *size when size is not NULL), 0 when plain. */
int ms_forget_addr(const void *p, size_t *size) MS_INTERNAL;
/* A recorded block the program freed behind the agent's back (an allocator's own free):
 * its live entry idx forgotten as if free() had been called, and counted (foreign_frees). */
void ms_forget_addr_stale(uint32_t idx) MS_INTERNAL;


/* ===========================================================================
 * Hooks: the record layer's only calls upward, each on a rare path (never per
 * allocation: the allocation path tests a flag first). Declared here, implemented above
 * (docs/agent.md, "Layers").
 * ========================================================================= */
/* The agent's start on first use (services/init.c): safe from any thread, idempotent;
 * 1 when ready. Every interposer calls it until the agent is ready. */
int ms_init(void) MS_INTERNAL;
/* A request noticed on the allocation path (services/control.c): ms_ctl_need_start is
 * raised when the control thread is wanted or a request waits for a program thread
 * (control.h says when); the allocation path then calls in. One load per call. */
extern int ms_ctl_need_start MS_INTERNAL;
void ms_control_start_slow(void) MS_INTERNAL;
static inline void ms_control_maybe_start(void)
{
    if (__builtin_expect(__atomic_load_n(&ms_ctl_need_start, __ATOMIC_RELAXED) != 0, 0))
        ms_control_start_slow();
}
/* Thread events for the control thread (services/control.c): the program started a
 * thread of its own; the last program thread the agent counted is leaving. */
void ms_control_program_threaded(void) MS_INTERNAL;
void ms_control_program_gone(void) MS_INTERNAL;
/* The agent's own threads, which are never the program's (services/control.c,
 * services/metrics_serve.c): thread ids, 0 if none. */
uint32_t ms_control_tid(void) MS_INTERNAL;
uint32_t ms_metrics_tid(void) MS_INTERNAL;

#endif