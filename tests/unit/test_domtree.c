/* Unit tests of the semi-NCA dominator tree (src/hprof/domtree.c) on plain graphs: the
 * Lengauer-Tarjan paper graph, random graphs checked against a naive set-based data-flow
 * computation written here, a virtual root, skipped edges, and very deep graphs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hprof/domtree.h"

/* ---- a small edge-list builder ---- */

typedef struct graph {
    uint32_t n;
    size_t m, cap;
    uint32_t *src, *dst;
    uint32_t *off;
    uint32_t *adj;
    uint8_t *skip;
    uint8_t *skipflag; /* per edge in insertion order: 1 skipped, 2 held in extra[] */
    uint32_t *extra;   /* optional extra successor per vertex */
    uint32_t *key;     /* identity keys into extra */
} graph;

static void g_init(graph *g, uint32_t n)
{
    memset(g, 0, sizeof *g);
    g->n = n;
}

static void g_edge2(graph *g, uint32_t a, uint32_t b, int skipped)
{
    if (g->m == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        g->src = realloc(g->src, g->cap * sizeof *g->src);
        g->dst = realloc(g->dst, g->cap * sizeof *g->dst);
        g->skipflag = realloc(g->skipflag, g->cap);
        assert_non_null(g->src);
        assert_non_null(g->dst);
        assert_non_null(g->skipflag);
    }
    g->src[g->m] = a;
    g->dst[g->m] = b;
    g->skipflag[g->m] = (uint8_t)skipped;
    g->m++;
}

static void g_edge(graph *g, uint32_t a, uint32_t b) { g_edge2(g, a, b, 0); }

/* The extra successor of a (one per vertex), mirrored as a plain edge for the reference. */
static void g_extra(graph *g, uint32_t a, uint32_t b)
{
    if (!g->extra) {
        g->extra = malloc((size_t)g->n * sizeof *g->extra);
        for (uint32_t v = 0; v < g->n; v++)
            g->extra[v] = MS_DOM_NONE;
    }
    if (g->extra[a] != MS_DOM_NONE)
        return;
    g->extra[a] = b;
    if (b < g->n)
        g_edge2(g, a, b, 2);
}

/* Builds CSR (stable: edges of a vertex keep insertion order). */
static ms_csr g_csr(graph *g)
{
    g->off = calloc((size_t)g->n + 1, sizeof *g->off);
    g->adj = malloc((g->m + 1) * sizeof *g->adj);
    g->skip = calloc(g->m / 8 + 1, 1);
    assert_non_null(g->off);
    for (size_t i = 0; i < g->m; i++)
        if (g->skipflag[i] != 2)
            g->off[g->src[i] + 1]++;
    for (uint32_t v = 0; v < g->n; v++)
        g->off[v + 1] += g->off[v];
    uint32_t *pos = malloc(((size_t)g->n + 1) * sizeof *pos);
    memcpy(pos, g->off, ((size_t)g->n + 1) * sizeof *pos);
    for (size_t i = 0; i < g->m; i++) {
        if (g->skipflag[i] == 2)
            continue;
        uint64_t e = pos[g->src[i]]++;
        g->adj[e] = g->dst[i];
        if (g->skipflag[i])
            g->skip[e >> 3] |= (uint8_t)(1u << (e & 7));
    }
    free(pos);
    ms_csr c = {.n = g->n, .off = g->off, .adj = g->adj, .skip = g->skip};
    if (g->extra) {
        /* one table entry per vertex, the vertex its own key (a class table in real use) */
        g->key = malloc((size_t)g->n * sizeof *g->key);
        for (uint32_t v = 0; v < g->n; v++)
            g->key[v] = v;
        c.extra_key = g->key;
        c.extra_tab = g->extra;
        c.extra_ntab = g->n;
    }
    return c;
}

static void g_free(graph *g)
{
    free(g->src);
    free(g->dst);
    free(g->off);
    free(g->adj);
    free(g->skip);
    free(g->skipflag);
    free(g->extra);
    free(g->key);
}

/* ---- independent reference: Dom(v) = {v} U intersection of Dom(p) over predecessors p,
 * iterated to a fixpoint over bitsets; idom(v) is the strict dominator of v that every
 * other strict dominator dominates (the one with the most dominators itself). ---- */

