/* Streaming HPROF reader: three passes over the dump, each through small windows that
 * slide forward (input.h: read, inflated or in memory), so resident memory stays small
 * (1: records, strings, classes, ids; 2: each object's kind, class, size and reference
 * count; 3: the references, into the CSR arrays; no pass 3 when counting only). Every
 * length in the file is checked before use; the reader never prints and never trusts a
 * count. */
#define _GNU_SOURCE
#include "hprof/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include "hprof/bigmem.h"
#include "hprof/input.h"
#include "hprof/names.h"
#include "hprof/sizes.h"

/* ==== reader state ================================================================= */

typedef struct strent {
    uint64_t id;
    uint64_t off; /* file offset of the UTF-8 bytes */
    uint32_t len;
} strent;

typedef struct lcent {
    uint64_t cid; /* class object id */
    uint64_t sid; /* name string id */
} lcent;

typedef struct clsx { /* per class, pass-1 ids resolved after the pass */
    uint64_t super_id, signers, pd;
    uint32_t slot_first, slot_count, data_size; /* reference slots of an instance */
    uint32_t class_size; /* shallow size of the class object itself */
    uint8_t slots_done;
} clsx;

typedef struct slot {
    uint32_t off;   /* byte offset in the instance data */
    uint32_t label; /* edge label */
} slot;

typedef struct cbient {
    uint64_t id;
    uint32_t cls;
} cbient;

typedef struct rd {
    const uint8_t *base; /* the data at file offset o is base[o] while o is in the window */
    uint64_t len;
    uint64_t hdr_len;
    ms_hgraph *g;
    uint32_t ids;
    char *err;
    size_t errlen;
    const ms_hprof_read_opts *o;
    uint64_t prog_next;
    int pass;

    strent *str;
    size_t nstr, capstr;
    lcent *lc;
    size_t nlc, caplc;
    size_t capobj, capcls, capfield, capstatic, caproot, capheap, capstrs, capslot;
    clsx *cx;
    uint64_t *field_sid, *static_sid, *heap_sid;
    uint64_t *root_off; /* file offset of each root sub-record */
    uint8_t *root_rec;  /* its top-level record tag */
    slot *slots;
    size_t nslot;
    cbient *cbi; /* classes by id, sorted */
    uint32_t ncbi;
    uint8_t cur_heap; /* 0xFF = none chosen yet (default heap made on first use) */
    uint64_t prev_arr_start, prev_arr_end;
    int klass_hint; /* an array ended 8 bytes before a 16-byte header would let it */
    int compressed;
    uint64_t nrec;    /* pass-1 object records */
    uint8_t *filled;  /* pass 3, only when ids repeat: bit per object already filled */
    uint64_t dups_reported;
    uint64_t deg;     /* pass 2: references of the current object */
    uint64_t last_cid; /* pass 2: the class id of the previous instance, and its index */
    uint32_t last_k;
    uint64_t wpos;    /* pass 3: next edge slot of the current object */
    uint32_t cur;     /* passes 2 and 3: the current object */
    uint32_t kcls;    /* passes 2 and 3: class-dump ordinal */
    uint32_t prim_cls[16];
    /* heap-dump records (offset of the record, class dumps before it), from pass 1 */
    uint64_t *hrec;
    uint32_t *hrec_kcls;
    size_t nhrec, caphrec;
    /* passes 2 and 3 on two threads: shared lock for problems and made-up classes;
     * frozen: the class and name tables must not move (other threads read them) */
    pthread_mutex_t *mu;
    int frozen;
    int thread_no;
    uint64_t dangling; /* this thread's references to absent objects */
    /* HotSpot leaves dormant CDS-archived objects out of its dumps (their classes are not
     * initialised yet) but writes the archive's roots array, an Object[] held by a JNI
     * global, with its references to them: those references are counted apart */
    uint64_t archived;   /* this thread's references from such an array to absent objects */
    int cur_archive;     /* the object array being read is held by a JNI global */
    uint64_t *jni_ids;   /* sorted ids held by JNI global roots (HotSpot dumps only) */
    size_t njni;
    /* counts only (opts->counts_only): pass 2 checks each reference and no pass 3 runs;
     * nref counts this thread's references to objects of the dump, dang keeps the first
     * dangling ones, reported after the pass as pass 3 would */
    int counts_only;
    uint64_t *present; /* counts only, 4-byte ids: bit per id step, set for each object */
    uint64_t nref;
    struct dangref { uint64_t at, id; uint8_t tag, sub; } dang[8];
    uint32_t ndang;
    uint32_t unknown_cls;
    /* the data comes through the window win over in (base follows it); gzip: the length
     * is known once pass 1 has read to the end (until then len is LEN_UNKNOWN). The
     * STRING records' bytes are kept in sbuf (str->off is an offset there). */
    ms_hinput *in;
    ms_hwin *win;
    uint8_t *sbuf;
    size_t nsbuf, capsbuf;
    /* the top-level record being read: a gzip that ends inside it fails as a file that
     * is too short for its length */
    uint64_t rec_at, rec_body;
    uint32_t rec_len;
    uint8_t rec_tag;
    uint64_t fail_at; /* file offset of the error fail() reported */
    /* pass 1 on two threads (plain files): the first thread's walk leaves the heap-dump
     * records from p1_split on to the second, which reads them into a graph of its own
     * and gives up (p1_abort) at a class dump or heap info, whose order matters: the
     * first thread then reads them after its walk */
    uint64_t p1_split;
    int p1_second, p1_abort;
    uint64_t first_arr_start, first_arr_end; /* the second thread's first object array */
    /* the top-level records the walk before pass 1 found: the first thread's walk takes
     * their headers from here rather than touch a page of the second thread's half for
     * each (a page fault, costly on a virtual machine) */
    const struct toprec { uint64_t pos; uint32_t len; uint8_t tag; } *tops;
    size_t ntops, ktop;
    /* interned string ids -> strs offsets */
    uint64_t *ih_key;
    uint32_t *ih_val;
    size_t ih_cap, ih_n;
} rd;

/* ==== small helpers =============================================================== */

static inline uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static inline uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }
static inline uint64_t rid(const rd *r, const uint8_t *p) { return r->ids == 8 ? be64(p) : be32(p); }

const char *ms_hprof_record_name(uint8_t tag)
{
    switch (tag) {
    case 0x01: return "STRING";
    case 0x02: return "LOAD_CLASS";
    case 0x03: return "UNLOAD_CLASS";
    case 0x04: return "STACK_FRAME";
    case 0x05: return "STACK_TRACE";
    case 0x06: return "ALLOC_SITES";
    case 0x07: return "HEAP_SUMMARY";
    case 0x0A: return "START_THREAD";
    case 0x0B: return "END_THREAD";
    case 0x0C: return "HEAP_DUMP";
    case 0x0D: return "CPU_SAMPLES";
    case 0x0E: return "CONTROL_SETTINGS";
    case 0x1C: return "HEAP_DUMP_SEGMENT";
    case 0x2C: return "HEAP_DUMP_END";
    default: return "UNKNOWN";
    }
}

const char *ms_hprof_subrecord_name(uint8_t tag)
{
    switch (tag) {
    case 0xFF: return "ROOT_UNKNOWN";
    case 0x01: return "ROOT_JNI_GLOBAL";
    case 0x02: return "ROOT_JNI_LOCAL";
    case 0x03: return "ROOT_JAVA_FRAME";
    case 0x04: return "ROOT_NATIVE_STACK";
    case 0x05: return "ROOT_STICKY_CLASS";
    case 0x06: return "ROOT_THREAD_BLOCK";
    case 0x07: return "ROOT_MONITOR_USED";
    case 0x08: return "ROOT_THREAD_OBJECT";
    case 0x20: return "CLASS_DUMP";
    case 0x21: return "INSTANCE_DUMP";
    case 0x22: return "OBJECT_ARRAY_DUMP";
    case 0x23: return "PRIMITIVE_ARRAY_DUMP";
    case 0xFE: return "HEAP_DUMP_INFO";
    case 0x89: return "ROOT_INTERNED_STRING";
    case 0x8A: return "ROOT_FINALIZING";
    case 0x8B: return "ROOT_DEBUGGER";
    case 0x8C: return "ROOT_REFERENCE_CLEANUP";
    case 0x8D: return "ROOT_VM_INTERNAL";
    case 0x8E: return "ROOT_JNI_MONITOR";
    case 0x90: return "ROOT_UNREACHABLE";
    case 0xC3: return "PRIMITIVE_ARRAY_NODATA";
    default: return "UNKNOWN";
    }
}

/* Whether HPROF defines a top-level record tag (every other tag is an error: its length
 * cannot be trusted, and zeros or garbage parse as records of tag 0). */
static int known_record_tag(uint8_t tag)
{
    return strcmp(ms_hprof_record_name(tag), "UNKNOWN") != 0;
}

static void where(char *buf, size_t len, uint64_t off, uint8_t tag, uint8_t sub)
{
    if (sub)
        snprintf(buf, len, "offset %llu (0x%llx), %s record, %s sub-record (tag 0x%02x)",
                 (unsigned long long)off, (unsigned long long)off, ms_hprof_record_name(tag),
                 ms_hprof_subrecord_name(sub), sub);
    else
        snprintf(buf, len, "offset %llu (0x%llx), %s record (tag 0x%02x)",
                 (unsigned long long)off, (unsigned long long)off, ms_hprof_record_name(tag), tag);
}

__attribute__((format(printf, 5, 6)))
static int fail(rd *r, uint64_t off, uint8_t tag, uint8_t sub, const char *fmt, ...)
{
    char w[160], m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    where(w, sizeof w, off, tag, sub);
    snprintf(r->err, r->errlen, "%s: %s", w, m);
    r->fail_at = off;
    return -1;
}

__attribute__((format(printf, 5, 6)))
static void problem(rd *r, uint64_t off, uint8_t tag, uint8_t sub, const char *fmt, ...)
{
    ms_hgraph *g = r->g;
    if (r->mu)
        pthread_mutex_lock(r->mu);
    g->problem_total++;
    if (g->nproblem < MS_HPROBLEMS_KEPT) {
        ms_hproblem *p = &g->problems[g->nproblem++];
        p->offset = off;
        p->record = tag;
        p->subrecord = sub;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg, sizeof p->msg, fmt, ap);
        va_end(ap);
    }
    if (r->mu)
        pthread_mutex_unlock(r->mu);
}

#define LEN_UNKNOWN ((uint64_t)1 << 62)

/* Makes [from, from + n) readable at r->base. 0, 1 when the data ends before
 * (r->len is then known), -1 after fail() */
static int src_need(rd *r, uint64_t from, uint64_t n)
{
    char e[200];
    int rc = ms_hwin_need(r->win, from, n, e, sizeof e);
    r->base = r->win->base;
    if (r->win->eof)
        r->len = r->win->fill;
    if (rc < 0)
        snprintf(r->err, r->errlen, "%s", e);
    return rc;
}

/* Inside a record: [from, from + n) readable (n cut at the record's end lim), else the
 * record is longer than what is left of the data, as a plain file fails it up front. */
static int need_slow(rd *r, uint64_t from, uint64_t n)
{
    int rc = src_need(r, from, n);
    if (rc > 0)
        return fail(r, r->rec_at, r->rec_tag, 0, "record length %u exceeds the %llu bytes left in the file (truncated?)",
                    r->rec_len, (unsigned long long)(r->len > r->rec_body ? r->len - r->rec_body : 0));
    return rc;
}

static inline int need(rd *r, uint64_t from, uint64_t n, uint64_t lim)
{
    if (n > lim - from)
        n = lim - from;
    if (from >= r->win->ws && from <= r->win->fill && n <= r->win->fill - from)
        return 0;
    return need_slow(r, from, n);
}

/* The bytes of a STRING record's text. */
static inline const uint8_t *str_bytes(const rd *r, const strent *s)
{
    return r->sbuf + s->off;
}

