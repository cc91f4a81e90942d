/* Immediate dominators of a directed graph given as flat CSR arrays (semi-NCA, iterative).
 * Knows nothing of HPROF: vertices are 0..n-1, edges are successor lists. It never
 * recurses (heap graphs are millions of vertices deep) and never allocates per vertex. */
#ifndef MS_HPROF_DOMTREE_H
#define MS_HPROF_DOMTREE_H

#include <stddef.h>
#include <stdint.h>

#define MS_DOM_NONE UINT32_MAX /* idom of a vertex the root does not reach */

/* A graph in compressed sparse row form: the successors of v are
 * adj[off[v]] .. adj[off[v+1]-1]. Entries of adj that are >= n are ignored (a reader
 * may keep dangling references as an out-of-range index). Edge e is ignored too when
 * skip is not NULL and bit e of skip is set (skip[e >> 3] & (1 << (e & 7))). When
 * extra_key is not NULL, v has one more successor after its list,
 * extra_tab[extra_key[v]] (ignored when the key is >= extra_ntab, or the successor is >= n
 * or v itself): a heap graph's implicit reference from an object to its class, given by
 * the object's class index and the class table, without copying anything per object. */
typedef struct ms_csr {
    uint32_t n;
    const uint32_t *off;       /* n+1 entries, non-decreasing (checked) */
    const uint32_t *adj;       /* off[n] entries */
    const uint8_t *skip;       /* optional bitset over edge indexes */
    const uint32_t *extra_key; /* optional, n entries */
    const uint32_t *extra_tab; /* extra_ntab entries */
    uint32_t extra_ntab;
} ms_csr;

typedef struct ms_domtree {
    uint32_t n;         /* vertices, the virtual root included when there is one */
    uint32_t root;
    uint32_t reachable; /* vertices reached from root, root included */
    uint32_t *idom;     /* n entries: idom[root] == root, MS_DOM_NONE if unreachable */
    uint32_t *order;    /* reachable entries: the vertices in DFS preorder, order[0] == root;
                           every vertex comes after its immediate dominator */
} ms_domtree;

/* Computes the dominator tree of g rooted at vertex root (< g->n). Returns 0 and fills
 * *dt (free with ms_domtree_free), or -1 with a message (bad graph, out of memory). */
int ms_domtree_compute(const ms_csr *g, uint32_t root, ms_domtree *dt, char *err, size_t errlen);

/* Same, with a virtual root: an extra vertex numbered g->n whose successors are
 * roots[0..nroots-1] (out-of-range entries ignored, duplicates allowed). dt->n is then
 * g->n + 1 and dt->root is g->n. */
int ms_domtree_compute_virtual(const ms_csr *g, const uint32_t *roots, size_t nroots,
                               ms_domtree *dt, char *err, size_t errlen);

void ms_domtree_free(ms_domtree *dt);

#endif
