/* Shortest paths from GC roots: a two-phase breadth-first search (ordinary roots, then
 * low-priority ones) over flat arrays, then the path rebuilt from parent links and
 * printed. Never follows a skipped referent edge; never modifies the graph. */
#include "hprof/paths.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"
#include "hprof/names.h"

/* Roots that say little about why an object is alive (Shark's low-priority roots). */
static int low_priority_root(uint8_t type)
{
    switch (type) {
    case 0xFF: /* unknown */
    case 0x89: /* interned string */
    case 0x8A: /* finalizing */
    case 0x8B: /* debugger */
    case 0x8C: /* reference cleanup */
    case 0x8D: /* VM internal */
    case 0x90: /* unreachable */
        return 1;
    default:
        return 0;
    }
}

static int root_rank(uint8_t type)
{
    switch (type) {
    case 0x05: return 0; /* sticky class */
    case 0x01: return 1; /* JNI global */
    case 0x02: return 2; /* JNI local */
    default: return low_priority_root(type) ? 4 : 3;
    }
}

static inline int skipped(const uint8_t *skip, uint64_t e)
{
    return (skip[e >> 3] >> (e & 7)) & 1;
}

static inline ms_hidx class_obj_of(const ms_hgraph *g, ms_hidx v)
{
    uint32_t c = g->obj_class[v];
    ms_hidx x = c < g->nclass ? g->classes[c].obj : MS_HIDX_NONE;
    return x == v ? MS_HIDX_NONE : x;
}

void ms_hprof_path_free(ms_hprof_path *p)
{
    if (!p)
        return;
    free(p->obj);
    free(p->edge);
    memset(p, 0, sizeof *p);
}

/* pedge values besides an edge's rank among its source's edges */
#define PEDGE_CLASS UINT32_MAX       /* the implicit object -> class reference */
#define PEDGE_SCAN (UINT32_MAX - 1)  /* rank too large to keep: find it again */

int ms_hprof_path_tree(const ms_hgraph *g, ms_hidx target, const uint8_t *leaves,
                       ms_hidx **parent_out, uint32_t **pedge_out, char *err, size_t errlen)
{
    *parent_out = NULL;
    if (pedge_out)
        *pedge_out = NULL;
    uint8_t *skip = ms_hprof_skip_edges(g);
    ms_hidx *parent = malloc(((size_t)g->nobj + 1) * sizeof *parent);
    ms_hidx *queue = malloc(((size_t)g->nobj + 1) * sizeof *queue);
    uint32_t *pedge = pedge_out ? malloc(((size_t)g->nobj + 1) * sizeof *pedge) : NULL;
    if (!skip || !parent || !queue || (pedge_out && !pedge)) {
        free(skip);
        free(parent);
        free(queue);
        free(pedge);
        ms_hprof_set_err(err, errlen, "path: out of memory for %u objects", g->nobj);
        return -1;
    }
    memset(parent, 0xff, ((size_t)g->nobj + 1) * sizeof *parent);
    size_t head = 0, tail = 0;
    int found = 0;
    for (int phase = 0; phase < 2 && !found; phase++) {
        for (uint32_t k = 0; k < g->nroot; k++) {
            ms_hidx o = g->roots[k].obj;
            uint8_t type = g->roots[k].type;
            if (o >= g->nobj || low_priority_root(type) != phase)
                continue;
            if (parent[o] == MS_HPATH_ROOT && pedge && root_rank(type) < root_rank((uint8_t)pedge[o]))
                pedge[o] = type; /* a root object's pedge is the type of its best root */
            if (parent[o] != MS_HIDX_NONE)
                continue;
            parent[o] = MS_HPATH_ROOT;
            if (pedge)
                pedge[o] = type;
            queue[tail++] = o;
        }
        if (target < g->nobj && parent[target] != MS_HIDX_NONE)
            found = 1;
        while (head < tail && !found) {
            ms_hidx v = queue[head++];
            if (leaves && (leaves[v >> 3] >> (v & 7)) & 1)
                continue; /* reached, but the search does not go through it */
            uint64_t b = g->edge_off[v], e = g->edge_off[v + 1];
            for (uint64_t i = b; i <= e; i++) {
                ms_hidx u;
                if (i == e)
                    u = class_obj_of(g, v);
                else if (skipped(skip, i))
                    continue;
                else
                    u = g->edge_dst[i];
                if (u >= g->nobj || parent[u] != MS_HIDX_NONE)
                    continue;
                parent[u] = v;
                if (pedge)
                    pedge[u] = i == e ? PEDGE_CLASS : i - b < PEDGE_SCAN ? (uint32_t)(i - b) : PEDGE_SCAN;
                queue[tail++] = u;
                if (u == target) {
                    found = 1;
                    break;
                }
            }
        }
    }
    free(queue);
    free(skip);
    *parent_out = parent;
    if (pedge_out)
        *pedge_out = pedge;
    return 0;
}