/* Grows *p (elements of size el) to hold at least need, geometrically. */
static int grow(void **p, size_t *cap, size_t need, size_t el)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2 / el)
            return -1;
        n += n / 2 + 16;
    }
    void *q = realloc(*p, n * el);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}
#define GROW(r, arr, cap, need)                                                          \
    (grow((void **)&(arr), &(cap), (need), sizeof *(arr)) ? fail((r), 0, 0, 0, "out of memory") : 0)

static void progress(rd *r, uint64_t pos)
{
    if (r->o && r->o->progress && pos >= r->prog_next) {
        uint64_t len = r->len;
        if (len == LEN_UNKNOWN) {
            /* gzip, pass 1: the length guessed from the compressed bytes read so far */
            uint64_t used = r->win->in_used, cs = ms_hinput_file_size(r->in);
            len = used ? (uint64_t)((double)pos * (double)cs / (double)used) : pos;
            if (len < pos)
                len = pos;
        }
        uint64_t done = (uint64_t)(r->pass - 1) * len + pos;
        r->o->progress(r->o->progress_arg, done, 3 * len);
        r->prog_next = pos + (16u << 20);
    }
}

/* ==== strings ====================================================================== */

static int cmp_str(const void *a, const void *b)
{
    const strent *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static const strent *find_str(const rd *r, uint64_t id)
{
    size_t lo = 0, hi = r->nstr;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (r->str[m].id < id)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < r->nstr && r->str[lo].id == id ? &r->str[lo] : NULL;
}

/* Appends s[0..n) + NUL to g->strs; returns its offset (or UINT32_MAX on failure). */
static uint32_t pool_add(rd *r, const char *s, size_t n)
{
    ms_hgraph *g = r->g;
    if (g->strs_len + n + 1 > UINT32_MAX)
        return UINT32_MAX;
    if (grow((void **)&g->strs, &r->capstrs, g->strs_len + n + 1, 1))
        return UINT32_MAX;
    uint32_t off = (uint32_t)g->strs_len;
    memcpy(g->strs + off, s, n);
    g->strs[off + n] = '\0';
    g->strs_len += n + 1;
    return off;
}

/* Pool offset of the string with id sid (control bytes replaced), interned. */
static uint32_t intern_sid(rd *r, uint64_t sid)
{
    if (r->ih_n * 2 >= r->ih_cap) {
        size_t nc = r->ih_cap ? r->ih_cap * 2 : 1024;
        uint64_t *k = calloc(nc, sizeof *k);
        uint32_t *v = malloc(nc * sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return 0;
        }
        for (size_t i = 0; i < r->ih_cap; i++) {
            if (!r->ih_key[i])
                continue;
            size_t h = (r->ih_key[i] * 0x9E3779B97F4A7C15ull) >> 20;
            while (k[h & (nc - 1)])
                h++;
            k[h & (nc - 1)] = r->ih_key[i];
            v[h & (nc - 1)] = r->ih_val[i];
        }
        free(r->ih_key);
        free(r->ih_val);
        r->ih_key = k;
        r->ih_val = v;
        r->ih_cap = nc;
    }
    uint64_t key = sid + 1; /* 0 marks an empty slot */
    size_t h = (key * 0x9E3779B97F4A7C15ull) >> 20;
    while (r->ih_key[h & (r->ih_cap - 1)]) {
        if (r->ih_key[h & (r->ih_cap - 1)] == key)
            return r->ih_val[h & (r->ih_cap - 1)];
        h++;
    }
    const strent *s = find_str(r, sid);
    char buf[512];
    size_t n = 0;
    if (s) {
        n = s->len < sizeof buf ? s->len : sizeof buf - 1;
        memcpy(buf, str_bytes(r, s), n);
        ms_hprof_utf8_sanitize(buf, n);
    } else {
        n = (size_t)snprintf(buf, sizeof buf, "<string 0x%llx>", (unsigned long long)sid);
    }
    uint32_t off = pool_add(r, buf, n);
    if (off == UINT32_MAX)
        return 0;
    r->ih_key[h & (r->ih_cap - 1)] = key;
    r->ih_val[h & (r->ih_cap - 1)] = off;
    r->ih_n++;
    return off;
}

/* ==== id lookup ==================================================================== */

ms_hidx ms_hgraph_find(const ms_hgraph *g, uint64_t id)
{
    if (!g->nobj || !g->id_bucket || id < g->id_min || id > ms_hgraph_id(g, g->nobj - 1))
        return MS_HIDX_NONE;
    uint64_t b = (id - g->id_min) >> g->id_bucket_shift;
    if (b >= g->nbucket)
        b = g->nbucket - 1;
    uint32_t lo = g->id_bucket[b], hi = g->id_bucket[b + 1];
    if (g->obj_id32 && ((id - g->id_min) & (((uint64_t)1 << g->id_shift) - 1)))
        return MS_HIDX_NONE; /* not on the grid of 4-byte ids */
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (ms_hgraph_id(g, m) < id)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < g->nobj && ms_hgraph_id(g, lo) == id ? lo : MS_HIDX_NONE;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The bucket table of ms_hgraph_find: 2^k buckets (about one per two objects, at most
 * 2^24) over the id range, each holding the index of its first id. */
static void bucket_params(ms_hgraph *g, uint64_t mn, uint64_t mx, size_t n)
{
    uint32_t nb = 2; /* at least 2: (mx - mn) >> 63 < 2 always */
    while (nb < n / 2 && nb < (1u << 24))
        nb <<= 1;
    unsigned shift = 0;
    while (shift < 63 && ((mx - mn) >> shift) >= nb)
        shift++;
    g->nbucket = nb;
    g->id_bucket_shift = shift;
    g->id_min = mn;
}

/* Bucket starts from the sorted ids [0, g->nobj) (after repeated ids were removed, or
 * when the ids were not sorted by bucket). */
static void fill_buckets(ms_hgraph *g)
{
    size_t k = 0, n = g->nobj;
    for (uint32_t b = 0; b <= g->nbucket; b++) {
        while (k < n && ((ms_hgraph_id(g, (ms_hidx)k) - g->id_min) >> g->id_bucket_shift) < b)
            k++;
        g->id_bucket[b] = (uint32_t)k;
    }
    g->id_bucket[g->nbucket] = (uint32_t)n;
}

/* Sorts the ids when they fit 4 bytes (id = mn + (c << shift), c < 2^32: every real
 * dump), writing them in that form into g->obj_id32 as they are distributed over the
 * buckets of ms_hgraph_find (counting sort on (id - mn) >> bucket shift, which leaves
 * g->id_bucket holding each bucket's start), then sorting inside each bucket: insertion
 * sort for the few ids a bucket usually holds (dumps list objects in address order,
 * mostly), qsort for a crowded one. No sorted 8-byte copy is made; obj_id64 is freed. */
static int bucket_sort32(rd *r, uint64_t mn, uint64_t mx, size_t n, unsigned shift)
{
    ms_hgraph *g = r->g;
    bucket_params(g, mn, mx, n);
    uint32_t nb = g->nbucket;
    unsigned bshift = g->id_bucket_shift;
    uint32_t *bk = calloc((size_t)nb + 1, sizeof *bk);
    uint32_t *out = ms_hbig_malloc((n + 1) * sizeof *out);
    if (!bk || !out) {
        free(bk);
        free(out);
        return fail(r, 0, 0, 0, "out of memory sorting %zu object ids", n);
    }
    const uint64_t *ids = g->obj_id64;
    for (size_t i = 0; i < n; i++)
        bk[((ids[i] - mn) >> bshift) + 1]++;
    for (uint32_t b = 0; b < nb; b++)
        bk[b + 1] += bk[b];
    /* bk[b + 1] is now the end of bucket b: fill from the back, then bk[b] is its start */
    for (size_t i = n; i-- > 0;) {
        uint64_t d = ids[i] - mn;
        out[--bk[(d >> bshift) + 1]] = (uint32_t)(d >> shift);
    }
    /* after the loop bk[b + 1] == start of bucket b; shift down by one */
    memmove(bk, bk + 1, (size_t)nb * sizeof *bk);
    bk[nb] = (uint32_t)n;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t *v = out + bk[b];
        size_t k = bk[b + 1] - bk[b];
        if (k > 48) {
            qsort(v, k, sizeof *v, cmp_u32);
            continue;
        }
        for (size_t x = 1; x < k; x++) {
            uint32_t key = v[x];
            size_t y = x;
            while (y > 0 && v[y - 1] > key) {
                v[y] = v[y - 1];
                y--;
            }
            v[y] = key;
        }
    }
    free(g->obj_id64);
    g->obj_id64 = NULL;
    g->obj_id32 = out;
    g->id_shift = shift;
    g->id_bucket = bk;
    return 0;
}

/* After pass 1: sorts the ids (object index = rank of the id), drops repeated ids (the
 * later records are reported by the second pass, which knows their offsets) and builds
 * the bucket table of ms_hgraph_find. Ids are kept in 4 bytes each when they are id_min
 * plus multiples of one power of two spanning fewer than 2^32 steps (aligned addresses:
 * every real dump; 4 bytes per object less for everything after the read); else in 8
 * (sorted by qsort: only made-up dumps get there). */
static int build_lookup(rd *r)
{
    ms_hgraph *g = r->g;
    size_t n = r->nrec;
    if (!n)
        return 0;
    uint64_t mn = UINT64_MAX, mx = 0, x0 = g->obj_id64[0], any = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = g->obj_id64[i];
        if (v < mn)
            mn = v;
        if (v > mx)
            mx = v;
        any |= v ^ x0; /* its lowest bit is the lowest bit any two ids differ in */
    }
    unsigned shift = any ? (unsigned)__builtin_ctzll(any) : 0;
    size_t w = 1;
    if (((mx - mn) >> shift) <= UINT32_MAX) {
        if (bucket_sort32(r, mn, mx, n, shift))
            return -1;
        uint32_t *c = g->obj_id32;
        for (size_t k = 1; k < n; k++)
            if (c[k] != c[w - 1])
                c[w++] = c[k];
    } else {
        bucket_params(g, mn, mx, n);
        g->id_bucket = calloc((size_t)g->nbucket + 1, sizeof *g->id_bucket);
        if (!g->id_bucket)
            return fail(r, 0, 0, 0, "out of memory sorting %zu object ids", n);
        uint64_t *ids = g->obj_id64;
        qsort(ids, n, sizeof *ids, cmp_u64);
        for (size_t k = 1; k < n; k++)
            if (ids[k] != ids[w - 1])
                ids[w++] = ids[k];
    }
    g->duplicate_ids = n - w;
    g->nobj = (uint32_t)w;
    if (w != n || g->obj_id64)
        fill_buckets(g); /* repeated ids removed, or not sorted by bucket */
    return 0;
}

/* ==== classes ===================================================================== */

static int cmp_cbi(const void *a, const void *b)
{
    const cbient *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->cls < y->cls ? -1 : x->cls > y->cls;
}

static uint32_t class_by_id(const rd *r, uint64_t id)
{
    uint32_t lo = 0, hi = r->ncbi;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (r->cbi[m].id < id)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < r->ncbi && r->cbi[lo].id == id ? r->cbi[lo].cls : MS_HCLASS_NONE;
}

static int cmp_lc(const void *a, const void *b)
{
    const lcent *x = a, *y = b;
    return x->cid < y->cid ? -1 : x->cid > y->cid;
}

static const lcent *find_lc(const rd *r, uint64_t cid)
{
    size_t lo = 0, hi = r->nlc;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (r->lc[m].cid < cid)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < r->nlc && r->lc[lo].cid == cid ? &r->lc[lo] : NULL;
}

/* Grows the class table and its reader-side twin (same capacity). */
static int grow_classes(rd *r, size_t need)
{
    ms_hgraph *g = r->g;
    size_t cap = r->capcls;
    if (need <= cap && r->cx)
        return 0;
    if (grow((void **)&g->classes, &cap, need, sizeof *g->classes))
        return fail(r, 0, 0, 0, "out of memory for classes");
    clsx *x = realloc(r->cx, cap * sizeof *x);
    if (!x)
        return fail(r, 0, 0, 0, "out of memory for classes");
    r->cx = x;
    r->capcls = cap;
    return 0;
}

