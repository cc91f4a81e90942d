/* Aggregation of a snapshot's stacks by symbolized frames or module offsets, and the
 * small formatting helpers every exporter shares. Tools only; never prints on its own
 * (the writers here only write to the FILE they are given). */
#define _GNU_SOURCE
#include "analysis/stack_agg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- snapshot lookups that do not need the reader ------------------------------ */

const char *ms_agg_meta(const ms_snapshot *s, const char *key)
{
    for (size_t i = 0; i < s->nmeta; i++)
        if (s->meta[i].key && !strcmp(s->meta[i].key, key))
            return s->meta[i].value;
    return NULL;
}

const ms_module *ms_agg_module_for_pc(const ms_snapshot *s, uint64_t pc)
{
    for (size_t i = 0; i < s->nmodules; i++) {
        const ms_module *m = &s->modules[i];
        for (uint32_t j = 0; j < m->nseg; j++) {
            uint64_t lo = m->segs[j].vaddr + m->load_bias;
            if (pc >= lo && pc - lo < m->segs[j].memsz)
                return m;
        }
    }
    return NULL;
}

int ms_agg_is_return_address(const ms_stack *st, uint32_t i)
{
    return !(i == 0 && (st->flags & MS_STACKF_FIRST_IS_PC));
}

#define SYM_INDEX_KEY MS_AGG_SYM_PREFIX "index"

/* pc of a "sym.<hex>" key, or -1 when the key is not of that form */
static int sym_key_pc(const char *key, uint64_t *pc)
{
    size_t pl = strlen(MS_AGG_SYM_PREFIX);
    if (strncmp(key, MS_AGG_SYM_PREFIX, pl) != 0 || !key[pl])
        return -1;
    uint64_t v = 0;
    const char *p = key + pl;
    for (int n = 0; *p; p++, n++) {
        int d = (*p >= '0' && *p <= '9') ? *p - '0' : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10 : -1;
        if (d < 0 || n >= 16)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *pc = v;
    return 0;
}

static int cmp_sym_kv(const void *a, const void *b)
{
    uint64_t x = 0, y = 0;
    sym_key_pc(((const ms_kv *)a)->key, &x);
    sym_key_pc(((const ms_kv *)b)->key, &y);
    return x < y ? -1 : x > y;
}

int ms_agg_index_names(ms_snapshot *s)
{
    size_t k = 0;
    uint64_t pc;
    for (size_t i = 0; i < s->nmeta; i++)
        if (strcmp(s->meta[i].key, SYM_INDEX_KEY) && sym_key_pc(s->meta[i].key, &pc) == 0)
            k++;
    ms_kv *nm = malloc((s->nmeta + 1) * sizeof *nm);
    char *ik = strdup(SYM_INDEX_KEY), *iv = NULL;
    if (!nm || !ik || asprintf(&iv, "%zu", k) < 0) {
        free(nm);
        free(ik);
        return -1;
    }
    size_t a = 1, b = 1 + k;
    nm[0] = (ms_kv){ik, iv};
    for (size_t i = 0; i < s->nmeta; i++) {
        if (!strcmp(s->meta[i].key, SYM_INDEX_KEY)) { /* an older index: dropped */
            free(s->meta[i].key);
            free(s->meta[i].value);
            continue;
        }
        if (sym_key_pc(s->meta[i].key, &pc) == 0)
            nm[a++] = s->meta[i];
        else
            nm[b++] = s->meta[i];
    }
    qsort(nm + 1, k, sizeof *nm, cmp_sym_kv);
    free(s->meta);
    s->meta = nm;
    s->nmeta = b;
    return 0;
}

static const char *imported_name(const ms_snapshot *s, uint64_t pc)
{
    /* indexed: meta[0] = sym.index, then that many entries sorted by pc */
    if (s->nmeta && s->meta[0].key && !strcmp(s->meta[0].key, SYM_INDEX_KEY)) {
        uint64_t k = strtoull(s->meta[0].value ? s->meta[0].value : "0", NULL, 10);
        if (k <= s->nmeta - 1) {
            size_t lo = 1, hi = 1 + (size_t)k;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                uint64_t v;
                if (sym_key_pc(s->meta[mid].key, &v) != 0)
                    break; /* not what the index promised: scan instead */
                if (v == pc)
                    return s->meta[mid].value;
                if (v < pc)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo >= hi)
                return NULL;
        }
    }
    char key[40];
    snprintf(key, sizeof key, MS_AGG_SYM_PREFIX "%" PRIx64, pc);
    return ms_agg_meta(s, key);
}