static inline int bit(const uint8_t *set, uint64_t i)
{
    return set && (set[i >> 3] >> (i & 7)) & 1;
}

/* Shark's prioritising search: a FIFO of ordinary work and a FIFO of what was reached
 * only through a low-priority root or edge; the second is drained once the first is
 * empty, and from then on everything found joins it. An object waiting in the second
 * queue that an ordinary reference reaches is re-parented and moved to the first. */
int ms_hprof_path_tree_ex(const ms_hgraph *g, ms_hidx target, const uint8_t *leaves,
                          const ms_hprof_path_prefs *prefs, ms_hidx **parent_out,
                          uint32_t **pedge_out, char *err, size_t errlen)
{
    if (!prefs)
        return ms_hprof_path_tree(g, target, leaves, parent_out, pedge_out, err, errlen);
    *parent_out = NULL;
    if (pedge_out)
        *pedge_out = NULL;
    size_t n = (size_t)g->nobj + 1;
    uint8_t *skip = ms_hprof_skip_edges(g);
    ms_hidx *parent = malloc(n * sizeof *parent);
    ms_hidx *q1 = malloc(n * sizeof *q1), *q2 = malloc(n * sizeof *q2);
    uint32_t *pedge = malloc(n * sizeof *pedge);
    uint8_t *low = calloc(n / 8 + 1, 1);  /* reached, but only through low priority so far */
    uint8_t *done = calloc(n / 8 + 1, 1); /* its references were followed */
    if (!skip || !parent || !q1 || !q2 || !pedge || !low || !done) {
        free(skip);
        free(parent);
        free(q1);
        free(q2);
        free(pedge);
        free(low);
        free(done);
        ms_hprof_set_err(err, errlen, "path: out of memory for %u objects", g->nobj);
        return -1;
    }
    memset(parent, 0xff, n * sizeof *parent);
    size_t h1 = 0, t1 = 0, h2 = 0, t2 = 0;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < g->nroot; k++) {
            ms_hidx o = g->roots[k].obj;
            uint8_t type = g->roots[k].type;
            if (o >= g->nobj || bit(prefs->ignore_root, k))
                continue;
            int is_low = low_priority_root(type) || bit(prefs->low_root, k);
            if (is_low != pass)
                continue;
            if (parent[o] == MS_HPATH_ROOT) {
                if (!pass && root_rank(type) < root_rank((uint8_t)pedge[o]))
                    pedge[o] = type;
                continue;
            }
            parent[o] = MS_HPATH_ROOT;
            pedge[o] = type;
            if (pass) {
                low[o >> 3] |= (uint8_t)(1u << (o & 7));
                q2[t2++] = o;
            } else {
                q1[t1++] = o;
            }
        }
    int found = target < g->nobj && parent[target] != MS_HIDX_NONE && !bit(low, target);
    int late = 0; /* draining the second queue */
    while (!found) {
        ms_hidx v;
        if (h1 < t1) {
            v = q1[h1++];
        } else if (h2 < t2) {
            late = 1;
            v = q2[h2++];
        } else {
            break;
        }
        if (bit(done, v))
            continue; /* moved to the first queue and already followed */
        done[v >> 3] |= (uint8_t)(1u << (v & 7));
        if (late)
            low[v >> 3] &= (uint8_t)~(1u << (v & 7));
        if (bit(leaves, v))
            continue;
        uint64_t b = g->edge_off[v], e = g->edge_off[v + 1];
        for (uint64_t i = b; i <= e; i++) {
            ms_hidx u;
            if (i == e)
                u = class_obj_of(g, v);
            else if (skipped(skip, i) || bit(prefs->ignore_edge, i))
                continue;
            else
                u = g->edge_dst[i];
            if (u >= g->nobj)
                continue;
            int via_low = late || (i < e && bit(prefs->low_edge, i));
            if (parent[u] != MS_HIDX_NONE) {
                /* an ordinary reference to an object waiting in the second queue */
                if (via_low || !bit(low, u) || bit(done, u))
                    continue;
                low[u >> 3] &= (uint8_t)~(1u << (u & 7));
            } else if (via_low) {
                low[u >> 3] |= (uint8_t)(1u << (u & 7));
            }
            parent[u] = v;
            pedge[u] = i == e ? PEDGE_CLASS : i - b < PEDGE_SCAN ? (uint32_t)(i - b) : PEDGE_SCAN;
            if (via_low)
                q2[t2++] = u;
            else
                q1[t1++] = u;
            if (u == target && (late || !via_low)) {
                found = 1;
                break;
            }
        }
    }
    free(q1);
    free(q2);
    free(skip);
    free(low);
    free(done);
    *parent_out = parent;
    if (pedge_out)
        *pedge_out = pedge;
    else
        free(pedge);
    return 0;
}

