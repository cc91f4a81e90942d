/* Immediate dominators by semi-NCA (Georgiadis 2005; the variant LLVM uses) over flat
 * arrays in DFS preorder numbers. Iterative throughout: never recurse here, a heap graph
 * can be a linked list millions of objects long. */
#include "hprof/domtree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"
#include "hprof/bigmem.h"

/* ---- the graph as seen by the algorithm: g plus an optional virtual root ---- */

typedef struct view {
    const ms_csr *g;
    uint32_t n;              /* g->n, or g->n + 1 with a virtual root */
    const uint32_t *roots;   /* successors of the virtual root (vertex g->n) */
    uint64_t nroots;
    int virt;
} view;

/* Successor range of v: entries [*b, *e) of *a, then *x when it is not MS_DOM_NONE (the
 * extra edge, numbered *e); *skip is the bitset to honour (or NULL). */
static inline void succ_range(const view *w, uint32_t v, const uint32_t **a, uint64_t *b,
                              uint64_t *e, const uint8_t **skip, uint32_t *x)
{
    if (w->virt && v == w->g->n) {
        *a = w->roots;
        *b = 0;
        *e = w->nroots;
        *skip = NULL;
        *x = MS_DOM_NONE;
    } else {
        *a = w->g->adj;
        *b = w->g->off[v];
        *e = w->g->off[v + 1];
        *skip = w->g->skip;
        uint32_t t = MS_DOM_NONE;
        if (w->g->extra_key && w->g->extra_key[v] < w->g->extra_ntab)
            t = w->g->extra_tab[w->g->extra_key[v]];
        *x = t < w->g->n && t != v ? t : MS_DOM_NONE;
    }
}

/* The target of edge i (b <= i <= e) of the range, or MS_DOM_NONE when it is ignored. */
static inline uint32_t edge_target(const view *w, const uint32_t *a, const uint8_t *skip,
                                   uint64_t i, uint64_t e, uint32_t x)
{
    if (i == e)
        return x;
    if (skip && (skip[i >> 3] >> (i & 7)) & 1)
        return MS_DOM_NONE;
    uint32_t u = a[i];
    return u < w->g->n ? u : MS_DOM_NONE;
}

#define RANGE_END(e, x) ((e) + ((x) != MS_DOM_NONE))

static int check_csr(const ms_csr *g, char *err, size_t errlen)
{
    if (!g || (g->n && (!g->off || (g->off[g->n] && !g->adj)))) {
        ms_hprof_set_err(err, errlen, "dominators: graph arrays missing");
        return -1;
    }
    if (g->n >= UINT32_MAX - 1) {
        ms_hprof_set_err(err, errlen, "dominators: too many vertices (%u)", g->n);
        return -1;
    }
    for (uint32_t v = 0; v < g->n; v++)
        if (g->off[v] > g->off[v + 1]) {
            ms_hprof_set_err(err, errlen, "dominators: edge offsets decrease at vertex %u", v);
            return -1;
        }
    return 0;
}

/* A stack that grows on demand: compressed paths are short in practice, so it stays
 * small where an array of one entry per vertex would cost 4 bytes per object. */
typedef struct gstack {
    uint32_t *v;
    size_t cap;
} gstack;

static int gstack_grow(gstack *st)
{
    size_t cap = st->cap ? st->cap * 2 : 4096;
    uint32_t *v = realloc(st->v, cap * sizeof *v);
    if (!v)
        return -1;
    st->v = v;
    st->cap = cap;
    return 0;
}

/* Path compression on the forest of linked vertices (numbers >= last_linked), as in
 * LLVM's SemiNCAInfo::eval, with an explicit stack. best[x] holds the smallest semi on
 * the compressed path from x (the semi of LLVM's label, kept as a value so that no semi
 * array is read here). Returns the smallest semi on the path from v to the root of its
 * tree in the forest, MS_DOM_NONE when the stack cannot grow. */
