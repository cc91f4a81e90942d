/* mmap, mmap64, munmap, mremap interposers and the table of live regions (program
 * mappings, kind mmap; PROT_NONE reservations, kind reserved; thread stacks, kind stack):
 * a sorted array under one spinlock, since each of these calls is a system call anyway.
 * Partial munmap trims or splits a region; mremap frees the old range and records the
 * new one; mprotect (mprotect.c) moves pieces between mmap and reserved here.
 * Runs inside the target: no malloc, the lock is never held across fork. */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/record/record.h"
#include "agent/arch/arch.h"

#define MS_EXPORT __attribute__((visibility("default")))

typedef struct ms_region {
    uint64_t addr, size;
    uint64_t ticks;
    uint32_t stack_id;
    uint32_t tid;
    uint32_t kind;
    uint32_t pad;
} ms_region;

static ms_region *ms_regs;
static uint64_t ms_nregs, ms_regs_cap;
static uint64_t ms_regs_mapped; /* regions the mapping holds; grows up to ms_regs_cap */
static int ms_regs_lock;

static void regs_lock(void)
{
    for (unsigned spins = 0;; spins++) {
        if (!__atomic_load_n(&ms_regs_lock, __ATOMIC_RELAXED) &&
            !__atomic_exchange_n(&ms_regs_lock, 1, __ATOMIC_ACQUIRE))
            return;
        if (spins > 64)
            sched_yield();
        else
            ms_arch_cpu_relax();
    }
}

static void regs_unlock(void)
{
    __atomic_store_n(&ms_regs_lock, 0, __ATOMIC_RELEASE);
}

int ms_regions_init(uint64_t capacity)
{
    if (capacity < 16)
        capacity = 16;
    ms_regs_cap = capacity;
    ms_regs_mapped = capacity < 1024 ? capacity : 1024;
    ms_regs = ms_sys_mmap(ms_regs_mapped * sizeof(ms_region));
    return ms_regs ? 0 : -1;
}

/* Room for n more regions (lock held; every reader holds it too, or runs in a forked
 * child): the array doubles, moved by mremap, in proportion to use. 0 when full or when
 * it cannot grow (counted). */
static int regs_room_locked(uint64_t n)
{
    if (ms_nregs + n > ms_regs_cap)
        return 0;
    if (ms_nregs + n <= ms_regs_mapped)
        return 1;
    uint64_t cap = ms_regs_mapped;
    while (cap < ms_nregs + n)
        cap *= 2;
    if (cap > ms_regs_cap)
        cap = ms_regs_cap;
    void *r = ms_sys_mremap(ms_regs, ms_regs_mapped * sizeof(ms_region), cap * sizeof(ms_region));
    if (!r) {
        static uint64_t failed_cap; /* counted once per size it could not reach */
        if (failed_cap != cap)
            ms_table_grow_failed();
        failed_cap = cap;
        return 0;
    }
    ms_regs = r;
    ms_regs_mapped = cap;
    return 1;
}