static void naive_idom(const graph *g, uint32_t root, uint32_t *idom)
{
    uint32_t n = g->n;
    size_t words = (n + 63) / 64;
    uint64_t *dom = malloc((size_t)n * words * sizeof *dom);
    uint8_t *reach = calloc(n, 1);
    /* reachability by repeated relaxation (no recursion, no queue needed for small n) */
    reach[root] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < g->m; i++)
            if (g->skipflag[i] != 1 && g->dst[i] < n && reach[g->src[i]] && !reach[g->dst[i]]) {
                reach[g->dst[i]] = 1;
                changed = 1;
            }
    }
    for (uint32_t v = 0; v < n; v++)
        for (size_t w = 0; w < words; w++)
            dom[(size_t)v * words + w] = v == root ? 0 : ~0ull;
    dom[(size_t)root * words + root / 64] |= 1ull << (root % 64);
    uint64_t *tmp = malloc(words * sizeof *tmp);
    for (int changed = 1; changed;) {
        changed = 0;
        for (uint32_t v = 0; v < n; v++) {
            if (v == root || !reach[v])
                continue;
            for (size_t w = 0; w < words; w++)
                tmp[w] = ~0ull;
            for (size_t i = 0; i < g->m; i++)
                if (g->skipflag[i] != 1 && g->dst[i] == v && reach[g->src[i]])
                    for (size_t w = 0; w < words; w++)
                        tmp[w] &= dom[(size_t)g->src[i] * words + w];
            tmp[v / 64] |= 1ull << (v % 64);
            if (memcmp(tmp, &dom[(size_t)v * words], words * sizeof *tmp)) {
                memcpy(&dom[(size_t)v * words], tmp, words * sizeof *tmp);
                changed = 1;
            }
        }
    }
    for (uint32_t v = 0; v < n; v++) {
        if (!reach[v]) {
            idom[v] = MS_DOM_NONE;
            continue;
        }
        if (v == root) {
            idom[v] = root;
            continue;
        }
        uint32_t best = MS_DOM_NONE, bestcount = 0;
        for (uint32_t d = 0; d < n; d++) {
            if (d == v || !((dom[(size_t)v * words + d / 64] >> (d % 64)) & 1))
                continue;
            uint32_t c = 0;
            for (size_t w = 0; w < words; w++)
                c += (uint32_t)__builtin_popcountll(dom[(size_t)d * words + w]);
            if (best == MS_DOM_NONE || c > bestcount) {
                best = d;
                bestcount = c;
            }
        }
        idom[v] = best;
    }
    free(tmp);
    free(dom);
    free(reach);
}

static void check_order(const ms_domtree *dt)
{
    /* every reachable vertex appears once, after its idom */
    uint32_t *pos = malloc((size_t)dt->n * sizeof *pos);
    for (uint32_t v = 0; v < dt->n; v++)
        pos[v] = MS_DOM_NONE;
    assert_int_equal(dt->order[0], dt->root);
    for (uint32_t k = 0; k < dt->reachable; k++) {
        assert_true(dt->order[k] < dt->n);
        assert_int_equal(pos[dt->order[k]], MS_DOM_NONE);
        pos[dt->order[k]] = k;
    }
    for (uint32_t v = 0; v < dt->n; v++) {
        if (dt->idom[v] == MS_DOM_NONE) {
            assert_int_equal(pos[v], MS_DOM_NONE);
            continue;
        }
        assert_true(pos[v] != MS_DOM_NONE);
        if (v != dt->root)
            assert_true(pos[dt->idom[v]] < pos[v]);
    }
    free(pos);
}

/* ---- tests ---- */

enum { R, A, B, C, D, E, F, G, H, I, J, K, L, NLT };

static void build_lt(graph *g)
{
    g_init(g, NLT);
    uint32_t e[][2] = {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E}, {C, F},
                       {C, G}, {D, L}, {E, H}, {F, I}, {G, I}, {G, J}, {H, E}, {H, K},
                       {I, K}, {J, I}, {K, I}, {K, R}, {L, H}};
    for (size_t i = 0; i < sizeof e / sizeof e[0]; i++)
        g_edge(g, e[i][0], e[i][1]);
}

