/* Categories of process memory from a parsed smaps, in the manner of dumpsys meminfo,
 * and their text/JSON/CSV output. Works only on what it is given (the parsed smaps and
 * optional hints); never reads /proc itself (an object's ELF header, for the extent of its
 * .bss, is read from the file) and never prints except to the FILE given. */
#define _GNU_SOURCE
#include "analysis/accounting.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *const cat_names[MS_CAT_COUNT] = {
    [MS_CAT_NATIVE_HEAP] = "native_heap", [MS_CAT_STACK] = "stack",
    [MS_CAT_CODE] = "code",               [MS_CAT_FILE] = "file",
    [MS_CAT_ANON] = "anon",               [MS_CAT_SHMEM] = "shmem",
    [MS_CAT_GUARD] = "guard",             [MS_CAT_OTHER] = "other",
};

const char *ms_acct_cat_name(enum ms_acct_cat c)
{
    return (unsigned)c < MS_CAT_COUNT ? cat_names[c] : "?";
}

void ms_acct_add(ms_acct_counts *c, const ms_vma *v)
{
    c->mappings++;
    c->size_kb = ms_sat_add(c->size_kb, (v->end - v->start) >> 10);
    c->rss_kb = ms_sat_add(c->rss_kb, v->kb[MS_SM_RSS]);
    c->pss_kb = ms_sat_add(c->pss_kb, v->kb[MS_SM_PSS]);
    c->shared_clean_kb = ms_sat_add(c->shared_clean_kb, v->kb[MS_SM_SHARED_CLEAN]);
    c->shared_dirty_kb = ms_sat_add(c->shared_dirty_kb, v->kb[MS_SM_SHARED_DIRTY]);
    c->private_clean_kb = ms_sat_add(c->private_clean_kb, v->kb[MS_SM_PRIVATE_CLEAN]);
    c->private_dirty_kb = ms_sat_add(c->private_dirty_kb, v->kb[MS_SM_PRIVATE_DIRTY]);
    c->swap_kb = ms_sat_add(c->swap_kb, v->kb[MS_SM_SWAP]);
    c->swap_pss_kb = ms_sat_add(c->swap_pss_kb, v->kb[MS_SM_SWAP_PSS]);
}

/* ---- classification by name and permissions ---- */

static int starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static int is_shared_object(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *so = strstr(base, ".so");
    return so && (so[3] == '\0' || so[3] == '.');
}

static int is_anonymous(const ms_vma *v)
{
    return v->name[0] == '\0' || starts(v->name, "[anon:") || starts(v->name, "[anon: ");
}

#define ARENA_SIZE ((uint64_t)64 << 20) /* glibc HEAP_MAX_SIZE on 64-bit */
#define ARENA_SIZE_32 ((uint64_t)1 << 20) /* and on 32-bit */
#define GUARD_MAX ((uint64_t)1 << 20)   /* largest ---p taken for a thread's guard */
#define STACK_MIN ((uint64_t)16 << 10)  /* PTHREAD_STACK_MIN: smaller rw regions are not stacks */

static int by_name(const ms_vma *v, const char *exe, int *cat)
{
    const char *n = v->name;
    /* glibc 2.40+ names its mappings with glibc.mem.decorate_maps=1: "[anon: glibc:
     * malloc arena]", "[anon: glibc: malloc]", "[anon: glibc: pthread stack: TID]". */
    if (!strcmp(n, "[heap]") || starts(n, "[anon:libc_malloc") || starts(n, "[anon:scudo:") ||
        starts(n, "[anon:jemalloc") || starts(n, "[anon:GWP-ASan") ||
        starts(n, "[anon: glibc: malloc") || starts(n, "[anon: glibc: loader malloc")) {
        *cat = MS_CAT_NATIVE_HEAP;
        return 1;
    }
    if (starts(n, "[stack") || starts(n, "[anon:stack_and_tls:") ||
        starts(n, "[anon:thread stack") || starts(n, "[anon:thread signal stack") ||
        starts(n, "[anon: glibc: pthread stack") || starts(n, "[anon: glibc: pthread user stack")) {
        *cat = MS_CAT_STACK;
        return 1;
    }
    if (starts(n, "/dev/shm/") || starts(n, "/memfd:") || starts(n, "/SYSV") ||
        starts(n, "[anon_shmem:") || starts(n, "/dev/ashmem") || starts(n, "[anon:shmem")) {
        *cat = MS_CAT_SHMEM;
        return 1;
    }
    if (n[0] == '[' && !starts(n, "[anon:") && !starts(n, "[anon: ")) {
        *cat = MS_CAT_OTHER; /* [vdso], [vvar], [vsyscall], [uprobes]... */
        return 1;
    }
    if (n[0] == '/' || (n[0] != '\0' && n[0] != '[')) {
        if (v->perms[3] == 's' && v->inode != 0 && starts(n, "/dev/zero")) {
            *cat = MS_CAT_SHMEM;
            return 1;
        }
        if ((exe && exe[0] && !strcmp(n, exe)) || is_shared_object(n) || v->perms[2] == 'x')
            *cat = MS_CAT_CODE;
        else
            *cat = MS_CAT_FILE;
        return 1;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Does any of the sorted ranges overlap [lo, hi)? */
static int overlaps_sorted(const ms_addr_range *r, size_t n, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = n;
    while (a < b) { /* first range with r.lo >= hi */
        size_t m = a + (b - a) / 2;
        if (r[m].lo < hi)
            a = m + 1;
        else
            b = m;
    }
    /* Ranges are sorted by lo and may be of any size: scan back while they could reach. */
    for (size_t i = a; i > 0; i--) {
        if (r[i - 1].hi > lo && r[i - 1].lo < hi)
            return 1;
        if (a - i > 64)
            break; /* heap blocks do not nest; a long run back means none reach */
    }
    return 0;
}

/* Whether the anonymous mapping v, right after `data` (a file's writable mapping), lies
 * within that object's memory image: the end of its writable PT_LOAD (p_memsz) read from
 * the file, when it is the same file (device and inode as in smaps). A file that cannot
 * be read, or another one at that path, leaves the old rule: a .bss of any size. */
static int within_bss(const ms_vma *data, const ms_vma *v)
{
    struct stat st;
    int fd = open(data->name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    Elf64_Ehdr eh;
    int ok = fstat(fd, &st) == 0 && (uint64_t)st.st_ino == data->inode &&
             major(st.st_dev) == data->dev_major && minor(st.st_dev) == data->dev_minor &&
             pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
             !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
             eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 256;
    uint64_t end = 0;
    int found = 0;
    for (unsigned k = 0; ok && k < eh.e_phnum; k++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + k * sizeof ph)) != (ssize_t)sizeof ph) {
            ok = 0;
            break;
        }
        /* the segment this mapping shows: file offsets [data->offset, ...) in it */
        uint64_t seg_lo = ph.p_offset, seg_hi = ph.p_offset + ph.p_filesz;
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_W) || data->offset < (seg_lo & ~4095ull) ||
            data->offset > seg_hi)
            continue;
        /* address of the segment's start, from where the mapping's offset sits */
        uint64_t seg_addr = data->start - (data->offset - seg_lo);
        end = seg_addr + ph.p_memsz;
        found = 1;
    }
    close(fd);
    if (!ok || !found)
        return 1;
    end = (end + 4095) & ~4095ull;
    return v->end <= end;
}