/* First index whose region ends after addr. */
static uint64_t regs_lower(uint64_t addr)
{
    uint64_t lo = 0, hi = ms_nregs;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (ms_regs[mid].addr + ms_regs[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int regs_insert_locked(const ms_region *r)
{
    if (!regs_room_locked(1))
        return -1;
    uint64_t i = regs_lower(r->addr);
    while (i < ms_nregs && ms_regs[i].addr < r->addr)
        i++;
    memmove(&ms_regs[i + 1], &ms_regs[i], (ms_nregs - i) * sizeof(ms_region));
    ms_regs[i] = *r;
    ms_nregs++;
    return 0;
}

static void regs_remove_at(uint64_t i)
{
    memmove(&ms_regs[i], &ms_regs[i + 1], (ms_nregs - i - 1) * sizeof(ms_region));
    ms_nregs--;
}

/* Per-stack accounting of regions. Reserved address space is not memory: it stays out of
 * the live total that peaks and byte triggers follow (ms_totals_note). A partial change
 * moves bytes and no block (blocks 0). */
static void acct_alloc(ms_stack_rec *st, unsigned kind, uint64_t blocks, uint64_t bytes)
{
    if (!st)
        return;
    if (kind == MS_KIND_RESERVED) {
        __atomic_fetch_add(&st->alloc_blocks, blocks, __ATOMIC_RELAXED);
        __atomic_fetch_add(&st->alloc_bytes, bytes, __ATOMIC_RELAXED);
    } else {
        ms_stack_account_alloc_n(st, blocks, bytes);
    }
}

static void acct_free(ms_stack_rec *st, unsigned kind, uint64_t blocks, uint64_t bytes)
{
    if (!st)
        return;
    if (kind == MS_KIND_RESERVED) {
        __atomic_fetch_add(&st->free_blocks, blocks, __ATOMIC_RELAXED);
        __atomic_fetch_add(&st->free_bytes, bytes, __ATOMIC_RELAXED);
    } else {
        ms_stack_account_free_n(st, blocks, bytes);
    }
}

/* Removes [a, a+len) from the table, accounting what goes away. Lock held. */
static void regs_cut_locked(uint64_t a, uint64_t len)
{
    uint64_t end = a + len;
    uint64_t i = regs_lower(a);
    while (i < ms_nregs && ms_regs[i].addr < end) {
        ms_region *r = &ms_regs[i];
        uint64_t rs = r->addr, re = r->addr + r->size;
        uint64_t cs = rs > a ? rs : a, ce = re < end ? re : end;
        ms_stack_rec *st = ms_stack_get(r->stack_id);
        unsigned kind = r->kind;
        if (cs <= rs && ce >= re) { /* whole region goes */
            acct_free(st, kind, 1, r->size);
            regs_remove_at(i);
            continue;
        }
        acct_free(st, kind, 0, ce - cs); /* bytes leave, the block stays */
        if (cs > rs && ce < re) { /* hole in the middle: split */
            ms_region tail = *r;
            tail.addr = ce;
            tail.size = re - ce;
            r->size = cs - rs;
            if (regs_insert_locked(&tail) == 0) { /* (may move the array: r is not used again) */
                acct_alloc(st, kind, 1, 0); /* one more live block, no new bytes */
            } else {
                acct_free(st, kind, 0, tail.size);
                MS_HEALTH_INC(dropped_regions);
            }
            return;
        }
        if (cs <= rs) { /* head cut */
            r->addr = ce;
            r->size = re - ce;
        } else { /* tail cut */
            r->size = cs - rs;
        }
        i++;
    }
}

static int regs_merge_locked(uint64_t i);

void ms_region_add(uint64_t addr, uint64_t size, unsigned kind, uint32_t stack_id, uint32_t tid)
{
    if (!size)
        return;
    ms_region r = {addr, size, ms_ticks(), stack_id, tid, kind, 0};
    ms_stack_rec *st = ms_stack_get(stack_id);
    regs_lock();
    int in_reservation = 0;
    for (uint64_t i = regs_lower(addr); i < ms_nregs && ms_regs[i].addr < addr + size; i++)
        if (ms_regs[i].kind == MS_KIND_RESERVED)
            in_reservation = 1;
    regs_cut_locked(addr, size); /* a new mapping replaces whatever was there */
    int rc = regs_insert_locked(&r);
    if (rc == 0)
        acct_alloc(st, kind, 1, size);
    if (rc == 0 && in_reservation) {
        /* committing a reservation piece by piece from one call site (MAP_FIXED) makes
         * one block of the pieces that touch: the table stays small */
        uint64_t i = regs_lower(addr);
        regs_merge_locked(i);
        if (i > 0)
            regs_merge_locked(i - 1);
    }
    regs_unlock();
    if (rc != 0)
        MS_HEALTH_INC(dropped_regions);
}

void ms_region_remove_range(uint64_t addr, uint64_t len)
{
    regs_lock();
    regs_cut_locked(addr, len);
    regs_unlock();
}

int ms_region_remove_exact(uint64_t addr, unsigned kind)
{
    int found = 0;
    regs_lock();
    uint64_t i = regs_lower(addr);
    if (i < ms_nregs && ms_regs[i].addr == addr && ms_regs[i].kind == kind) {
        acct_free(ms_stack_get(ms_regs[i].stack_id), kind, 1, ms_regs[i].size);
        regs_remove_at(i);
        found = 1;
    }
    regs_unlock();
    return found;
}

/* The stack of kind `to` with the same pcs as stack sid (the reservation's call stack
 * stays the allocation stack of what is committed from it). Lock-free, no malloc. */
static uint32_t counterpart(uint32_t sid, unsigned to)
{
    const ms_stack_rec *st = ms_stack_get(sid);
    if (!st)
        return ms_stack_intern(to, NULL, 0, MS_STACKF_UNWIND_FAIL);
    return ms_stack_intern(to, ms_stack_pcs(st), st->depth, st->flags);
}

/* Joins region i with region i+1 when they touch and share kind and stack: one live
 * block less, no bytes change; it takes back the block a split added (alloc_blocks), and
 * is no free. Lock held. */
static int regs_merge_locked(uint64_t i)
{
    if (i + 1 >= ms_nregs)
        return 0;
    ms_region *x = &ms_regs[i], *y = &ms_regs[i + 1];
    if (x->addr + x->size != y->addr || x->kind != y->kind || x->stack_id != y->stack_id ||
        (x->kind != MS_KIND_MMAP && x->kind != MS_KIND_RESERVED))
        return 0;
    x->size += y->size;
    if (y->ticks < x->ticks)
        x->ticks = y->ticks;
    ms_stack_rec *st = ms_stack_get(x->stack_id);
    if (st) {
        __atomic_fetch_sub(&st->alloc_blocks, 1, __ATOMIC_RELAXED);
        if (x->kind != MS_KIND_RESERVED)
            ms_totals_note(st, 0, -1);
    }
    regs_remove_at(i + 1);
    return 1;
}

void ms_region_protect(uint64_t a, uint64_t len, int accessible)
{
    unsigned to = accessible ? MS_KIND_MMAP : MS_KIND_RESERVED;
    uint64_t end = a + len < a ? UINT64_MAX : a + len;
    if (!len)
        return;
    regs_lock();
    int changed = 0;
    uint64_t i = regs_lower(a);
    while (i < ms_nregs && ms_regs[i].addr < end) {
        ms_region *r = &ms_regs[i];
        /* thread stacks and their guard pages stay as they are */
        if (r->kind == to || (r->kind != MS_KIND_MMAP && r->kind != MS_KIND_RESERVED)) {
            i++;
            continue;
        }
        uint64_t rs = r->addr, re = r->addr + r->size;
        uint64_t cs = rs > a ? rs : a, ce = re < end ? re : end;
        uint64_t need = (cs > rs) + (ce < re);
        if (!regs_room_locked(need)) { /* the piece keeps its old kind */
            MS_HEALTH_INC(dropped_regions);
            i++;
            continue;
        }
        r = &ms_regs[i]; /* the array may have moved */
        unsigned from = r->kind;
        ms_stack_rec *st = ms_stack_get(r->stack_id);
        ms_region piece = *r;
        piece.addr = cs;
        piece.size = ce - cs;
        piece.kind = to;
        piece.stack_id = counterpart(r->stack_id, to);
        if (!need) { /* the whole region changes kind */
            acct_free(st, from, 1, r->size);
            *r = piece;
        } else {
            acct_free(st, from, 0, ce - cs); /* bytes leave, the block stays */
            if (cs > rs && ce < re) {        /* middle: head stays, tail is a new block */
                ms_region tail = *r;
                tail.addr = ce;
                tail.size = re - ce;
                r->size = cs - rs;
                regs_insert_locked(&tail);
                acct_alloc(st, from, 1, 0);
            } else if (cs > rs) {
                r->size = cs - rs;
            } else {
                r->addr = ce;
                r->size = re - ce;
            }
            regs_insert_locked(&piece);
        }
        acct_alloc(ms_stack_get(piece.stack_id), to, 1, piece.size);
        changed = 1;
        i = regs_lower(ce);
    }
    /* Pieces that now touch a neighbour of the same kind and stack become one block
     * (committing a reservation page by page keeps the table small). */
    if (changed) {
        uint64_t j = regs_lower(a);
        if (j > 0)
            j--;
        while (j + 1 < ms_nregs && ms_regs[j].addr <= end) {
            uint64_t b = ms_regs[j].addr + ms_regs[j].size;
            if (b >= a && b <= end && regs_merge_locked(j))
                continue;
            j++;
        }
    }
    regs_unlock();
}

unsigned ms_region_kind_at(uint64_t addr)
{
    unsigned kind = MS_KIND_MMAP;
    regs_lock();
    uint64_t i = regs_lower(addr);
    if (i < ms_nregs && ms_regs[i].addr <= addr)
        kind = ms_regs[i].kind;
    regs_unlock();
    return kind;
}

int ms_regions_foreach(ms_live_fn fn, void *arg, unsigned flags)
{
    if (!(flags & MS_ITER_NOLOCK))
        regs_lock();
    int stop = 0;
    for (uint64_t i = 0; i < ms_nregs && !stop; i++) {
        ms_live_entry e = {ms_regs[i].addr, ms_regs[i].size, ms_regs[i].ticks, ms_regs[i].stack_id,
                           ms_regs[i].tid};
        stop = fn(&e, ms_regs[i].kind, arg);
    }
    if (!(flags & MS_ITER_NOLOCK))
        regs_unlock();
    return stop;
}

uint64_t ms_regions_count(void) { return __atomic_load_n(&ms_nregs, __ATOMIC_RELAXED); }
void ms_regions_fork_prepare(void) { regs_lock(); }
void ms_regions_fork_parent(void) { regs_unlock(); }
void ms_regions_fork_child(void) { regs_unlock(); }

/* ===========================================================================
 * Calls from inside an unwinder. libunwind maps its caches with mmap while it walks a
 * stack for the program (tcmalloc takes a stack trace with it each time it grows its
 * heap), holding its own lock with every signal blocked: a walk of the agent's from
 * there may take the same lock (libunwind itself, or the fallback of the agent's
 * unwinder), and the process would hang, unkillable but by SIGKILL. Such a mapping is
 * recorded with one frame, the unwinder's call, and no walk. The unwinders' text ranges
 * are found when first needed and again when the agent's unwinder has rebuilt its module
 * list since (a module loaded meanwhile); ranges are only added (a stale one only
 * spares a walk), so readers need no lock.
 * ========================================================================= */
#define MS_UW_MAX 16
static uintptr_t ms_uw_lo[MS_UW_MAX], ms_uw_hi[MS_UW_MAX];
static unsigned ms_uw_n;
static uint64_t ms_uw_seen = UINT64_MAX; /* module_refreshes when last looked */
static int ms_uw_busy;

static int ms_uw_name(const char *path)
{
    const char *b = path;
    for (const char *q = path; *q; q++)
        if (*q == '/')
            b = q + 1;
    return strncmp(b, "libunwind", 9) == 0 || strncmp(b, "libgcc_s", 8) == 0;
}

static int ms_uw_collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (!info->dlpi_name || !ms_uw_name(info->dlpi_name))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        unsigned n = __atomic_load_n(&ms_uw_n, __ATOMIC_RELAXED), k;
        for (k = 0; k < n && !(ms_uw_lo[k] == lo && ms_uw_hi[k] == hi); k++)
            ;
        if (k == n && n < MS_UW_MAX) {
            ms_uw_lo[n] = lo;
            ms_uw_hi[n] = hi;
            __atomic_store_n(&ms_uw_n, n + 1, __ATOMIC_RELEASE);
        }
    }
    return 0;
}

static int ms_mm_from_unwinder(uintptr_t ret)
{
    uint64_t gen = __atomic_load_n(&ms_health.module_refreshes, __ATOMIC_RELAXED);
    if (MS_UNLIKELY(__atomic_load_n(&ms_uw_seen, __ATOMIC_ACQUIRE) != gen) &&
        !__atomic_exchange_n(&ms_uw_busy, 1, __ATOMIC_ACQUIRE)) {
        /* another thread looking meanwhile: this call uses what is there */
        ms_dl_iterate(ms_uw_collect, NULL);
        __atomic_store_n(&ms_uw_seen, gen, __ATOMIC_RELEASE);
        __atomic_store_n(&ms_uw_busy, 0, __ATOMIC_RELEASE);
    }
    unsigned n = __atomic_load_n(&ms_uw_n, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++)
        if (ret - ms_uw_lo[i] < ms_uw_hi[i] - ms_uw_lo[i])
            return 1;
    return 0;
}

/* The stack of a mapping made by the caller whose return address is ret. */
static uint32_t ms_mm_stack(unsigned kind, uintptr_t ret)
{
    if (ms_mm_from_unwinder(ret)) {
        uint64_t pc = ret;
        return ms_stack_intern(kind, &pc, 1, 0);
    }
    return ms_current_stack(kind);
}

/* ===========================================================================
 * Interposers
 * ========================================================================= */
static inline int ms_mm_ok(void)
{
    return ms_init() && ms_self.busy == 0;
}

static void *ms_sys_mmap6(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = syscall(SYS_mmap, a, len, prot, flags, fd, off);
    return r == -1 ? MAP_FAILED : (void *)r; /* syscall() has set errno */
}

static void *ms_mmap_common(void *a, size_t len, int prot, int flags, int fd, off_t off,
                            void *(*real)(void *, size_t, int, int, int, off_t), uintptr_t ret)
{
    if (!ms_mm_ok() || !real)
        return real ? real(a, len, prot, flags, fd, off) : ms_sys_mmap6(a, len, prot, flags, fd, off);
    ms_enter();
    void *p = real(a, len, prot, flags, fd, off);
    if (p != MAP_FAILED) {
        /* PROT_NONE maps address space, not memory: runtimes reserve that way and
         * commit pieces later (mprotect, or mmap MAP_FIXED over the reservation) */
        unsigned kind = (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) ? MS_KIND_MMAP
                                                                      : MS_KIND_RESERVED;
        uint32_t sid = ms_mm_stack(kind, ret);
        ms_region_add((uint64_t)(uintptr_t)p, len, kind, sid, ms_gettid());
    }
    ms_leave();
    return p;
}

MS_EXPORT void *mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return ms_mmap_common(a, len, prot, flags, fd, off, ms_real.mmap,
                          (uintptr_t)__builtin_return_address(0));
}

