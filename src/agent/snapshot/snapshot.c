/* Writes a snapshot of the agent's tables (META, MODS, STKS, BLKS, THRD, HLTH, then any
 * chunks from registered hooks) to <out>/memsight-<pid>-<NNNN>-<reason>.msnap through
 * the allocation-free writer. Runs inside the target: memory from mmap, no malloc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/snapshot/snapshot.h"
#include "agent/record/guard.h"
#include "agent/arch/arch.h"
#include "agent/libc/libc.h"
#include "agent/record/sampler.h"
#include "core/safe_file.h"

#define MS_MAX_HOOKS 8
#define MS_SCRATCH 65536

static int ms_snap_lock;
static uint32_t ms_snap_owner; /* tid holding ms_snap_lock (for the fatal-signal path) */
static uint32_t ms_snap_seq;
static struct {
    ms_snapshot_extra_fn fn;
    void *arg;
} ms_hooks[MS_MAX_HOOKS];
static int ms_nhooks;

/* glibc's struct mallinfo2 (2.33+), declared here so that older headers build too. */
typedef struct ms_mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks,
        keepcost;
} ms_mallinfo2;

typedef struct snap_ctx {
    ms_snap_writer *w;
    char *scratch;
    uint64_t count;
    uint64_t heap_blocks; /* heap blocks written to BLKS (UINT64_MAX: no BLKS) */
    uint64_t now_ticks, now_ns;
    int have_mi;
    ms_mallinfo2 mi;
    /* live blocks and bytes per heap stack up to sums_max, summed while BLKS is written
     * (the live table read once for both chunks; NULL: STKS sums them itself) */
    ms_live_sum *sums;
    size_t sums_len;
    uint32_t sums_max;
    uintptr_t exe_phdr; /* the program's program headers (AT_PHDR): its module */
} snap_ctx;

int ms_snapshot_add_hook(ms_snapshot_extra_fn fn, void *arg)
{
    int i = __atomic_fetch_add(&ms_nhooks, 1, __ATOMIC_ACQ_REL);
    if (i >= MS_MAX_HOOKS) {
        __atomic_fetch_sub(&ms_nhooks, 1, __ATOMIC_ACQ_REL);
        return -ENOSPC;
    }
    ms_hooks[i].arg = arg;
    __atomic_store_n(&ms_hooks[i].fn, fn, __ATOMIC_RELEASE);
    return 0;
}

void ms_snapshot_fork_child(void)
{
    ms_snap_seq = 0;
    ms_snap_lock = 0;
    ms_snap_owner = 0;
}

static size_t ms_read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    return n;
}

static char *ms_append(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    *p = 0;
    return p;
}

/* ===========================================================================
 * The C library allocator's own figures (mallinfo2), in HLTH. Only when the real
 * malloc is glibc's and mallinfo2 comes from the same object (another allocator's
 * blocks would be invisible to it); resolved once, under the snapshot lock.
 * mallinfo2 takes every arena's lock: never from a signal handler, where the
 * interrupted code may hold one. The exit snapshot is taken from a handler when the
 * program calls _exit there, so at exit it is called only on the normal exit path
 * (exit(), return from main), which runs the destructor below first.
 * ========================================================================= */
static ms_mallinfo2 (*ms_mallinfo2_fn)(void);
static int ms_mallinfo2_resolved;
static int ms_snap_normal_exit;

/* Runs in exit() before the exit snapshot's destructor (101): higher runs earlier. */
__attribute__((destructor(103))) static void ms_snap_mark_normal_exit(void)
{
    __atomic_store_n(&ms_snap_normal_exit, 1, __ATOMIC_RELEASE);
}

static void read_mallinfo2(snap_ctx *c, const char *reason)
{
    if (!strcmp(reason, "exit") && !__atomic_load_n(&ms_snap_normal_exit, __ATOMIC_ACQUIRE))
        return;
    /* written from a fault handler (fatal.c, guard pages): a crash inside malloc holds
     * the arena's lock */
    if (!strcmp(reason, "fatal") || !strcmp(reason, "guard"))
        return;
    if (!ms_mallinfo2_resolved) {
        ms_mallinfo2_resolved = 1;
        void *f = ms_real_malloc_is_libc && ms_real.malloc ? dlsym(RTLD_DEFAULT, "mallinfo2") : NULL;
        Dl_info fi, mi;
        if (f && dladdr(f, &fi) && dladdr((void *)ms_real.malloc, &mi) &&
            fi.dli_fbase == mi.dli_fbase)
            *(void **)&ms_mallinfo2_fn = f;
    }
    if (ms_mallinfo2_fn) {
        c->mi = ms_mallinfo2_fn();
        c->have_mi = 1;
    }
}

