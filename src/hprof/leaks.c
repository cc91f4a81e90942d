/* Leak finding after Shark (LeakCanary): marks objects whose lifecycle ended, reads the
 * primitive fields that decide it with a second, bounds-checked streaming pass over the
 * dump (the graph keeps references only), finds their shortest paths in one search where
 * leaking objects are leaves, and groups them by Shark's SHA-1 leak signature.
 * Never trusts the file; never prints except into the FILE given to the print function. */
#include "hprof/leaks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"
#include "hprof/sizes.h"

/* ---- SHA-1 (FIPS 180-4), for Shark-compatible signatures ---- */

typedef struct sha1 {
    uint32_t h[5];
    uint64_t len;
    uint8_t blk[64];
    size_t n;
} sha1;

static inline uint32_t rol(uint32_t x, int k) { return x << k | x >> (32 - k); }

static void sha1_block(sha1 *s, const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDC;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void sha1_init(sha1 *s)
{
    static const uint32_t h0[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->n = 0;
}

static void sha1_add(sha1 *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->len += len;
    while (len) {
        size_t k = 64 - s->n < len ? 64 - s->n : len;
        memcpy(s->blk + s->n, p, k);
        s->n += k;
        p += k;
        len -= k;
        if (s->n == 64) {
            sha1_block(s, s->blk);
            s->n = 0;
        }
    }
}

static void sha1_hex(sha1 *s, char out[41])
{
    uint64_t bits = s->len * 8;
    uint8_t pad = 0x80, zero = 0, be[8];
    sha1_add(s, &pad, 1);
    while (s->n != 56)
        sha1_add(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha1_add(s, be, 8);
    for (int i = 0; i < 5; i++)
        snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

void ms_hprof_sha1_hex(const void *data, size_t len, char out[41])
{
    sha1 s;
    sha1_init(&s);
    sha1_add(&s, data, len);
    sha1_hex(&s, out);
}


/* ---- traces and signatures ---- */

/* Shark's status propagation and suspect references (RealLeakTracerFactory, LeakTrace). */
static void trace_status(const ms_hinspect *ins, const ms_hprof_path *p, uint8_t *status,
                         uint8_t *suspect, uint8_t *reason)
{
    size_t n = p->len;
    if (!n)
        return;
    for (size_t k = 0; k < n; k++) {
        status[k] = ins->status[p->obj[k]];
        if (reason)
            reason[k] = ins->reason[p->obj[k]];
    }
    status[n - 1] = MS_LEAK_LEAKING;
    size_t last_not = SIZE_MAX;
    for (size_t k = 0; k + 1 < n; k++)
        if (status[k] == MS_LEAK_NOT_LEAKING)
            last_not = k;
    if (last_not != SIZE_MAX)
        for (size_t k = 0; k < last_not; k++)
            status[k] = MS_LEAK_NOT_LEAKING;
    size_t first_leak = n - 1;
    for (size_t k = last_not == SIZE_MAX ? 0 : last_not + 1; k < n; k++)
        if (status[k] == MS_LEAK_LEAKING) {
            first_leak = k;
            break;
        }
    for (size_t k = first_leak; k < n; k++)
        status[k] = MS_LEAK_LEAKING;
    for (size_t k = 0; k < n; k++) {
        suspect[k] = 0;
        if (k + 1 >= n)
            continue;
        if (status[k] == MS_LEAK_UNKNOWN ||
            (status[k] == MS_LEAK_NOT_LEAKING &&
             (k + 2 == n || status[k + 1] != MS_LEAK_NOT_LEAKING)))
            suspect[k] = 1;
    }
}

static void signature(const ms_hgraph *g, const ms_hprof_path *p, const uint8_t *suspect,
                      char out[41])
{
    sha1 s;
    sha1_init(&s);
    for (size_t k = 0; k + 1 < p->len; k++) {
        if (!suspect[k])
            continue;
        ms_hidx v = p->obj[k];
        const char *cls = g->obj_kind[v] == MS_HOBJ_CLASS
                              ? ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, v))
                              : ms_hgraph_class_name(g, g->obj_class[v]);
        sha1_add(&s, cls, strlen(cls));
        ms_hprof_edge_ref r = ms_hprof_edge_describe(g, p->edge[k + 1]);
        const char *name = r.field ? r.field : "[x]";
        sha1_add(&s, name, strlen(name));
    }
    sha1_hex(&s, out);
}

/* ---- reference matchers on the search ---- */

enum { ROOT_JAVA_FRAME = 0x03, ROOT_THREAD_OBJECT = 0x08 };

typedef struct prefs {
    ms_hprof_path_prefs p;
    uint8_t *ignore_edge, *low_edge, *ignore_root, *low_root;
    int *root_matcher; /* per root: matcher index or -1 */
} prefs;

static void prefs_free(prefs *x)
{
    free(x->ignore_edge);
    free(x->low_edge);
    free(x->ignore_root);
    free(x->low_root);
    free(x->root_matcher);
}

static int prefs_build(const ms_hgraph *g, const ms_hmatch *m, ms_hinspect *ins, prefs *x)
{
    memset(x, 0, sizeof *x);
    x->ignore_edge = calloc(g->nedge / 8 + 1, 1);
    x->low_edge = calloc(g->nedge / 8 + 1, 1);
    x->ignore_root = calloc((size_t)g->nroot / 8 + 1, 1);
    x->low_root = calloc((size_t)g->nroot / 8 + 1, 1);
    x->root_matcher = malloc(((size_t)g->nroot + 1) * sizeof *x->root_matcher);
    if (!x->ignore_edge || !x->low_edge || !x->ignore_root || !x->low_root || !x->root_matcher)
        return -1;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        int inst = g->obj_kind[i] == MS_HOBJ_INSTANCE && c < g->nclass && m->cls_first[c] != m->cls_first[c + 1];
        if (!inst && g->obj_kind[i] != MS_HOBJ_CLASS)
            continue;
        for (uint64_t e = g->edge_off[i]; e < g->edge_off[i + 1]; e++) {
            int k = ms_hmatch_edge(m, i, e);
            if (k < 0)
                continue;
            uint8_t *set = m->table[k].ignored ? x->ignore_edge : x->low_edge;
            set[e >> 3] |= (uint8_t)(1u << (e & 7));
        }
    }
    for (uint32_t r = 0; r < g->nroot; r++) {
        int k = ms_hmatch_root(m, r, ms_hinspect_thread_name, ins);
        x->root_matcher[r] = k;
        /* Shark reads a thread's Java locals last: such a path is harder to act on */
        if (k < 0 && g->roots[r].type == ROOT_JAVA_FRAME)
            x->low_root[r >> 3] |= (uint8_t)(1u << (r & 7));
        if (k < 0)
            continue;
        uint8_t *set = m->table[k].ignored ? x->ignore_root : x->low_root;
        set[r >> 3] |= (uint8_t)(1u << (r & 7));
    }
    x->p = (ms_hprof_path_prefs){x->ignore_edge, x->low_edge, x->ignore_root, x->low_root};
    return 0;
}

/* Shark's trace for an object a thread's Java frame holds: the thread's object first,
 * then a "<Java Local>" reference to it, so that the trace names the thread and the
 * signature has a reference (the thread's class and "<Java Local>"). A path from another
 * root, or whose thread has no object in the dump, is left as it is. Returns 0, or -1
 * when out of memory. */
static int thread_local_step(const ms_hgraph *g, const prefs *x, ms_hprof_path *p,
                             uint32_t *serial_out)
{
    if (!p->len || p->root_type != ROOT_JAVA_FRAME)
        return 0;
    uint32_t serial = 0;
    for (uint32_t r = 0; r < g->nroot && !serial; r++)
        if (g->roots[r].obj == p->obj[0] && g->roots[r].type == ROOT_JAVA_FRAME &&
            !((x->ignore_root[r >> 3] >> (r & 7)) & 1))
            serial = g->roots[r].thread_serial;
    ms_hidx thread = MS_HIDX_NONE;
    for (uint32_t r = 0; r < g->nroot && serial && thread == MS_HIDX_NONE; r++)
        if (g->roots[r].type == ROOT_THREAD_OBJECT && g->roots[r].thread_serial == serial)
            thread = g->roots[r].obj;
    if (thread == MS_HIDX_NONE || thread == p->obj[0])
        return 0;
    ms_hidx *obj = malloc((p->len + 1) * sizeof *obj);
    uint64_t *edge = malloc((p->len + 1) * sizeof *edge);
    if (!obj || !edge) {
        free(obj);
        free(edge);
        return -1;
    }
    obj[0] = thread;
    edge[0] = 0;
    edge[1] = MS_HPATH_LOCAL_EDGE;
    memcpy(obj + 1, p->obj, p->len * sizeof *obj);
    memcpy(edge + 2, p->edge + 1, (p->len - 1) * sizeof *edge);
    free(p->obj);
    free(p->edge);
    p->obj = obj;
    p->edge = edge;
    p->len++;
    p->root_type = ROOT_THREAD_OBJECT;
    if (serial_out)
        *serial_out = serial;
    return 0;
}

/* The first library-leak matcher on path p (its root, then its references), or -1. */
static int path_library_leak(const ms_hgraph *g, const ms_hmatch *m, const prefs *x,
                             const ms_hprof_path *p)
{
    for (uint32_t r = 0; r < g->nroot; r++)
        if (g->roots[r].obj == p->obj[0] && g->roots[r].type == p->root_type && x->root_matcher[r] >= 0 &&
            !m->table[x->root_matcher[r]].ignored)
            return x->root_matcher[r];
    for (size_t k = 1; k < p->len; k++) {
        if (p->edge[k] == MS_HPATH_CLASS_EDGE || p->edge[k] == MS_HPATH_LOCAL_EDGE)
            continue;
        int t = ms_hmatch_edge(m, p->obj[k - 1], p->edge[k]);
        if (t >= 0 && !m->table[t].ignored)
            return t;
    }
    return -1;
}

typedef struct leak {
    char sig[41];
    ms_hidx obj;
    size_t len;
    int matcher; /* library leak: the matcher; -1: an application leak */
} leak;

static int cmp_leak(const void *a, const void *b)
{
    const leak *x = a, *y = b;
    int c = strcmp(x->sig, y->sig);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static int cmp_group(const void *a, const void *b)
{
    const ms_hprof_leakgroup *x = a, *y = b;
    if ((x->matcher >= 0) != (y->matcher >= 0))
        return x->matcher >= 0 ? 1 : -1; /* application leaks first */
    if (x->retained != y->retained)
        return x->retained > y->retained ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->signature, y->signature);
}

void ms_hprof_leaks_free(ms_hprof_leaks *l)
{
    if (!l)
        return;
    for (size_t k = 0; k < l->ngroups; k++) {
        free(l->groups[k].objs);
        ms_hprof_path_free(&l->groups[k].trace);
        free(l->groups[k].status);
        free(l->groups[k].suspect);
        free(l->groups[k].reasons);
        free(l->groups[k].behind);
        free(l->groups[k].behind_via);
        free(l->groups[k].behind_reason);
    }
    free(l->groups);
    free(l->koom_classes);
    memset(l, 0, sizeof *l);
}

typedef struct objgrp {
    ms_hidx obj;
    size_t grp;
} objgrp;

static int cmp_objgrp(const void *a, const void *b)
{
    const objgrp *x = a, *y = b;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

/* The leaking objects the search with leaking objects as leaves did not reach (unr): a
 * second search, through leaking objects this time, tells those reachable only through
 * another leaking object (each listed with the group of the first leaking object on its
 * shortest path, which the first search reached) from those no longer strongly reachable
 * (counted: not leaks). Returns 0, or -1 with a message. */
static int behind_leaks(const ms_hgraph *g, const ms_hinspect *ins, const prefs *pf, const ms_hidx *parent,
                        const ms_hidx *unr, size_t nunr, ms_hprof_leaks *out, char *err, size_t errlen)
{
    ms_hidx *full = NULL;
    objgrp *og = NULL;
    ms_hidx *via = malloc(nunr * sizeof *via);
    size_t *grp = malloc(nunr * sizeof *grp);
    size_t nog = 0;
    int rc = -1;
    if (!via || !grp) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    if (ms_hprof_path_tree_ex(g, MS_HIDX_NONE, NULL, &pf->p, &full, NULL, err, errlen) < 0)
        goto out;
    for (size_t k = 0; k < out->ngroups; k++)
        nog += out->groups[k].count;
    og = malloc((nog ? nog : 1) * sizeof *og);
    if (!og) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    nog = 0;
    for (size_t k = 0; k < out->ngroups; k++)
        for (size_t j = 0; j < out->groups[k].count; j++)
            og[nog++] = (objgrp){out->groups[k].objs[j], k};
    qsort(og, nog, sizeof *og, cmp_objgrp);
    for (size_t u = 0; u < nunr; u++) {
        via[u] = MS_HIDX_NONE;
        ms_hidx x = unr[u];
        if (full[x] == MS_HIDX_NONE)
            continue;
        /* the leaking object nearest the root on x's shortest path (the search with
         * leaves reached it: nothing leaking comes before it) */
        size_t steps = 0;
        for (ms_hidx v = full[x]; v != MS_HPATH_ROOT && v < g->nobj && steps <= g->nobj; v = full[v], steps++)
            if (ins->status[v] == MS_LEAK_LEAKING && parent[v] != MS_HIDX_NONE)
                via[u] = v;
        if (via[u] == MS_HIDX_NONE)
            continue;
        objgrp key = {via[u], 0};
        const objgrp *f = bsearch(&key, og, nog, sizeof *og, cmp_objgrp);
        if (!f)
            via[u] = MS_HIDX_NONE;
        else
            grp[u] = f->grp;
    }
    for (size_t u = 0; u < nunr; u++) {
        if (via[u] == MS_HIDX_NONE) {
            out->unreachable++;
            continue;
        }
        ms_hprof_leakgroup *gp = &out->groups[grp[u]];
        ms_hidx *b = realloc(gp->behind, (gp->nbehind + 1) * sizeof *b);
        if (b)
            gp->behind = b;
        ms_hidx *w = b ? realloc(gp->behind_via, (gp->nbehind + 1) * sizeof *w) : NULL;
        if (w)
            gp->behind_via = w;
        uint8_t *y = w ? realloc(gp->behind_reason, gp->nbehind + 1) : NULL;
        if (y)
            gp->behind_reason = y;
        if (!b || !w || !y) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        gp->behind[gp->nbehind] = unr[u];
        gp->behind_via[gp->nbehind] = via[u];
        gp->behind_reason[gp->nbehind] = ins->reason[unr[u]];
        gp->nbehind++;
        out->behind++;
    }
    rc = 0;
out:
    free(full);
    free(og);
    free(via);
    free(grp);
    return rc;
}

static int find_leaks(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                      const ms_hkoom_opts *koom, ms_hprof_leaks *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    ms_hinspect ins;
    ms_hmatch m;
    prefs pf;
    memset(&ins, 0, sizeof ins);
    memset(&m, 0, sizeof m);
    memset(&pf, 0, sizeof pf);
    uint8_t *leaves = calloc((size_t)g->nobj / 8 + 1, 1);
    leak *lk = NULL;
    ms_hidx *parent = NULL, *unr = NULL;
    uint32_t *pedge = NULL;
    size_t nunr = 0;
    uint8_t *status = NULL, *suspect = NULL;
    int rc = -1;
    if (!leaves) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    if ((koom ? ms_hinspect_run_koom(path, g, koom, &ins, err, errlen)
              : ms_hinspect_run(path, g, &ins, err, errlen)) < 0)
        goto out;
    out->retained_known = r != NULL;
    out->build = ins.build;
    out->koom_classes = ins.koom_classes;
    ins.koom_classes = NULL;
    size_t nleak = 0;
    for (uint32_t i = 0; i < g->nobj; i++)
        if (ins.status[i] == MS_LEAK_LEAKING) {
            leaves[i >> 3] |= (uint8_t)(1u << (i & 7));
            nleak++;
        }
    out->leaking = nleak;
    if (!nleak) {
        rc = 0;
        goto out;
    }
    if (ms_hmatch_init(&m, g, &ins.build, err, errlen) < 0)
        goto out;
    if (prefs_build(g, &m, &ins, &pf) < 0) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    if (ms_hprof_path_tree_ex(g, MS_HIDX_NONE, leaves, &pf.p, &parent, &pedge, err, errlen) < 0)
        goto out;
    lk = calloc(nleak, sizeof *lk);
    unr = malloc(nleak * sizeof *unr);
    if (!lk || !unr) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    size_t n = 0;
    for (uint32_t i = 0; i < g->nobj; i++) {
        if (ins.status[i] != MS_LEAK_LEAKING)
            continue;
        if (parent[i] == MS_HIDX_NONE) {
            unr[nunr++] = i; /* not strongly reachable, or only through another leak */
            continue;
        }
        ms_hprof_path p;
        if (ms_hprof_path_from_tree(g, parent, pedge, i, &p, err, errlen) < 0)
            goto out;
        lk[n].matcher = path_library_leak(g, &m, &pf, &p);
        if (thread_local_step(g, &pf, &p, NULL) < 0) {
            ms_hprof_path_free(&p);
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        free(status);
        free(suspect);
        status = malloc(p.len);
        suspect = malloc(p.len);
        if (!status || !suspect) {
            ms_hprof_path_free(&p);
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        trace_status(&ins, &p, status, suspect, NULL);
        if (lk[n].matcher >= 0) {
            /* library leaks: one group per matched pattern, as Shark groups them */
            char pat[512];
            ms_hmatcher_pattern(&m.table[lk[n].matcher], pat, sizeof pat);
            ms_hprof_sha1_hex(pat, strlen(pat), lk[n].sig);
        } else {
            signature(g, &p, suspect, lk[n].sig);
        }
        lk[n].obj = i;
        lk[n].len = p.len;
        n++;
        ms_hprof_path_free(&p);
    }
    qsort(lk, n, sizeof *lk, cmp_leak);
    size_t ng = 0;
    for (size_t k = 0; k < n; k++)
        ng += k == 0 || strcmp(lk[k].sig, lk[k - 1].sig) != 0;
    out->groups = calloc(ng ? ng : 1, sizeof *out->groups);
    if (!out->groups) {
        ms_hprof_set_err(err, errlen, "leaks: out of memory");
        goto out;
    }
    for (size_t k = 0; k < n;) {
        size_t e = k;
        while (e < n && !strcmp(lk[e].sig, lk[k].sig))
            e++;
        ms_hprof_leakgroup *grp = &out->groups[out->ngroups++];
        memcpy(grp->signature, lk[k].sig, 41);
        grp->count = e - k;
        grp->matcher = lk[k].matcher;
        if (grp->matcher >= 0) {
            ms_hmatcher_pattern(&m.table[grp->matcher], grp->pattern, sizeof grp->pattern);
            grp->description = m.table[grp->matcher].description;
            out->library_groups++;
        }
        grp->objs = malloc(grp->count * sizeof *grp->objs);
        if (!grp->objs) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        for (size_t j = k; j < e; j++) {
            grp->objs[j - k] = lk[j].obj;
            if (r)
                grp->retained += r->retained[lk[j].obj];
        }
        grp->reason = ms_hinspect_reason(ins.reason[lk[k].obj]);
        if (ms_hprof_path_from_tree(g, parent, pedge, lk[k].obj, &grp->trace, err, errlen) < 0)
            goto out;
        uint32_t serial = 0;
        if (thread_local_step(g, &pf, &grp->trace, &serial) < 0) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        const char *tn = serial ? ms_hinspect_thread_name(&ins, serial) : NULL;
        if (tn) {
            /* a name from the dump: printed as text, so nothing the terminal would act on */
            snprintf(grp->thread_name, sizeof grp->thread_name, "%s", tn);
            for (char *c = grp->thread_name; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '?';
        }
        grp->status = malloc(grp->trace.len);
        grp->suspect = malloc(grp->trace.len);
        grp->reasons = malloc(grp->trace.len);
        if (!grp->status || !grp->suspect || !grp->reasons) {
            ms_hprof_set_err(err, errlen, "leaks: out of memory");
            goto out;
        }
        trace_status(&ins, &grp->trace, grp->status, grp->suspect, grp->reasons);
        k = e;
    }
    qsort(out->groups, out->ngroups, sizeof *out->groups, cmp_group);
    if (nunr && behind_leaks(g, &ins, &pf, parent, unr, nunr, out, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    if (rc < 0)
        ms_hprof_leaks_free(out);
    ms_hinspect_free(&ins);
    ms_hmatch_free(&m);
    prefs_free(&pf);
    free(leaves);
    free(lk);
    free(parent);
    free(unr);
    free(pedge);
    free(status);
    free(suspect);
    return rc;
}

int ms_hprof_find_leaks(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                        ms_hprof_leaks *out, char *err, size_t errlen)
{
    return find_leaks(path, g, r, NULL, out, err, errlen);
}

int ms_hprof_find_leaks_koom(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                             const ms_hkoom_opts *o, ms_hprof_leaks *out, char *err, size_t errlen)
{
    return find_leaks(path, g, r, o, out, err, errlen);
}

/* ---- output ---- */

static const char *const status_key[] = {"UNKNOWN", "NOT_LEAKING", "LEAKING"};

/* Writes `, "key": "value"` into buf with value escaped for JSON (control characters
 * dropped: thread names come from the dump). Returns the length written. */
static int json_member(char *buf, size_t len, const char *key, const char *value)
{
    char esc[800];
    size_t e = 0;
    for (const unsigned char *c = (const unsigned char *)value; *c && e + 2 < sizeof esc; c++) {
        if (*c < 0x20)
            continue;
        if (*c == '"' || *c == '\\')
            esc[e++] = '\\';
        esc[e++] = (char)*c;
    }
    esc[e] = 0;
    int n = snprintf(buf, len, ", \"%s\": \"%s\"", key, esc);
    return n < 0 ? 0 : (size_t)n >= len ? (int)len - 1 : n;
}

/* Why step k of a trace has its status: its own reason, or Shark's propagated one. */
static const char *step_reason(const ms_hgraph *g, const ms_hprof_leakgroup *grp, size_t k,
                               char *buf, size_t len)
{
    const char *own = ms_hinspect_reason(grp->reasons[k]);
    if (*own)
        return own;
    size_t n = grp->trace.len;
    char cls[512];
    if (grp->status[k] == MS_LEAK_NOT_LEAKING) {
        for (size_t j = k + 1; j < n; j++)
            if (grp->status[j] == MS_LEAK_NOT_LEAKING && *ms_hinspect_reason(grp->reasons[j])) {
                snprintf(buf, len, "%s\u2193 is not leaking", ms_hpan_obj_class(g, grp->trace.obj[j], 0, cls, sizeof cls));
                return buf;
            }
    } else if (grp->status[k] == MS_LEAK_LEAKING) {
        if (k + 1 == n)
            return "this is the leaking object";
        for (size_t j = k; j-- > 0;)
            if (grp->status[j] == MS_LEAK_LEAKING && *ms_hinspect_reason(grp->reasons[j])) {
                snprintf(buf, len, "%s\u2191 is leaking", ms_hpan_obj_class(g, grp->trace.obj[j], 0, cls, sizeof cls));
                return buf;
            }
    }
    return "";
}

int ms_hprof_leaks_print(FILE *fp, const ms_hgraph *g, const ms_hprof_leaks *l,
                         const char *format, char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt != MS_HPAN_TEXT && fmt != MS_HPAN_JSON) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' for leaks (text or json)", format);
        return -1;
    }
    char buf[512], why[700];
    if (fmt == MS_HPAN_TEXT) {
        size_t shown = 0;
        for (size_t k = 0; k < l->ngroups; k++)
            shown += l->groups[k].count;
        fprintf(fp, "%zu leaking object%s in %zu group%s", shown, shown == 1 ? "" : "s",
                l->ngroups, l->ngroups == 1 ? "" : "s");
        if (l->behind)
            fprintf(fp, ", %zu more behind another leaking object (listed with its group)", l->behind);
        if (l->unreachable)
            fprintf(fp, " (%zu more no longer strongly reachable: not leaks)", l->unreachable);
        fputs("\n", fp);
        fprintf(fp, "%zu application leak group%s, %zu library leak group%s (known leaks in Android or "
                    "vendor code, listed last)\n",
                l->ngroups - l->library_groups, l->ngroups - l->library_groups == 1 ? "" : "s",
                l->library_groups, l->library_groups == 1 ? "" : "s");
    } else {
        fputs("[", fp);
    }
    for (size_t k = 0; k < l->ngroups; k++) {
        const ms_hprof_leakgroup *grp = &l->groups[k];
        ms_hidx o = grp->objs[0];
        const char *cls = ms_hpan_obj_class(g, o, 0, buf, sizeof buf);
        if (fmt == MS_HPAN_TEXT) {
            if (k == 0 || (grp->matcher >= 0) != (l->groups[k - 1].matcher >= 0))
                fprintf(fp, "\n== %s\n", grp->matcher >= 0 ? "Library leaks" : "Application leaks");
            if (l->retained_known)
                fprintf(fp, "\n%zu x %s, retained %" PRIu64 " bytes: %s\n  signature %s\n",
                        grp->count, cls, grp->retained, grp->reason, grp->signature);
            else
                fprintf(fp, "\n%zu x %s, retained size not computed (--no-retained): %s\n  signature %s\n",
                        grp->count, cls, grp->reason, grp->signature);
            if (grp->matcher >= 0)
                fprintf(fp, "  library leak: %s\n  %s\n", grp->pattern, grp->description);
            fprintf(fp, "  GC root: %s\n", ms_hroot_type_name(grp->trace.root_type));
            for (size_t s = 0; s < grp->trace.len; s++) {
                ms_hidx v = grp->trace.obj[s];
                const char *name = ms_hpan_obj_class(g, v, 0, buf, sizeof buf);
                const char *r = step_reason(g, grp, s, why, sizeof why);
                char st[800];
                snprintf(st, sizeof st, "[%s%s%s]", status_key[grp->status[s]], *r ? ": " : "", r);
                if (s == 0) {
                    fprintf(fp, "  %s 0x%" PRIx64 " %s\n", name, ms_hgraph_id(g, v), st);
                    if (*grp->thread_name)
                        fprintf(fp, "     thread name: '%s'\n", grp->thread_name);
                    continue;
                }
                ms_hprof_edge_ref re = ms_hprof_edge_describe(g, grp->trace.edge[s]);
                char ref[300];
                if (grp->trace.edge[s] == MS_HPATH_LOCAL_EDGE)
                    snprintf(ref, sizeof ref, "%s", re.field);
                else if (re.field)
                    snprintf(ref, sizeof ref, "%s%s", re.is_static ? "static " : ".", re.field);
                else
                    snprintf(ref, sizeof ref, "[%" PRIu32 "]", re.index);
                fprintf(fp, "  %s %s -> %s 0x%" PRIx64 " %s\n", grp->suspect[s - 1] ? "~~" : "  ",
                        ref, name, ms_hgraph_id(g, v), st);
            }
            if (grp->nbehind)
                fprintf(fp, "  behind this group's objects, %zu more leaking object%s (no path avoids them):\n",
                        grp->nbehind, grp->nbehind == 1 ? "" : "s");
            for (size_t j = 0; j < grp->nbehind && j < 20; j++) {
                char vbuf[512];
                fprintf(fp, "    %s 0x%" PRIx64 ": %s", ms_hpan_obj_class(g, grp->behind[j], 0, buf, sizeof buf),
                        ms_hgraph_id(g, grp->behind[j]), ms_hinspect_reason(grp->behind_reason[j]));
                fprintf(fp, ", through %s 0x%" PRIx64 "\n",
                        ms_hpan_obj_class(g, grp->behind_via[j], 0, vbuf, sizeof vbuf),
                        ms_hgraph_id(g, grp->behind_via[j]));
            }
            if (grp->nbehind > 20)
                fprintf(fp, "    ... %zu more (--format json lists them all)\n", grp->nbehind - 20);
        } else {
            fputs(k ? ",\n  {\"signature\": " : "\n  {\"signature\": ", fp);
            ms_hprof_json_str(fp, grp->signature);
            fprintf(fp, ", \"kind\": \"%s\"", grp->matcher >= 0 ? "library" : "application");
            if (grp->matcher >= 0) {
                fputs(", \"pattern\": ", fp);
                ms_hprof_json_str(fp, grp->pattern);
                fputs(", \"description\": ", fp);
                ms_hprof_json_str(fp, grp->description);
            }
            fputs(", \"class\": ", fp);
            ms_hprof_json_str(fp, ms_hpan_obj_class(g, o, 1, buf, sizeof buf));
            fputs(", \"reason\": ", fp);
            ms_hprof_json_str(fp, grp->reason);
            if (l->retained_known)
                fprintf(fp, ", \"count\": %zu, \"retained_bytes\": %" PRIu64 ", \"objects\": [",
                        grp->count, grp->retained);
            else
                fprintf(fp, ", \"count\": %zu, \"retained_bytes\": null, \"objects\": [", grp->count);
            for (size_t j = 0; j < grp->count; j++)
                fprintf(fp, "%s\"0x%" PRIx64 "\"", j ? ", " : "", ms_hgraph_id(g, grp->objs[j]));
            fputs("], \"trace\": [", fp);
            for (size_t s = 0; s < grp->trace.len; s++) {
                fputs(s ? ",\n    " : "\n    ", fp);
                char extra[1024];
                int n = snprintf(extra, sizeof extra, ", \"status\": \"%s\"%s", status_key[grp->status[s]],
                                 grp->suspect[s] ? ", \"suspect\": true" : "");
                if (s == 0 && *grp->thread_name && n > 0 && (size_t)n < sizeof extra)
                    n += json_member(extra + n, sizeof extra - (size_t)n, "thread_name", grp->thread_name);
                const char *r = step_reason(g, grp, s, why, sizeof why);
                if (*r && n > 0 && (size_t)n < sizeof extra)
                    json_member(extra + n, sizeof extra - (size_t)n, "reason", r);
                ms_hprof_path_step_json(fp, g, &grp->trace, s, extra);
            }
            fputs("], \"behind\": [", fp);
            for (size_t j = 0; j < grp->nbehind; j++) {
                fprintf(fp, "%s{\"object_id\": \"0x%" PRIx64 "\", \"class\": ", j ? ",\n    " : "\n    ",
                        ms_hgraph_id(g, grp->behind[j]));
                ms_hprof_json_str(fp, ms_hpan_obj_class(g, grp->behind[j], 1, buf, sizeof buf));
                fputs(", \"reason\": ", fp);
                ms_hprof_json_str(fp, ms_hinspect_reason(grp->behind_reason[j]));
                fprintf(fp, ", \"through\": \"0x%" PRIx64 "\"}", ms_hgraph_id(g, grp->behind_via[j]));
            }
            fputs("]}", fp);
        }
    }
    if (fmt == MS_HPAN_JSON)
        fputs(l->ngroups ? "\n]\n" : "]\n", fp);
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