int ms_agg_resolve(const ms_snapshot *s, ms_symbolizer *sym, uint64_t pc, int is_return_address,
                   ms_frame *out, int max_out)
{
    if (max_out < 1)
        return 0;
    int n = 0;
    if (sym)
        n = ms_symbolize(sym, pc, is_return_address, out, max_out);
    if (n < 1) {
        memset(&out[0], 0, sizeof out[0]);
        out[0].address = pc;
        n = 1;
    }
    if (!out[0].function && n == 1) {
        const char *name = imported_name(s, pc);
        if (name && *name)
            out[0].function = name;
    }
    if (!out[n - 1].module) {
        /* a return address may be the end of its function: look up the call */
        const ms_module *m = ms_agg_module_for_pc(s, is_return_address && pc ? pc - 1 : pc);
        if (m) {
            for (int i = 0; i < n; i++) {
                out[i].module = m->path;
                out[i].module_offset = pc - m->load_bias;
            }
        }
    }
    return n;
}

/* ---- metrics ----------------------------------------------------------------------- */

uint64_t ms_metric_value(const ms_snap_counters *c, ms_metric m)
{
    switch (m) {
    case MS_METRIC_LIVE_BLOCKS: return c->live_blocks;
    case MS_METRIC_ALLOC_BYTES: return c->alloc_bytes;
    case MS_METRIC_ALLOC_BLOCKS: return c->alloc_blocks;
    case MS_METRIC_LIVE_BYTES:
    default: return c->live_bytes;
    }
}

const char *ms_metric_name(ms_metric m)
{
    switch (m) {
    case MS_METRIC_LIVE_BLOCKS: return "live_blocks";
    case MS_METRIC_ALLOC_BYTES: return "alloc_bytes";
    case MS_METRIC_ALLOC_BLOCKS: return "alloc_blocks";
    case MS_METRIC_LIVE_BYTES:
    default: return "live_bytes";
    }
}

const char *ms_metric_unit(ms_metric m)
{
    return (m == MS_METRIC_LIVE_BYTES || m == MS_METRIC_ALLOC_BYTES) ? "bytes" : "count";
}

int ms_metric_parse(const char *t, ms_metric *m)
{
    static const struct { const char *name; ms_metric m; } names[] = {
        {"live_bytes", MS_METRIC_LIVE_BYTES},   {"live", MS_METRIC_LIVE_BYTES},
        {"inuse_space", MS_METRIC_LIVE_BYTES},  {"live_blocks", MS_METRIC_LIVE_BLOCKS},
        {"live_count", MS_METRIC_LIVE_BLOCKS},  {"inuse_objects", MS_METRIC_LIVE_BLOCKS},
        {"alloc_bytes", MS_METRIC_ALLOC_BYTES}, {"alloc_space", MS_METRIC_ALLOC_BYTES},
        {"alloc_blocks", MS_METRIC_ALLOC_BLOCKS}, {"alloc_count", MS_METRIC_ALLOC_BLOCKS},
        {"alloc_objects", MS_METRIC_ALLOC_BLOCKS},
    };
    char norm[32];
    size_t l = strlen(t);
    if (l >= sizeof norm)
        return -1;
    for (size_t i = 0; i <= l; i++)
        norm[i] = t[i] == '-' ? '_' : t[i];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(norm, names[i].name)) {
            *m = names[i].m;
            return 0;
        }
    return -1;
}

/* Saturating: counters from a crafted file must not wrap, so a sum stays >= its parts. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void ms_counters_add(ms_snap_counters *d, const ms_snap_counters *s)
{
    d->live_blocks = sat_add(d->live_blocks, s->live_blocks);
    d->live_bytes = sat_add(d->live_bytes, s->live_bytes);
    d->alloc_blocks = sat_add(d->alloc_blocks, s->alloc_blocks);
    d->alloc_bytes = sat_add(d->alloc_bytes, s->alloc_bytes);
    d->free_blocks = sat_add(d->free_blocks, s->free_blocks);
    d->free_bytes = sat_add(d->free_bytes, s->free_bytes);
}

/* ---- the aggregate ------------------------------------------------------------------ */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