int ms_hprof_path_from_tree(const ms_hgraph *g, const ms_hidx *parent, const uint32_t *pedge,
                            ms_hidx target, ms_hprof_path *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (target >= g->nobj || parent[target] == MS_HIDX_NONE)
        return 0;
    size_t len = 1;
    for (ms_hidx v = target; parent[v] != MS_HPATH_ROOT; v = parent[v])
        len++;
    out->obj = malloc(len * sizeof *out->obj);
    out->edge = malloc(len * sizeof *out->edge);
    if (!out->obj || !out->edge) {
        ms_hprof_path_free(out);
        ms_hprof_set_err(err, errlen, "path: out of memory");
        return -1;
    }
    out->len = len;
    size_t k = len;
    for (ms_hidx v = target;; v = parent[v]) {
        out->obj[--k] = v;
        if (parent[v] == MS_HPATH_ROOT)
            break;
    }
    out->edge[0] = 0;
    for (k = 1; k < len; k++) {
        ms_hidx p = out->obj[k - 1], c = out->obj[k];
        uint64_t edge = MS_HPATH_CLASS_EDGE;
        if (pedge && pedge[c] != PEDGE_SCAN) {
            if (pedge[c] != PEDGE_CLASS)
                edge = g->edge_off[p] + pedge[c];
            out->edge[k] = edge;
            continue;
        }
        for (uint64_t i = g->edge_off[p]; i < g->edge_off[p + 1]; i++) {
            uint32_t label = g->edge_label[i];
            if (g->edge_dst[i] != c)
                continue;
            /* a skipped referent never made the parent link */
            if (ms_hedge_kind_of(label) == MS_HEDGE_REFERENT) {
                uint32_t cl = g->obj_class[p];
                uint8_t rk = cl < g->nclass ? g->classes[cl].ref_kind : MS_HREF_NONE;
                if (rk != MS_HREF_NONE && rk != MS_HREF_STRONG)
                    continue;
            }
            edge = i;
            break;
        }
        out->edge[k] = edge;
    }
    if (pedge) {
        out->root_type = (uint8_t)pedge[out->obj[0]];
        return 0;
    }
    int best = 99;
    for (uint32_t r = 0; r < g->nroot; r++)
        if (g->roots[r].obj == out->obj[0] && root_rank(g->roots[r].type) < best) {
            best = root_rank(g->roots[r].type);
            out->root_type = g->roots[r].type;
        }
    return 0;
}

int ms_hprof_path_to(const ms_hgraph *g, ms_hidx target, ms_hprof_path *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (target >= g->nobj) {
        ms_hprof_set_err(err, errlen, "path: object index %u outside the dump", target);
        return -1;
    }
    ms_hidx *parent;
    uint32_t *pedge;
    if (ms_hprof_path_tree(g, target, NULL, &parent, &pedge, err, errlen) < 0)
        return -1;
    int rc = ms_hprof_path_from_tree(g, parent, pedge, target, out, err, errlen);
    free(parent);
    free(pedge);
    return rc;
}