/* ===========================================================================
 * Chunks
 * ========================================================================= */
static void write_meta(snap_ctx *c, const char *reason, uint32_t seq)
{
    ms_snap_writer *w = c->w;
    ms_sw_begin(w, MS_CHUNK_META, 0);
    uint64_t at = ms_sw_chunk_pos(w);
    uint32_t n = 0;
    ms_sw_u32(w, 0);
    ms_sw_kv_u64(w, "pid", (uint64_t)getpid()); n++;
    ms_sw_kv_u64(w, "ppid", (uint64_t)getppid()); n++;
    ssize_t k = readlink("/proc/self/exe", c->scratch, MS_SCRATCH - 1);
    c->scratch[k > 0 ? k : 0] = 0;
    ms_sw_kv(w, "exe", c->scratch); n++;
    size_t len = ms_read_small("/proc/self/cmdline", c->scratch, MS_SCRATCH);
    while (len && c->scratch[len - 1] == 0)
        len--;
    ms_sw_cstr(w, "cmdline");
    ms_sw_str(w, c->scratch, len); n++;
    struct utsname u;
    if (uname(&u) == 0) {
        ms_sw_kv(w, "hostname", u.nodename); n++;
    }
    ms_sw_kv_u64(w, "start_ns", ms_start_ns()); n++;
    ms_sw_kv_u64(w, "snapshot_ns", c->now_ns); n++;
    ms_sw_kv(w, "reason", reason); n++;
    ms_sw_kv_u64(w, "seq", seq); n++;
    ms_sw_kv(w, "options", ms_opt.raw); n++;
    if (ms_opt_errors[0]) { /* bad items of the option string, ignored (agent_options.c) */
        ms_sw_kv(w, "option_errors", ms_opt_errors); n++;
    }
    ms_sw_kv_u64(w, "sample_interval", ms_sampler_cfg.interval); n++;
    ms_sw_kv_u64(w, "min_size", ms_sampler_cfg.min_size); n++;
    ms_sw_kv(w, "unwinder", ms_unwind_name()); n++;
    ms_sw_kv(w, "labels", ms_opt.labels); n++;
    ms_sw_kv(w, "mode", ms_sampler_cfg.interval ? "sampled" : ms_sampler_cfg.min_size ? "min_size" : "full"); n++;
    ms_sw_kv_u64(w, "max_depth", ms_opt.max_depth); n++;
    ms_sw_kv(w, "agent", "memsight-agent 1"); n++;
    ms_sw_kv(w, "arch", MS_ARCH_NAME); n++;
    ms_sw_kv(w, "libc", ms_libc_name()); n++;
    n += ms_attach_meta(w);
    ms_sw_patch_u32(w, at, n);
    ms_sw_end(w);
}

static int write_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    snap_ctx *c = arg;
    ms_snap_writer *w = c->w;
    const char *path = info->dlpi_name;
    /* the program itself by its absolute path: glibc's loader names it "", musl's as it
     * was started (./prog), which names no file once read elsewhere */
    if (!path || !path[0] || (uintptr_t)info->dlpi_phdr == c->exe_phdr) {
        ssize_t k = readlink("/proc/self/exe", c->scratch, MS_SCRATCH - 1);
        c->scratch[k > 0 ? k : 0] = 0;
        path = c->scratch;
    }
    const uint8_t *bid = NULL;
    uint32_t bid_len = 0;
    uint32_t nseg = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD)
            nseg++;
        if (ph->p_type != PT_NOTE || bid)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t nsz = (nh->n_namesz + 3) & ~3u, dsz = (nh->n_descsz + 3) & ~3u;
            const uint8_t *name = p + sizeof *nh, *desc = name + nsz;
            if (desc + dsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                nh->n_descsz > 0 && nh->n_descsz <= 64) {
                bid = desc;
                bid_len = nh->n_descsz;
                break;
            }
            p = desc + dsz;
        }
    }
    ms_sw_u64(w, (uint64_t)info->dlpi_addr);
    ms_sw_cstr(w, path);
    ms_sw_u32(w, bid_len);
    if (bid_len) {
        static const uint8_t zero[4];
        ms_sw_bytes(w, bid, bid_len);
        ms_sw_bytes(w, zero, (4 - (bid_len & 3)) & 3);
    }
    ms_sw_u32(w, nseg);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        ms_snap_segment s = {ph->p_vaddr, ph->p_memsz, ph->p_offset, ph->p_flags, 0};
        ms_sw_bytes(w, &s, sizeof s);
    }
    c->count++;
    return 0;
}