ms_agg *ms_agg_new(void)
{
    ms_agg *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->name_hash_cap = 256;
    a->stack_hash_cap = 256;
    a->name_hash = calloc(a->name_hash_cap, sizeof *a->name_hash);
    a->stack_hash = calloc(a->stack_hash_cap, sizeof *a->stack_hash);
    if (!a->name_hash || !a->stack_hash) {
        ms_agg_free(a);
        return NULL;
    }
    return a;
}

void ms_agg_free(ms_agg *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nnames; i++)
        free(a->names[i]);
    for (size_t i = 0; i < a->nstacks; i++) {
        free(a->stacks[i].frames);
        free(a->stacks[i].key);
    }
    free(a->names);
    free(a->stacks);
    free(a->name_hash);
    free(a->stack_hash);
    free(a);
}

static int rehash(uint32_t **tab, size_t *cap, size_t n, const char *(*keyof)(const ms_agg *, size_t),
                  const ms_agg *a)
{
    size_t ncap = *cap * 2;
    uint32_t *t = calloc(ncap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        size_t h = hash_str(keyof(a, i)) & (ncap - 1);
        while (t[h])
            h = (h + 1) & (ncap - 1);
        t[h] = (uint32_t)(i + 1);
    }
    free(*tab);
    *tab = t;
    *cap = ncap;
    return 0;
}

static const char *name_key(const ms_agg *a, size_t i) { return a->names[i]; }
static const char *stack_key(const ms_agg *a, size_t i) { return a->stacks[i].key; }

static long intern_name(ms_agg *a, const char *name)
{
    size_t h = hash_str(name) & (a->name_hash_cap - 1);
    while (a->name_hash[h]) {
        uint32_t i = a->name_hash[h] - 1;
        if (!strcmp(a->names[i], name))
            return i;
        h = (h + 1) & (a->name_hash_cap - 1);
    }
    if (a->nnames >= UINT32_MAX - 1)
        return -1;
    if (a->nnames == a->capnames) {
        size_t nc = a->capnames ? a->capnames * 2 : 64;
        char **p = realloc(a->names, nc * sizeof *p);
        if (!p)
            return -1;
        a->names = p;
        a->capnames = nc;
    }
    char *copy = strdup(name);
    if (!copy)
        return -1;
    a->names[a->nnames] = copy;
    a->name_hash[h] = (uint32_t)(a->nnames + 1);
    a->nnames++;
    if (a->nnames * 2 > a->name_hash_cap &&
        rehash(&a->name_hash, &a->name_hash_cap, a->nnames, name_key, a) != 0)
        return -1;
    return (long)(a->nnames - 1);
}

long ms_agg_intern(ms_agg *a, const char *name)
{
    return intern_name(a, name);
}

long ms_agg_find(const ms_agg *a, const char *key)
{
    size_t h = hash_str(key) & (a->stack_hash_cap - 1);
    while (a->stack_hash[h]) {
        uint32_t i = a->stack_hash[h] - 1;
        if (!strcmp(a->stacks[i].key, key))
            return i;
        h = (h + 1) & (a->stack_hash_cap - 1);
    }
    return -1;
}