static inline uint32_t eval(uint32_t v, uint32_t last_linked, uint32_t *anc, uint32_t *best,
                            gstack *st)
{
    if (anc[v] < last_linked)
        return best[v];
    size_t sp = 0;
    uint32_t x = v;
    uint32_t *stack = st->v;
    do {
        if (sp == st->cap) {
            if (gstack_grow(st) < 0)
                return MS_DOM_NONE;
            stack = st->v;
        }
        stack[sp++] = x;
        x = anc[x];
    } while (anc[x] >= last_linked);
    uint32_t p = x, pbest = best[x];
    do {
        x = stack[--sp];
        anc[x] = anc[p];
        if (pbest < best[x])
            best[x] = pbest;
        else
            pbest = best[x];
        p = x;
    } while (sp);
    return best[x];
}

static int compute(const view *w, uint32_t root, ms_domtree *dt, char *err, size_t errlen)
{
    const uint32_t n = w->n;
    memset(dt, 0, sizeof *dt);
    uint32_t *num = NULL, *vert = NULL, *parent = NULL, *stk = NULL, *anc = NULL, *best = NULL,
             *semi = NULL, *padj = NULL, *poff = NULL;
    uint64_t *cur = NULL;

    num = ms_hbig_malloc((size_t)n * sizeof *num);
    vert = ms_hbig_malloc((size_t)n * sizeof *vert);
    parent = ms_hbig_malloc((size_t)n * sizeof *parent);
    stk = ms_hbig_malloc((size_t)n * sizeof *stk);
    cur = ms_hbig_malloc((size_t)n * sizeof *cur);
    if (!num || !vert || !parent || !stk || !cur)
        goto oom;
    memset(num, 0xff, (size_t)n * sizeof *num);

    /* 1. Depth-first search from root: preorder numbers and DFS-tree parents. */
    uint32_t N = 0;
    uint64_t nedges = 0; /* edges between reachable vertices, for the predecessor lists */
    {
        const uint32_t *a;
        uint64_t b, e;
        const uint8_t *skip;
        uint32_t x;
        num[root] = N;
        vert[N] = root;
        parent[N] = 0;
        N++;
        size_t sp = 0;
        stk[0] = root;
        succ_range(w, root, &a, &b, &e, &skip, &x);
        cur[0] = b;
        for (;;) {
            uint32_t v = stk[sp];
            succ_range(w, v, &a, &b, &e, &skip, &x);
            uint64_t i = cur[sp];
            uint32_t u = MS_DOM_NONE;
            while (i < RANGE_END(e, x)) {
                uint32_t t = edge_target(w, a, skip, i++, e, x);
                if (t == MS_DOM_NONE)
                    continue;
                nedges++;
                if (num[t] == MS_DOM_NONE) {
                    u = t;
                    break;
                }
            }
            cur[sp] = i;
            if (u != MS_DOM_NONE) {
                num[u] = N;
                vert[N] = u;
                parent[N] = num[v];
                N++;
                stk[++sp] = u;
                succ_range(w, u, &a, &b, &e, &skip, &x);
                cur[sp] = b;
            } else if (sp == 0) {
                break;
            } else {
                sp--;
            }
        }
    }
    free(cur);
    cur = NULL;
    free(stk);
    stk = NULL;
    if (nedges >= UINT32_MAX) {
        ms_hprof_set_err(err, errlen, "dominators: too many edges (%llu)", (unsigned long long)nedges);
        goto fail;
    }

    /* 2. Predecessor lists in preorder numbers (CSR). A successor of the root has the
     * root as semidominator and immediate dominator whatever its other predecessors, so
     * only the root's edge is kept for it: heap graphs point millions of objects at a
     * few class objects that are GC roots themselves. */
    uint8_t *rootkid = ms_hbig_calloc((size_t)N / 8 + 1, 1);
    poff = ms_hbig_calloc((size_t)N + 1, sizeof *poff);
    if (!rootkid || !poff) {
        free(rootkid);
        goto oom;
    }
    {
        const uint32_t *a;
        uint64_t b, e;
        const uint8_t *skip;
        uint32_t x;
        succ_range(w, root, &a, &b, &e, &skip, &x);
        for (uint64_t i = b; i < RANGE_END(e, x); i++) {
            uint32_t t = edge_target(w, a, skip, i, e, x);
            if (t != MS_DOM_NONE)
                rootkid[num[t] >> 3] |= (uint8_t)(1u << (num[t] & 7));
        }
    }
#define KEEP(k, t) ((k) == 0 || !((rootkid[num[t] >> 3] >> (num[t] & 7)) & 1))
    for (uint32_t k = 0; k < N; k++) {
        const uint32_t *a;
        uint64_t b, e;
        const uint8_t *skip;
        uint32_t x;
        succ_range(w, vert[k], &a, &b, &e, &skip, &x);
        for (uint64_t i = b; i < RANGE_END(e, x); i++) {
            uint32_t t = edge_target(w, a, skip, i, e, x);
            if (t != MS_DOM_NONE && KEEP(k, t))
                poff[num[t] + 1]++;
        }
    }
    for (uint32_t k = 0; k < N; k++)
        poff[k + 1] += poff[k];
    padj = ms_hbig_malloc(((size_t)poff[N] + 1) * sizeof *padj);
    if (!padj) {
        free(rootkid);
        goto oom;
    }
    /* Fill using poff[k] as a cursor, then shift back. */
    for (uint32_t k = 0; k < N; k++) {
        const uint32_t *a;
        uint64_t b, e;
        const uint8_t *skip;
        uint32_t x;
        succ_range(w, vert[k], &a, &b, &e, &skip, &x);
        for (uint64_t i = b; i < RANGE_END(e, x); i++) {
            uint32_t t = edge_target(w, a, skip, i, e, x);
            if (t != MS_DOM_NONE && KEEP(k, t))
                padj[poff[num[t]]++] = k;
        }
    }
#undef KEEP
    free(rootkid);
    for (uint32_t k = N; k > 0; k--)
        poff[k] = poff[k - 1];
    poff[0] = 0;
    free(num); /* not needed again: the result is built from vert[] and parent[] */
    num = NULL;

    /* 3. Semidominators, in reverse preorder, with link-eval on the ancestor forest.
     * The parent array becomes the ancestor array (anc[k] is still parent[k] when k is
     * reached: path compression only rewrites vertices already done). What step 4 needs
     * of k, semi and parent, goes into k's finished predecessor list: every vertex but
     * the root has a predecessor; semi in the first entry, parent in the second; with a
     * single predecessor, that one is the DFS parent and the semi, or k is a successor of
     * the root, whose immediate dominator is the root whatever its parent. So no semi
     * and no parent array are alive here, where this computation's memory peaks. */
    best = ms_hbig_malloc((size_t)N * sizeof *best);
    if (!best)
        goto oom;
    anc = parent;
    parent = NULL;
    for (uint32_t k = 0; k < N; k++)
        best[k] = k;
    gstack st = {NULL, 0};
    for (uint32_t k = N - 1; k >= 1; k--) {
        uint32_t s = anc[k], par = anc[k];
        for (uint32_t i = poff[k]; i < poff[k + 1]; i++) {
            uint32_t u = eval(padj[i], k + 1, anc, best, &st);
            if (u == MS_DOM_NONE) {
                free(st.v);
                goto oom;
            }
            if (u < s)
                s = u;
        }
        best[k] = s;
        if (poff[k] == poff[k + 1]) {
            free(st.v);
            ms_hprof_set_err(err, errlen, "dominators: internal: vertex without predecessors");
            goto fail;
        }
        padj[poff[k]] = s;
        if (poff[k + 1] - poff[k] >= 2)
            padj[poff[k] + 1] = par;
    }
    free(st.v);
    free(best);
    best = NULL;
    semi = ms_hbig_malloc((size_t)N * sizeof *semi);
    if (!semi)
        goto oom;
    parent = anc;
    anc = NULL;
    semi[0] = 0;
    parent[0] = 0;
    for (uint32_t k = 1; k < N; k++) {
        semi[k] = padj[poff[k]];
        parent[k] = padj[poff[k] + (poff[k + 1] - poff[k] >= 2)];
    }
    free(padj);
    padj = NULL;
    free(poff);
    poff = NULL;

    /* 4. Immediate dominators: idom(k) is the deepest dominator-tree ancestor of the DFS
     * parent whose number is <= semi(k) (ancestors have smaller numbers). Walking idoms one
     * by one is quadratic on some graphs (a chain whose every vertex has a side path from
     * near the root), so the tree built so far carries skew-binary jump pointers (Myers):
     * each query takes O(log depth) steps. parent[] becomes idom[]. */
    uint32_t *depth = ms_hbig_malloc((size_t)N * sizeof *depth);
    uint32_t *jump = ms_hbig_malloc((size_t)N * sizeof *jump);
    if (!depth || !jump) {
        free(depth);
        free(jump);
        goto oom;
    }
    depth[0] = 0;
    jump[0] = 0;
    for (uint32_t k = 1; k < N; k++) {
        uint32_t c = parent[k], sk = semi[k];
        while (c > sk)
            c = jump[c] > sk ? jump[c] : parent[c];
        parent[k] = c;
        depth[k] = depth[c] + 1;
        uint32_t j = jump[c];
        jump[k] = depth[c] - depth[j] == depth[j] - depth[jump[j]] ? jump[j] : c;
    }
    free(depth);
    free(jump);
    free(semi);
    semi = NULL;

    /* 5. Back to vertex ids. */
    num = ms_hbig_malloc((size_t)n * sizeof *num);
    if (!num)
        goto oom;
    memset(num, 0xff, (size_t)n * sizeof *num);
    for (uint32_t k = 0; k < N; k++)
        num[vert[k]] = vert[parent[k]];
    free(parent);
    uint32_t *order = realloc(vert, (size_t)(N ? N : 1) * sizeof *vert);
    dt->n = n;
    dt->root = root;
    dt->reachable = N;
    dt->idom = num;
    dt->order = order ? order : vert;
    return 0;

oom:
    ms_hprof_set_err(err, errlen, "dominators: out of memory for %u vertices", n);
fail:
    free(num);
    free(vert);
    free(parent);
    free(stk);
    free(cur);
    free(anc);
    free(best);
    free(semi);
    free(padj);
    free(poff);
    return -1;
}

int ms_domtree_compute(const ms_csr *g, uint32_t root, ms_domtree *dt, char *err, size_t errlen)
{
    if (!dt || check_csr(g, err, errlen) < 0)
        return -1;
    if (root >= g->n) {
        ms_hprof_set_err(err, errlen, "dominators: root %u outside the graph (%u vertices)", root, g->n);
        return -1;
    }
    view w = {.g = g, .n = g->n, .roots = NULL, .nroots = 0, .virt = 0};
    return compute(&w, root, dt, err, errlen);
}

int ms_domtree_compute_virtual(const ms_csr *g, const uint32_t *roots, size_t nroots,
                               ms_domtree *dt, char *err, size_t errlen)
{
    if (!dt || check_csr(g, err, errlen) < 0)
        return -1;
    if (nroots && !roots) {
        ms_hprof_set_err(err, errlen, "dominators: root list missing");
        return -1;
    }
    view w = {.g = g, .n = g->n + 1, .roots = roots, .nroots = nroots, .virt = 1};
    return compute(&w, g->n, dt, err, errlen);
}

void ms_domtree_free(ms_domtree *dt)
{
    if (!dt)
        return;
    free(dt->idom);
    free(dt->order);
    memset(dt, 0, sizeof *dt);
}