static void test_lengauer_tarjan_paper(void **state)
{
    (void)state;
    graph g;
    build_lt(&g);
    ms_csr c = g_csr(&g);
    ms_domtree dt;
    char err[256];
    assert_int_equal(ms_domtree_compute(&c, R, &dt, err, sizeof err), 0);
    uint32_t want[NLT] = {[R] = R, [A] = R, [B] = R, [C] = R, [D] = R, [E] = R, [F] = C,
                          [G] = C, [H] = R, [I] = R, [J] = G, [K] = R, [L] = D};
    assert_int_equal(dt.reachable, NLT);
    for (uint32_t v = 0; v < NLT; v++)
        assert_int_equal(dt.idom[v], want[v]);
    check_order(&dt);
    ms_domtree_free(&dt);
    g_free(&g);
}

static void test_virtual_root_and_skip(void **state)
{
    (void)state;
    /* 0->2, 1->2, 2->3, 1->4 (skipped), 5 unreachable, 6 only via a skipped edge from 3 */
    graph g;
    g_init(&g, 7);
    g_edge(&g, 0, 2);
    g_edge(&g, 1, 2);
    g_edge(&g, 2, 3);
    g_edge2(&g, 1, 4, 1);
    g_edge(&g, 5, 3);
    g_edge2(&g, 3, 6, 1);
    g_edge(&g, 3, 1000); /* dangling: ignored */
    g_extra(&g, 0, 5);   /* the extra edge makes 5 reachable, dominated by 0 */
    g_extra(&g, 2, 9999);
    ms_csr c = g_csr(&g);
    uint32_t roots[] = {0, 1, 1, 99};
    ms_domtree dt;
    char err[256];
    assert_int_equal(ms_domtree_compute_virtual(&c, roots, 4, &dt, err, sizeof err), 0);
    assert_int_equal(dt.n, 8);
    assert_int_equal(dt.root, 7);
    assert_int_equal(dt.reachable, 6);
    assert_int_equal(dt.idom[7], 7);
    assert_int_equal(dt.idom[0], 7);
    assert_int_equal(dt.idom[1], 7);
    assert_int_equal(dt.idom[2], 7); /* two roots reach it: dominated by neither */
    assert_int_equal(dt.idom[3], 7); /* via 2 and via 0 -> 5 */
    assert_int_equal(dt.idom[4], MS_DOM_NONE);
    assert_int_equal(dt.idom[5], 0);
    assert_int_equal(dt.idom[6], MS_DOM_NONE);
    check_order(&dt);
    ms_domtree_free(&dt);
    g_free(&g);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t bound)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % bound);
}

static void test_random_against_naive(void **state)
{
    (void)state;
    char err[256];
    for (int round = 0; round < 400; round++) {
        uint32_t n = 2 + rnd(60);
        graph g;
        g_init(&g, n);
        uint32_t m = rnd(n * 3 + 1);
        /* some structure: a random spanning-ish chain plus random edges */
        if (round % 2)
            for (uint32_t v = 1; v < n; v++)
                g_edge(&g, rnd(v), v);
        for (uint32_t i = 0; i < m; i++)
            g_edge2(&g, rnd(n), rnd(n), round % 3 == 0 && rnd(4) == 0);
        if (round % 5 == 1)
            for (uint32_t i = 0; i < n / 2; i++)
                g_extra(&g, rnd(n), rnd(n + 2)); /* some out of range: ignored */
        ms_csr c = g_csr(&g);
        uint32_t root = rnd(n);
        ms_domtree dt;
        assert_int_equal(ms_domtree_compute(&c, root, &dt, err, sizeof err), 0);
        uint32_t *want = malloc(n * sizeof *want);
        naive_idom(&g, root, want);
        uint32_t reach = 0;
        for (uint32_t v = 0; v < n; v++) {
            assert_int_equal(dt.idom[v], want[v]);
            reach += want[v] != MS_DOM_NONE;
        }
        assert_int_equal(dt.reachable, reach);
        check_order(&dt);
        free(want);
        ms_domtree_free(&dt);
        g_free(&g);
    }
}