/* Adds a class the file did not dump (primitive array classes, unknown classes). */
static uint32_t add_synthetic_class_locked(rd *r, const char *name, uint64_t id);
static uint32_t add_synthetic_class(rd *r, const char *name, uint64_t id)
{
    if (!r->mu)
        return add_synthetic_class_locked(r, name, id);
    pthread_mutex_lock(r->mu);
    uint32_t k = add_synthetic_class_locked(r, name, id);
    pthread_mutex_unlock(r->mu);
    return k;
}

static uint32_t add_synthetic_class_locked(rd *r, const char *name, uint64_t id)
{
    ms_hgraph *g = r->g;
    /* made already: by the other thread (each keeps its own cache), or under another
     * cache (class_for_array and unknown_class both make "(unknown class)"); one thread
     * and two must make the same classes */
    for (uint32_t s = g->nclass; s-- > 0;)
        if ((g->classes[s].flags & MS_HCLASS_SYNTHETIC) && g->classes[s].id == id &&
            !strcmp(g->strs + g->classes[s].name, name))
            return s;
    if (r->frozen) {
        /* tables reserved before the threads started must not move: past the reserve,
         * the class is counted as unknown */
        if (g->nclass + 1 > r->capcls || g->strs_len + strlen(name) + 1 > r->capstrs) {
            fail(r, 0, 0, 0, "more classes missing from the dump than expected");
            return MS_HCLASS_NONE;
        }
    }
    if (grow_classes(r, g->nclass + 1))
        return MS_HCLASS_NONE;
    uint32_t k = g->nclass++;
    ms_hclass *c = &g->classes[k];
    memset(c, 0, sizeof *c);
    memset(&r->cx[k], 0, sizeof r->cx[k]);
    c->id = id;
    c->obj = MS_HIDX_NONE;
    c->super = MS_HCLASS_NONE;
    c->loader = MS_HIDX_NONE;
    c->name = pool_add(r, name, strlen(name));
    c->flags = MS_HCLASS_SYNTHETIC;
    c->prim_type = (uint8_t)ms_hprof_prim_array_type(name);
    if (strlen(name) > 2 && !strcmp(name + strlen(name) - 2, "[]"))
        c->flags |= MS_HCLASS_ARRAY;
    return k;
}

/* Classes made up in pass 2 (from k0 on) are numbered in the order the objects that
 * need them are met, which on two threads depends on timing: sorted by name and id and
 * renumbered everywhere, the graph is the same on one thread and two. */