int ms_acct_build(ms_acct *a, const ms_smaps *sm, const ms_acct_hints *h, char *err,
                  size_t errlen)
{
    static const ms_acct_hints none;
    if (!h)
        h = &none;
    memset(a, 0, sizeof *a);
    size_t n = sm->n;
    a->n = n;
    a->present = sm->present_any;
    a->vma_cat = calloc(n ? n : 1, 1);
    a->vma_why = calloc(n ? n : 1, 1);
    a->vma_tid = calloc(n ? n : 1, sizeof(int));
    uint64_t *sps = calloc(h->nthreads ? h->nthreads : 1, sizeof(uint64_t) * 2);
    if (!a->vma_cat || !a->vma_why || !a->vma_tid || !sps) {
        free(sps);
        ms_acct_free(a);
        snprintf(err, errlen, "accounting: out of memory");
        return -1;
    }
    /* Sorted (sp, tid) pairs for a binary search per mapping. */
    size_t nsp = 0;
    for (size_t i = 0; i < h->nthreads; i++)
        if (h->threads[i].sp) {
            sps[2 * nsp] = h->threads[i].sp;
            sps[2 * nsp + 1] = (uint64_t)h->threads[i].tid;
            nsp++;
        }
    qsort(sps, nsp, sizeof(uint64_t) * 2, cmp_u64);
    /* Guess stacks from guard pages only when some thread's stack is not known from its
     * stack pointer (it was running) or no thread list was given at all. */
    int guess_stacks = nsp < h->nthreads || h->nthreads == 0;
    /* A process whose every mapping lies below 4 GiB is taken as 32-bit: glibc's arenas
     * are then 1 MiB (HEAP_MAX_SIZE) instead of 64 MiB. */
    uint64_t arena = ARENA_SIZE;
    if (n && sm->v[n - 1].end <= ((uint64_t)1 << 32))
        arena = ARENA_SIZE_32;

    for (size_t i = 0; i < n; i++) {
        const ms_vma *v = &sm->v[i];
        int cat = MS_CAT_ANON, why = MS_WHY_DEFAULT;
        /* A thread's sp inside the mapping wins over everything but a file name. */
        size_t lo = 0, hi = nsp;
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (sps[2 * m] < v->start)
                lo = m + 1;
            else
                hi = m;
        }
        int sp_tid = 0;
        for (size_t k = lo; k < nsp && sps[2 * k] < v->end; k++) {
            if (!sp_tid)
                sp_tid = (int)sps[2 * k + 1];
            a->threads_matched++;
        }
        if (by_name(v, h->exe, &cat)) {
            why = MS_WHY_NAME;
            if (cat == MS_CAT_STACK && sp_tid)
                a->vma_tid[i] = sp_tid;
        } else if (v->perms[0] == '-' && v->perms[1] == '-' && v->perms[2] == '-') {
            cat = MS_CAT_GUARD;
            why = MS_WHY_PERMS;
        } else if (sp_tid) {
            cat = MS_CAT_STACK;
            why = MS_WHY_SP;
            a->vma_tid[i] = sp_tid;
        } else if (h->nstacks && overlaps_sorted(h->stacks, h->nstacks, v->start, v->end)) {
            cat = MS_CAT_STACK;
            why = MS_WHY_HINT;
        } else if (v->perms[3] == 's') {
            cat = MS_CAT_SHMEM;
            why = MS_WHY_PERMS;
        } else if (h->nheap && overlaps_sorted(h->heap, h->nheap, v->start, v->end)) {
            cat = MS_CAT_NATIVE_HEAP;
            why = MS_WHY_HINT;
        } else if (v->start % arena == 0 && v->perms[0] == 'r' && v->perms[1] == 'w' &&
                   (v->end - v->start == arena ||
                    (i + 1 < n && sm->v[i + 1].start == v->end &&
                     !strcmp(sm->v[i + 1].perms, "---p") &&
                     sm->v[i + 1].end - v->start == arena))) {
            cat = MS_CAT_NATIVE_HEAP;
            why = MS_WHY_ARENA;
        } else if (guess_stacks && v->end - v->start >= STACK_MIN && i > 0 &&
                   sm->v[i - 1].end == v->start && !strcmp(sm->v[i - 1].perms, "---p") &&
                   is_anonymous(&sm->v[i - 1]) &&
                   sm->v[i - 1].end - sm->v[i - 1].start <= GUARD_MAX &&
                   v->perms[0] == 'r' && v->perms[1] == 'w') {
            cat = MS_CAT_STACK;
            why = MS_WHY_GUARD_BELOW;
        } else if (i > 0 && sm->v[i - 1].end == v->start && v->name[0] == '\0' &&
                   sm->v[i - 1].name[0] == '/' && a->vma_cat[i - 1] == MS_CAT_CODE &&
                   sm->v[i - 1].perms[1] == 'w' && within_bss(&sm->v[i - 1], v)) {
            /* .bss past the end of an object's data segment: only right after the file's
             * own data (never after another anonymous mapping), and only as far as the
             * object's image reaches (an arena or mmap'ed blocks the kernel placed, or
             * merged, right after it are not the object's) */
            cat = MS_CAT_CODE;
            why = MS_WHY_NEIGHBOUR;
        }
        a->vma_cat[i] = (uint8_t)cat;
        a->vma_why[i] = (uint8_t)why;
    }
    /* A no-access mapping right below a stack is that stack's guard. */
    for (size_t i = 0; i + 1 < n; i++)
        if (a->vma_cat[i] == MS_CAT_GUARD && a->vma_cat[i + 1] == MS_CAT_STACK &&
            sm->v[i].end == sm->v[i + 1].start &&
            sm->v[i].end - sm->v[i].start <= GUARD_MAX) {
            a->vma_cat[i] = MS_CAT_STACK;
            a->vma_why[i] = MS_WHY_NEIGHBOUR;
        }
    for (size_t i = 0; i < n; i++) {
        ms_acct_add(&a->cat[a->vma_cat[i]], &sm->v[i]);
        ms_acct_add(&a->total, &sm->v[i]);
    }
    free(sps);
    return 0;
}

struct merge_ctx {
    const ms_smaps *sm;
    const ms_acct *a;
};