static void test_deep_chain_and_ladder(void **state)
{
    (void)state;
    /* 2 million vertices in a chain (recursion would overflow the stack), plus a ladder
     * where every vertex is also reached from the root: idom is then the root. */
    const uint32_t n = 2000000;
    graph g;
    g_init(&g, n);
    for (uint32_t v = 0; v + 1 < n; v++)
        g_edge(&g, v, v + 1);
    ms_csr c = g_csr(&g);
    ms_domtree dt;
    char err[256];
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), 0);
    assert_int_equal(dt.reachable, n);
    for (uint32_t v = 1; v < n; v++)
        if (dt.idom[v] != v - 1)
            fail_msg("chain: idom[%u] = %u", v, dt.idom[v]);
    ms_domtree_free(&dt);
    g_free(&g);

    g_init(&g, n);
    for (uint32_t v = 1; v + 1 < n; v++)
        g_edge(&g, v, v + 1);
    for (uint32_t v = 1; v < n; v++)
        g_edge(&g, 0, n - v); /* root reaches the tail first: long DFS chain backwards */
    c = g_csr(&g);
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), 0);
    for (uint32_t v = 1; v < n; v++)
        if (dt.idom[v] != 0)
            fail_msg("ladder: idom[%u] = %u", v, dt.idom[v]);
    ms_domtree_free(&dt);
    g_free(&g);

    /* A chain whose tail points back into it: evaluating those back edges walks (and
     * compresses) ancestor paths hundreds of thousands long. Dominators stay the chain. */
    const uint32_t m = 300000;
    g_init(&g, m);
    for (uint32_t v = 0; v + 1 < m; v++)
        g_edge(&g, v, v + 1);
    for (uint32_t v = 1; v < m; v += 997)
        g_edge(&g, m - 1, v);
    c = g_csr(&g);
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), 0);
    for (uint32_t v = 1; v < m; v++)
        if (dt.idom[v] != v - 1)
            fail_msg("chain with back edges: idom[%u] = %u", v, dt.idom[v]);
    ms_domtree_free(&dt);
    g_free(&g);

    /* A "broom": a chain c_0 -> ... -> c_{h-1} (each dominating the next) where c_i also
     * points to t_i, and t_0 -> t_1 -> ... -> t_{h-1}. Every t_i is dominated by c_0 only:
     * finding that by walking the deep dominator chain one step at a time costs h^2/2
     * steps; the jump pointers make it h log h. */
    const uint32_t h = 200000;
    g_init(&g, 2 * h);
    for (uint32_t v = 0; v < h; v++) {
        if (v + 1 < h)
            g_edge(&g, v, v + 1);
        g_edge(&g, v, h + v);
        if (v + 1 < h)
            g_edge(&g, h + v, h + v + 1);
    }
    c = g_csr(&g);
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), 0);
    for (uint32_t v = 1; v < h; v++)
        if (dt.idom[v] != v - 1 || dt.idom[h + v] != 0)
            fail_msg("broom: idom[c_%u] = %u, idom[t_%u] = %u", v, dt.idom[v], v, dt.idom[h + v]);
    ms_domtree_free(&dt);
    g_free(&g);
}

static void test_bad_input(void **state)
{
    (void)state;
    uint32_t off[3] = {0, 2, 1}; /* decreasing */
    uint32_t adj[2] = {1, 0};
    ms_csr c = {.n = 2, .off = off, .adj = adj};
    ms_domtree dt;
    char err[256] = "";
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), -1);
    assert_non_null(strstr(err, "decrease"));
    off[2] = 2;
    assert_int_equal(ms_domtree_compute(&c, 5, &dt, err, sizeof err), -1);
    assert_non_null(strstr(err, "root"));
    assert_int_equal(ms_domtree_compute(&c, 0, &dt, err, sizeof err), 0);
    assert_int_equal(dt.idom[1], 0);
    assert_int_equal(dt.reachable, 2);
    ms_domtree_free(&dt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengauer_tarjan_paper),
        cmocka_unit_test(test_virtual_root_and_skip),
        cmocka_unit_test(test_random_against_naive),
        cmocka_unit_test(test_deep_chain_and_ladder),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