int ms_hprof_parse_object_id(const ms_hgraph *g, const char *text, ms_hidx *out, char *err,
                             size_t errlen)
{
    const char *p = text;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    size_t n = strlen(p);
    if (n == 0 || n > 16 || strspn(p, "0123456789abcdefABCDEF") != n) {
        ms_hprof_set_err(err, errlen, "'%s' is not an object id (hexadecimal, e.g. 0x7f001230)", text);
        return -1;
    }
    errno = 0;
    uint64_t id = strtoull(p, NULL, 16);
    ms_hidx i = ms_hgraph_find(g, id);
    if (i == MS_HIDX_NONE) {
        ms_hprof_set_err(err, errlen, "no object with id 0x%" PRIx64 " in the dump", id);
        return -1;
    }
    *out = i;
    return 0;
}

int ms_hprof_largest_instance(const ms_hgraph *g, const ms_hprof_domresult *r,
                              const char *name, ms_hidx *out, char *err, size_t errlen)
{
    char norm[1024];
    ms_hprof_class_name_normalize(name, strlen(name), norm, sizeof norm);
    uint8_t *want = calloc((size_t)g->nclass + 1, 1);
    if (!want) {
        ms_hprof_set_err(err, errlen, "path: out of memory");
        return -1;
    }
    int any = 0;
    for (uint32_t c = 0; c < g->nclass; c++)
        if (!strcmp(ms_hgraph_class_name(g, c), name) ||
            !strcmp(ms_hgraph_class_name(g, c), norm)) {
            want[c] = 1;
            any = 1;
        }
    if (!any) {
        free(want);
        ms_hprof_set_err(err, errlen, "no class named '%s' in the dump", name);
        return -1;
    }
    ms_hidx best = MS_HIDX_NONE;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (c >= g->nclass || !want[c] || r->idom[i] == MS_HIDX_NONE)
            continue;
        if (best == MS_HIDX_NONE || r->retained[i] > r->retained[best])
            best = i;
    }
    free(want);
    if (best == MS_HIDX_NONE) {
        ms_hprof_set_err(err, errlen, "no strongly reachable instance of '%s'", name);
        return -1;
    }
    *out = best;
    return 0;
}

/* ---- output ---- */

typedef ms_hprof_edge_ref step_ref;

ms_hprof_edge_ref ms_hprof_edge_describe(const ms_hgraph *g, uint64_t e)
{
    step_ref s = {NULL, 0, 0};
    if (e == MS_HPATH_CLASS_EDGE) {
        s.field = "<class>";
        return s;
    }
    if (e == MS_HPATH_LOCAL_EDGE) {
        s.field = "<Java Local>";
        return s;
    }
    uint32_t label = g->edge_label[e];
    uint32_t v = ms_hedge_value_of(label);
    switch (ms_hedge_kind_of(label)) {
    case MS_HEDGE_FIELD:
    case MS_HEDGE_REFERENT:
        s.field = v < g->nfield ? g->strs + g->fields[v].name : "?";
        break;
    case MS_HEDGE_ELEMENT:
        s.index = v;
        break;
    case MS_HEDGE_STATIC:
        s.field = v < g->nstatic ? g->strs + g->statics[v].name : "?";
        s.is_static = 1;
        break;
    case MS_HEDGE_SUPER: s.field = "<super>"; break;
    case MS_HEDGE_LOADER: s.field = "<classloader>"; break;
    case MS_HEDGE_SIGNERS: s.field = "<signers>"; break;
    case MS_HEDGE_PROTECTION: s.field = "<protection domain>"; break;
    default: s.field = "?"; break;
    }
    return s;
}