static void write_mods(snap_ctx *c)
{
    ms_sw_begin(c->w, MS_CHUNK_MODS, 0);
    uint64_t at = ms_sw_chunk_pos(c->w);
    ms_sw_u32(c->w, 0);
    c->count = 0;
    c->exe_phdr = (uintptr_t)getauxval(AT_PHDR);
    ms_dl_iterate(write_module, c);
    ms_sw_patch_u32(c->w, at, (uint32_t)c->count);
    ms_sw_end(c->w);
}

static void write_stks(snap_ctx *c)
{
    ms_snap_writer *w = c->w;
    ms_sw_begin(w, MS_CHUNK_STKS, MS_CHUNKF_REQUIRED);
    uint64_t at = ms_sw_chunk_pos(w);
    ms_sw_u32(w, 0);
    uint32_t n = 0, max = ms_stack_max_id();
    if (ms_heap_frees_derived && !c->sums) { /* no BLKS: a pass of its own */
        c->sums_max = max;
        c->sums = ms_stack_live_sums(max, &c->sums_len);
    }
    for (uint32_t id = 1; id <= max; id++) {
        ms_stack_rec *r = ms_stack_get(id);
        if (!r)
            continue;
        ms_snap_stack_rec s;
        memset(&s, 0, sizeof s);
        ms_stack_counters_with(r, c->sums, c->sums_max, &s.c);
        if (!s.c.alloc_blocks && !r->thread_ref)
            continue; /* never used (lost a publication race or table full) */
        s.id = id;
        s.kind = r->kind;
        s.flags = r->flags;
        s.depth = r->depth;
        ms_sw_bytes(w, &s, sizeof s);
        ms_sw_bytes(w, ms_stack_pcs(r), (size_t)r->depth * 8);
        n++;
    }
    if (c->sums)
        ms_sys_munmap(c->sums, c->sums_len);
    c->sums = NULL;
    ms_sw_patch_u32(w, at, n);
    ms_sw_end(w);
}

static int write_block(const ms_live_entry *e, unsigned kind, void *arg)
{
    snap_ctx *c = arg;
    ms_snap_block b;
    memset(&b, 0, sizeof b);
    b.address = e->addr;
    b.size = e->size;
    b.time_ns = ms_ticks_to_ns(e->ticks);
    b.stack_id = e->stack_id;
    b.tid = e->tid & MS_SAMPLER_TID_MASK; /* the top bits count samples */
    b.kind = (uint8_t)kind;
    ms_sw_bytes(c->w, &b, sizeof b);
    c->count++;
    c->heap_blocks += kind == MS_KIND_HEAP;
    if (c->sums && kind == MS_KIND_HEAP)
        ms_stack_live_sum_add(c->sums, c->sums_max, e->stack_id, e->size);
    return 0;
}

static void write_blks(snap_ctx *c)
{
    ms_sw_begin(c->w, MS_CHUNK_BLKS, 0);
    uint64_t at = ms_sw_chunk_pos(c->w);
    ms_sw_u64(c->w, 0);
    c->count = 0;
    c->heap_blocks = 0;
    if (ms_heap_frees_derived) { /* STKS's live sums from this pass (it comes after) */
        c->sums_max = ms_stack_max_id();
        c->sums = ms_stack_live_sums_new(c->sums_max, &c->sums_len);
    }
    ms_live_foreach(write_block, c, 0);
    ms_regions_foreach(write_block, c, 0);
    ms_sw_patch_u64(c->w, at, c->count);
    ms_sw_end(c->w);
}