static int cmp_synth(const void *a, const void *b, void *arg)
{
    const ms_hgraph *g = arg;
    const ms_hclass *x = &g->classes[*(const uint32_t *)a];
    const ms_hclass *y = &g->classes[*(const uint32_t *)b];
    int c = strcmp(g->strs + x->name, g->strs + y->name);
    return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

static int order_synthetic_classes(rd *r, uint32_t k0)
{
    ms_hgraph *g = r->g;
    uint32_t m = g->nclass - k0;
    if (m < 2)
        return 0;
    uint32_t *order = malloc(m * sizeof *order), *to = malloc(m * sizeof *to);
    ms_hclass *cls = malloc(m * sizeof *cls);
    clsx *cx = malloc(m * sizeof *cx);
    if (!order || !to || !cls || !cx) {
        free(order);
        free(to);
        free(cls);
        free(cx);
        return fail(r, 0, 0, 0, "out of memory");
    }
    for (uint32_t j = 0; j < m; j++)
        order[j] = k0 + j;
    qsort_r(order, m, sizeof *order, cmp_synth, g);
    for (uint32_t j = 0; j < m; j++) {
        to[order[j] - k0] = k0 + j;
        cls[j] = g->classes[order[j]];
        cx[j] = r->cx[order[j]];
    }
    memcpy(g->classes + k0, cls, m * sizeof *cls);
    memcpy(r->cx + k0, cx, m * sizeof *cx);
    for (uint32_t i = 0; i < g->nobj; i++)
        if (g->obj_class[i] >= k0 && g->obj_class[i] < g->nclass)
            g->obj_class[i] = to[g->obj_class[i] - k0];
    if (r->unknown_cls != MS_HCLASS_NONE && r->unknown_cls >= k0)
        r->unknown_cls = to[r->unknown_cls - k0];
    for (size_t t = 0; t < sizeof r->prim_cls / sizeof *r->prim_cls; t++)
        if (r->prim_cls[t] != MS_HCLASS_NONE && r->prim_cls[t] >= k0)
            r->prim_cls[t] = to[r->prim_cls[t] - k0];
    r->last_cid = 0;
    r->last_k = class_by_id(r, 0);
    free(order);
    free(to);
    free(cls);
    free(cx);
    return 0;
}

static uint32_t unknown_class(rd *r)
{
    if (r->unknown_cls == MS_HCLASS_NONE)
        r->unknown_cls = add_synthetic_class(r, "(unknown class)", 0);
    return r->unknown_cls;
}

static uint8_t ref_kind_of_name(const char *n)
{
    if (!strcmp(n, "java.lang.ref.SoftReference"))
        return MS_HREF_SOFT;
    if (!strcmp(n, "java.lang.ref.WeakReference"))
        return MS_HREF_WEAK;
    if (!strcmp(n, "java.lang.ref.PhantomReference"))
        return MS_HREF_PHANTOM;
    if (!strcmp(n, "java.lang.ref.FinalReference") || !strcmp(n, "java.lang.ref.Finalizer") ||
        !strcmp(n, "java.lang.ref.FinalizerReference"))
        return MS_HREF_FINAL;
    if (!strcmp(n, "java.lang.ref.Reference"))
        return MS_HREF_STRONG;
    return MS_HREF_NONE;
}

/* After pass 1: names, supers, loaders, flags, reference kinds, sizes. */
static int resolve_classes(rd *r)
{
    ms_hgraph *g = r->g;
    uint32_t ndump = g->nclass;
    r->cbi = malloc(((size_t)ndump + 1) * sizeof *r->cbi);
    if (!r->cbi)
        return fail(r, 0, 0, 0, "out of memory");
    for (uint32_t k = 0; k < ndump; k++) {
        r->cbi[k].id = g->classes[k].id;
        r->cbi[k].cls = k;
    }
    qsort(r->cbi, ndump, sizeof *r->cbi, cmp_cbi);
    /* keep the first class dump of an id */
    uint32_t w = 0;
    for (uint32_t k = 0; k < ndump; k++)
        if (!w || r->cbi[w - 1].id != r->cbi[k].id)
            r->cbi[w++] = r->cbi[k];
    r->ncbi = w;
    if (r->nlc)
        qsort(r->lc, r->nlc, sizeof *r->lc, cmp_lc);

    for (uint32_t k = 0; k < ndump; k++) {
        ms_hclass *c = &g->classes[k];
        char raw[1024], norm[1024];
        const lcent *l = find_lc(r, c->id);
        const strent *s = l ? find_str(r, l->sid) : NULL;
        size_t n;
        if (s) {
            n = s->len < sizeof raw ? s->len : sizeof raw - 1;
            memcpy(raw, str_bytes(r, s), n);
            n = ms_hprof_class_name_normalize(raw, n, norm, sizeof norm);
        } else {
            n = (size_t)snprintf(norm, sizeof norm, "class@0x%llx", (unsigned long long)c->id);
            problem(r, 0, 0, 0x20, "class 0x%llx has no name (no LOAD_CLASS/STRING)",
                    (unsigned long long)c->id);
        }
        c->name = pool_add(r, norm, n);
        if (c->name == UINT32_MAX)
            return fail(r, 0, 0, 0, "out of memory");
        if (n > 2 && !strcmp(norm + n - 2, "[]"))
            c->flags |= MS_HCLASS_ARRAY;
        c->prim_type = (uint8_t)ms_hprof_prim_array_type(norm);
        uint64_t sup = r->cx[k].super_id;
        c->super = sup ? class_by_id(r, sup) : MS_HCLASS_NONE;
        if (sup && c->super == MS_HCLASS_NONE)
            problem(r, 0, 0, 0x20, "class %s: superclass 0x%llx not in the dump", norm,
                    (unsigned long long)sup);
        if (c->super == k)
            c->super = MS_HCLASS_NONE;
        c->loader = c->loader_id ? ms_hgraph_find(g, c->loader_id) : MS_HIDX_NONE;
        c->obj = ms_hgraph_find(g, c->id);
        if (class_by_id(r, c->id) != k)
            c->obj = MS_HIDX_NONE; /* a repeated class dump: its record is dropped */
        for (uint32_t f = 0; f < c->field_count; f++)
            g->fields[c->field_first + f].name = intern_sid(r, r->field_sid[c->field_first + f]);
        for (uint32_t f = 0; f < c->static_count; f++)
            g->statics[c->static_first + f].name = intern_sid(r, r->static_sid[c->static_first + f]);
    }
    /* reference kinds: the nearest java.lang.ref class up the chain decides */
    for (uint32_t k = 0; k < ndump; k++) {
        uint32_t c = k;
        for (int d = 0; d < 256 && c != MS_HCLASS_NONE; d++, c = g->classes[c].super) {
            uint8_t rk = ref_kind_of_name(g->strs + g->classes[c].name);
            if (rk) {
                g->classes[k].ref_kind = rk;
                break;
            }
        }
    }
    /* primitive array classes, java.lang.Class */
    for (int t = 0; t < 16; t++)
        r->prim_cls[t] = MS_HCLASS_NONE;
    g->class_index_java_lang_class = MS_HCLASS_NONE;
    for (uint32_t k = 0; k < ndump; k++) {
        ms_hclass *c = &g->classes[k];
        if (c->obj == MS_HIDX_NONE)
            continue;
        if (c->prim_type && r->prim_cls[c->prim_type] == MS_HCLASS_NONE)
            r->prim_cls[c->prim_type] = k;
        if (g->class_index_java_lang_class == MS_HCLASS_NONE && !strcmp(g->strs + c->name, "java.lang.Class"))
            g->class_index_java_lang_class = k;
    }
    if (g->class_index_java_lang_class == MS_HCLASS_NONE)
        g->class_index_java_lang_class = add_synthetic_class(r, "java.lang.Class", 0);
    if (g->class_index_java_lang_class == MS_HCLASS_NONE)
        return -1;
    return 0;
}

static void compute_class_sizes(rd *r)
{
    ms_hgraph *g = r->g;
    for (uint32_t k = 0; k < g->nclass; k++) {
        g->classes[k].inst_shallow = ms_hsize_instance(&g->model, g, k);
        r->cx[k].class_size = ms_hsize_class(&g->model, g, k);
    }
}

/* Reference slots of an instance of class k (its fields, then its supers'). */
static int class_slots(rd *r, uint32_t k)
{
    ms_hgraph *g = r->g;
    clsx *x = &r->cx[k];
    if (x->slots_done)
        return 0;
    x->slots_done = 1;
    x->slot_first = (uint32_t)r->nslot;
    uint64_t off = 0;
    uint32_t c = k;
    for (int d = 0; d < 256 && c != MS_HCLASS_NONE; d++, c = g->classes[c].super) {
        const ms_hclass *cl = &g->classes[c];
        int is_ref_class = !strcmp(g->strs + cl->name, "java.lang.ref.Reference");
        for (uint32_t f = 0; f < cl->field_count; f++) {
            uint32_t fi = cl->field_first + f;
            const ms_hfield *fd = &g->fields[fi];
            if (fd->type == MS_HT_OBJECT) {
                if (GROW(r, r->slots, r->capslot, r->nslot + 1))
                    return -1;
                int referent = is_ref_class && !strcmp(g->strs + fd->name, "referent");
                r->slots[r->nslot].off = (uint32_t)off;
                r->slots[r->nslot].label = ms_hedge_label(referent ? MS_HEDGE_REFERENT : MS_HEDGE_FIELD, fi);
                r->nslot++;
            }
            off += ms_hsize_type_in_file(fd->type, r->ids);
        }
    }
    x->slot_count = (uint32_t)(r->nslot - x->slot_first);
    x->data_size = off > UINT32_MAX ? UINT32_MAX : (uint32_t)off;
    return 0;
}

/* ==== heaps ======================================================================= */

static int heap_index(rd *r, uint32_t heap_id, uint64_t name_sid, int named)
{
    ms_hgraph *g = r->g;
    for (uint32_t i = 0; i < g->nheap; i++)
        if (g->heaps[i].id == heap_id)
            return (int)i;
    if (g->nheap >= 250)
        return 0;
    if (GROW(r, g->heaps, r->capheap, g->nheap + 1))
        return -1;
    size_t cap = r->capheap;
    /* heap_sid shares the capacity of heaps */
    uint64_t *hs = realloc(r->heap_sid, cap * sizeof *hs);
    if (!hs)
        return fail(r, 0, 0, 0, "out of memory");
    r->heap_sid = hs;
    g->heaps[g->nheap].id = heap_id;
    g->heaps[g->nheap].name = 0;
    r->heap_sid[g->nheap] = named ? name_sid + 1 : 0;
    return (int)g->nheap++;
}

/* ==== the three passes over the heap-dump records ================================= */

/* Counts only: whether id is an object of the dump; one bit test when the bitmap of
 * ids exists. */
static inline int present(const rd *r, uint64_t id)
{
    const ms_hgraph *g = r->g;
    if (!r->present)
        return ms_hgraph_find(g, id) != MS_HIDX_NONE;
    if (id < g->id_min)
        return 0;
    uint64_t d = id - g->id_min;
    if (d & (((uint64_t)1 << g->id_shift) - 1))
        return 0;
    d >>= g->id_shift;
    return d <= g->obj_id32[g->nobj - 1] && (r->present[d >> 6] >> (d & 63)) & 1;
}

/* A non-null reference of the current object: counted in pass 2, stored in pass 3
 * (MS_HIDX_NONE when it names no object of the dump; those are squeezed out after). */
static inline int edge(rd *r, uint64_t id, uint32_t label, uint64_t at, uint8_t tag, uint8_t sub)
{
    ms_hgraph *g = r->g;
    if (r->pass == 2) {
        if (r->counts_only && !present(r, id) && sub == 0x22 && r->cur_archive) {
            r->archived++;
            return 0;
        }
        if (r->counts_only && !present(r, id)) {
            if (++r->dangling <= 8)
                r->dang[r->ndang++] = (struct dangref){at, id, tag, sub};
            return 0;
        }
        r->deg++;
        return 0;
    }
    if (r->wpos >= g->edge_off[r->cur + 1])
        return fail(r, at, tag, sub, "internal: more references than counted");
    ms_hidx t = ms_hgraph_find(g, id);
    if (t == MS_HIDX_NONE && sub == 0x22 && r->cur_archive) {
        r->archived++;
    } else if (t == MS_HIDX_NONE) {
        r->dangling++;
        if (r->dangling <= 8)
            problem(r, at, tag, sub, "reference to 0x%llx, which is not in the dump",
                    (unsigned long long)id);
    }
    g->edge_dst[r->wpos] = t;
    g->edge_label[r->wpos] = label;
    r->wpos++;
    return 0;
}

/* Pass 1: registers an object record (its id only). */
static int add_obj(rd *r, uint64_t id)
{
    ms_hgraph *g = r->g;
    if (r->nrec >= UINT32_MAX - 1)
        return fail(r, 0, 0, 0, "more than %u objects", UINT32_MAX - 1);
    if (r->nrec >= r->capobj) {
        if (GROW(r, g->obj_id64, r->capobj, r->nrec + 1))
            return -1;
        ms_hbig_advise(g->obj_id64, r->capobj * sizeof *g->obj_id64);
    }
    g->obj_id64[r->nrec++] = id;
    return 0;
}

/* Passes 2 and 3: starts object id of the given kind; returns its index, or
 * MS_HIDX_NONE when the record repeats an id already seen (it is dropped). */
static inline ms_hidx begin_obj(rd *r, uint64_t at, uint8_t rtag, uint8_t sub, uint64_t id, uint8_t kind)
{
    ms_hgraph *g = r->g;
    /* dumps list objects mostly in address order: try the next index first */
    ms_hidx i = r->cur + 1 < g->nobj && ms_hgraph_id(g, r->cur + 1) == id ? r->cur + 1 : ms_hgraph_find(g, id);
    if (i == MS_HIDX_NONE)
        return MS_HIDX_NONE; /* cannot happen: pass 1 saw it */
    if (r->pass == 2) {
        if (g->obj_kind[i] != 0xFF) {
            if (++r->dups_reported <= 8)
                problem(r, at, rtag, sub, "duplicate object id 0x%llx: this later record is dropped",
                        (unsigned long long)id);
            return MS_HIDX_NONE;
        }
        if (r->cur_heap == 0xFF) {
            int h = heap_index(r, 0, 0, 0);
            r->cur_heap = h < 0 ? 0 : (uint8_t)h;
        }
        g->obj_kind[i] = kind;
        g->obj_heap[i] = r->cur_heap;
        r->deg = 0;
    } else {
        if (r->filled) {
            if (r->filled[i >> 3] & (1u << (i & 7)))
                return MS_HIDX_NONE;
            r->filled[i >> 3] |= (uint8_t)(1u << (i & 7));
        }
        r->wpos = g->edge_off[i];
    }
    r->cur = i;
    return i;
}

/* Passes 2 and 3: ends the current object. */
static inline void end_obj(rd *r)
{
    if (r->pass != 2)
        return;
    if (r->counts_only)
        r->nref += r->deg;
    else
        r->g->edge_off[r->cur + 1] = r->deg;
}

static int add_root(rd *r, uint64_t at, uint8_t rtag, uint8_t type, uint64_t id, uint32_t thread,
                    int32_t frame)
{
    ms_hgraph *g = r->g;
    size_t cap = r->caproot;
    if (GROW(r, g->roots, r->caproot, g->nroot + 1))
        return -1;
    if (cap != r->caproot || !r->root_off) {
        uint64_t *o = realloc(r->root_off, r->caproot * sizeof *o);
        if (o)
            r->root_off = o;
        uint8_t *t = realloc(r->root_rec, r->caproot);
        if (t)
            r->root_rec = t;
        if (!o || !t)
            return fail(r, at, rtag, type, "out of memory");
    }
    r->root_off[g->nroot] = at;
    r->root_rec[g->nroot] = rtag;
    ms_hroot *rt = &g->roots[g->nroot++];
    rt->id = id;
    rt->obj = MS_HIDX_NONE;
    rt->thread_serial = thread;
    rt->frame = frame;
    rt->type = type;
    return 0;
}

/* CLASS_DUMP at p (after the tag byte). Pass 1 records the class; pass 2 emits its
 * references. *pp is advanced past the record. */
static int class_dump(rd *r, uint8_t rtag, uint64_t at, uint64_t *pp, uint64_t end)
{
    ms_hgraph *g = r->g;
    uint64_t p = *pp;
    uint32_t ids = r->ids;
    uint64_t fixed = (uint64_t)7 * ids + 8 + 2;
    /* gzip: the whole class dump in the window, from its tag on (each part's most) */
    if (need(r, at, p - at + fixed, end))
        return -1;
    const uint8_t *b = r->base;
    if (end - p < fixed)
        return fail(r, at, rtag, 0x20, "truncated class header");
    uint64_t id = rid(r, b + p);
    uint64_t super = rid(r, b + p + ids + 4);
    uint64_t loader = rid(r, b + p + 2 * ids + 4);
    uint64_t signers = rid(r, b + p + 3 * ids + 4);
    uint64_t pd = rid(r, b + p + 4 * ids + 4);
    uint32_t isize = be32(b + p + 7 * ids + 4);
    p += 7 * ids + 8;
    /* constant pool */
    uint32_t ncp = be16(b + p);
    p += 2;
    if (need(r, at, p - at + (uint64_t)ncp * 11 + 2, end))
        return -1;
    b = r->base;
    for (uint32_t i = 0; i < ncp; i++) {
        if (end - p < 3)
            return fail(r, at, rtag, 0x20, "truncated constant pool entry %u of %u", i, ncp);
        uint32_t sz = ms_hsize_type_in_file(b[p + 2], ids);
        if (!sz)
            return fail(r, at, rtag, 0x20, "constant pool entry %u has invalid type %u", i, b[p + 2]);
        if (end - p - 3 < sz)
            return fail(r, at, rtag, 0x20, "truncated constant pool entry %u of %u", i, ncp);
        p += 3 + sz;
    }
    if (end - p < 2)
        return fail(r, at, rtag, 0x20, "truncated static field count");
    uint32_t nst = be16(b + p);
    p += 2;
    if (need(r, at, p - at + (uint64_t)nst * (ids + 9) + 2, end))
        return -1;
    b = r->base;
    uint64_t st_start = p;
    for (uint32_t i = 0; i < nst; i++) {
        if (end - p < (uint64_t)ids + 1)
            return fail(r, at, rtag, 0x20, "truncated static field %u of %u", i, nst);
        uint32_t sz = ms_hsize_type_in_file(b[p + ids], ids);
        if (!sz)
            return fail(r, at, rtag, 0x20, "static field %u has invalid type %u", i, b[p + ids]);
        if (end - p - ids - 1 < sz)
            return fail(r, at, rtag, 0x20, "truncated static field %u of %u", i, nst);
        p += ids + 1 + sz;
    }
    if (end - p < 2)
        return fail(r, at, rtag, 0x20, "truncated instance field count");
    uint32_t nf = be16(b + p);
    p += 2;
    if (need(r, at, p - at + (uint64_t)nf * (ids + 1), end))
        return -1;
    b = r->base;
    uint64_t f_start = p;
    if (end - p < (uint64_t)nf * (ids + 1))
        return fail(r, at, rtag, 0x20, "%u instance fields do not fit in the record", nf);
    for (uint32_t i = 0; i < nf; i++)
        if (!ms_hsize_type_in_file(b[p + (uint64_t)i * (ids + 1) + ids], ids))
            return fail(r, at, rtag, 0x20, "instance field %u has invalid type %u", i,
                        b[p + (uint64_t)i * (ids + 1) + ids]);
    p += (uint64_t)nf * (ids + 1);
    *pp = p;

    if (r->pass == 1) {
        if (add_obj(r, id))
            return -1;
        if (g->nclass >= UINT32_MAX - 64)
            return fail(r, at, rtag, 0x20, "too many classes");
        if (grow_classes(r, (size_t)g->nclass + 1))
            return -1;
        uint32_t k = g->nclass++;
        ms_hclass *c = &g->classes[k];
        memset(c, 0, sizeof *c);
        memset(&r->cx[k], 0, sizeof r->cx[k]);
        c->id = id;
        c->loader_id = loader;
        c->instance_size = isize;
        c->super = MS_HCLASS_NONE;
        c->obj = MS_HIDX_NONE;
        c->loader = MS_HIDX_NONE;
        r->cx[k].super_id = super;
        r->cx[k].signers = signers;
        r->cx[k].pd = pd;
        /* statics */
        size_t caps = r->capstatic;
        if (GROW(r, g->statics, r->capstatic, (size_t)g->nstatic + nst))
            return -1;
        if (r->capstatic != caps || !r->static_sid) {
            uint64_t *s = realloc(r->static_sid, r->capstatic * sizeof *s);
            if (!s)
                return fail(r, at, rtag, 0x20, "out of memory");
            r->static_sid = s;
        }
        c->static_first = g->nstatic;
        c->static_count = nst;
        uint64_t q = st_start;
        for (uint32_t i = 0; i < nst; i++) {
            ms_hstatic *s = &g->statics[g->nstatic];
            r->static_sid[g->nstatic] = rid(r, b + q);
            s->type = b[q + ids];
            s->owner = k;
            s->name = 0;
            uint32_t sz = ms_hsize_type_in_file(s->type, ids);
            const uint8_t *v = b + q + ids + 1;
            s->value = sz == 8 ? be64(v) : sz == 4 ? be32(v) : sz == 2 ? be16(v) : v[0];
            q += ids + 1 + sz;
            g->nstatic++;
        }
        size_t capf = r->capfield;
        if (GROW(r, g->fields, r->capfield, (size_t)g->nfield + nf))
            return -1;
        if (r->capfield != capf || !r->field_sid) {
            uint64_t *s = realloc(r->field_sid, r->capfield * sizeof *s);
            if (!s)
                return fail(r, at, rtag, 0x20, "out of memory");
            r->field_sid = s;
        }
        c->field_first = g->nfield;
        c->field_count = nf;
        for (uint32_t i = 0; i < nf; i++) {
            const uint8_t *f = b + f_start + (uint64_t)i * (ids + 1);
            r->field_sid[g->nfield] = rid(r, f);
            g->fields[g->nfield].type = f[ids];
            g->fields[g->nfield].owner = k;
            g->fields[g->nfield].name = 0;
            g->nfield++;
        }
        return 0;
    }

    /* passes 2 and 3 */
    uint32_t k = r->kcls++;
    ms_hidx i = begin_obj(r, at, rtag, 0x20, id, MS_HOBJ_CLASS);
    if (i == MS_HIDX_NONE) {
        if (k < g->nclass)
            g->classes[k].obj = MS_HIDX_NONE;
        return 0;
    }
    ms_hclass *c = &g->classes[k];
    if (r->pass == 2) {
        g->obj_class[i] = g->class_index_java_lang_class;
        g->obj_size[i] = r->cx[k].class_size;
    }
    for (uint32_t s = 0; s < c->static_count; s++) {
        const ms_hstatic *st = &g->statics[c->static_first + s];
        if (st->type == MS_HT_OBJECT && st->value &&
            edge(r, st->value, ms_hedge_label(MS_HEDGE_STATIC, c->static_first + s), at, rtag, 0x20))
            return -1;
    }
    if (super && edge(r, super, ms_hedge_label(MS_HEDGE_SUPER, 0), at, rtag, 0x20))
        return -1;
    if (loader && edge(r, loader, ms_hedge_label(MS_HEDGE_LOADER, 0), at, rtag, 0x20))
        return -1;
    if (signers && edge(r, signers, ms_hedge_label(MS_HEDGE_SIGNERS, 0), at, rtag, 0x20))
        return -1;
    if (pd && edge(r, pd, ms_hedge_label(MS_HEDGE_PROTECTION, 0), at, rtag, 0x20))
        return -1;
    end_obj(r);
    return 0;
}

static uint32_t class_for_array(rd *r, uint64_t cid)
{
    uint32_t k = class_by_id(r, cid);
    if (k != MS_HCLASS_NONE)
        return k;
    /* the array class was not dumped: name it from LOAD_CLASS when possible (the lookup
     * of one made up before, and the making, under the lock when two threads run) */
    const lcent *l = find_lc(r, cid);
    const strent *st = l ? find_str(r, l->sid) : NULL;
    char raw[1024], norm[1024];
    if (st) {
        size_t n = st->len < sizeof raw ? st->len : sizeof raw - 1;
        memcpy(raw, str_bytes(r, st), n);
        ms_hprof_class_name_normalize(raw, n, norm, sizeof norm);
    } else {
        snprintf(norm, sizeof norm, "(unknown class)");
        cid = 0;
    }
    if (r->mu)
        pthread_mutex_lock(r->mu);
    k = MS_HCLASS_NONE;
    for (uint32_t s = r->g->nclass; s-- > 0;)
        if ((r->g->classes[s].flags & MS_HCLASS_SYNTHETIC) && r->g->classes[s].id == cid &&
            !strcmp(r->g->strs + r->g->classes[s].name, norm)) {
            k = s;
            break;
        }
    if (k == MS_HCLASS_NONE)
        k = add_synthetic_class_locked(r, norm, cid);
    if (r->mu)
        pthread_mutex_unlock(r->mu);
    return k;
}


/* Object array elements read at once (128 KiB of 8-byte ids: well inside a window). */
#define ARRAY_CHUNK 16384u

static int heap_records(rd *r, uint8_t rtag, uint64_t p, uint64_t end)
{
    ms_hgraph *g = r->g;
    const uint8_t *b = r->base;
    const uint32_t ids = r->ids;
    const int p1 = r->pass == 1;
    uint64_t last_prog = p;
    r->cur_heap = 0xFF;
    while (p < end) {
        uint64_t at = p;
        /* every fixed part of a sub-record (the longer ones ask again) */
        if (need(r, p, 64, end))
            return -1;
        b = r->base;
        uint8_t t = b[p++];
        uint64_t left = end - p;
        if (p1)
            g->subrecord_count[t]++;
        if (p - last_prog > (1u << 20)) {
            progress(r, p);
            last_prog = p;
        }
        switch (t) {
        case 0xFF: case 0x05: case 0x07: case 0x89: case 0x8A: case 0x8B: case 0x8C:
        case 0x8D: case 0x90:
            if (left < ids)
                return fail(r, at, rtag, t, "truncated (needs %u bytes, %llu left in the record)", ids,
                            (unsigned long long)left);
            if (p1 && add_root(r, at, rtag, t, rid(r, b + p), 0, -1))
                return -1;
            p += ids;
            break;
        case 0x01:
            if (left < 2ull * ids)
                return fail(r, at, rtag, t, "truncated");
            if (p1 && add_root(r, at, rtag, t, rid(r, b + p), 0, -1))
                return -1;
            p += 2 * ids;
            break;
        case 0x02: case 0x03: case 0x8E:
            if (left < ids + 8ull)
                return fail(r, at, rtag, t, "truncated");
            if (p1 && add_root(r, at, rtag, t, rid(r, b + p), be32(b + p + ids), (int32_t)be32(b + p + ids + 4)))
                return -1;
            p += ids + 8;
            break;
        case 0x04: case 0x06:
            if (left < ids + 4ull)
                return fail(r, at, rtag, t, "truncated");
            if (p1 && add_root(r, at, rtag, t, rid(r, b + p), be32(b + p + ids), -1))
                return -1;
            p += ids + 4;
            break;
        case 0x08:
            if (left < ids + 8ull)
                return fail(r, at, rtag, t, "truncated");
            if (p1 && rid(r, b + p) && add_root(r, at, rtag, t, rid(r, b + p), be32(b + p + ids), -1))
                return -1;
            p += ids + 8;
            break;
        case 0xFE: {
            if (r->p1_second) {
                r->p1_abort = 1;
                return -1;
            }
            if (left < ids + 4ull)
                return fail(r, at, rtag, t, "truncated");
            if (r->pass <= 2) {
                int h = heap_index(r, be32(b + p), rid(r, b + p + 4), 1);
                if (h < 0)
                    return -1;
                r->cur_heap = (uint8_t)h;
            }
            p += ids + 4;
            break;
        }
        case 0x20:
            if (r->p1_second) {
                r->p1_abort = 1;
                return -1;
            }
            if (class_dump(r, rtag, at, &p, end))
                return -1;
            break;
        case 0x21: {
            if (left < 2ull * ids + 8)
                return fail(r, at, rtag, t, "truncated instance header");
            uint64_t id = rid(r, b + p);
            uint64_t cid = rid(r, b + p + ids + 4);
            uint32_t n = be32(b + p + 2 * ids + 4);
            if (left - (2ull * ids + 8) < n)
                return fail(r, at, rtag, t, "instance 0x%llx claims %u bytes of fields, only %llu left in the record",
                            (unsigned long long)id, n, (unsigned long long)(left - (2ull * ids + 8)));
            if (!p1 && n > 64 - 25) {
                if (need(r, at, 1 + 2ull * ids + 8 + n, end))
                    return -1;
                b = r->base;
            }
            const uint8_t *data = b + p + 2 * ids + 8;
            p += 2ull * ids + 8 + n;
            if (p1) {
                if (add_obj(r, id))
                    return -1;
                break;
            }
            ms_hidx i = begin_obj(r, at, rtag, t, id, MS_HOBJ_INSTANCE);
            if (i == MS_HIDX_NONE)
                break;
            uint32_t k;
            if (r->pass == 2) {
                if (cid == r->last_cid) {
                    k = r->last_k;
                } else {
                    k = class_by_id(r, cid);
                    r->last_cid = cid;
                    r->last_k = k;
                }
                if (k == MS_HCLASS_NONE) {
                    problem(r, at, rtag, t, "instance 0x%llx of class 0x%llx, which is not in the dump",
                            (unsigned long long)id, (unsigned long long)cid);
                    k = unknown_class(r);
                    if (k == MS_HCLASS_NONE)
                        return -1;
                    g->obj_class[i] = k;
                    g->obj_size[i] = 0;
                    end_obj(r);
                    break;
                }
                g->obj_class[i] = k;
                g->obj_size[i] = g->classes[k].inst_shallow;
                if (class_slots(r, k))
                    return -1;
                if (r->cx[k].data_size != n)
                    problem(r, at, rtag, t, "instance 0x%llx has %u bytes of fields, its class %s needs %u",
                            (unsigned long long)id, n, g->strs + g->classes[k].name, r->cx[k].data_size);
            } else {
                k = g->obj_class[i];
                if (!r->cx[k].slots_done)
                    break; /* the unknown class: no fields */
            }
            const clsx *x = &r->cx[k];
            for (uint32_t s = 0; s < x->slot_count; s++) {
                const slot *sl = &r->slots[x->slot_first + s];
                if ((uint64_t)sl->off + ids > n)
                    break;
                uint64_t v = rid(r, data + sl->off);
                if (v && edge(r, v, sl->label, at, rtag, t))
                    return -1;
            }
            end_obj(r);
            break;
        }
        case 0x22: {
            if (left < 2ull * ids + 8)
                return fail(r, at, rtag, t, "truncated object array header");
            uint64_t id = rid(r, b + p);
            uint32_t n = be32(b + p + ids + 4);
            uint64_t cid = rid(r, b + p + ids + 8);
            uint64_t nbytes = (uint64_t)n * ids;
            if (left - (2ull * ids + 8) < nbytes)
                return fail(r, at, rtag, t, "object array 0x%llx claims %u elements (%llu bytes), only %llu left in the record",
                            (unsigned long long)id, n, (unsigned long long)nbytes,
                            (unsigned long long)(left - (2ull * ids + 8)));
            uint64_t data_at = p + 2ull * ids + 8; /* the elements' file offset */
            p += 2ull * ids + 8 + nbytes;
            if (p1) {
                if (ids == 8 && !r->compressed && id > r->prev_arr_start && id < r->prev_arr_end)
                    r->compressed = 1;
                /* with 8-byte references, an array that follows the previous one at
                 * 16 + 8n bytes shows a 12-byte header: compressed class pointers */
                if (ids == 8 && id == r->prev_arr_end && r->prev_arr_start)
                    r->klass_hint = 1;
                if (!r->prev_arr_start) {
                    r->first_arr_start = id;
                    r->first_arr_end = id + 16 + (uint64_t)n * 8;
                }
                r->prev_arr_start = id;
                r->prev_arr_end = id + 16 + (uint64_t)n * 8;
                if (add_obj(r, id))
                    return -1;
                break;
            }
            ms_hidx i = begin_obj(r, at, rtag, t, id, MS_HOBJ_OBJ_ARRAY);
            if (i == MS_HIDX_NONE)
                break;
            r->cur_archive = r->njni && bsearch(&id, r->jni_ids, r->njni, sizeof id, cmp_u64) != NULL;
            if (r->pass == 2) {
                uint32_t k = class_for_array(r, cid);
                if (k == MS_HCLASS_NONE)
                    return -1;
                g->obj_class[i] = k;
                g->obj_size[i] = ms_hsize_obj_array(&g->model, n);
            }
            /* the elements, ARRAY_CHUNK at a time: an array of any length is read through
             * the window as it is, without growing it to the array's size */
            for (uint32_t e0 = 0; e0 < n;) {
                uint32_t m = n - e0 < ARRAY_CHUNK ? n - e0 : ARRAY_CHUNK;
                if (need(r, data_at + (uint64_t)e0 * ids, (uint64_t)m * ids, end))
                    return -1;
                const uint8_t *data = r->base + data_at + (uint64_t)e0 * ids;
                for (uint32_t e = 0; e < m; e++) {
                    uint64_t v = ids == 8 ? be64(data + (uint64_t)e * 8) : be32(data + (uint64_t)e * 4);
                    if (!v)
                        continue;
                    if (r->pass == 3) {
                        if (edge(r, v, ms_hedge_label(MS_HEDGE_ELEMENT, e0 + e), at, rtag, t))
                            return -1;
                    } else if (r->counts_only) {
                        edge(r, v, 0, at, rtag, t);
                    } else {
                        r->deg++;
                    }
                }
                e0 += m;
            }
            b = r->base;
            end_obj(r);
            break;
        }
        case 0x23: case 0xC3: {
            if (left < ids + 9ull)
                return fail(r, at, rtag, t, "truncated primitive array header");
            uint64_t id = rid(r, b + p);
            uint32_t n = be32(b + p + ids + 4);
            uint8_t et = b[p + ids + 8];
            uint32_t esz = ms_hsize_type_in_file(et, ids);
            if (!esz || et == MS_HT_OBJECT)
                return fail(r, at, rtag, t, "primitive array 0x%llx has invalid element type %u",
                            (unsigned long long)id, et);
            uint64_t need = t == 0x23 ? (uint64_t)n * esz : 0;
            if (left - (ids + 9ull) < need)
                return fail(r, at, rtag, t, "primitive array 0x%llx claims %u elements (%llu bytes), only %llu left in the record",
                            (unsigned long long)id, n, (unsigned long long)need,
                            (unsigned long long)(left - (ids + 9ull)));
            p += ids + 9ull + need;
            if (p1) {
                if (add_obj(r, id))
                    return -1;
                break;
            }
            ms_hidx i = begin_obj(r, at, rtag, t, id, MS_HOBJ_PRIM_ARRAY);
            if (i == MS_HIDX_NONE || r->pass == 3)
                break;
            end_obj(r);
            if (r->prim_cls[et] == MS_HCLASS_NONE) {
                r->prim_cls[et] = add_synthetic_class(r, ms_hprof_prim_array_name(et), 0);
                if (r->prim_cls[et] == MS_HCLASS_NONE)
                    return -1;
            }
            g->obj_class[i] = r->prim_cls[et];
            g->obj_size[i] = ms_hsize_prim_array(&g->model, et, n);
            break;
        }
        default:
            return fail(r, at, rtag, t, "unknown heap-dump sub-record tag 0x%02x", t);
        }
    }
    return 0;
}

/* Pass 1: the text of a STRING record, kept (the record will not be read again) */
static int copy_string(rd *r, uint64_t from, uint32_t n)
{
    /* grown as the bytes come: the length is not checked against the data's yet */
    if (GROW(r, r->sbuf, r->capsbuf, r->nsbuf + 1))
        return -1;
    r->str[r->nstr].off = r->nsbuf;
    while (n) {
        uint32_t k = n < (1u << 20) ? n : 1u << 20;
        if (need(r, from, k, from + k) || GROW(r, r->sbuf, r->capsbuf, r->nsbuf + k + 1))
            return -1;
        memcpy(r->sbuf + r->nsbuf, r->base + from, k);
        r->nsbuf += k;
        from += k;
        n -= k;
    }
    return 0;
}

static int walk(rd *r)
{
    ms_hgraph *g = r->g;
    const uint8_t *b = r->base;
    uint64_t pos = r->hdr_len;
    r->prog_next = 0;
    progress(r, pos);
    for (;;) {
        uint8_t tag;
        uint32_t len;
        while (r->ktop < r->ntops && r->tops[r->ktop].pos < pos)
            r->ktop++;
        if (r->p1_split && pos >= r->p1_split && r->ktop < r->ntops && r->tops[r->ktop].pos == pos) {
            /* the second thread's half: the header from the walk before, the data not
             * read here unless the record is one this thread parses */
            tag = r->tops[r->ktop].tag;
            len = r->tops[r->ktop].len;
        } else {
            /* where the data ends (gzip), the length becomes known */
            int rc = src_need(r, pos, 9);
            if (rc < 0)
                return -1;
            if (rc && pos > r->len)
                return fail(r, r->rec_at, r->rec_tag, 0, "record length %u exceeds the %llu bytes left in the file (truncated?)",
                            r->rec_len, (unsigned long long)(r->len - r->rec_body));
            b = r->base;
            if (pos >= r->len)
                break;
            if (r->len - pos < 9)
                return fail(r, pos, 0, 0, "truncated record header (%llu bytes left in the file)",
                            (unsigned long long)(r->len - pos));
            tag = b[pos];
            len = be32(b + pos + 5);
        }
        uint64_t body = pos + 9;
        r->rec_at = pos;
        r->rec_tag = tag;
        r->rec_len = len;
        r->rec_body = body;
        if (!known_record_tag(tag))
            return fail(r, pos, tag, 0, "unknown record tag 0x%02x (HPROF defines no such record: "
                        "damaged or not a heap dump)", tag);
        if (len > r->len - body)
            return fail(r, pos, tag, 0, "record length %u exceeds the %llu bytes left in the file (truncated?)",
                        len, (unsigned long long)(r->len - body));
        if (r->pass == 1)
            g->record_count[tag]++;
        switch (tag) {
        case 0x01:
            if (len < r->ids)
                return fail(r, pos, tag, 0, "length %u is shorter than an id", len);
            if (r->pass == 1) {
                if (GROW(r, r->str, r->capstr, r->nstr + 1))
                    return -1;
                if (need(r, body, r->ids, body + len))
                    return -1;
                b = r->base;
                r->str[r->nstr].id = rid(r, b + body);
                r->str[r->nstr].off = body + r->ids;
                r->str[r->nstr].len = len - r->ids;
                if (copy_string(r, body + r->ids, len - r->ids))
                    return -1;
                b = r->base;
                r->nstr++;
                g->nstrings++;
            }
            break;
        case 0x02:
            if (len < 8 + 2 * r->ids)
                return fail(r, pos, tag, 0, "length %u, a LOAD_CLASS needs %u", len, 8 + 2 * r->ids);
            if (r->pass == 1) {
                if (need(r, body, 8 + 2 * r->ids, body + len))
                    return -1;
                b = r->base;
                if (GROW(r, r->lc, r->caplc, r->nlc + 1))
                    return -1;
                r->lc[r->nlc].cid = rid(r, b + body + 4);
                r->lc[r->nlc].sid = rid(r, b + body + 8 + r->ids);
                r->nlc++;
            }
            break;
        case 0x0C: case 0x1C:
            if (r->pass == 1) {
                size_t cap = r->caphrec;
                if (GROW(r, r->hrec, r->caphrec, r->nhrec + 1))
                    return -1;
                if (cap != r->caphrec || !r->hrec_kcls) {
                    uint32_t *k = realloc(r->hrec_kcls, r->caphrec * sizeof *k);
                    if (!k)
                        return fail(r, pos, tag, 0, "out of memory");
                    r->hrec_kcls = k;
                }
                r->hrec[r->nhrec] = pos;
                r->hrec_kcls[r->nhrec] = g->nclass;
                r->nhrec++;
                if (r->p1_split && pos >= r->p1_split)
                    break; /* the second thread's */
            }
            if (heap_records(r, tag, body, body + len))
                return -1;
            b = r->base;
            break;
        case 0x03: case 0x04: case 0x05: case 0x06: case 0x07: case 0x0A: case 0x0B:
        case 0x0D: case 0x0E: case 0x2C:
            break;
        default: /* refused above */
            break;
        }
        pos = body + len;
        if (!r->p1_split || pos < r->p1_split)
            progress(r, pos); /* past the split the records are the second thread's */
    }
    return 0;
}

/* Opens a window of this thread's own at offset at (gzip: from the access point before
 * it) for r; 0, or -1 after a message. */
static int open_window(rd *r, ms_hwin *w, uint64_t at, int build)
{
    char e[200];
    if (ms_hwin_open(w, r->in, at, build, e, sizeof e)) {
        snprintf(r->err, r->errlen, "%s", e);
        return -1;
    }
    r->win = w;
    r->base = w->base;
    return 0;
}

static void close_window(rd *r)
{
    if (r->win)
        ms_hwin_close(r->win);
    r->win = NULL;
    r->base = NULL;
}

/* The heap-dump records at rec[0..nrec) before offset stop, whose lengths pass 1's walk
 * checked, through a window of this call's own (the caller's, if any, is kept): passes 2
 * and 3, and in pass 1 the second thread's half (kcls: each record's count of class
 * dumps before it is noted, when the first thread reads that half after all). */
static int read_heap_records(rd *r, const uint64_t *rec, size_t nrec, uint32_t *kcls, uint64_t stop)
{
    ms_hwin w, *was = r->win;
    const uint8_t *was_base = r->base;
    if (open_window(r, &w, nrec ? rec[0] : 0, 0))
        return -1;
    int rc = 0;
    for (size_t j = 0; j < nrec && !rc && rec[j] < stop; j++) {
        uint64_t pos = rec[j];
        if (kcls)
            kcls[j] = r->g->nclass;
        rc = src_need(r, pos, 9);
        if (rc > 0)
            rc = fail(r, pos, 0, 0, "the data ends before this record, unlike in the first pass");
        if (rc)
            break;
        uint32_t len = be32(r->base + pos + 5);
        r->rec_at = pos;
        r->rec_tag = r->base[pos];
        r->rec_len = len;
        r->rec_body = pos + 9;
        rc = heap_records(r, r->rec_tag, pos + 9, pos + 9 + len);
        if (!rc)
            progress(r, pos + 9 + len);
    }
    close_window(r);
    r->win = was;
    r->base = was_base;
    return rc;
}

/* Passes 2 and 3 over heap-dump records [from, to) found by pass 1. */
static int walk_heaps(rd *r, size_t from, size_t to)
{
    r->kcls = from < r->nhrec ? r->hrec_kcls[from] : 0;
    r->cur = UINT32_MAX - 1;
    r->prog_next = 0;
    if (from < r->nhrec)
        progress(r, r->hrec[from]);
    return read_heap_records(r, from < to ? r->hrec + from : NULL, to - from, NULL, UINT64_MAX);
}

/* Counts only: the dangling references a thread kept, reported now. */
static void report_dangling(rd *r, const rd *t)
{
    for (uint32_t j = 0; j < t->ndang; j++)
        problem(r, t->dang[j].at, t->dang[j].tag, t->dang[j].sub,
                "reference to 0x%llx, which is not in the dump", (unsigned long long)t->dang[j].id);
}

typedef struct half {
    rd r;
    size_t from, to;
    char err[400];
    int rc;
} half;

static void *run_half(void *arg)
{
    half *h = arg;
    h->rc = walk_heaps(&h->r, h->from, h->to);
    return NULL;
}

/* Runs pass r->pass over every heap-dump record: on two threads for a large dump (each
 * takes a contiguous half of the records; objects are disjoint, so are their arrays),
 * else on this one. */
static int run_pass(rd *r, int threads)
{
    size_t split = r->nhrec;
    if (threads > 1 && r->nhrec >= 2) {
        uint64_t first = r->hrec[0], mid = first + (r->len - first) / 2;
        for (split = 1; split < r->nhrec && r->hrec[split] < mid; split++)
            ;
    }
    r->ndang = 0;
    if (split >= r->nhrec) {
        r->dangling = 0;
        r->archived = 0;
        int rc = walk_heaps(r, 0, r->nhrec);
        r->g->dangling_refs += r->dangling;
        r->g->archived_refs += r->archived;
        report_dangling(r, r);
        return rc;
    }
    half *h = calloc(1, sizeof *h);
    if (!h)
        return fail(r, 0, 0, 0, "out of memory");
    h->r = *r;
    h->r.err = h->err;
    h->r.errlen = sizeof h->err;
    h->r.o = NULL; /* progress from the first thread only */
    h->r.thread_no = 1;
    h->r.dangling = 0;
    h->r.archived = 0;
    h->from = split;
    h->to = r->nhrec;
    r->dangling = 0;
    r->archived = 0;
    pthread_t t;
    int started = pthread_create(&t, NULL, run_half, h) == 0;
    int rc = walk_heaps(r, 0, started ? split : r->nhrec);
    if (started) {
        pthread_join(t, NULL);
        if (!rc && h->rc) {
            snprintf(r->err, r->errlen, "%s", h->err);
            rc = -1;
        }
        r->dups_reported += h->r.dups_reported;
        r->nref += h->r.nref;
    }
    r->g->dangling_refs += r->dangling + (started ? h->r.dangling : 0);
    r->g->archived_refs += r->archived + (started ? h->r.archived : 0);
    report_dangling(r, r);
    if (started)
        report_dangling(r, &h->r);
    free(h);
    return rc;
}

/* Before running passes 2 and 3 on two threads: every class's reference slots are
 * computed now, and the class and name tables get room to spare so that the classes a
 * thread may still have to make up (under the lock) never move them. */
static int prepare_threads(rd *r)
{
    ms_hgraph *g = r->g;
    for (uint32_t k = 0; k < g->nclass; k++)
        if (class_slots(r, k))
            return -1;
    if (grow_classes(r, (size_t)g->nclass + 1024) ||
        grow((void **)&g->strs, &r->capstrs, g->strs_len + 1024 * 128, 1))
        return fail(r, 0, 0, 0, "out of memory");
    r->frozen = 1;
    return 0;
}

/* ==== the whole read ============================================================== */

static int parse_header(rd *r)
{
    ms_hgraph *g = r->g;
    const uint8_t *b = r->base;
    size_t n = 0;
    while (n < r->len && n < 64 && b[n])
        n++;
    if (n >= r->len || n == 64 || strncmp((const char *)b, "JAVA PROFILE ", 13) != 0)
        return fail(r, 0, 0, 0, "not an HPROF file (no \"JAVA PROFILE 1.0.x\" header)");
    if (n >= sizeof g->version)
        return fail(r, 0, 0, 0, "unsupported HPROF version string");
    memcpy(g->version, b, n);
    g->version[n] = '\0';
    if (strcmp(g->version, "JAVA PROFILE 1.0.1") && strcmp(g->version, "JAVA PROFILE 1.0.2") &&
        strcmp(g->version, "JAVA PROFILE 1.0.3"))
        return fail(r, 0, 0, 0, "unsupported HPROF version \"%s\"", g->version);
    if (r->len - n - 1 < 12)
        return fail(r, n + 1, 0, 0, "truncated header");
    g->id_size = be32(b + n + 1);
    if (g->id_size != 4 && g->id_size != 8)
        return fail(r, n + 1, 0, 0, "unsupported identifier size %u (4 or 8 expected)", g->id_size);
    r->ids = g->id_size;
    g->timestamp_ms = be64(b + n + 5);
    r->hdr_len = n + 1 + 12;
    g->file_size = r->len;
    return 0;
}

static void rd_free(rd *r)
{
    free(r->str);
    free(r->lc);
    free(r->cx);
    free(r->field_sid);
    free(r->static_sid);
    free(r->heap_sid);
    free(r->root_off);
    free(r->root_rec);
    free(r->hrec);
    free(r->hrec_kcls);
    free(r->slots);
    free(r->cbi);
    free(r->filled);
    free(r->present);
    free(r->ih_key);
    free(r->ih_val);
    free(r->jni_ids);
    free(r->sbuf);
}

static int cmp_problem(const void *a, const void *b)
{
    const ms_hproblem *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return strcmp(x->msg, y->msg);
}

static int cmp_classobj(const void *a, const void *b, void *arg)
{
    const ms_hgraph *g = arg;
    ms_hidx x = g->classes[*(const uint32_t *)a].obj, y = g->classes[*(const uint32_t *)b].obj;
    return x < y ? -1 : x > y;
}

static int store_edges(rd *r, int threads);
static int finish(rd *r);

/* Threads for the passes: two for large dumps when there are two cores. */
static int threads_for(const rd *r)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int want = r->o ? r->o->threads : 0;
    return want == 2 || (want == 0 && r->len >= (64u << 20) && ncpu > 1) ? 2 : 1;
}