/* Named by its symbol: musl's headers make mmap64 a macro of mmap. */
MS_EXPORT void *ms_mmap_lfs64(void *a, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap64");
MS_EXPORT void *ms_mmap_lfs64(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return ms_mmap_common(a, len, prot, flags, fd, off,
                          ms_real.mmap_lfs64 ? ms_real.mmap_lfs64 : ms_real.mmap,
                          (uintptr_t)__builtin_return_address(0));
}

MS_EXPORT int munmap(void *a, size_t len)
{
    if (!ms_mm_ok() || !ms_real.munmap) {
        if (ms_real.munmap)
            return ms_real.munmap(a, len);
        long r = syscall(SYS_munmap, a, len);
        return r < 0 ? -1 : 0;
    }
    ms_enter();
    uint64_t plen = (len + 4095) & ~4095ull;
    ms_region_remove_range((uint64_t)(uintptr_t)a, plen);
    int rc = ms_real.munmap(a, len);
    ms_leave();
    return rc;
}

MS_EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *want = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    if (!ms_mm_ok() || !ms_real.mremap) {
        long r = syscall(SYS_mremap, old, old_len, new_len, flags, want);
        return r == -1 ? MAP_FAILED : (void *)r; /* syscall() has set errno */
    }
    ms_enter();
    /* a moved reservation stays a reservation (the protection moves with it) */
    unsigned kind = ms_region_kind_at((uint64_t)(uintptr_t)old) == MS_KIND_RESERVED
                        ? MS_KIND_RESERVED
                        : MS_KIND_MMAP;
    void *p = ms_real.mremap(old, old_len, new_len, flags, want);
    if (p != MAP_FAILED) {
        uint64_t olen = (old_len + 4095) & ~4095ull;
        if (!(flags & MREMAP_DONTUNMAP) || p == old)
            ms_region_remove_range((uint64_t)(uintptr_t)old, olen);
        uint32_t sid = ms_mm_stack(kind, (uintptr_t)__builtin_return_address(0));
        ms_region_add((uint64_t)(uintptr_t)p, new_len, kind, sid, ms_gettid());
    }
    ms_leave();
    return p;
}
