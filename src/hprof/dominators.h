/* Retained sizes of a heap dump: the dominator tree of the object graph under a virtual
 * root above every GC root, top retainers, and dominated size per class (as perfetto's
 * heap graph class aggregation). Reads the graph, never changes it; never prints except
 * through the *_print functions into the FILE the caller gives. */
#ifndef MS_HPROF_DOMINATORS_H
#define MS_HPROF_DOMINATORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/json_out.h"

#include "hprof/graph.h"

/* Which edges keep an object alive, for dominators and paths alike:
 *  - every edge of the graph, except a java.lang.ref.Reference.referent edge whose
 *    reference is soft, weak, phantom or a finalizer reference (graph ref_kind);
 *  - plus the implicit reference from every object to its class object (as MAT).
 * The virtual root reaches every object named by a GC root of any type. */

/* Builds the bitset of skipped edges (bit e set = edge e does not keep its target alive).
 * Returns a malloc'ed array of (g->nedge + 7) / 8 bytes, or NULL when out of memory. */
uint8_t *ms_hprof_skip_edges(const ms_hgraph *g);

/* Per object: the object index of its class object, MS_HIDX_NONE when not dumped.
 * Malloc'ed, g->nobj entries; NULL when out of memory. */
ms_hidx *ms_hprof_class_edges(const ms_hgraph *g);

typedef struct ms_hprof_domresult {
    uint32_t nobj;            /* objects of the graph; index nobj is the virtual root */
    uint32_t reachable;       /* objects reachable from the GC roots (virtual root excluded) */
    uint64_t reachable_bytes; /* their shallow bytes */
    ms_hidx *idom;     /* nobj+1 entries: immediate dominator; nobj (the virtual root) for an
                          object no single object dominates; MS_HIDX_NONE if unreachable */
    uint64_t *retained;    /* nobj+1 entries: retained bytes, 0 if unreachable */
    uint32_t *dominated;   /* nobj+1 entries: objects in its dominator subtree, itself included */
    ms_hidx *order;        /* reachable+1 entries: virtual root, then the reachable objects in
                              DFS preorder (every object after its immediate dominator) */
} ms_hprof_domresult;

/* Computes the dominator tree and retained sizes. Returns 0 with *out (free with
 * ms_hprof_domresult_free), or -1 with a message. */
int ms_hprof_dominators(const ms_hgraph *g, ms_hprof_domresult **out, char *err, size_t errlen);
void ms_hprof_domresult_free(ms_hprof_domresult *r);

/* The largest retainers, by retained size (then object index): among the objects the
 * virtual root immediately dominates (MAT's dominator tree top level; their retained
 * sizes do not overlap) when all == 0, among every reachable object otherwise. Writes up
 * to max indices into idx and returns how many. */
size_t ms_hprof_dom_top(const ms_hprof_domresult *r, int all, size_t max, ms_hidx *idx);

/* Dominated size per class: for each class index, the retained bytes and objects of its
 * instances that no other instance of the same class dominates (so nothing is counted
 * twice). Class objects count as instances of java.lang.Class. bytes and objects have
 * g->nclass entries each (objects may be NULL). The histogram's retained column.
 * Returns 0, or -1 with a message when out of memory. */
int ms_hprof_class_retained(const ms_hgraph *g, const ms_hprof_domresult *r, uint64_t *bytes,
                            uint64_t *objects, char *err, size_t errlen);

/* Output of `memsight hprof dominators`: the top retainers (by_class == 0) or the top
 * classes by dominated size (by_class != 0); top == 0 means all. format is "text",
 * "json" or "csv". JSON: a list of {object_id (hex string), class, shallow_bytes,
 * retained_bytes, dominated_objects, heap} or, by class, {class, instances,
 * shallow_bytes, retained_bytes, dominated_objects}. Returns 0, or -1 with a message
 * (unknown format, out of memory, write error). */
int ms_hprof_dominators_print(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                              size_t top, int by_class, const char *format, char *err,
                              size_t errlen);
/* Same, ranking every reachable object when all != 0 (`--all`: nested retainers appear
 * next to the objects that dominate them, so their sizes overlap). */
int ms_hprof_dominators_print_ex(FILE *fp, const ms_hgraph *g, const ms_hprof_domresult *r,
                                 size_t top, int by_class, int all, const char *format,
                                 char *err, size_t errlen);

/* ---- output helpers shared by the analysis outputs (paths, diff) ---- */
enum { MS_HPAN_TEXT = 0, MS_HPAN_JSON = 1, MS_HPAN_CSV = 2 };
/* Parses "text", "json", "csv" (NULL = text); -1 when unknown. */
int ms_hpan_format(const char *format);
/* Writes s as one CSV field (quoted when needed). */
void ms_hpan_csv_str(FILE *fp, const char *s);
/* Display name of an object's class: the class name, or "class NAME" for a class object.
 * For JSON the class of a class object is "java.lang.Class". */
const char *ms_hpan_obj_class(const ms_hgraph *g, ms_hidx i, int for_json, char *buf,
                              size_t len);

#endif