long ms_agg_add(ms_agg *a, const char *const *names, uint32_t n, uint8_t kind,
                const ms_snap_counters *c, uint32_t src_id)
{
    size_t klen = 1;
    for (uint32_t i = 0; i < n; i++)
        klen += strlen(names[i]) + 1;
    char *key = malloc(klen);
    if (!key)
        return -1;
    char *p = key;
    for (uint32_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (i)
            *p++ = ';';
        memcpy(p, names[i], l);
        p += l;
    }
    *p = 0;
    ms_counters_add(&a->total, c);
    long found = ms_agg_find(a, key);
    if (found >= 0) {
        free(key);
        ms_counters_add(&a->stacks[found].c, c);
        a->stacks[found].nsrc++;
        return found;
    }
    if (a->nstacks == a->capstacks) {
        size_t nc = a->capstacks ? a->capstacks * 2 : 64;
        ms_agg_stack *ns = realloc(a->stacks, nc * sizeof *ns);
        if (!ns) {
            free(key);
            return -1;
        }
        a->stacks = ns;
        a->capstacks = nc;
    }
    ms_agg_stack *st = &a->stacks[a->nstacks];
    memset(st, 0, sizeof *st);
    st->frames = malloc((n ? n : 1) * sizeof *st->frames);
    if (!st->frames) {
        free(key);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        long id = intern_name(a, names[i]);
        if (id < 0) {
            free(st->frames);
            free(key);
            return -1;
        }
        st->frames[i] = (uint32_t)id;
    }
    st->nframes = n;
    st->key = key;
    st->c = *c;
    st->kind = kind;
    st->nsrc = 1;
    st->first_id = src_id;
    size_t h = hash_str(key) & (a->stack_hash_cap - 1);
    while (a->stack_hash[h])
        h = (h + 1) & (a->stack_hash_cap - 1);
    a->stack_hash[h] = (uint32_t)(a->nstacks + 1);
    a->nstacks++;
    if (a->nstacks * 2 > a->stack_hash_cap &&
        rehash(&a->stack_hash, &a->stack_hash_cap, a->nstacks, stack_key, a) != 0)
        return -1;
    return (long)(a->nstacks - 1);
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

char *ms_agg_frame_name(const ms_frame *f, ms_agg_key by, int innermost)
{
    char *out = NULL;
    if (by == MS_AGG_BY_PCS) {
        int r;
        if (f->module && f->function)
            r = asprintf(&out, "%s [%s+0x%" PRIx64 "]", f->function, f->module, f->module_offset);
        else if (f->module)
            r = asprintf(&out, "%s+0x%" PRIx64, f->module, f->module_offset);
        else
            r = asprintf(&out, "0x%" PRIx64, f->address);
        return r < 0 ? NULL : out;
    }
    int r;
    if (by == MS_AGG_FOLDED && f->function) {
        const char *mark = f->inlined ? "_[i]" : "";
        if (innermost && f->file)
            r = asprintf(&out, "%s %s:%d%s", f->function, base_name(f->file), f->line, mark);
        else
            r = asprintf(&out, "%s%s", f->function, mark);
    } else if (f->function && f->file && by == MS_AGG_BY_LINES)
        r = asprintf(&out, "%s %s:%d", f->function, base_name(f->file), f->line);
    else if (f->function)
        r = asprintf(&out, "%s", f->function);
    else if (f->module)
        r = asprintf(&out, "%s+0x%" PRIx64, base_name(f->module), f->module_offset);
    else
        r = asprintf(&out, "0x%" PRIx64, f->address);
    return r < 0 ? NULL : out;
}

const char *ms_agg_kind_root(uint8_t kind)
{
    switch (kind) {
    case MS_KIND_MMAP: return "[mmap]";
    case MS_KIND_STACK: return "[thread stacks]";
    default: return NULL;
    }
}

#define MS_AGG_MAX_INLINE 16

ms_agg *ms_agg_build(const ms_snapshot *s, ms_symbolizer *sym, ms_agg_key by, char *err,
                     size_t errlen)
{
    ms_agg *a = ms_agg_new();
    char **names = NULL;
    size_t capn = 0;
    if (!a)
        goto oom;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (st->kind == MS_KIND_RESERVED) /* address space, not memory */
            continue;
        size_t need = (size_t)st->depth * MS_AGG_MAX_INLINE + 2;
        if (need > capn) {
            char **nn = realloc(names, need * sizeof *nn);
            if (!nn)
                goto oom;
            names = nn;
            capn = need;
        }
        /* collect innermost first, then reverse */
        size_t n = 0;
        for (uint32_t d = 0; d < st->depth; d++) {
            ms_frame fr[MS_AGG_MAX_INLINE];
            int k = ms_agg_resolve(s, sym, st->pcs[d], ms_agg_is_return_address(st, d), fr,
                                   MS_AGG_MAX_INLINE);
            for (int j = 0; j < k; j++) {
                char *nm = ms_agg_frame_name(&fr[j], by, n == 0);
                if (!nm)
                    goto oom_names;
                names[n++] = nm;
            }
        }
        const char *root = ms_agg_kind_root(st->kind);
        if (root) {
            char *nm = strdup(root);
            if (!nm)
                goto oom_names;
            names[n++] = nm;
        }
        if (n == 0) {
            char *nm = strdup("[no stack]");
            if (!nm)
                goto oom_names;
            names[n++] = nm;
        }
        for (size_t l = 0, r = n - 1; l < r; l++, r--) {
            char *t = names[l];
            names[l] = names[r];
            names[r] = t;
        }
        long rc = ms_agg_add(a, (const char *const *)names, (uint32_t)n, st->kind, &st->c, st->id);
        for (size_t j = 0; j < n; j++)
            free(names[j]);
        if (rc < 0)
            goto oom;
        a->stacks[rc].peak_bytes += st->peak_live_bytes;
        a->stacks[rc].temps += st->temp_blocks;
        continue;
    oom_names:
        for (size_t j = 0; j < n; j++)
            free(names[j]);
        goto oom;
    }
    free(names);
    return a;
oom:
    free(names);
    ms_agg_free(a);
    snprintf(err, errlen, "%s: out of memory while aggregating stacks",
             s->path ? s->path : "snapshot");
    return NULL;
}

