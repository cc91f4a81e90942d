/* The leak scan (see leak_scan.h): module segments under the loader lock, stop the
 * world, fork a copy-on-write child, resume; the child gathers the roots, marks,
 * classifies, folds and sends records back through a pipe. Runs inside the target: no
 * malloc, no stdio, no lock held across fork; the child makes raw system calls only. */
#define _GNU_SOURCE
#include "agent/leak/leak_scan.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/leak/leak.h"
#include "agent/leak/leak_maps.h"
#include "agent/leak/leak_mark.h"
#include "agent/leak/leak_stop.h"
#include "agent/libc/libc.h"

const char *const ms_leak_stat_names[MS_LKS_COUNT] = {
    "threads",       "threads_stopped", "threads_gone",  "threads_unstopped",
    "blocks",        "root_bytes",      "words",         "skipped_bytes",
    "faults",        "module_segments", "mmap_regions",  "stop_ns",
    "fork_ns",       "records_dropped", "loader_blocks", "collect_ns",
    "sort_ns",       "roots_ns",        "mark_ns",       "classify_ns",
    "untracked_maps", "heuristics",
    "heuristic_stdstring_blocks", "heuristic_length64_blocks", "heuristic_newarray_blocks",
    "heuristic_multipleinheritance_blocks", "heuristic_interior_blocks",
    "heuristic_stdstring_bytes", "heuristic_length64_bytes", "heuristic_newarray_bytes",
    "heuristic_multipleinheritance_bytes", "heuristic_interior_bytes",
};
_Static_assert(MS_LEAK_H_COUNT == 5, "one name per heuristic above");

#define LK_MAX_THREADS 8192
#define LK_MAX_SEGS 8192
#define LK_MAX_RECORDS 16384
#define LK_MAX_REACHABLE_RECORDS 64
#define LK_STOP_TIMEOUT_MS 1000
#define LK_RESULT_MAGIC 0x4b41454c4b53534dull /* "MSSKLEAK" */

/* Preallocated parent-side state (mmap'ed once, never a root: agent memory). */
typedef struct lk_seg {
    uint64_t lo, hi;
} lk_seg;

typedef struct lk_state {
    ms_lk_world world;
    ms_lk_thread threads[LK_MAX_THREADS];
    lk_seg segs[LK_MAX_SEGS];
    size_t nsegs;
    uint64_t ld_lo, ld_hi; /* the dynamic linker's code */
    int64_t agent_tls_off; /* the agent's static TLS block, relative to the thread pointer */
    uint64_t agent_tls_size;
    uint64_t tls_static; /* bytes of static TLS below the thread pointer */
    ms_leak_result res;
    ms_snap_leak_rec recs[LK_MAX_RECORDS];
    /* the scan in progress */
    const ms_leak_caller *who;
    int sig;
    unsigned heur; /* MS_LEAK_H_* */
    int pipe_rd;
    long child;
    int child_signals; /* the child exits with SIGCHLD (qemu-user), not silently */
    int done;
    int err;
    uint64_t fork_ns;
    /* dl_iterate_phdr bookkeeping */
    unsigned long long adds, subs;
    size_t nmods, seen;
} lk_state;

static lk_state *g_lk;
static int g_lk_busy;
static int g_next_heur = -1; /* ms_leak_next_heuristics */

void ms_leak_next_heuristics(int set)
{
    __atomic_store_n(&g_next_heur, set, __ATOMIC_RELEASE);
}