static int cmp_name_cat(const void *pa, const void *pb, void *arg)
{
    const struct merge_ctx *m = arg;
    size_t x = *(const size_t *)pa, y = *(const size_t *)pb;
    int c = strcmp(m->sm->v[x].name, m->sm->v[y].name);
    if (c)
        return c;
    if (m->a->vma_cat[x] != m->a->vma_cat[y])
        return m->a->vma_cat[x] - m->a->vma_cat[y];
    return x < y ? -1 : x > y;
}

int ms_acct_merge_by_name(const ms_smaps *sm, const ms_acct *a, ms_smaps *out_sm, ms_acct *out_a)
{
    size_t n = a->n < sm->n ? a->n : sm->n;
    memset(out_sm, 0, sizeof *out_sm);
    *out_a = *a;
    out_a->vma_cat = NULL;
    out_a->vma_why = NULL;
    out_a->vma_tid = NULL;
    out_a->vma_count = NULL;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    out_sm->v = calloc(n ? n : 1, sizeof(ms_vma));
    out_a->vma_cat = calloc(n ? n : 1, 1);
    out_a->vma_why = calloc(n ? n : 1, 1);
    out_a->vma_tid = calloc(n ? n : 1, sizeof(int));
    out_a->vma_count = calloc(n ? n : 1, sizeof(uint32_t));
    if (!idx || !out_sm->v || !out_a->vma_cat || !out_a->vma_why || !out_a->vma_tid ||
        !out_a->vma_count) {
        free(idx);
        ms_smaps_free(out_sm);
        ms_acct_free(out_a);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    struct merge_ctx mc = {sm, a};
    qsort_r(idx, n, sizeof *idx, cmp_name_cat, &mc);
    size_t rows = 0;
    for (size_t k = 0; k < n; k++) {
        const ms_vma *v = &sm->v[idx[k]];
        uint8_t cat = a->vma_cat[idx[k]];
        ms_vma *r = rows ? &out_sm->v[rows - 1] : NULL;
        if (!r || strcmp(r->name, v->name) != 0 || out_a->vma_cat[rows - 1] != cat) {
            r = &out_sm->v[rows];
            *r = *v;
            r->kb[MS_SM_SIZE] = (v->end - v->start) >> 10;
            out_a->vma_cat[rows] = cat;
            out_a->vma_why[rows] = a->vma_why[idx[k]];
            out_a->vma_count[rows] = 1;
            rows++;
            continue;
        }
        uint64_t size = r->end - r->start + (v->end - v->start);
        if (v->start < r->start)
            r->start = v->start;
        r->end = r->start + size < r->start ? UINT64_MAX : r->start + size;
        for (int f = 0; f < MS_SM_NFIELDS; f++)
            if (f != MS_SM_KERNEL_PAGE_SIZE && f != MS_SM_MMU_PAGE_SIZE)
                r->kb[f] = ms_sat_add(r->kb[f], v->kb[f]);
        r->present |= v->present;
        r->flags |= v->flags;
        if (r->perms[0] != v->perms[0] || r->perms[1] != v->perms[1] || r->perms[2] != v->perms[2] ||
            r->perms[3] != v->perms[3])
            memcpy(r->perms, "****", 4); /* mixed permissions */
        out_a->vma_count[rows - 1]++;
    }
    out_sm->n = rows;
    out_sm->cap = n;
    out_sm->present_any = sm->present_any;
    out_a->n = rows;
    free(idx);
    return 0;
}

void ms_acct_free(ms_acct *a)
{
    free(a->vma_count);
    free(a->vma_cat);
    free(a->vma_why);
    free(a->vma_tid);
    memset(a, 0, sizeof *a);
}

/* ---- output ---- */

int ms_acct_parse_format(const char *s)
{
    if (!strcmp(s, "text"))
        return MS_FMT_TEXT;
    if (!strcmp(s, "json"))
        return MS_FMT_JSON;
    if (!strcmp(s, "csv"))
        return MS_FMT_CSV;
    return -1;
}

int ms_acct_parse_sort(const char *s)
{
    static const char *const names[] = {"pss", "rss", "uss", "swap", "size", "addr"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

void ms_acct_json_string(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc((int)c, out);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc((int)c, out);
            p++;
        } else {
            /* Copy a well-formed UTF-8 sequence; escape a stray byte. */
            int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            int ok = len > 0 && !(c == 0xc0 || c == 0xc1 || c > 0xf4);
            for (int k = 1; ok && k < len; k++)
                if ((p[k] & 0xc0) != 0x80)
                    ok = 0;
            if (ok) {
                fwrite(p, 1, (size_t)len, out);
                p += len;
            } else {
                fprintf(out, "\\u%04x", c);
                p++;
            }
        }
    }
    fputc('"', out);
}

static uint64_t sort_key(const ms_vma *v, int sort)
{
    switch (sort) {
    case MS_SORT_RSS: return v->kb[MS_SM_RSS];
    case MS_SORT_USS: return v->kb[MS_SM_PRIVATE_CLEAN] + v->kb[MS_SM_PRIVATE_DIRTY];
    case MS_SORT_SWAP: return v->kb[MS_SM_SWAP];
    case MS_SORT_SIZE: return (v->end - v->start) >> 10;
    default: return v->kb[MS_SM_PSS];
    }
}

struct sort_ctx {
    const ms_vma *v;
    int key;
};
static int cmp_idx(const void *pa, const void *pb, void *arg)
{
    const struct sort_ctx *sc = arg;
    const ms_vma *x = &sc->v[*(const size_t *)pa], *y = &sc->v[*(const size_t *)pb];
    if (sc->key != MS_SORT_ADDR) {
        uint64_t kx = sort_key(x, sc->key), ky = sort_key(y, sc->key);
        if (kx != ky)
            return kx > ky ? -1 : 1;
    }
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Category indexes ordered by the sort key (largest first). */
static void order_cats(const ms_acct *a, int sort, int *idx)
{
    for (int i = 0; i < MS_CAT_COUNT; i++)
        idx[i] = i;
    for (int i = 1; i < MS_CAT_COUNT; i++)
        for (int j = i; j > 0; j--) {
            const ms_acct_counts *x = &a->cat[idx[j]], *y = &a->cat[idx[j - 1]];
            uint64_t kx, ky;
            switch (sort) {
            case MS_SORT_RSS: kx = x->rss_kb; ky = y->rss_kb; break;
            case MS_SORT_USS: kx = ms_acct_uss(x); ky = ms_acct_uss(y); break;
            case MS_SORT_SWAP: kx = x->swap_kb; ky = y->swap_kb; break;
            case MS_SORT_SIZE: kx = x->size_kb; ky = y->size_kb; break;
            case MS_SORT_ADDR: kx = ky = 0; break;
            default: kx = x->pss_kb; ky = y->pss_kb; break;
            }
            if (kx <= ky)
                break;
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

static void json_counts(FILE *out, const ms_acct_counts *c)
{
    fprintf(out,
            "\"mappings\":%llu,\"size_kb\":%llu,\"rss_kb\":%llu,\"pss_kb\":%llu,\"uss_kb\":%llu,"
            "\"shared_clean_kb\":%llu,\"shared_dirty_kb\":%llu,\"private_clean_kb\":%llu,"
            "\"private_dirty_kb\":%llu,\"swap_kb\":%llu,\"swap_pss_kb\":%llu",
            (unsigned long long)c->mappings, (unsigned long long)c->size_kb,
            (unsigned long long)c->rss_kb, (unsigned long long)c->pss_kb,
            (unsigned long long)ms_acct_uss(c), (unsigned long long)c->shared_clean_kb,
            (unsigned long long)c->shared_dirty_kb, (unsigned long long)c->private_clean_kb,
            (unsigned long long)c->private_dirty_kb, (unsigned long long)c->swap_kb,
            (unsigned long long)c->swap_pss_kb);
}

static const char *const why_names[] = {"name", "sp", "guard_below", "arena",
                                        "hint", "neighbour", "perms", "default"};

int ms_acct_write(FILE *out, const ms_smaps *sm, const ms_acct *a, const ms_acct_write_opts *o)
{
    size_t n = a->n < sm->n ? a->n : sm->n;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    struct sort_ctx sc = {sm->v, o->sort};
    qsort_r(idx, n, sizeof *idx, cmp_idx, &sc);
    size_t shown = o->limit && o->limit < n ? o->limit : n;
    if (!o->with_mappings)
        shown = 0;
    int cats[MS_CAT_COUNT];
    order_cats(a, o->sort, cats);
    const ms_acct_counts *t = &a->total;

    if (o->format == MS_FMT_JSON) {
        fprintf(out, "{\"pid\":%d,\"totals\":{", o->pid);
        json_counts(out, t);
        fprintf(out, ",\"swap_pss_present\":%s},\"categories\":[",
                (a->present & (1u << MS_SM_SWAP_PSS)) ? "true" : "false");
        for (int k = 0; k < MS_CAT_COUNT; k++) {
            fprintf(out, "%s{\"name\":\"%s\",", k ? "," : "", cat_names[cats[k]]);
            json_counts(out, &a->cat[cats[k]]);
            fputc('}', out);
        }
        fputs("],\"mappings\":[", out);
        for (size_t k = 0; k < shown; k++) {
            const ms_vma *v = &sm->v[idx[k]];
            ms_acct_counts c = {0};
            ms_acct_add(&c, v);
            fprintf(out, "%s{\"start\":\"0x%llx\",\"end\":\"0x%llx\",\"perms\":\"%s\",\"offset\":%llu,"
                    "\"inode\":%llu,\"name\":",
                    k ? "," : "", (unsigned long long)v->start, (unsigned long long)v->end,
                    v->perms, (unsigned long long)v->offset, (unsigned long long)v->inode);
            ms_acct_json_string(out, v->name);
            fprintf(out, ",\"deleted\":%s,\"category\":\"%s\",\"why\":\"%s\",",
                    (v->flags & MS_VMA_DELETED) ? "true" : "false",
                    cat_names[a->vma_cat[idx[k]]], why_names[a->vma_why[idx[k]]]);
            if (a->vma_tid[idx[k]])
                fprintf(out, "\"tid\":%d,", a->vma_tid[idx[k]]);
            if (a->vma_count)
                c.mappings = a->vma_count[idx[k]];
            json_counts(out, &c);
            fputc('}', out);
        }
        fprintf(out, "]}\n");
    } else if (o->format == MS_FMT_CSV) {
        fputs("kind,start,end,perms,category,size_kb,rss_kb,pss_kb,uss_kb,shared_clean_kb,"
              "shared_dirty_kb,private_clean_kb,private_dirty_kb,swap_kb,swap_pss_kb,name\n",
              out);
        for (size_t k = 0; k < shown; k++) {
            const ms_vma *v = &sm->v[idx[k]];
            ms_acct_counts c = {0};
            ms_acct_add(&c, v);
            fprintf(out, "mapping,%llx,%llx,%s,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,\"",
                    (unsigned long long)v->start, (unsigned long long)v->end, v->perms,
                    cat_names[a->vma_cat[idx[k]]], (unsigned long long)c.size_kb,
                    (unsigned long long)c.rss_kb, (unsigned long long)c.pss_kb,
                    (unsigned long long)ms_acct_uss(&c), (unsigned long long)c.shared_clean_kb,
                    (unsigned long long)c.shared_dirty_kb, (unsigned long long)c.private_clean_kb,
                    (unsigned long long)c.private_dirty_kb, (unsigned long long)c.swap_kb,
                    (unsigned long long)c.swap_pss_kb);
            for (const char *s = v->name; *s; s++) {
                if (*s == '"')
                    fputc('"', out);
                fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
            }
            fputs((v->flags & MS_VMA_DELETED) ? " (deleted)\"\n" : "\"\n", out);
        }
        for (int k = 0; k <= MS_CAT_COUNT; k++) {
            const ms_acct_counts *c = k < MS_CAT_COUNT ? &a->cat[cats[k]] : t;
            const char *name = k < MS_CAT_COUNT ? cat_names[cats[k]] : "total";
            fprintf(out, "%s,,,,%s,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,\n",
                    k < MS_CAT_COUNT ? "category" : "total", name,
                    (unsigned long long)c->size_kb, (unsigned long long)c->rss_kb,
                    (unsigned long long)c->pss_kb, (unsigned long long)ms_acct_uss(c),
                    (unsigned long long)c->shared_clean_kb, (unsigned long long)c->shared_dirty_kb,
                    (unsigned long long)c->private_clean_kb, (unsigned long long)c->private_dirty_kb,
                    (unsigned long long)c->swap_kb, (unsigned long long)c->swap_pss_kb);
        }
    } else {
        if (shown) {
            fprintf(out, "%16s %9s %9s %9s %9s %9s %9s %9s %9s %9s %-4s %-11s %s\n", "address",
                    "size", "rss", "pss", "sh_clean", "sh_dirty", "pr_clean", "pr_dirty", "swap",
                    "swap_pss", "perm", "category", "name");
            for (size_t k = 0; k < shown; k++) {
                const ms_vma *v = &sm->v[idx[k]];
                fprintf(out, "%16llx %9llu %9llu %9llu %9llu %9llu %9llu %9llu %9llu %9llu %-4s %-11s %s%s",
                        (unsigned long long)v->start, (unsigned long long)((v->end - v->start) >> 10),
                        (unsigned long long)v->kb[MS_SM_RSS], (unsigned long long)v->kb[MS_SM_PSS],
                        (unsigned long long)v->kb[MS_SM_SHARED_CLEAN],
                        (unsigned long long)v->kb[MS_SM_SHARED_DIRTY],
                        (unsigned long long)v->kb[MS_SM_PRIVATE_CLEAN],
                        (unsigned long long)v->kb[MS_SM_PRIVATE_DIRTY],
                        (unsigned long long)v->kb[MS_SM_SWAP], (unsigned long long)v->kb[MS_SM_SWAP_PSS],
                        v->perms, cat_names[a->vma_cat[idx[k]]], v->name,
                        (v->flags & MS_VMA_DELETED) ? " (deleted)" : "");
                if (a->vma_count && a->vma_count[idx[k]] > 1)
                    fprintf(out, "  [%u mappings]", a->vma_count[idx[k]]);
                fputc('\n', out);
            }
            if (shown < n)
                fprintf(out, "... %zu more mappings\n", n - shown);
            fputc('\n', out);
        }
        fprintf(out, "%-12s %8s %10s %10s %10s %10s %10s %10s\n", "category", "mappings", "rss_kB",
                "pss_kB", "uss_kB", "pr_dirty", "swap_kB", "swap_pss");
        for (int k = 0; k <= MS_CAT_COUNT; k++) {
            const ms_acct_counts *c = k < MS_CAT_COUNT ? &a->cat[cats[k]] : t;
            if (k == MS_CAT_COUNT)
                fprintf(out, "%-12s %8s %10s %10s %10s %10s %10s %10s\n", "", "--------", "------",
                        "------", "------", "--------", "-------", "--------");
            fprintf(out, "%-12s %8llu %10llu %10llu %10llu %10llu %10llu %10llu\n",
                    k < MS_CAT_COUNT ? cat_names[cats[k]] : "TOTAL", (unsigned long long)c->mappings,
                    (unsigned long long)c->rss_kb, (unsigned long long)c->pss_kb,
                    (unsigned long long)ms_acct_uss(c), (unsigned long long)c->private_dirty_kb,
                    (unsigned long long)c->swap_kb, (unsigned long long)c->swap_pss_kb);
        }
        if (!(a->present & (1u << MS_SM_SWAP_PSS)))
            fprintf(out, "(this kernel reports no SwapPss: swap_pss is 0)\n");
    }
    free(idx);
    return ferror(out) ? -1 : 0;
}

/* ---- RSS explained ---- */

#include "analysis/symbolize.h"
#include "core/snapshot.h"

static const char *const part_names[MS_EX_COUNT] = {
    [MS_EX_HEAP_TRACKED] = "heap_tracked", [MS_EX_HEAP_OVERHEAD] = "heap_overhead",
    [MS_EX_HEAP_FREE] = "heap_free",       [MS_EX_MMAP_TRACKED] = "mmap_tracked",
    [MS_EX_STACKS] = "stacks",             [MS_EX_CODE] = "code",
    [MS_EX_FILE] = "file",                 [MS_EX_SHMEM] = "shmem",
    [MS_EX_OTHER] = "other",               [MS_EX_UNEXPLAINED] = "unexplained",
};

const char *ms_explain_part_name(enum ms_explain_part p)
{
    return (unsigned)p < MS_EX_COUNT ? part_names[p] : "?";
}

static int cmp_range(const void *a, const void *b)
{
    const ms_addr_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

typedef struct mmap_blk {
    uint64_t lo, hi;
    uint32_t stack_id;
} mmap_blk;

static int cmp_mblk(const void *a, const void *b)
{
    const mmap_blk *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_estack(const void *a, const void *b)
{
    const ms_explain_stack *x = a, *y = b;
    if (x->rss_kb != y->rss_kb)
        return x->rss_kb > y->rss_kb ? -1 : 1;
    return x->bytes > y->bytes ? -1 : x->bytes < y->bytes;
}

/* glibc's chunk for a request of n bytes: 8 bytes of header, 16-byte alignment, 32 at
 * least; large requests are mmapped whole pages (16 bytes of header). */
static uint64_t glibc_chunk(uint64_t n)
{
    if (n >= 128 * 1024)
        return (n + 16 + 4095) & ~(uint64_t)4095;
    uint64_t c = (n + 8 + 15) & ~(uint64_t)15;
    return c < 32 ? 32 : c;
}

/* A mallinfo2 field: the agent's HLTH counter `mallinfo2_<field>` (bytes), or an ACCT
 * value of that name (kB) a tool recorded. */
static int snap_number(const ms_snapshot *s, const char *field, uint64_t *v)
{
    char name[64];
    snprintf(name, sizeof name, "mallinfo2_%s", field);
    if (ms_snapshot_health(s, name, v) == 0)
        return 1;
    for (size_t i = 0; i < s->nacct; i++)
        if (s->acct[i].name && !strcmp(s->acct[i].name, name)) {
            *v = s->acct[i].value > UINT64_MAX / 1024 ? UINT64_MAX : s->acct[i].value * 1024;
            return 1;
        }
    return 0;
}

/* The allocator's own figures; the split needs in-use (uordblks, hblkhd) and free. */
static int read_mallinfo(const ms_snapshot *s, ms_explain_mallinfo *mi)
{
    memset(mi, 0, sizeof *mi);
    if (!snap_number(s, "uordblks", &mi->uordblks) || !snap_number(s, "hblkhd", &mi->hblkhd) ||
        !snap_number(s, "fordblks", &mi->fordblks))
        return 0;
    snap_number(s, "arena", &mi->arena);
    snap_number(s, "ordblks", &mi->ordblks);
    snap_number(s, "smblks", &mi->smblks);
    snap_number(s, "hblks", &mi->hblks);
    snap_number(s, "fsmblks", &mi->fsmblks);
    snap_number(s, "keepcost", &mi->keepcost);
    return 1;
}

/* Takes up to `bytes` (in kB) from *left_kb; returns what was taken. */
static uint64_t take_kb(uint64_t *left_kb, uint64_t bytes)
{
    uint64_t kb = bytes >> 10;
    if (kb > *left_kb)
        kb = *left_kb;
    *left_kb -= kb;
    return kb;
}

/* Bytes the agent puts below every block it records (its header), when the snapshot
 * comes from the agent (an imported dump's blocks have none). */
static uint64_t agent_header(const ms_snapshot *s)
{
    const char *a = ms_snapshot_meta(s, "agent");
    return a && !strncmp(a, "memsight-agent", 14) ? 16 : 0;
}

int ms_explain_build(ms_explain *ex, const ms_smaps *sm, const ms_snapshot *s, const char *exe,
                     const ms_thread_sp *threads, size_t nthreads, char *err, size_t errlen)
{
    memset(ex, 0, sizeof *ex);
    ex->sampled = (s->flags & MS_SNAP_F_SAMPLED) != 0;
    ex->has_blocks = s->has_blocks;
    ex->threads_in_snapshot = s->nthreads;
    size_t nheap = 0, nmm = 0, nst = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        if (s->blocks[i].kind == MS_KIND_HEAP)
            nheap++;
        else if (s->blocks[i].kind == MS_KIND_MMAP)
            nmm++;
        else if (s->blocks[i].kind == MS_KIND_STACK)
            nst++;
    }
    uint64_t hdr = agent_header(s);
    ms_addr_range *heap = calloc(nheap + 1, sizeof *heap);
    ms_addr_range *stk = calloc(nst + s->nthreads + 1, sizeof *stk);
    mmap_blk *mm = calloc(nmm + 1, sizeof *mm);
    ms_acct a = {0};
    int rc = -1;
    if (!heap || !stk || !mm) {
        snprintf(err, errlen, "explain: out of memory");
        goto out;
    }
    nheap = nmm = nst = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        const ms_snap_block *b = &s->blocks[i];
        uint64_t hi = b->address + b->size < b->address ? UINT64_MAX : b->address + b->size;
        if (b->kind == MS_KIND_HEAP) {
            heap[nheap++] = (ms_addr_range){b->address, hi};
            ex->heap_tracked_bytes += b->size;
            ex->heap_tracked_blocks++;
            ex->heap_chunk_bytes += glibc_chunk(b->size + hdr);
            ex->heap_agent_header_bytes += hdr;
        } else if (b->kind == MS_KIND_MMAP) {
            mm[nmm++] = (mmap_blk){b->address, hi, b->stack_id};
        } else if (b->kind == MS_KIND_STACK) {
            stk[nst++] = (ms_addr_range){b->address, hi};
        }
    }
    /* Thread stack ranges as the agent saw them; the main thread's may be open below
     * (lo 0) and a range larger than 1 GiB is not a stack: the [stack] name covers it. */
    for (size_t i = 0; i < s->nthreads; i++) {
        uint64_t lo = s->threads[i].stack_lo, hi = s->threads[i].stack_hi;
        if (lo && hi > lo && hi - lo <= ((uint64_t)1 << 30))
            stk[nst++] = (ms_addr_range){lo, hi};
    }
    if (!s->has_blocks || ex->sampled) {
        /* Sampled or block-less snapshots: the blocks (if any) are a sample, the per-stack
         * counters hold the estimates. */
        ex->heap_tracked_bytes = ex->heap_tracked_blocks = ex->heap_chunk_bytes = 0;
        uint64_t recorded;
        if (!s->has_blocks && ms_snapshot_health(s, "live_table_blocks", &recorded) == 0)
            ex->heap_agent_header_bytes = recorded > UINT64_MAX / 16 ? 0 : recorded * hdr;
        for (size_t i = 0; i < s->nstacks; i++)
            if (s->stacks[i].kind == MS_KIND_HEAP) {
                ex->heap_tracked_bytes += s->stacks[i].c.live_bytes;
                ex->heap_tracked_blocks += s->stacks[i].c.live_blocks;
            }
    }
    qsort(heap, nheap, sizeof *heap, cmp_range);
    qsort(stk, nst, sizeof *stk, cmp_range);
    qsort(mm, nmm, sizeof *mm, cmp_mblk);

    ms_acct_hints h = {.exe = exe, .threads = threads, .nthreads = nthreads, .stacks = stk,
                       .nstacks = nst, .heap = heap, .nheap = nheap};
    if (ms_acct_build(&a, sm, &h, err, errlen) != 0)
        goto out;
    ex->rss_kb = a.total.rss_kb;

    /* Per stack id: tracked mmap regions and the RSS they cover. */
    ms_explain_stack *es = calloc(nmm + 1, sizeof *es);
    if (!es) {
        snprintf(err, errlen, "explain: out of memory");
        goto out;
    }
    size_t nes = 0;
    for (size_t k = 0; k < nmm; k++) {
        size_t j;
        for (j = 0; j < nes; j++)
            if (es[j].stack_id == mm[k].stack_id)
                break;
        if (j == nes)
            es[nes++].stack_id = mm[k].stack_id;
        es[j].bytes += mm[k].hi - mm[k].lo;
        es[j].regions++;
    }
    for (size_t i = 0; i < sm->n; i++) {
        const ms_vma *v = &sm->v[i];
        uint64_t rss = v->kb[MS_SM_RSS], size = v->end - v->start;
        uint64_t claimed = 0;
        if (nmm && size) {
            /* Live regions do not overlap, so sorted by start they are sorted by end
             * too: the first that ends after this mapping starts. */
            size_t lo = 0, hi = nmm;
            while (lo < hi) {
                size_t m = lo + (hi - lo) / 2;
                if (mm[m].hi <= v->start)
                    lo = m + 1;
                else
                    hi = m;
            }
            uint64_t covered_total = 0;
            for (size_t k = lo; k < nmm && mm[k].lo < v->end; k++) {
                uint64_t a0 = mm[k].lo > v->start ? mm[k].lo : v->start;
                uint64_t a1 = mm[k].hi < v->end ? mm[k].hi : v->end;
                if (a1 <= a0)
                    continue;
                uint64_t cov = a1 - a0;
                if (covered_total + cov > size)
                    cov = size - covered_total;
                covered_total += cov;
                uint64_t part = (uint64_t)((double)rss * (double)cov / (double)size);
                if (claimed + part > rss)
                    part = rss - claimed;
                claimed += part;
                for (size_t j = 0; j < nes; j++)
                    if (es[j].stack_id == mm[k].stack_id) {
                        es[j].rss_kb += part;
                        break;
                    }
            }
        }
        ex->part_kb[MS_EX_MMAP_TRACKED] += claimed;
        uint64_t rest = rss - claimed;
        switch (a.vma_cat[i]) {
        case MS_CAT_NATIVE_HEAP: ex->heap_rss_kb += rest; break;
        case MS_CAT_STACK: ex->part_kb[MS_EX_STACKS] += rest; break;
        case MS_CAT_CODE: ex->part_kb[MS_EX_CODE] += rest; break;
        case MS_CAT_FILE: ex->part_kb[MS_EX_FILE] += rest; break;
        case MS_CAT_SHMEM: ex->part_kb[MS_EX_SHMEM] += rest; break;
        case MS_CAT_ANON: ex->part_kb[MS_EX_UNEXPLAINED] += rest; break;
        default: ex->part_kb[MS_EX_OTHER] += rest; break;
        }
    }
    qsort(es, nes, sizeof *es, cmp_estack);
    ex->mmap_stacks = es;
    ex->nmmap_stacks = nes;

    /* Each snapshot thread's stack: the RSS of the stack mappings its range overlaps. */
    ex->threads = calloc(s->nthreads + 1, sizeof *ex->threads);
    if (!ex->threads) {
        snprintf(err, errlen, "explain: out of memory");
        goto out;
    }
    for (size_t k = 0; k < s->nthreads; k++) {
        const ms_thread *th = &s->threads[k];
        uint64_t lo = th->stack_lo, hi = th->stack_hi;
        if (!lo || hi <= lo || hi - lo > ((uint64_t)1 << 30))
            continue;
        ms_explain_thread *et = &ex->threads[ex->nthreads++];
        et->tid = th->tid;
        et->name = th->name ? th->name : "";
        for (size_t i = 0; i < sm->n; i++)
            if (a.vma_cat[i] == MS_CAT_STACK && sm->v[i].start < hi && sm->v[i].end > lo)
                et->stack_kb += sm->v[i].kb[MS_SM_RSS];
    }

    /* The heap's RSS: the tracked bytes; the agent's own block headers and in-use
     * blocks the agent never saw (unexplained: not the program's allocations); the
     * allocator's per-block overhead; the free space it keeps, which only the
     * allocator knows (mallinfo2). Each part is bounded by what is left of the RSS. */
    for (size_t i = 0; i < sm->n; i++)
        if (a.vma_cat[i] == MS_CAT_NATIVE_HEAP && a.vma_why[i] == MS_WHY_ARENA)
            ex->arena_heaps++;
    uint64_t tracked_kb = ex->heap_tracked_bytes >> 10;
    uint64_t t = tracked_kb < ex->heap_rss_kb ? tracked_kb : ex->heap_rss_kb;
    ex->heap_untouched_kb = tracked_kb - t;
    ex->part_kb[MS_EX_HEAP_TRACKED] = t;
    uint64_t left = ex->heap_rss_kb - t;
    uint64_t hdr_kb = take_kb(&left, ex->heap_agent_header_bytes);
    int chunks = s->has_blocks && !ex->sampled;
    uint64_t ov_bytes = 0, explained = ex->heap_tracked_bytes + ex->heap_agent_header_bytes;
    if (chunks) {
        ov_bytes = ex->heap_chunk_bytes > explained ? ex->heap_chunk_bytes - explained : 0;
        explained = ex->heap_chunk_bytes;
    }
    ex->has_mallinfo = read_mallinfo(s, &ex->mi);
    if (ex->has_mallinfo) {
        uint64_t in_use = ms_sat_add(ex->mi.uordblks, ex->mi.hblkhd);
        uint64_t rest = in_use > explained ? in_use - explained : 0;
        if (chunks)
            ex->heap_untracked_bytes = rest;
        else
            ov_bytes = rest; /* the blocks are a sample: overhead and unseen blocks together */
    }
    ex->part_kb[MS_EX_HEAP_OVERHEAD] = take_kb(&left, ov_bytes);
    uint64_t unexplained_kb = hdr_kb;
    if (ex->has_mallinfo) {
        unexplained_kb += take_kb(&left, ex->heap_untracked_bytes);
        uint64_t free_kb = take_kb(&left, ex->mi.fordblks);
        ex->part_kb[MS_EX_HEAP_FREE] = free_kb;
        ex->heap_free_unresident_kb = (ex->mi.fordblks >> 10) - free_kb;
        ex->heap_unaccounted_kb = left;
        unexplained_kb += left;
        ex->heap_split = MS_SPLIT_MALLINFO;
        ex->heap_method = chunks ? "free space from mallinfo2 (fordblks); overhead from glibc's "
                                   "chunk layout over every live block"
                                 : "free space from mallinfo2 (fordblks); overhead: in-use bytes "
                                   "(uordblks + hblkhd) minus tracked bytes (estimates)";
    } else if (chunks) {
        ex->part_kb[MS_EX_HEAP_FREE] = left;
        ex->heap_split = MS_SPLIT_CHUNKS;
        ex->heap_method = "model, no mallinfo2 in the snapshot: overhead from glibc's chunk "
                          "layout over every live block, free space is the rest of the heap RSS";
    } else {
        ex->part_kb[MS_EX_HEAP_FREE] = left;
        ex->heap_split = MS_SPLIT_NONE;
        ex->heap_method = "heap RSS minus tracked bytes (overhead and free space together: no "
                          "mallinfo2 in the snapshot and no list of every block)";
    }
    ex->part_kb[MS_EX_UNEXPLAINED] += unexplained_kb;
    uint64_t v;
    if (ms_snapshot_health(s, "live_table_bytes", &v) == 0)
        ex->agent_tables_bytes = v;
    rc = 0;
out:
    ms_acct_free(&a);
    free(heap);
    free(stk);
    free(mm);
    return rc;
}

void ms_explain_free(ms_explain *ex)
{
    free(ex->threads);
    free(ex->mmap_stacks);
    memset(ex, 0, sizeof *ex);
}

/* The first frame of a stack that resolves to a function, as "func file:line". */
static void stack_label(char *buf, size_t cap, const ms_snapshot *s, ms_symbolizer *sym,
                        uint32_t id)
{
    const ms_stack *st = ms_snapshot_stack(s, id);
    snprintf(buf, cap, "stack %u", id);
    if (!st || !st->depth)
        return;
    for (uint32_t d = 0; d < st->depth && d < 8; d++) {
        ms_frame f[8];
        int n = sym ? ms_symbolize(sym, st->pcs[d], !(d == 0 && (st->flags & MS_STACKF_FIRST_IS_PC)),
                                   f, 8)
                    : 0;
        if (n > 0 && f[n - 1].function) {
            const char *file = f[n - 1].file ? strrchr(f[n - 1].file, '/') : NULL;
            file = file ? file + 1 : f[n - 1].file;
            if (file)
                snprintf(buf, cap, "%s %s:%d", f[n - 1].function, file, f[n - 1].line);
            else
                snprintf(buf, cap, "%s", f[n - 1].function);
            return;
        }
    }
    snprintf(buf, cap, "0x%llx", (unsigned long long)st->pcs[0]);
}

int ms_explain_write(FILE *out, const ms_explain *ex, const ms_snapshot *s, ms_symbolizer *sym,
                     int format, int pid, const char *snapshot_path)
{
    char label[512];
    if (format == MS_FMT_JSON) {
        fprintf(out, "{\"pid\":%d,\"snapshot\":", pid);
        ms_acct_json_string(out, snapshot_path ? snapshot_path : "");
        fprintf(out, ",\"sampled\":%s,\"rss_kb\":%llu,\"parts\":[", ex->sampled ? "true" : "false",
                (unsigned long long)ex->rss_kb);
        for (int p = 0; p < MS_EX_COUNT; p++)
            fprintf(out, "%s{\"name\":\"%s\",\"kb\":%llu}", p ? "," : "", part_names[p],
                    (unsigned long long)ex->part_kb[p]);
        fprintf(out,
                "],\"heap\":{\"rss_kb\":%llu,\"tracked_bytes\":%llu,\"tracked_blocks\":%llu,"
                "\"chunk_bytes\":%llu,\"untouched_kb\":%llu,\"method\":",
                (unsigned long long)ex->heap_rss_kb, (unsigned long long)ex->heap_tracked_bytes,
                (unsigned long long)ex->heap_tracked_blocks,
                (unsigned long long)ex->heap_chunk_bytes, (unsigned long long)ex->heap_untouched_kb);
        ms_acct_json_string(out, ex->heap_method);
        static const char *const splits[] = {"none", "chunk_layout", "mallinfo2"};
        fprintf(out, ",\"split\":\"%s\",\"agent_header_bytes\":%llu,\"arena_heaps\":%zu,\"mallinfo2\":",
                splits[ex->heap_split], (unsigned long long)ex->heap_agent_header_bytes,
                ex->arena_heaps);
        if (ex->has_mallinfo) {
            const ms_explain_mallinfo *m = &ex->mi;
            fprintf(out,
                    "{\"arena\":%llu,\"ordblks\":%llu,\"smblks\":%llu,\"hblks\":%llu,"
                    "\"hblkhd\":%llu,\"fsmblks\":%llu,\"uordblks\":%llu,\"fordblks\":%llu,"
                    "\"keepcost\":%llu},\"untracked_bytes\":%llu,\"free_unresident_kb\":%llu,"
                    "\"unaccounted_kb\":%llu",
                    (unsigned long long)m->arena, (unsigned long long)m->ordblks,
                    (unsigned long long)m->smblks, (unsigned long long)m->hblks,
                    (unsigned long long)m->hblkhd, (unsigned long long)m->fsmblks,
                    (unsigned long long)m->uordblks, (unsigned long long)m->fordblks,
                    (unsigned long long)m->keepcost, (unsigned long long)ex->heap_untracked_bytes,
                    (unsigned long long)ex->heap_free_unresident_kb,
                    (unsigned long long)ex->heap_unaccounted_kb);
        } else {
            fputs("null", out);
        }
        fputs("},\"mmap_stacks\":[", out);
        for (size_t i = 0; i < ex->nmmap_stacks; i++) {
            const ms_explain_stack *e = &ex->mmap_stacks[i];
            stack_label(label, sizeof label, s, sym, e->stack_id);
            fprintf(out, "%s{\"stack_id\":%u,\"bytes\":%llu,\"regions\":%llu,\"rss_kb\":%llu,\"frame\":",
                    i ? "," : "", e->stack_id, (unsigned long long)e->bytes,
                    (unsigned long long)e->regions, (unsigned long long)e->rss_kb);
            ms_acct_json_string(out, label);
            fputc('}', out);
        }
        fputs("],\"threads\":[", out);
        for (size_t i = 0; i < ex->nthreads; i++) {
            fprintf(out, "%s{\"tid\":%u,\"name\":", i ? "," : "", ex->threads[i].tid);
            ms_acct_json_string(out, ex->threads[i].name);
            fprintf(out, ",\"stack_kb\":%llu}", (unsigned long long)ex->threads[i].stack_kb);
        }
        fprintf(out, "],\"agent_tables_bytes\":%llu}\n", (unsigned long long)ex->agent_tables_bytes);
        return ferror(out) ? -1 : 0;
    }
    fprintf(out, "RSS of pid %d explained (snapshot %s%s)\n\n", pid, snapshot_path ? snapshot_path : "",
            ex->sampled ? ", sampled: heap and mmap figures are estimates" : "");
    for (int p = 0; p < MS_EX_COUNT; p++) {
        double pct = ex->rss_kb ? 100.0 * (double)ex->part_kb[p] / (double)ex->rss_kb : 0;
        fprintf(out, "  %-14s %10llu kB  %5.1f%%\n", part_names[p],
                (unsigned long long)ex->part_kb[p], pct);
    }
    fprintf(out, "  %-14s %10llu kB\n\n", "RSS", (unsigned long long)ex->rss_kb);
    fprintf(out, "native heap: %llu kB resident; %llu live blocks of %llu bytes tracked",
            (unsigned long long)ex->heap_rss_kb, (unsigned long long)ex->heap_tracked_blocks,
            (unsigned long long)ex->heap_tracked_bytes);
    if (ex->heap_untouched_kb)
        fprintf(out, " (%llu kB of them not resident)", (unsigned long long)ex->heap_untouched_kb);
    fprintf(out, "\n  overhead/free split: %s\n", ex->heap_method);
    if (ex->has_mallinfo) {
        const ms_explain_mallinfo *m = &ex->mi;
        fprintf(out,
                "  glibc mallinfo2 at the snapshot: arena %llu kB, in use %llu kB (uordblks) + "
                "%llu kB in %llu mmapped chunks (hblkhd), free %llu kB in %llu chunks (fordblks; "
                "%llu kB of it not resident), releasable top %llu kB (keepcost)\n",
                (unsigned long long)(m->arena >> 10), (unsigned long long)(m->uordblks >> 10),
                (unsigned long long)(m->hblkhd >> 10), (unsigned long long)m->hblks,
                (unsigned long long)(m->fordblks >> 10), (unsigned long long)m->ordblks,
                (unsigned long long)ex->heap_free_unresident_kb,
                (unsigned long long)(m->keepcost >> 10));
        if (ex->heap_untracked_bytes || ex->heap_unaccounted_kb)
            fprintf(out, "  in unexplained: %llu kB in use in blocks the agent did not record, "
                         "%llu kB of heap RSS mallinfo2 counts neither in use nor free\n",
                    (unsigned long long)(ex->heap_untracked_bytes >> 10),
                    (unsigned long long)ex->heap_unaccounted_kb);
    }
    if (ex->heap_agent_header_bytes)
        fprintf(out, "  the agent's block headers: %llu kB (in unexplained)\n",
                (unsigned long long)(ex->heap_agent_header_bytes >> 10));
    if (ex->arena_heaps)
        fprintf(out, "  glibc arena heaps besides the main arena: %zu\n", ex->arena_heaps);
    if (ex->nmmap_stacks) {
        fprintf(out, "\ntracked mmap by call stack:\n");
        for (size_t i = 0; i < ex->nmmap_stacks && i < 20; i++) {
            const ms_explain_stack *e = &ex->mmap_stacks[i];
            stack_label(label, sizeof label, s, sym, e->stack_id);
            fprintf(out, "  %10llu kB resident of %10llu kB in %llu region(s)  %s\n",
                    (unsigned long long)e->rss_kb, (unsigned long long)(e->bytes >> 10),
                    (unsigned long long)e->regions, label);
        }
    }
    if (ex->nthreads) {
        fprintf(out, "\nthread stacks (resident):\n");
        for (size_t i = 0; i < ex->nthreads && i < 20; i++)
            fprintf(out, "  %10llu kB  tid %u %s\n", (unsigned long long)ex->threads[i].stack_kb,
                    ex->threads[i].tid, ex->threads[i].name);
        if (ex->nthreads > 20)
            fprintf(out, "  ... %zu more threads\n", ex->nthreads - 20);
    }
    if (ex->agent_tables_bytes)
        fprintf(out, "\nthe agent's own tables reserve %llu kB (resident part counted in unexplained)\n",
                (unsigned long long)(ex->agent_tables_bytes >> 10));
    return ferror(out) ? -1 : 0;
}