static int write_thread(const ms_thread_slot *t, void *arg)
{
    snap_ctx *c = arg;
    ms_snap_writer *w = c->w;
    char path[64], *p = ms_append(path, "/proc/self/task/");
    p += ms_fmt_u64(p, t->tid);
    ms_append(p, "/comm");
    char name[64];
    size_t n = t->tid ? ms_read_small(path, name, sizeof name - 1) : 0;
    while (n && (name[n - 1] == '\n' || name[n - 1] == 0))
        n--;
    ms_sw_u32(w, t->tid);
    ms_sw_u32(w, __atomic_load_n(&t->state, __ATOMIC_RELAXED));
    uintptr_t lo = t->stack_lo, hi = t->stack_hi;
    ms_sw_u64(w, lo);
    ms_sw_u64(w, hi);
    ms_sw_str(w, name, n);
    c->count++;
    return 0;
}

static void write_thrd(snap_ctx *c)
{
    ms_sw_begin(c->w, MS_CHUNK_THRD, 0);
    uint64_t at = ms_sw_chunk_pos(c->w);
    ms_sw_u32(c->w, 0);
    c->count = 0;
    ms_threads_foreach(write_thread, c);
    ms_sw_patch_u32(c->w, at, (uint32_t)c->count);
    ms_sw_end(c->w);
}

static void write_hlth(snap_ctx *c)
{
    ms_snap_writer *w = c->w;
    ms_sw_named n;
    ms_sw_named_begin(w, &n, MS_CHUNK_HLTH);
    ms_health_t h;
    memcpy(&h, &ms_health, sizeof h);
#define H(f) ms_sw_named_put(w, &n, #f, h.f)
    H(dropped_blocks);
    H(dropped_stacks);
    H(dropped_regions);
    H(dropped_threads);
    H(unwind_failures);
    H(unwind_truncated);
    H(pc_cache_misses);
    H(pc_cache_full);
    H(unwind_fallbacks);
    H(unknown_frees);
    H(boot_allocs);
    H(bad_options);
    H(table_grow_failures);
    H(snapshot_errors);
    H(snapshot_last_errno);
    H(snapshot_renamed);
    H(agent_ns);
    H(module_refreshes);
    H(dlclose_calls);
#undef H
    if (h.leak_sigchld_forks)
        ms_sw_named_put(w, &n, "leak_sigchld_forks", h.leak_sigchld_forks);
    if (h.leak_scan_failures) {
        ms_sw_named_put(w, &n, "leak_scan_failures", h.leak_scan_failures);
        ms_sw_named_put(w, &n, "leak_scan_child_signal", h.leak_scan_child_signal);
        ms_sw_named_put(w, &n, "leak_scan_child_exit", h.leak_scan_child_exit);
    }
    if (ms_opt.guard) { /* guard pages (guard.c) */
        ms_sw_named_put(w, &n, "guard_allocs", h.guard_allocs);
        ms_sw_named_put(w, &n, "guard_pool_full", h.guard_pool_full);
        ms_sw_named_put(w, &n, "guard_too_large", h.guard_too_large);
        ms_sw_named_put(w, &n, "guard_errors", h.guard_errors);
        ms_sw_named_put(w, &n, "guard_failures", h.guard_failures);
        ms_sw_named_put(w, &n, "guard_budget_stretches", h.guard_budget_stretches);
        ms_sw_named_put(w, &n, "guard_rate_now", ms_guard_rate_now());
        ms_sw_named_put(w, &n, "guard_spent_ns", h.guard_spent_ns);
    }
    if (h.metrics_errors)
        ms_sw_named_put(w, &n, "metrics_errors", h.metrics_errors);
    if (h.deepbind_modules || h.deepbind_unhooked) {
        ms_sw_named_put(w, &n, "deepbind_modules", h.deepbind_modules);
        ms_sw_named_put(w, &n, "deepbind_unhooked", h.deepbind_unhooked);
    }
    if (!ms_real_malloc_is_libc) { /* another allocator: blocks known by address alone */
        ms_sw_named_put(w, &n, "allocator_not_libc", 1);
        ms_sw_named_put(w, &n, "foreign_frees", h.foreign_frees);
    }
    /* the blocks of BLKS when it was written: the table is walked once */
    ms_sw_named_put(w, &n, "live_table_blocks",
                    c->heap_blocks != UINT64_MAX ? c->heap_blocks : ms_live_count());
    ms_sw_named_put(w, &n, "live_table_capacity", ms_opt.capacity);
    ms_sw_named_put(w, &n, "live_table_bytes", ms_live_bytes_reserved());
    ms_sw_named_put(w, &n, "stack_table_used", ms_stack_max_id());
    ms_sw_named_put(w, &n, "stack_table_capacity", ms_opt.stack_capacity);
    ms_sw_named_put(w, &n, "stack_table_bytes", ms_stacks_bytes_mapped());
    ms_sw_named_put(w, &n, "region_table_used", ms_regions_count());
    ms_sw_named_put(w, &n, "region_table_capacity", ms_opt.region_capacity);
    if (ms_libc_missing()) /* what this C library lacks that glibc gives (libc.h) */
        ms_sw_named_put(w, &n, "libc_missing", ms_libc_missing());
    if (c->have_mi) {
        ms_sw_named_put(w, &n, "mallinfo2_arena", c->mi.arena);
        ms_sw_named_put(w, &n, "mallinfo2_ordblks", c->mi.ordblks);
        ms_sw_named_put(w, &n, "mallinfo2_smblks", c->mi.smblks);
        ms_sw_named_put(w, &n, "mallinfo2_hblks", c->mi.hblks);
        ms_sw_named_put(w, &n, "mallinfo2_hblkhd", c->mi.hblkhd);
        ms_sw_named_put(w, &n, "mallinfo2_fsmblks", c->mi.fsmblks);
        ms_sw_named_put(w, &n, "mallinfo2_uordblks", c->mi.uordblks);
        ms_sw_named_put(w, &n, "mallinfo2_fordblks", c->mi.fordblks);
        ms_sw_named_put(w, &n, "mallinfo2_keepcost", c->mi.keepcost);
    }
    ms_sw_named_end(w, &n);
}