typedef struct p1half {
    rd r;
    ms_hgraph g;
    const uint64_t *rec;
    size_t nrec;
    char err[400];
    int rc;
} p1half;

static void *run_p1half(void *arg)
{
    p1half *h = arg;
    h->rc = read_heap_records(&h->r, h->rec, h->nrec, NULL, UINT64_MAX);
    return NULL;
}

/* Pass 1 on two threads: the top-level record headers are walked first (a few thousand
 * reads); the second thread takes the heap-dump records of the second half, collecting
 * ids, roots and sub-record counts into a graph of its own, appended after the first
 * thread's (the order of a walk on one thread). A dump whose second half has class dumps
 * or heap info (their order counts) has that half read by the first thread after all. */
static int walk_two(rd *r)
{
    ms_hgraph *g = r->g;
    uint64_t *hs = NULL;
    struct toprec *tops = NULL;
    size_t n = 0, cap = 0, ntop = 0, captop = 0;
    /* headers close together (strings, classes) are read 64 KiB at a time, far-apart
     * ones (heap-dump segments, about 1 MB each) alone: the walk reads a few MB, not
     * the file */
    uint8_t *hb = malloc(64u << 10);
    uint64_t hb_at = 0, hb_len = 0;
    if (!hb)
        return walk(r);
    for (uint64_t pos = r->hdr_len; r->len - pos >= 9;) {
        if (pos < hb_at || pos + 9 > hb_at + hb_len) {
            size_t want = pos - hb_at > (256u << 10) ? 9 : 64u << 10;
            hb_len = ms_hinput_peek(r->in, pos, hb, want);
            hb_at = pos;
            if (hb_len < 9)
                break;
        }
        const uint8_t *hp = hb + (pos - hb_at);
        uint8_t tag = hp[0];
        uint64_t len = be32(hp + 5);
        if (!known_record_tag(tag) || len > r->len - pos - 9)
            break; /* the walk reports it */
        if (grow((void **)&tops, &captop, ntop + 1, sizeof *tops) ||
            ((tag == 0x0C || tag == 0x1C) && grow((void **)&hs, &cap, n + 1, sizeof *hs))) {
            free(hs);
            free(tops);
            free(hb);
            return walk(r);
        }
        tops[ntop].pos = pos;
        tops[ntop].len = (uint32_t)len;
        tops[ntop++].tag = tag;
        if (tag == 0x0C || tag == 0x1C)
            hs[n++] = pos;
        pos += 9 + len;
    }
    free(hb);
    size_t j = 0;
    if (n >= 2) {
        uint64_t mid = hs[0] + (hs[n - 1] - hs[0]) / 2;
        for (j = 1; j < n && hs[j] < mid; j++)
            ;
    }
    p1half *h = j && j < n ? calloc(1, sizeof *h) : NULL;
    if (!h) {
        free(hs);
        free(tops);
        return walk(r);
    }
    h->r = *r;
    rd *b = &h->r;
    b->g = &h->g;
    h->g.id_size = g->id_size;
    b->o = NULL;
    b->err = h->err;
    b->errlen = sizeof h->err;
    b->p1_second = 1;
    b->nrec = 0;
    b->capobj = 0;
    b->caproot = 0;
    b->root_off = NULL;
    b->root_rec = NULL;
    b->prev_arr_start = b->prev_arr_end = 0;
    b->compressed = b->klass_hint = 0;
    if ((r->len - hs[j]) / 14 < UINT32_MAX) {
        size_t c = (size_t)((r->len - hs[j]) / 14) + 16;
        h->g.obj_id64 = ms_hbig_malloc(c * sizeof *h->g.obj_id64);
        b->capobj = h->g.obj_id64 ? c : 0;
    }
    h->rec = hs + j;
    h->nrec = n - j;
    r->p1_split = hs[j];
    r->tops = tops;
    r->ntops = ntop;
    r->ktop = 0;
    pthread_t t;
    int started = pthread_create(&t, NULL, run_p1half, h) == 0;
    if (!started)
        r->p1_split = 0; /* all on this thread */
    int rc = walk(r);
    uint64_t split = r->p1_split;
    r->p1_split = 0;
    r->tops = NULL;
    r->ntops = 0;
    free(tops);
    if (started)
        pthread_join(t, NULL);
    if (started && h->rc && !b->p1_abort && (!rc || b->fail_at < r->fail_at)) {
        snprintf(r->err, r->errlen, "%s", h->err); /* the first error in the file */
        rc = -1;
    }
    if (!rc && started && !b->p1_abort) {
        for (int k = 0; k < 256; k++)
            g->subrecord_count[k] += h->g.subrecord_count[k];
        if (r->nrec + b->nrec >= UINT32_MAX - 1)
            rc = fail(r, 0, 0, 0, "more than %u objects", UINT32_MAX - 1);
        else if (r->nrec + b->nrec > r->capobj &&
                 GROW(r, g->obj_id64, r->capobj, r->nrec + b->nrec))
            rc = -1;
        if (!rc && b->nrec) {
            memcpy(g->obj_id64 + r->nrec, h->g.obj_id64, b->nrec * sizeof *g->obj_id64);
            r->nrec += b->nrec;
        }
        for (uint32_t k = 0; !rc && k < h->g.nroot; k++) {
            const ms_hroot *x = &h->g.roots[k];
            rc = add_root(r, b->root_off[k], b->root_rec[k], x->type, x->id, x->thread_serial, x->frame);
        }
        /* the compressed-reference guesses, as if one walk had read both halves */
        if (r->ids == 8 && b->first_arr_start && r->prev_arr_start) {
            if (b->first_arr_start > r->prev_arr_start && b->first_arr_start < r->prev_arr_end)
                r->compressed = 1;
            if (b->first_arr_start == r->prev_arr_end)
                r->klass_hint = 1;
        }
        r->compressed |= b->compressed;
        r->klass_hint |= b->klass_hint;
        if (b->prev_arr_start) {
            r->prev_arr_start = b->prev_arr_start;
            r->prev_arr_end = b->prev_arr_end;
        }
    } else if (started && b->p1_abort && (!rc || r->fail_at >= split)) {
        /* the second half met a class dump or heap info: read here, in order, up to
         * where the walk failed if it did (an error before that comes first) */
        uint64_t stop = rc ? r->fail_at : UINT64_MAX;
        size_t k = 0;
        while (k < r->nhrec && r->hrec[k] < split)
            k++;
        if (read_heap_records(r, r->hrec + k, r->nhrec - k, r->hrec_kcls + k, stop))
            rc = -1;
    }
    free(h->g.obj_id64);
    free(h->g.roots);
    free(b->root_off);
    free(b->root_rec);
    free(h);
    free(hs);
    return rc;
}