void ms_hprof_path_step_json(FILE *fp, const ms_hgraph *g, const ms_hprof_path *p, size_t k,
                             const char *extra)
{
    char buf[512];
    ms_hidx v = p->obj[k];
    fprintf(fp, "{\"object_id\": \"0x%" PRIx64 "\", \"class\": ", ms_hgraph_id(g, v));
    ms_hprof_json_str(fp, ms_hpan_obj_class(g, v, 1, buf, sizeof buf));
    if (g->obj_kind[v] == MS_HOBJ_CLASS) {
        fputs(", \"class_object_of\": ", fp);
        ms_hprof_json_str(fp, ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, v)));
    }
    fprintf(fp, ", \"shallow_bytes\": %" PRIu32, g->obj_size[v]);
    if (k == 0) {
        fputs(", \"root_type\": ", fp);
        ms_hprof_json_str(fp, ms_hroot_type_key(p->root_type));
        fprintf(fp, "%s}", extra ? extra : "");
        return;
    }
    ms_hprof_edge_ref s = ms_hprof_edge_describe(g, p->edge[k]);
    if (s.field) {
        fputs(", \"field\": ", fp);
        ms_hprof_json_str(fp, s.field);
        if (s.is_static)
            fputs(", \"static\": true", fp);
    } else {
        fprintf(fp, ", \"index\": %" PRIu32, s.index);
    }
    fprintf(fp, "%s}", extra ? extra : "");
}

int ms_hprof_path_print(FILE *fp, const ms_hgraph *g, const ms_hprof_path *p,
                        const char *format, char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt < 0) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' (text, json or csv)", format);
        return -1;
    }
    char buf[512];
    if (fmt == MS_HPAN_TEXT && p->len == 0)
        fputs("no path: the object is not strongly reachable from any GC root\n", fp);
    else if (fmt == MS_HPAN_TEXT)
        fprintf(fp, "GC root: %s\n", ms_hroot_type_name(p->root_type));
    else if (fmt == MS_HPAN_JSON)
        fputs("[", fp);
    else
        fputs("step,object_id,class,shallow_bytes,field,index,root_type\n", fp);
    for (size_t k = 0; k < p->len; k++) {
        ms_hidx v = p->obj[k];
        step_ref s = k ? ms_hprof_edge_describe(g, p->edge[k]) : (step_ref){NULL, 0, 0};
        if (fmt == MS_HPAN_TEXT) {
            if (k == 0)
                fprintf(fp, "  %s  0x%" PRIx64 "  (%" PRIu32 " bytes)\n",
                        ms_hpan_obj_class(g, v, 0, buf, sizeof buf), ms_hgraph_id(g, v), g->obj_size[v]);
            else if (s.field)
                fprintf(fp, "  %*s%s%s -> %s  0x%" PRIx64 "  (%" PRIu32 " bytes)\n", (int)(k < 40 ? k : 40), "",
                        s.is_static ? "static " : ".", s.field,
                        ms_hpan_obj_class(g, v, 0, buf, sizeof buf), ms_hgraph_id(g, v), g->obj_size[v]);
            else
                fprintf(fp, "  %*s[%" PRIu32 "] -> %s  0x%" PRIx64 "  (%" PRIu32 " bytes)\n",
                        (int)(k < 40 ? k : 40), "", s.index,
                        ms_hpan_obj_class(g, v, 0, buf, sizeof buf), ms_hgraph_id(g, v), g->obj_size[v]);
        } else if (fmt == MS_HPAN_JSON) {
            fputs(k ? ",\n  " : "\n  ", fp);
            ms_hprof_path_step_json(fp, g, p, k, NULL);
        } else {
            fprintf(fp, "%zu,0x%" PRIx64 ",", k, ms_hgraph_id(g, v));
            ms_hpan_csv_str(fp, ms_hpan_obj_class(g, v, 0, buf, sizeof buf));
            fprintf(fp, ",%" PRIu32 ",", g->obj_size[v]);
            if (k && s.field)
                ms_hpan_csv_str(fp, s.field);
            fputc(',', fp);
            if (k && !s.field)
                fprintf(fp, "%" PRIu32, s.index);
            fputc(',', fp);
            if (k == 0)
                fputs(ms_hroot_type_key(p->root_type), fp);
            fputc('\n', fp);
        }
    }
    if (fmt == MS_HPAN_JSON)
        fputs(p->len ? "\n]\n" : "]\n", fp);
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