/* ===========================================================================
 * Entry point
 * ========================================================================= */
static size_t build_path(char *buf, size_t cap, const char *reason, uint32_t seq)
{
    char num[24];
    size_t need = strlen(ms_opt.out) + strlen(reason) + 64;
    if (need > cap)
        return 0;
    char *p = ms_append(buf, ms_opt.out);
    p = ms_append(p, "/memsight-");
    p += ms_fmt_u64(p, (uint64_t)getpid());
    *p++ = '-';
    size_t k = ms_fmt_u64(num, seq);
    for (size_t i = k; i < 4; i++)
        *p++ = '0';
    p = ms_append(p, num);
    *p++ = '-';
    p = ms_append(p, reason);
    p = ms_append(p, ".msnap");
    return (size_t)(p - buf);
}

/* ===========================================================================
 * When a snapshot cannot be written: a line on the program's stderr (never stdout), so
 * that a missing file is explained where the program is watched, and the health
 * counters of the next snapshot. strerror may allocate (locales): a table of our own.
 * ========================================================================= */
static const char *errno_text(int e)
{
    switch (e) {
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "file too large (the file size limit, ulimit -f)";
    case ENOMEM: return "out of memory";
    case EACCES: return "permission denied";
    case EPERM: return "operation not permitted";
    case EROFS: return "read-only file system";
    case EIO: return "input/output error";
    case ENOENT: return "no such directory";
    case ENOTDIR: return "not a directory";
    case ENAMETOOLONG: return "file name too long";
    case EEXIST: return "no free temporary name";
    case EMFILE: return "too many open files";
    case ENFILE: return "too many open files in the system";
    default: return NULL;
    }
}

static int ms_snap_said_errno;

/* memsight run's tally (docs/files.md), MEMSIGHT_TALLY: mapped at start, while this
 * process may still open files (a sandbox may close that door later). A process of the
 * run other than the program memsight run started (MEMSIGHT_RUN_ROOT) that cannot write
 * its exit snapshot for lack of permission counts itself there, and memsight run says
 * it once for the run, instead of a line per process on the program's stderr (a
 * browser's sandboxed content processes). */
static uint64_t *ms_tally;
static long ms_run_root;