/* The header and pass 1. */
static int pass1(rd *r)
{
    ms_hgraph *g = r->g;
    if (parse_header(r))
        return -1;
    r->cur_heap = 0xFF;
    r->unknown_cls = MS_HCLASS_NONE;
    /* the ids of pass 1: room for as many objects as the file could hold (the smallest
     * object record takes 14 bytes), reserved at once, so the array is never copied as it
     * grows; only the pages written become resident. Growth as needed when refused. */
    if (r->len / 14 < UINT32_MAX) {
        size_t cap = (size_t)(r->len / 14) + 16;
        g->obj_id64 = ms_hbig_malloc(cap * sizeof *g->obj_id64);
        r->capobj = g->obj_id64 ? cap : 0;
    }
    r->pass = 1;
    return ms_hinput_is_gzip(r->in) || threads_for(r) < 2 ? walk(r) : walk_two(r);
}

static int read_all(rd *r)
{
    ms_hgraph *g = r->g;
    /* gzip: pass 1 inflates the whole file once, recording access points for the
     * passes after it; the length of the data is known at its end */
    int gz = ms_hinput_is_gzip(r->in);
    ms_hwin w;
    if (open_window(r, &w, 0, gz))
        return -1;
    r->len = gz ? LEN_UNKNOWN : ms_hinput_file_size(r->in);
    int rc = src_need(r, 0, 77) < 0 || pass1(r) ? -1 : 0;
    close_window(r);
    if (rc)
        return -1;
    g->file_size = r->len;
    /* a dump cut at a record boundary reads without error: say that it ends early */
    if (r->len == r->hdr_len)
        return fail(r, r->len, 0, 0, "the file ends after its header: no records (truncated?)");
    if (!g->record_count[0x0C] && !g->record_count[0x1C]) {
        g->ends_early = 1;
        problem(r, r->len, 0, 0, "the file ends early: %llu bytes and no heap dump record (truncated?)",
                (unsigned long long)r->len);
    } else if (g->record_count[0x1C] && !g->record_count[0x2C]) {
        g->ends_early = 1;
        problem(r, r->len, 0, 0, "the file ends early: no HEAP_DUMP_END after its heap dump segments "
                                 "(cut at a record boundary?)");
    }
    if (r->nstr)
        qsort(r->str, r->nstr, sizeof *r->str, cmp_str);
    if (build_lookup(r))
        return -1;
    if (resolve_classes(r))
        return -1;
    int compressed = r->compressed ? 1 : r->klass_hint ? 2 : 0;
    if (r->o && r->o->compressed_oops)
        compressed = r->o->compressed_oops == 1 ? 1 : r->o->compressed_oops == 3 ? 2 : 0;
    ms_hsize_init(&g->model, r->o ? r->o->size_flavor : MS_HSIZE_AUTO, g->version, g->id_size,
                  compressed);
    compute_class_sizes(r);
    /* HotSpot: the ids JNI globals hold (the CDS archive's roots array is one) */
    if (strcmp(g->version, "JAVA PROFILE 1.0.3")) {
        r->jni_ids = malloc(((size_t)g->nroot + 1) * sizeof *r->jni_ids);
        if (!r->jni_ids)
            return fail(r, 0, 0, 0, "out of memory");
        for (uint32_t k = 0; k < g->nroot; k++)
            if (g->roots[k].type == 0x01)
                r->jni_ids[r->njni++] = g->roots[k].id;
        if (r->njni)
            qsort(r->jni_ids, r->njni, sizeof *r->jni_ids, cmp_u64);
    }
    /* the heap of objects before any HEAP_DUMP_INFO: made now, so no pass adds heaps */
    int dh = heap_index(r, 0, 0, 0);
    if (dh < 0)
        return -1;

    /* pass 2: kinds, heaps, classes, sizes, reference counts */
    size_t n = g->nobj;
    g->obj_kind = ms_hbig_malloc(n ? n : 1);
    g->obj_heap = ms_hbig_malloc(n ? n : 1);
    g->obj_class = ms_hbig_malloc((n ? n : 1) * sizeof *g->obj_class);
    g->obj_size = ms_hbig_malloc((n ? n : 1) * sizeof *g->obj_size);
    r->counts_only = r->o && r->o->counts_only;
    /* counts only: a bitmap of the ids answers the reference checks when it costs at most
     * 8 bytes per object (about twice as fast as ms_hgraph_find; pages of the bitmap no
     * object falls in are never touched) */
    if (r->counts_only && g->obj_id32 && n && g->obj_id32[n - 1] / 64 < n) {
        r->present = ms_hbig_calloc((size_t)(g->obj_id32[n - 1] / 64) + 1, sizeof *r->present);
        for (size_t i = 0; r->present && i < n; i++)
            r->present[g->obj_id32[i] >> 6] |= (uint64_t)1 << (g->obj_id32[i] & 63);
    }
    if (!r->counts_only)
        g->edge_off = ms_hbig_calloc(n + 1, sizeof *g->edge_off);
    if (!g->obj_kind || !g->obj_heap || !g->obj_class || !g->obj_size || (!r->counts_only && !g->edge_off))
        return fail(r, 0, 0, 0, "out of memory for %zu objects", n);
    memset(g->obj_kind, 0xFF, n);
    /* two threads for large dumps whose ids are all distinct (a repeated id would have
     * both threads claim one object) */
    int threads = threads_for(r);
    if (g->duplicate_ids)
        threads = 1;
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (threads > 1) {
        if (prepare_threads(r))
            return -1;
        r->mu = &mu;
    }
    r->pass = 2;
    r->last_cid = 0;
    r->last_k = class_by_id(r, 0);
    uint32_t k0 = g->nclass;
    if (run_pass(r, threads) || order_synthetic_classes(r, k0))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (g->obj_kind[i] == 0xFF)
            return fail(r, 0, 0, 0, "internal: object 0x%llx was not seen again", (unsigned long long)ms_hgraph_id(g, i));
        if (g->edge_off) {
            if (g->edge_off[i + 1] > UINT32_MAX - g->edge_off[i])
                return fail(r, 0, 0, 0, "more than %u references", UINT32_MAX);
            g->edge_off[i + 1] += g->edge_off[i];
        }
    }
    if (r->counts_only)
        g->nedge = r->nref;
    else if (store_edges(r, threads))
        return -1;
    r->mu = NULL;
    r->frozen = 0;
    return finish(r);
}