static ms_metric g_sort_metric;
static const ms_agg *g_sort_agg;

static int cmp_order(const void *x, const void *y)
{
    const ms_agg_stack *a = &g_sort_agg->stacks[*(const size_t *)x];
    const ms_agg_stack *b = &g_sort_agg->stacks[*(const size_t *)y];
    uint64_t va = ms_metric_value(&a->c, g_sort_metric), vb = ms_metric_value(&b->c, g_sort_metric);
    if (va != vb)
        return va > vb ? -1 : 1;
    return strcmp(a->key, b->key);
}

size_t *ms_agg_order(const ms_agg *a, ms_metric m)
{
    size_t *ord = malloc((a->nstacks ? a->nstacks : 1) * sizeof *ord);
    if (!ord)
        return NULL;
    for (size_t i = 0; i < a->nstacks; i++)
        ord[i] = i;
    g_sort_metric = m;
    g_sort_agg = a;
    qsort(ord, a->nstacks, sizeof *ord, cmp_order);
    return ord;
}

/* ---- formatting -------------------------------------------------------------------- */

const char *ms_fmt_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (n < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", n);
        return buf;
    }
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

const char *ms_fmt_sbytes(int64_t n, char *buf, size_t len)
{
    char tmp[32];
    uint64_t mag = n < 0 ? (uint64_t)(-(n + 1)) + 1 : (uint64_t)n;
    snprintf(buf, len, "%s%s", n < 0 ? "-" : "+", ms_fmt_bytes(mag, tmp, sizeof tmp));
    return buf;
}

/* Length of the valid UTF-8 sequence starting at p (2..4), or 0 when it is not one
 * (overlong forms, surrogates and code points above U+10FFFF included). */
static int utf8_seq(const unsigned char *p)
{
    unsigned c = p[0];
    int n;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x3f >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* At a byte >= 0x80: copies the UTF-8 sequence that starts at *p, or writes '?' when none
 * does; leaves *p on the last byte it consumed. */
static void put_utf8_or_mark(FILE *out, const unsigned char **p)
{
    int n = utf8_seq(*p);
    if (n) {
        fwrite(*p, 1, (size_t)n, out);
        *p += n - 1;
    } else {
        fputc('?', out);
    }
}

/* Bytes that are not valid UTF-8 would make an SVG unparsable and JSON invalid: '?'. */
void ms_xml_escape(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c >= 0x80) {
            put_utf8_or_mark(out, &p);
            continue;
        }
        switch (c) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if (c < 0x20 && c != '\t' && c != '\n')
                fputc('?', out);
            else
                fputc(c, out);
        }
    }
}

void ms_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char c = *p;
        if (c >= 0x80) {
            put_utf8_or_mark(out, &p);
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '<': fputs("\\u003c", out); break; /* never closes a <script> */
        case '>': fputs("\\u003e", out); break;
        case '&': fputs("\\u0026", out); break;
        default:
            if (c < 0x20)
                fprintf(out, "\\u%04x", c);
            else
                fputc(c, out);
        }
    }
    fputc('"', out);
}