void ms_snapshot_tally_init(void)
{
    const char *path = getenv("MEMSIGHT_TALLY"), *root = getenv("MEMSIGHT_RUN_ROOT");
    if (!path || path[0] != '/' || !root)
        return;
    long r = 0;
    for (; *root >= '0' && *root <= '9' && r < (1L << 40); root++)
        r = r * 10 + (*root - '0');
    if (*root || r <= 0)
        return;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        st.st_size >= 4096) {
        long m = syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m != -1) {
            ms_run_root = r;
            ms_tally = (uint64_t *)m;
        }
    }
    close(fd);
}

/* 1 when the failure was counted in the tally instead of said. */
static int tally_failure(const char *reason, int err)
{
    if (!ms_tally || (long)getpid() == ms_run_root || strcmp(reason, "exit") ||
        (err != EACCES && err != EPERM && err != EROFS && err != ENOENT && err != ENOSYS &&
         err != ESRCH))
        return 0;
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&ms_tally[1], &zero, (uint64_t)err, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    __atomic_fetch_add(&ms_tally[0], 1, __ATOMIC_RELAXED);
    return 1;
}

static void say_failure(const char *reason, const char *path, int err)
{
    MS_HEALTH_INC(snapshot_errors);
    __atomic_store_n(&ms_health.snapshot_last_errno, (uint64_t)err, __ATOMIC_RELAXED);
    if (tally_failure(reason, err))
        return;
    /* once per cause: a full disk must not turn interval snapshots into a flood */
    if (__atomic_exchange_n(&ms_snap_said_errno, err, __ATOMIC_RELAXED) == err &&
        strcmp(reason, "exit"))
        return;
    char num[32] = "errno ";
    ms_fmt_u64(num + 6, (uint64_t)err);
    const char *t = errno_text(err);
    const char *parts[] = {"cannot write the ", reason, " snapshot ", path, ": ", t ? t : num};
    ms_say(parts, 6);
}

/* The output directory leads through a symlink another user planted in a shared
 * directory (the check memsight run makes on -o, for an agent started by hand). */
static void say_refused(const char *reason, const ms_snap_writer *w)
{
    MS_HEALTH_INC(snapshot_errors);
    __atomic_store_n(&ms_health.snapshot_last_errno, (uint64_t)EPERM, __ATOMIC_RELAXED);
    if (__atomic_exchange_n(&ms_snap_said_errno, EPERM, __ATOMIC_RELAXED) == EPERM &&
        strcmp(reason, "exit"))
        return;
    char uid[24];
    ms_fmt_u64(uid, w->dir_link_uid);
    const char *parts[] = {"not writing the ", reason, " snapshot into ", ms_opt.out, ": ",
                           w->dir_link, " is a symlink that belongs to uid ", uid,
                           " in a shared directory (sticky, writable by all): not following it"};
    ms_say(parts, 9);
}

/* The rename failed because the name belongs to something this process may not replace
 * (in a sticky directory, another user's file or FIFO planted at the name a reader
 * waits for): the next numbers of the sequence are tried, and the change said. */
static int place_snapshot(ms_snap_writer *w, char *final, size_t cap, const char *reason)
{
    int rc = ms_sw_place(w, final);
    if (rc == 0 || !ms_sf_name_taken(-rc))
        return rc;
    char taken[MS_SW_PATH_MAX];
    memcpy(taken, final, strlen(final) + 1);
    for (int k = 0; k < 16 && rc != 0 && ms_sf_name_taken(-rc); k++) {
        uint32_t seq = __atomic_fetch_add(&ms_snap_seq, 1, __ATOMIC_RELAXED);
        if (!build_path(final, cap, reason, seq))
            return -ENAMETOOLONG;
        rc = ms_sw_place(w, final);
    }
    if (rc == 0) {
        MS_HEALTH_INC(snapshot_renamed);
        const char *parts[] = {taken, " is taken by a file this process may not replace; "
                                      "the snapshot is ", final, " instead"};
        ms_say(parts, 4);
    }
    return rc;
}

/* A write past the file size limit raises SIGXFSZ, whose default action kills the
 * program: blocked while the agent writes, and a signal the agent caused is taken back. */
typedef struct xfsz_guard {
    sigset_t old;
    int was_pending;
} xfsz_guard;