static long sys_ret(long r)
{
    return r < 0 ? -errno : r;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        long r = syscall(SYS_write, fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reads n bytes, waiting at most until `deadline` (CLOCK_MONOTONIC ns) for each. */
static int read_all(int fd, void *p, size_t n, uint64_t deadline)
{
    char *c = p;
    while (n) {
        uint64_t now = ms_lk_mono_ns();
        if (now >= deadline)
            return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        uint64_t left_ms = (deadline - now) / 1000000 + 1;
        struct timespec ts = {(time_t)(left_ms / 1000), (long)(left_ms % 1000) * 1000000};
        long pr = syscall(SYS_ppoll, &pf, 1, &ts, NULL, 0);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        long r = syscall(SYS_read, fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ===========================================================================
 * The child: roots, mark, classify, fold, send. Never returns.
 * ========================================================================= */
typedef struct lk_child {
    ms_lk_maps maps;
    ms_lk_scan scan;
    ms_lk_block *blocks;
    size_t nblocks, cap;
    uint64_t faults;
    uint64_t root_bytes;
    uint64_t regions;
    uint64_t loader_blocks;
    uint64_t untracked; /* mappings rooted as memory from before an attach */
    /* the agent's TLS block of every thread: its caches hold copies of program
     * pointers, and it lies inside static TLS and pthread stacks, which are roots */
    uint64_t *hole_lo, *hole_hi;
    size_t nholes;
} lk_child;

static lk_child *g_child;

static void child_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    /* the child is a throwaway copy: put a zero page where the read faulted. The same
     * page faulting again is not a read of the program's memory (a write, a bug): give
     * up rather than loop */
    static uintptr_t last_page = 1;
    uintptr_t page = (uintptr_t)si->si_addr & ~(uintptr_t)4095;
    if (page == last_page)
        syscall(SYS_exit_group, 6);
    last_page = page;
    long r = syscall(SYS_mmap, page, 4096, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (r < 0 && r > -4096)
        syscall(SYS_exit_group, 3);
    if (g_child)
        g_child->faults++;
}

static void *child_mmap(size_t bytes)
{
    bytes = bytes ? (bytes + 4095) & ~(size_t)4095 : 4096;
    long r = syscall(SYS_mmap, 0, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    /* never read as the program's memory (it may sit in a hole the program left) */
    if (g_child && ms_lk_maps_own(&g_child->maps, (uint64_t)r, (uint64_t)r + bytes) != 0)
        syscall(SYS_exit_group, 5);
    return (void *)r;
}

static int collect_block(const ms_live_entry *e, unsigned kind, void *arg)
{
    lk_child *c = arg;
    if (kind != MS_KIND_HEAP || !e->addr)
        return 0;
    if (c->nblocks >= c->cap)
        return 1;
    ms_lk_block *b = &c->blocks[c->nblocks++];
    memset(b, 0, sizeof *b);
    b->addr = ms_ptr_key((const void *)(uintptr_t)e->addr); /* words are compared untagged */
    b->size = e->size;
    b->stack_id = e->stack_id;
    b->kind = (uint8_t)kind;
    return 0;
}

static void root_range(lk_child *c, uint64_t lo, uint64_t hi, ms_lk_view_fn view)
{
    while (hi > lo) {
        /* the part before the first agent TLS hole that overlaps [lo, hi) */
        uint64_t cut = hi, skip_to = hi;
        for (size_t i = 0; i < c->nholes; i++) {
            if (c->hole_hi[i] <= lo || c->hole_lo[i] >= hi)
                continue;
            uint64_t a = c->hole_lo[i] > lo ? c->hole_lo[i] : lo;
            if (a < cut) {
                cut = a;
                skip_to = c->hole_hi[i];
            }
        }
        if (cut > lo) {
            ms_lk_view_fn saved = c->scan.view;
            c->scan.view = view;
            ms_lk_root_range(&c->scan, lo, cut);
            c->scan.view = saved;
            c->root_bytes += cut - lo;
        }
        lo = skip_to;
    }
}

static void add_hole(lk_child *c, lk_state *st, uint64_t tp)
{
    if (!tp || !st->agent_tls_size || c->nholes >= LK_MAX_THREADS + 1)
        return;
    c->hole_lo[c->nholes] = tp + (uint64_t)st->agent_tls_off;
    c->hole_hi[c->nholes] = tp + (uint64_t)st->agent_tls_off + st->agent_tls_size;
    c->nholes++;
}

static int root_region(const ms_live_entry *e, unsigned kind, void *arg)
{
    lk_child *c = arg;
    if (kind != MS_KIND_MMAP)
        return 0;
    /* only the parts mapped writable: a read-only file mapping holds no pointers the
     * program stored, and reading it could page in a large file */
    root_range(c, e->addr, e->addr + e->size, ms_lk_maps_view_w);
    c->regions++;
    return 0;
}

/* A root range minus the recorded blocks that lie inside it, but for the one holding
 * `keep` (0: none). A block is heap, reached only through pointers to it, never a root
 * itself, and musl puts blocks right beside roots: its malloc hands out the unused end of
 * a module's .data/.bss page ("donation"), and the main thread's TLS, calloc'ed by its
 * loader, sits among them, inside the range rooted around the thread pointer. */
static void root_range_unrecorded(lk_child *c, uint64_t lo, uint64_t hi, ms_lk_view_fn view,
                                  uint64_t keep)
{
    const ms_lk_scan *s = &c->scan;
    size_t a = 0, z = s->n; /* the first block that ends after lo (ends sorted as starts) */
    while (a < z) {
        size_t m = a + (z - a) / 2;
        const ms_lk_block *b = &s->b[m];
        if (b->addr + (b->size ? b->size : 1) <= lo)
            a = m + 1;
        else
            z = m;
    }
    for (size_t i = a; i < s->n && lo < hi; i++) {
        uint64_t ba = s->b[i].addr, be = ba + (s->b[i].size ? s->b[i].size : 1);
        if (ba >= hi)
            break;
        if (keep >= ba && keep < be)
            continue;
        if (ba > lo)
            root_range(c, lo, ba, view);
        if (be > lo)
            lo = be;
    }
    if (hi > lo)
        root_range(c, lo, hi, view);
}

/* After memsight attach: the program's blocks from before are not enumerable, but they
 * hold pointers to recorded blocks (a list made before, filled after). Every anonymous
 * writable mapping and the [heap] are roots, minus the recorded blocks themselves (marked
 * through as usual), the agent's own mappings and the threads' stacks (rooted from sp
 * above). Conservative: free chunks count as roots too. */
static int cmp_addr_sorted(const ms_lk_block *x, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (x[i].addr < x[i - 1].addr)
            return 0;
    return 1;
}

static void root_untracked(lk_child *c, lk_state *st, uint64_t self_sp)
{
    size_t nown_max = MS_OWN_MAX, nthr = st->world.n + 2;
    size_t nx = c->nblocks + nown_max + nthr + c->maps.nown;
    ms_lk_block *x = child_mmap(nx * sizeof *x);
    ms_lk_block *tmp = child_mmap(nx * sizeof *x);
    uint64_t *olo = child_mmap(nown_max * sizeof(uint64_t));
    uint64_t *ohi = child_mmap(nown_max * sizeof(uint64_t));
    if (!x || !tmp || !olo || !ohi)
        return;
    size_t n = 0;
    for (size_t i = 0; i < c->nblocks; i++) {
        x[n].addr = c->blocks[i].addr;
        x[n++].size = c->blocks[i].size;
    }
    uint64_t lost = 0;
    size_t no = ms_own_ranges(olo, ohi, nown_max, &lost);
    if (lost) /* agent memory that cannot be told apart: rooting it would hide every leak */
        return;
    for (size_t i = 0; i < no; i++) {
        x[n].addr = olo[i];
        x[n++].size = ohi[i] - olo[i];
    }
    for (size_t i = 0; i < c->maps.nown; i++) {
        x[n].addr = c->maps.own_lo[i];
        x[n++].size = c->maps.own_hi[i] - c->maps.own_lo[i];
    }
    for (size_t i = 0; i <= st->world.n; i++) {
        uint64_t sp = i < st->world.n ? st->world.t[i].sp : self_sp;
        const ms_lk_map *m = sp ? ms_lk_maps_find(&c->maps, sp) : NULL;
        if (m) {
            x[n].addr = m->lo;
            x[n++].size = m->hi - m->lo;
        }
    }
    if (!cmp_addr_sorted(x, n))
        ms_lk_sort(x, n, tmp);
    size_t k = 0;
    for (size_t i = 0; i < c->maps.n; i++) {
        const ms_lk_map *m = &c->maps.m[i];
        uint32_t need = MS_LKM_R | MS_LKM_W | MS_LKM_ANON;
        if ((m->flags & need) != need || (m->flags & (MS_LKM_SKIP | MS_LKM_STACK | MS_LKM_X)))
            continue;
        uint64_t cur = m->lo;
        while (k < n && x[k].addr + x[k].size <= cur)
            k++;
        for (size_t j = k; cur < m->hi;) {
            while (j < n && x[j].addr + x[j].size <= cur)
                j++;
            if (j >= n || x[j].addr >= m->hi) {
                root_range(c, cur, m->hi, ms_lk_maps_view_w);
                break;
            }
            if (x[j].addr > cur)
                root_range(c, cur, x[j].addr, ms_lk_maps_view_w);
            if (x[j].addr + x[j].size > cur)
                cur = x[j].addr + x[j].size;
            j++;
        }
        c->untracked++;
    }
}

/* The top of the stack holding sp: the end of its mapping, or of the tracked block
 * when the thread runs on a stack it allocated (makecontext, sigaltstack). */
static uint64_t stack_top(lk_child *c, uint64_t sp)
{
    long bi = ms_lk_find(&c->scan, sp);
    if (bi >= 0)
        return c->blocks[bi].addr + c->blocks[bi].size;
    const ms_lk_map *m = ms_lk_maps_find(&c->maps, sp);
    return m ? m->hi : sp;
}

/* Static TLS and the thread control block around the thread pointer, and the DTV. */
static void root_tls(lk_child *c, lk_state *st, uint64_t tp)
{
    if (!tp)
        return;
    uint64_t tls = st->tls_static + 2048; /* + the C library's static TLS surplus */
    /* static TLS lies below the thread pointer (x86-64) or above it (AArch64), the
     * thread's control block on the other side */
    uint64_t lo = MS_ARCH_TLS_ABOVE_TP ? (tp > 4096 ? tp - 4096 : 0) : (tp > tls ? tp - tls : 0);
    root_range_unrecorded(c, lo, MS_ARCH_TLS_ABOVE_TP ? tp + tls : tp + 4096, ms_lk_maps_view, tp);
    /* glibc: the DTV pointer in the TCB points one 16-byte entry into its block, an
     * interior pointer valgrind calls "possibly lost"; it is the DTV's real reference,
     * so count it as a start */
    uintptr_t slot = 0, bias = 0;
    if (!ms_libc_dtv(tp, &slot, &bias))
        return;
    uint64_t avail = 0;
    const uint64_t *p = ms_lk_maps_view(&c->maps, slot, 8, &avail);
    if (!p || avail < 8)
        return;
    uint64_t dtv = *p;
    if (dtv < bias)
        return;
    ms_lk_root_start(&c->scan, dtv - bias);
    if (ms_lk_find(&c->scan, dtv) < 0) {
        /* an untracked DTV (the main thread's, from the loader): scan its entries, each
         * `bias` bytes (glibc's dtv_t), their count in the first */
        const uint64_t *cnt = ms_lk_maps_view(&c->maps, dtv - bias, 8, &avail);
        if (cnt && avail >= 8 && *cnt < 65536)
            root_range(c, dtv - bias, dtv + bias * (*cnt + 1), ms_lk_maps_view);
    }
}

/* pthread_create's argument and an exited thread's result live only in the agent's
 * thread slot (glibc's descriptor holds the slot): roots until the thread is joined, as
 * they are for valgrind in glibc's descriptor. */
static int root_slot(const ms_thread_slot *t, void *arg)
{
    lk_child *c = arg;
    ms_lk_root_value(&c->scan, (uint64_t)(uintptr_t)t->arg);
    ms_lk_root_value(&c->scan, (uint64_t)(uintptr_t)t->ret);
    return 0;
}

/* A thread that did not answer the stop signal: its whole registered stack. */
static int root_unstopped(const ms_thread_slot *t, void *arg)
{
    lk_child *c = arg;
    ms_lk_world *w = &g_lk->world;
    for (size_t i = 0; i < w->n; i++)
        if (w->t[i].tid == t->tid && w->t[i].state == MS_LKT_TIMEOUT && t->stack_hi > t->stack_lo)
            root_range(c, t->stack_lo, t->stack_hi, ms_lk_maps_view);
    return 0;
}

typedef struct lk_wire {
    uint64_t magic;
    ms_snap_leak_summary sum;
    uint64_t stat[MS_LKS_COUNT];
    uint32_t nrec;
    uint32_t pad;
} lk_wire;

/* Record order: definite, possible, reachable; by bytes within a class. */
static int goes_before(const ms_snap_leak_rec *a, const ms_snap_leak_rec *b)
{
    if (a->leak_class != b->leak_class)
        return a->leak_class < b->leak_class;
    return a->bytes > b->bytes;
}

static void sift(ms_snap_leak_rec *r, size_t root, size_t n)
{
    for (;;) {
        size_t ch = 2 * root + 1;
        if (ch >= n)
            return;
        if (ch + 1 < n && goes_before(&r[ch], &r[ch + 1]))
            ch++; /* the child that goes later */
        if (!goes_before(&r[root], &r[ch]))
            return;
        ms_snap_leak_rec t = r[root];
        r[root] = r[ch];
        r[ch] = t;
        root = ch;
    }
}

/* Heap sort (no allocation, no recursion). */
static void sort_records(ms_snap_leak_rec *r, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift(r, i, n);
    for (size_t end = n; end > 1; end--) {
        ms_snap_leak_rec t = r[0];
        r[0] = r[end - 1];
        r[end - 1] = t;
        sift(r, 0, end - 1);
    }
}

/* records: (stack, class) -> one record; definite ones fold their indirect blocks */
static void child_records(lk_child *c, lk_wire *wire, ms_snap_leak_rec **out, uint32_t *nout)
{
    uint32_t max_id = ms_stack_max_id();
    size_t nkeys = ((size_t)max_id + 1) * MS_LEAK_CLASS_COUNT;
    uint32_t *idx = child_mmap(nkeys * sizeof(uint32_t));
    size_t cap = c->nblocks < nkeys ? c->nblocks : nkeys;
    ms_snap_leak_rec *rec = child_mmap((cap + 1) * sizeof *rec);
    *out = rec;
    *nout = 0;
    if (!idx || !rec)
        return;
    size_t n = 0;
    for (size_t i = 0; i < c->nblocks; i++) {
        ms_lk_block *b = &c->blocks[i];
        unsigned cls = b->state;
        wire->sum.blocks[cls]++;
        wire->sum.bytes[cls] += b->size;
        ms_lk_block *key = b;
        if (cls == MS_LEAK_INDIRECT) {
            key = &c->blocks[ms_lk_fold_root(&c->scan, i)];
            cls = MS_LEAK_DEFINITE;
        }
        uint32_t sid = key->stack_id <= max_id ? key->stack_id : 0;
        size_t k = (size_t)sid * MS_LEAK_CLASS_COUNT + cls;
        if (!idx[k]) {
            if (n >= cap)
                continue;
            ms_snap_leak_rec *r = &rec[n++];
            memset(r, 0, sizeof *r);
            r->stack_id = sid;
            r->leak_class = (uint8_t)cls;
            idx[k] = (uint32_t)n;
        }
        ms_snap_leak_rec *r = &rec[idx[k] - 1];
        r->blocks++;
        r->bytes += b->size;
        if (cls == MS_LEAK_REACHABLE && b->heur && b->heur <= MS_LEAK_H_COUNT) {
            r->heuristics |= (uint16_t)(1u << (b->heur - 1));
            wire->stat[MS_LKS_HEUR_BLOCKS + b->heur - 1]++;
            wire->stat[MS_LKS_HEUR_BYTES + b->heur - 1] += b->size;
        }
        if (b == key && !r->example_address) {
            r->example_address = b->addr;
            r->example_size = b->size;
            uint64_t want = b->size < sizeof r->sample ? b->size : sizeof r->sample;
            uint64_t avail = 0;
            const void *p = want ? ms_lk_maps_view(&c->maps, b->addr, want, &avail) : NULL;
            if (p && avail) {
                memcpy(r->sample, p, avail);
                r->sample_len = (uint8_t)avail;
            }
        }
    }
    sort_records(rec, n);
    /* keep every lost and possible record, and the largest reachable ones */
    size_t keep = 0, reach = 0;
    for (size_t i = 0; i < n; i++) {
        if (rec[i].leak_class == MS_LEAK_REACHABLE && reach++ >= LK_MAX_REACHABLE_RECORDS)
            continue;
        if (keep >= LK_MAX_RECORDS) {
            wire->stat[MS_LKS_RECORDS_DROPPED]++;
            continue;
        }
        rec[keep++] = rec[i];
    }
    *nout = (uint32_t)keep;
}

/* The agent's own mappings (ms_sys_mmap), sorted, for the view to leave out: its
 * tables and per-thread memory hold addresses of the program's blocks (a thread's last
 * allocation among them) and are never roots, wherever the kernel placed them. */
static void agent_ranges(lk_child *c)
{
    size_t cap = MS_OWN_MAX;
    uint64_t lost = 0;
    /* one registered region for the result (the child's own list is short); the
     * sorting space is unmapped before anything is read, so it needs no entry */
    uint64_t *lo = child_mmap(2 * cap * sizeof(uint64_t));
    if (!lo)
        syscall(SYS_exit_group, 2);
    uint64_t *hi = lo + cap;
    size_t xbytes = 2 * cap * sizeof(ms_lk_block);
    long r = syscall(SYS_mmap, 0, xbytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r < 0 && r > -4096)
        syscall(SYS_exit_group, 2);
    ms_lk_block *x = (ms_lk_block *)r, *tmp = x + cap;
    size_t n = ms_own_ranges(lo, hi, cap, &lost);
    for (size_t i = 0; i < n; i++) {
        memset(&x[i], 0, sizeof x[i]);
        x[i].addr = lo[i];
        x[i].size = hi[i] - lo[i];
    }
    ms_lk_sort(x, n, tmp);
    for (size_t i = 0; i < n; i++) {
        lo[i] = x[i].addr;
        hi[i] = x[i].addr + x[i].size;
    }
    syscall(SYS_munmap, x, xbytes);
    c->maps.agent_lo = lo;
    c->maps.agent_hi = hi;
    c->maps.nagent = n;
}

static void child_main(lk_state *st, int wfd)
{
    uint64_t t0 = ms_lk_mono_ns();
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    lk_child *c = child_mmap(sizeof *c);
    if (!c)
        syscall(SYS_exit_group, 2);
    g_child = c;
    ms_lk_maps_own(&c->maps, (uint64_t)(uintptr_t)c,
                   ((uint64_t)(uintptr_t)c + sizeof *c + 4095) & ~(uint64_t)4095);
    /* the scan's state in the parent holds saved registers: never program memory */
    ms_lk_maps_own(&c->maps, (uint64_t)(uintptr_t)st,
                   ((uint64_t)(uintptr_t)st + sizeof *st + 4095) & ~(uint64_t)4095);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = child_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);

    c->maps.cap = 1u << 18;
    c->maps.m = child_mmap(c->maps.cap * sizeof(ms_lk_map));
    if (!c->maps.m || ms_lk_maps_read(&c->maps) != 0)
        syscall(SYS_exit_group, 2);
    agent_ranges(c);

    /* blocks, sorted */
    c->cap = ms_live_count() + 1024;
    c->blocks = child_mmap(c->cap * sizeof(ms_lk_block));
    ms_lk_block *tmp = child_mmap(c->cap * sizeof(ms_lk_block));
    uint32_t *stack = child_mmap(c->cap * sizeof(uint32_t));
    if (!c->blocks || !tmp || !stack)
        syscall(SYS_exit_group, 2);
    uint64_t tc = ms_lk_mono_ns();
    ms_live_foreach(collect_block, c, MS_ITER_NOLOCK);
    uint64_t ts = ms_lk_mono_ns();
    ms_lk_sort(c->blocks, c->nblocks, tmp);
    uint64_t tr = ms_lk_mono_ns();
    syscall(SYS_munmap, tmp, c->cap * sizeof(ms_lk_block));
    ms_lk_init(&c->scan, c->blocks, c->nblocks, stack, c->cap, ms_lk_maps_view, &c->maps);
    ms_lk_set_heuristics(&c->scan, st->heur, ms_lk_maps_is_vtable, &c->maps);
    size_t ibytes = ms_lk_index_size(&c->scan);
    void *imem = child_mmap(ibytes);
    if (imem)
        ms_lk_index_build(&c->scan, imem, ibytes);

    uint64_t self_tp = ms_arch_thread_pointer();
    c->hole_lo = child_mmap((LK_MAX_THREADS + 1) * sizeof(uint64_t));
    c->hole_hi = child_mmap((LK_MAX_THREADS + 1) * sizeof(uint64_t));
    if (!c->hole_lo || !c->hole_hi)
        syscall(SYS_exit_group, 2);
    add_hole(c, st, self_tp);
    for (size_t i = 0; i < st->world.n; i++)
        if (st->world.t[i].state == MS_LKT_STOPPED)
            add_hole(c, st, st->world.t[i].tp);

    /* roots 0: blocks the dynamic linker allocated (DTVs, dynamic TLS, link maps): it
     * keeps them in places that are not roots here (the stack cache of joined threads,
     * its own mmap'ed memory); LeakSanitizer makes the same choice */
    if (st->ld_hi > st->ld_lo) {
        for (size_t i = 0; i < c->nblocks; i++) {
            ms_stack_rec *sr = ms_stack_get(c->blocks[i].stack_id);
            if (!sr || !sr->depth)
                continue;
            uint64_t pc = ms_stack_pcs(sr)[0];
            if (pc >= st->ld_lo && pc < st->ld_hi) {
                ms_lk_root_start(&c->scan, c->blocks[i].addr);
                c->loader_blocks++;
            }
        }
    }
    /* roots 1: writable segments of every module but the agent */
    for (size_t i = 0; i < st->nsegs; i++)
        root_range_unrecorded(c, st->segs[i].lo, st->segs[i].hi, ms_lk_maps_view, 0);
    /* roots 2: threads: registers, stack from sp (with the red zone), TLS */
    ms_lk_world *w = &st->world;
    for (size_t i = 0; i < w->n; i++) {
        ms_lk_thread *t = &w->t[i];
        if (t->state == MS_LKT_STOPPED) {
            for (int r = 0; r < MS_LK_NREGS; r++)
                ms_lk_root_value(&c->scan, t->regs[r]);
            /* general-purpose registers only, as valgrind: SIMD registers mostly hold
             * stale copies (memcpy of the agent's own records) and would hide leaks */
            uint64_t lo = t->sp > 128 ? t->sp - 128 : t->sp;
            root_range(c, lo, stack_top(c, t->sp), ms_lk_maps_view);
            root_tls(c, st, t->tp);
        }
    }
    /* threads that did not stop: their whole known stack, no registers */
    if (w->timeout)
        ms_threads_foreach(root_unstopped, c);
    /* roots 3: the calling program thread */
    uint64_t tp = self_tp;
    if (st->who && st->who->program_thread) {
        for (int r = 0; r < MS_ARCH_NCALLEE; r++)
            ms_lk_root_value(&c->scan, st->who->regs[r]);
        root_range(c, st->who->sp, stack_top(c, st->who->sp), ms_lk_maps_view);
        root_tls(c, st, tp);
    }
    /* roots 4: thread arguments and results kept in the agent's thread slots */
    ms_threads_foreach_used(root_slot, c);
    /* roots 5: mmap regions the program made itself */
    ms_regions_foreach(root_region, c, MS_ITER_NOLOCK);
    /* roots 5, after memsight attach: memory the program had before (root_untracked) */
    if (ms_attach_sessions()) {
        uint64_t here = (uint64_t)(uintptr_t)&here;
        root_untracked(c, st, here);
    }

    uint64_t tm = ms_lk_mono_ns();
    ms_lk_mark(&c->scan);
    uint64_t tk = ms_lk_mono_ns();
    ms_lk_classify(&c->scan);

    lk_wire wire;
    memset(&wire, 0, sizeof wire);
    wire.stat[MS_LKS_COLLECT_NS] = ts - tc;
    wire.stat[MS_LKS_SORT_NS] = tr - ts;
    wire.stat[MS_LKS_ROOTS_NS] = tm - tr;
    wire.stat[MS_LKS_MARK_NS] = tk - tm;
    wire.magic = LK_RESULT_MAGIC;
    ms_snap_leak_rec *rec;
    uint32_t nrec;
    child_records(c, &wire, &rec, &nrec);
    wire.nrec = nrec;
    wire.stat[MS_LKS_BLOCKS] = c->nblocks;
    wire.stat[MS_LKS_ROOT_BYTES] = c->root_bytes;
    wire.stat[MS_LKS_WORDS] = c->scan.words;
    wire.stat[MS_LKS_SKIPPED_BYTES] = c->scan.skipped_bytes;
    wire.stat[MS_LKS_FAULTS] = c->faults;
    wire.stat[MS_LKS_REGIONS] = c->regions;
    wire.stat[MS_LKS_LOADER_BLOCKS] = c->loader_blocks;
    wire.stat[MS_LKS_UNTRACKED_MAPS] = c->untracked;
    wire.stat[MS_LKS_HEURISTICS] = st->heur;
    wire.sum.scan_ns = ms_lk_mono_ns() - t0;
    wire.stat[MS_LKS_CLASSIFY_NS] = ms_lk_mono_ns() - tk;
    if (write_all(wfd, &wire, sizeof wire) || write_all(wfd, rec, (size_t)nrec * sizeof *rec))
        syscall(SYS_exit_group, 4);
    syscall(SYS_exit_group, 0);
}

/* ===========================================================================
 * The parent: segments and the stop happen inside dl_iterate_phdr so that no module
 * is loaded or unloaded meanwhile (the loader lock is held; no stopped thread can hold
 * it, so the child never needs it either).
 * ========================================================================= */
static void stop_fork_resume(lk_state *st)
{
    int pfd[2];
    if (syscall(SYS_pipe2, pfd, O_CLOEXEC) != 0) {
        st->err = -errno;
        return;
    }
    int rc = ms_lk_stop_world(&st->world, st->sig, LK_STOP_TIMEOUT_MS);
    if (rc) {
        st->err = rc;
        syscall(SYS_close, pfd[0]);
        syscall(SYS_close, pfd[1]);
        return;
    }
    /* a child without an exit signal: the program's SIGCHLD handler and wait() never
     * see it; we reap it with __WCLONE */
    long pid = syscall(SYS_clone, 0, 0, 0, 0, 0);
    st->child_signals = 0;
    if (pid < 0 && errno == EINVAL) {
        /* qemu-user emulates only the clones of fork (exit signal SIGCHLD): then the
         * program sees one SIGCHLD per scan (counted in HLTH leak_sigchld_forks) */
        pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
        st->child_signals = 1;
        if (pid > 0)
            MS_HEALTH_INC(leak_sigchld_forks);
    }
    if (pid == 0) {
        syscall(SYS_close, pfd[0]);
        child_main(st, pfd[1]);
    }
    uint64_t forked = ms_lk_mono_ns();
    ms_lk_resume_world(&st->world);
    syscall(SYS_close, pfd[1]);
    if (pid < 0) {
        st->err = -errno;
        syscall(SYS_close, pfd[0]);
        return;
    }
    ms_lk_world *w = &st->world;
    st->res.sum.pause_ns = w->released_ns - w->t0_ns;
    st->res.stat[MS_LKS_STOP_NS] = w->stopped_ns - w->t0_ns;
    st->res.stat[MS_LKS_FORK_NS] = forked - w->stopped_ns;
    st->res.stat[MS_LKS_THREADS] = w->n;
    st->res.stat[MS_LKS_STOPPED] = w->stopped;
    st->res.stat[MS_LKS_GONE] = w->gone;
    /* the control thread blocks every signal; it is an agent thread, not a miss */
    uint32_t ctl = ms_control_tid();
    for (size_t i = 0; i < w->n; i++)
        if (ctl && w->t[i].tid == ctl && w->t[i].state == MS_LKT_TIMEOUT) {
            w->t[i].state = MS_LKT_GONE;
            w->timeout--;
        }
    /* threads beyond the slots (more than LK_MAX_THREADS) ran on and were not scanned */
    st->res.stat[MS_LKS_UNSTOPPED] = w->timeout + w->overflow;
    st->child = pid;
    st->pipe_rd = pfd[0];
    st->done = 1;
}

static void add_module_segs(lk_state *st, struct dl_phdr_info *info)
{
    uintptr_t a = (uintptr_t)info->dlpi_addr;
    int is_agent = 0; /* the agent's own data and bss are never roots */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && ms_self_lo >= a + ph->p_vaddr &&
            ms_self_lo < a + ph->p_vaddr + ph->p_memsz)
            is_agent = 1;
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    int is_ld = ms_libc_is_loader_path(name);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (is_ld && ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            st->ld_lo = a + ph->p_vaddr;
            st->ld_hi = a + ph->p_vaddr + ph->p_memsz;
        }
        if (ph->p_type == PT_TLS) {
            st->tls_static += (ph->p_memsz + ph->p_align + 15) & ~(uint64_t)15;
            if (is_agent && info->dlpi_tls_data) {
                /* initial-exec TLS sits at the same offset from every thread's pointer */
                uint64_t tp = ms_arch_thread_pointer();
                st->agent_tls_off = (int64_t)((uint64_t)(uintptr_t)info->dlpi_tls_data - tp);
                st->agent_tls_size = ph->p_memsz;
            }
            continue;
        }
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uint64_t lo = a + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (is_agent)
            continue;
        if (st->nsegs < LK_MAX_SEGS) {
            st->segs[st->nsegs].lo = lo;
            st->segs[st->nsegs].hi = hi;
            st->nsegs++;
        }
    }
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    lk_state *st = arg;
    (void)size;
    st->adds = info->dlpi_adds;
    st->subs = info->dlpi_subs;
    st->nmods++;
    return 0;
}

static int collect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    add_module_segs(arg, info);
    return 0;
}

static int stop_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    lk_state *st = arg;
    (void)size;
    if (info->dlpi_adds != st->adds || info->dlpi_subs != st->subs)
        return 1; /* the module list changed between the passes: retry */
    add_module_segs(st, info);
    if (++st->seen < st->nmods)
        return 0;
    stop_fork_resume(st);
    return 1;
}

int ms_leak_scan(const ms_leak_caller *who, ms_leak_result **res)
{
    if (!ms_init())
        return -ENOTSUP;
    int expect = 0;
    if (!__atomic_compare_exchange_n(&g_lk_busy, &expect, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return -EBUSY;
    ms_enter();
    int rc = 0;
    if (!g_lk) {
        g_lk = ms_sys_mmap(sizeof *g_lk);
        if (!g_lk) {
            rc = -ENOMEM;
            goto out;
        }
    }
    lk_state *st = g_lk;
    st->world.t = st->threads;
    st->world.cap = LK_MAX_THREADS;
    memset(st->world.skip, 0, sizeof st->world.skip);
    /* the control thread blocks every signal and holds only agent data */
    st->world.skip[0] = ms_control_tid();
    st->world.skip[1] = ms_metrics_tid(); /* the same for the /metrics thread */
    st->who = who;
    st->sig = ms_leak_stop_signal();
    int next = __atomic_exchange_n(&g_next_heur, -1, __ATOMIC_ACQ_REL);
    st->heur = next >= 0 ? (unsigned)next : ms_leak_heuristics();
    memset(&st->res, 0, sizeof st->res);
    for (int attempt = 0; attempt < 4 && !st->done; attempt++) {
        st->nsegs = 0;
        st->tls_static = 0;
        st->ld_lo = st->ld_hi = 0;
        st->agent_tls_off = 0;
        st->agent_tls_size = 0;
        st->nmods = st->seen = 0;
        st->err = 0;
        ms_dl_iterate(count_cb, st);
        ms_dl_iterate(stop_cb, st);
        if (st->err)
            break;
    }
    if (!st->done && !st->err) {
        /* the module list kept changing: take it as it is now, outside the lock */
        st->nsegs = 0;
        st->tls_static = 0;
        st->agent_tls_size = 0;
        ms_dl_iterate(collect_cb, st);
        stop_fork_resume(st);
    }
    if (!st->done) {
        rc = st->err ? st->err : -EAGAIN;
        goto out;
    }
    st->done = 0;
    /* the result */
    lk_wire wire;
    /* a scan reads the heap once: an hour is far beyond any real one; a child stuck
     * longer is killed rather than holding the caller forever */
    uint64_t deadline = ms_lk_mono_ns() + 3600ull * 1000000000ull;
    int bad = read_all(st->pipe_rd, &wire, sizeof wire, deadline) ||
              wire.magic != LK_RESULT_MAGIC;
    uint32_t n = bad ? 0 : wire.nrec;
    uint32_t keep = n < LK_MAX_RECORDS ? n : LK_MAX_RECORDS;
    if (!bad && keep &&
        read_all(st->pipe_rd, st->recs, keep * sizeof(ms_snap_leak_rec), deadline))
        bad = 1;
    syscall(SYS_close, st->pipe_rd);
    int late = bad && ms_lk_mono_ns() >= deadline;
    if (bad)
        syscall(SYS_kill, st->child, SIGKILL);
    int status = 0;
    /* (a program that reaps any child may have reaped a SIGCHLD one: ECHILD ends this) */
    while (syscall(SYS_wait4, st->child, &status, st->child_signals ? 0 : __WCLONE, NULL) < 0 &&
           errno == EINTR)
        ;
    if (bad) {
        /* the child ended (or was ended, past the deadline) before it sent the result: how,
         * for the snapshot's health and memsight leaks (exit statuses: 2 no memory for the
         * scan, 3 and 6 a read it could not answer, 4 the pipe, 5 too many mappings) */
        MS_HEALTH_INC(leak_scan_failures);
        __atomic_store_n(&ms_health.leak_scan_child_signal,
                         late ? SIGKILL : WIFSIGNALED(status) ? (uint64_t)WTERMSIG(status) : 0,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&ms_health.leak_scan_child_exit,
                         !late && WIFEXITED(status) ? (uint64_t)WEXITSTATUS(status) : 0,
                         __ATOMIC_RELAXED);
        rc = late ? -ETIMEDOUT : -EIO;
        goto out;
    }
    uint64_t pause = st->res.sum.pause_ns;
    uint64_t keepstat[MS_LKS_COUNT];
    memcpy(keepstat, st->res.stat, sizeof keepstat);
    st->res.sum = wire.sum;
    st->res.sum.pause_ns = pause;
    for (int i = 0; i < MS_LKS_COUNT; i++)
        st->res.stat[i] = wire.stat[i] ? wire.stat[i] : keepstat[i];
    st->res.stat[MS_LKS_MODULES] = st->nsegs;
    st->res.rec = st->recs;
    st->res.nrec = keep;
    st->res.cap = LK_MAX_RECORDS;
    *res = &st->res;
out:
    ms_leave();
    __atomic_store_n(&g_lk_busy, 0, __ATOMIC_RELEASE);
    (void)sys_ret;
    return rc;
}