/* Pass 3: the references, each object's in its own slice of the CSR arrays; those to
 * absent objects are squeezed out after. */
static int store_edges(rd *r, int threads)
{
    ms_hgraph *g = r->g;
    size_t n = g->nobj;

    uint64_t ne = g->edge_off[n];
    g->edge_dst = ms_hbig_malloc((ne ? ne : 1) * sizeof *g->edge_dst);
    g->edge_label = ms_hbig_malloc((ne ? ne : 1) * sizeof *g->edge_label);
    if (!g->edge_dst || !g->edge_label)
        return fail(r, 0, 0, 0, "out of memory for %llu references", (unsigned long long)ne);
    if (g->duplicate_ids) {
        r->filled = calloc(n / 8 + 1, 1);
        if (!r->filled)
            return fail(r, 0, 0, 0, "out of memory");
    }
    r->pass = 3;
    if (run_pass(r, threads))
        return -1;
    g->nedge = ne;
    if (g->dangling_refs || g->archived_refs) {
        /* squeeze out the references to absent objects */
        uint64_t w = 0, begin = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t end = g->edge_off[i + 1];
            g->edge_off[i] = w;
            for (uint64_t e = begin; e < end; e++)
                if (g->edge_dst[e] != MS_HIDX_NONE) {
                    g->edge_dst[w] = g->edge_dst[e];
                    g->edge_label[w] = g->edge_label[e];
                    w++;
                }
            begin = end;
        }
        g->edge_off[n] = w;
        g->nedge = w;
        if (w) {
            ms_hidx *d = realloc(g->edge_dst, w * sizeof *d);
            uint32_t *l = realloc(g->edge_label, w * sizeof *l);
            if (d)
                g->edge_dst = d;
            if (l)
                g->edge_label = l;
        }
    }
    return 0;
}