static void xfsz_block(xfsz_guard *g)
{
    sigset_t s, p;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &s, &g->old);
    g->was_pending = sigpending(&p) == 0 && sigismember(&p, SIGXFSZ);
}

static void xfsz_restore(xfsz_guard *g)
{
    sigset_t s, p;
    sigemptyset(&s);
    sigaddset(&s, SIGXFSZ);
    if (!g->was_pending && sigpending(&p) == 0 && sigismember(&p, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&s, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

int ms_snapshot_write(const char *reason, ms_snapshot_extra_fn extra, void *arg, char *path,
                      size_t pathlen)
{
    if (ms_state != MS_STATE_READY)
        return -EAGAIN;
    if (ms_opt.guard && strcmp(reason, "guard") && strcmp(reason, "fatal") &&
        !ms_snapshot_held_by_me())
        ms_guard_check_live(); /* guard pages: the fill around live blocks (guard.c) */
    ms_enter();
    uint64_t t0 = ms_now_ns();
    while (__atomic_exchange_n(&ms_snap_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
    __atomic_store_n(&ms_snap_owner, ms_gettid(), __ATOMIC_RELAXED);
    int rc;
    uint32_t seq = __atomic_fetch_add(&ms_snap_seq, 1, __ATOMIC_RELAXED);
    char final[MS_SW_PATH_MAX];
    if (!build_path(final, sizeof final, reason, seq)) {
        final[0] = 0;
        say_failure(reason, ms_opt.out, ENAMETOOLONG);
        rc = -ENAMETOOLONG;
        goto out;
    }
    size_t wsize = (sizeof(ms_snap_writer) + MS_SCRATCH + 4095) & ~(size_t)4095;
    ms_snap_writer *w = ms_sys_mmap(wsize);
    if (!w) {
        say_failure(reason, final, ENOMEM);
        rc = -ENOMEM;
        goto out;
    }
    snap_ctx c = {w, (char *)w + sizeof(ms_snap_writer), 0, UINT64_MAX, ms_ticks(), ms_now_ns(), 0, {0}, NULL, 0, 0, 0};
    xfsz_guard xg;
    xfsz_block(&xg);
    rc = ms_sw_open(w, final, ms_sampler_cfg.interval ? MS_SNAP_F_SAMPLED : 0);
    if (rc != 0)
        goto out_unmap;
    w->no_sync = !ms_opt.sync;
    read_mallinfo2(&c, reason); /* first: the moment of the block list */
    write_meta(&c, reason, seq);
    write_mods(&c);
    /* BLKS first: STKS takes its live sums from BLKS's pass over the live table (readers
     * take chunks in any order); the stacks of every block listed are then in STKS */
    if (ms_opt.blocks)
        write_blks(&c);
    write_stks(&c);
    write_thrd(&c);
    int nh = __atomic_load_n(&ms_nhooks, __ATOMIC_ACQUIRE);
    for (int i = 0; i < nh && i < MS_MAX_HOOKS; i++) {
        ms_snapshot_extra_fn fn = __atomic_load_n(&ms_hooks[i].fn, __ATOMIC_ACQUIRE);
        if (fn)
            fn(w, ms_hooks[i].arg);
    }
    if (extra)
        extra(w, arg);
    MS_HEALTH_ADD(agent_ns, ms_now_ns() - t0);
    write_hlth(&c);
    rc = ms_sw_finish(w);
    if (rc == 0)
        rc = place_snapshot(w, final, sizeof final, reason);
    if (rc == 0 && path && pathlen) {
        size_t n = strlen(final);
        if (n >= pathlen)
            n = pathlen - 1;
        memcpy(path, final, n);
        path[n] = 0;
    }
out_unmap:
    ms_sw_close(w);
    xfsz_restore(&xg);
    if (rc == -EPERM && w->dir_link[0])
        say_refused(reason, w);
    else if (rc != 0)
        say_failure(reason, final, -rc);
    ms_sys_munmap(w, wsize);
out:
    __atomic_store_n(&ms_snap_owner, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&ms_snap_lock, 0, __ATOMIC_RELEASE);
    ms_leave();
    return rc;
}

int ms_snapshot_held_by_me(void)
{
    return __atomic_load_n(&ms_snap_lock, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&ms_snap_owner, __ATOMIC_RELAXED) == ms_gettid();
}