/* After the passes: totals of problems, class objects by index, heap names, roots. */
static int finish(rd *r)
{
    ms_hgraph *g = r->g;
    if (g->duplicate_ids > 8)
        problem(r, 0, 0, 0, "%llu duplicate object ids in all (later records dropped)",
                (unsigned long long)g->duplicate_ids);
    if (g->dangling_refs > 8)
        problem(r, 0, 0, 0, "%llu references to objects not in the dump in all (dropped)",
                (unsigned long long)g->dangling_refs);

    /* class objects by index, heap names, roots */
    g->classobj = malloc(((size_t)g->nclass + 1) * sizeof *g->classobj);
    if (!g->classobj)
        return fail(r, 0, 0, 0, "out of memory");
    for (uint32_t k = 0; k < g->nclass; k++)
        if (g->classes[k].obj != MS_HIDX_NONE && g->obj_kind[g->classes[k].obj] == MS_HOBJ_CLASS)
            g->classobj[g->nclassobj++] = k;
    if (g->nclassobj)
        qsort_r(g->classobj, g->nclassobj, sizeof *g->classobj, cmp_classobj, g);
    for (uint32_t h = 0; h < g->nheap; h++) {
        if (r->heap_sid[h])
            g->heaps[h].name = intern_sid(r, r->heap_sid[h] - 1);
        else
            g->heaps[h].name = pool_add(r, "default", 7);
        if (g->heaps[h].name == UINT32_MAX)
            return fail(r, 0, 0, 0, "out of memory");
    }
    uint64_t missing_roots = 0;
    for (uint32_t i = 0; i < g->nroot; i++) {
        ms_hroot *rt = &g->roots[i];
        rt->obj = ms_hgraph_find(g, rt->id);
        if (rt->obj == MS_HIDX_NONE) {
            if (++missing_roots <= 4)
                problem(r, r->root_off[i], r->root_rec[i], rt->type, "GC root (%s) names 0x%llx, which is not in the dump",
                        ms_hroot_type_name(rt->type), (unsigned long long)rt->id);
        } else if (rt->type == 0x05 && g->obj_kind[rt->obj] == MS_HOBJ_CLASS) {
            uint32_t k = ms_hgraph_class_object_class(g, rt->obj);
            if (k != MS_HCLASS_NONE)
                g->classes[k].flags |= MS_HCLASS_STICKY;
        }
    }
    if (missing_roots > 4)
        problem(r, 0, 0, 0, "%llu GC roots name objects not in the dump", (unsigned long long)missing_roots);
    /* the two threads report in any order: list problems by file offset */
    qsort(g->problems, g->nproblem, sizeof *g->problems, cmp_problem);
    if (r->o && r->o->progress)
        r->o->progress(r->o->progress_arg, 3 * r->len, 3 * r->len);
    return 0;
}

static int read_input(ms_hinput *in, const ms_hprof_read_opts *opts, ms_hgraph **out, char *err,
                      size_t errlen)
{
    rd r;
    memset(&r, 0, sizeof r);
    if (!in) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (opts && opts->window)
        ms_hinput_set_window(in, opts->window);
    r.in = in;
    r.err = err;
    r.errlen = errlen;
    r.o = opts;
    r.g = calloc(1, sizeof *r.g);
    if (!r.g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pool_add(&r, "", 0) == UINT32_MAX) {
        free(r.g);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = read_all(&r);
    rd_free(&r);
    if (rc) {
        ms_hgraph_free(r.g);
        return -1;
    }
    *out = r.g;
    return 0;
}

int ms_hprof_read_mem(const void *data, size_t len, const ms_hprof_read_opts *opts,
                      ms_hgraph **out, char *err, size_t errlen)
{
    *out = NULL;
    ms_hinput *in = ms_hinput_mem(data, len);
    int rc = read_input(in, opts, out, err, errlen);
    ms_hinput_free(in);
    return rc;
}

int ms_hprof_read(const char *path, const ms_hprof_read_opts *opts, ms_hgraph **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    char e[400] = "";
    /* O_NONBLOCK: a FIFO must not block in open() before it is refused below */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file%s", path,
                 S_ISFIFO(st.st_mode) ? " (a FIFO: the dump is read more than once, save it to a file)" : "");
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    unsigned char magic[2] = {0, 0};
    int gz = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!gz && st.st_size == 0) {
        snprintf(err, errlen, "%s: empty file", path);
        close(fd);
        return -1;
    }
    /* read in passes through small windows (input.h): gzip with no decompressed copy,
     * a plain file with pread into the cache rather than through a mapping */
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ms_hinput *in = gz ? ms_hinput_gzip(fd) : ms_hinput_file(fd, (uint64_t)st.st_size);
    int rc = read_input(in, opts, out, e, sizeof e);
    ms_hinput_free(in);
    close(fd);
    if (rc)
        snprintf(err, errlen, "%s: %s", path, e);
    return rc;
}
