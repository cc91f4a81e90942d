/* Shortest path from a GC root to an object of a heap dump, over the edges that keep
 * objects alive (dominators.h: referents of soft/weak/phantom/finalizer references are
 * not followed). Reads the graph, never changes it; prints only into the given FILE. */
#ifndef MS_HPROF_PATHS_H
#define MS_HPROF_PATHS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/dominators.h"
#include "hprof/graph.h"

#define MS_HPATH_CLASS_EDGE UINT64_MAX /* the implicit reference from an object to its class */
/* A Java local of the thread one step before: a Java frame root shown, as Shark shows it,
 * as a reference "<Java Local>" from the thread's object (leak traces only). */
#define MS_HPATH_LOCAL_EDGE (UINT64_MAX - 1)

typedef struct ms_hprof_path {
    size_t len;        /* objects on the path: obj[0] is held by a GC root, obj[len-1] is
                          the target; 0 when the target is not strongly reachable */
    ms_hidx *obj;
    uint64_t *edge;    /* edge[k] (k >= 1): the graph edge from obj[k-1] to obj[k], or
                          MS_HPATH_CLASS_EDGE or MS_HPATH_LOCAL_EDGE; edge[0] is unused */
    uint8_t root_type; /* HPROF tag of the GC root holding obj[0] */
} ms_hprof_path;

/* Breadth-first search from the GC roots to target: first from the roots that keep
 * objects alive for a reason a user can act on, then, only for what those do not reach,
 * from the low-priority roots (VM internal, interned string, finalizing, debugger,
 * reference cleanup, unreachable, unknown), as Shark orders them. Among several roots of
 * obj[0] the type reported is the first of sticky class, JNI global, JNI local, then
 * file order. Returns 0 with the path (len 0 when the target is unreachable; free with
 * ms_hprof_path_free), or -1 with a message. */
int ms_hprof_path_to(const ms_hgraph *g, ms_hidx target, ms_hprof_path *out, char *err,
                     size_t errlen);
void ms_hprof_path_free(ms_hprof_path *p);

/* The breadth-first search of ms_hprof_path_to as a tree, for many targets at once:
 * *parent_out (malloc'ed, g->nobj + 1 entries) holds each reached object's parent on its
 * shortest path, MS_HPATH_ROOT for an object a GC root holds, MS_HIDX_NONE if not
 * reached. The search stops early once target is reached (MS_HIDX_NONE: never). Objects
 * whose bit is set in leaves (a bitset over object indices, may be NULL) are reached but
 * not gone through, so no path passes through one (Shark's rule for leaking objects).
 * With pedge_out, *pedge_out (malloc'ed, same size) records which edge reached each
 * object (for a root object: the type of its preferred root), so that paths are rebuilt
 * without scanning big arrays' edges or the root table again.
 * Returns 0, or -1 with a message. */
#define MS_HPATH_ROOT (MS_HIDX_NONE - 1)
int ms_hprof_path_tree(const ms_hgraph *g, ms_hidx target, const uint8_t *leaves,
                       ms_hidx **parent_out, uint32_t **pedge_out, char *err, size_t errlen);
/* Preferences of the leak search (Shark's reference matchers), each a bitset or NULL:
 * ignore_edge / low_edge over edges, ignore_root / low_root over g->roots. An ignored edge
 * or root is never followed. Low-priority edges and roots are followed only once nothing
 * else is left to visit: an object reached through one waits in a second queue, and is
 * taken out of it when an ordinary reference reaches it first, so a path that avoids them
 * is found whenever one exists, however long. Low-priority root types (above) are
 * low-priority roots here too. */
typedef struct ms_hprof_path_prefs {
    const uint8_t *ignore_edge, *low_edge;
    const uint8_t *ignore_root, *low_root;
} ms_hprof_path_prefs;
/* ms_hprof_path_tree with preferences (prefs NULL: the same search). For a root object,
 * *pedge_out holds the type of the root it was reached by. */
int ms_hprof_path_tree_ex(const ms_hgraph *g, ms_hidx target, const uint8_t *leaves,
                          const ms_hprof_path_prefs *prefs, ms_hidx **parent_out,
                          uint32_t **pedge_out, char *err, size_t errlen);

/* The path to target from a tree of ms_hprof_path_tree (len 0 if it was not reached);
 * pedge may be NULL. Returns 0, or -1 with a message. */
int ms_hprof_path_from_tree(const ms_hgraph *g, const ms_hidx *parent, const uint32_t *pedge,
                            ms_hidx target, ms_hprof_path *out, char *err, size_t errlen);

/* Object index of an id written in hex ("0x7f00a0", "7F00A0"). Returns 0, or -1 with a
 * message when the text is not an id or no object has it. */
int ms_hprof_parse_object_id(const ms_hgraph *g, const char *text, ms_hidx *out, char *err,
                             size_t errlen);

/* Among the objects whose class is named name (source form, any class loader; internal
 * names like "java/lang/String" or "[B" are accepted too), the reachable one with the
 * largest retained size. Returns 0, or -1 with a message (no such class, no reachable
 * instance). */
int ms_hprof_largest_instance(const ms_hgraph *g, const ms_hprof_domresult *r,
                              const char *name, ms_hidx *out, char *err, size_t errlen);

/* Output of `memsight hprof path`. format: "text", "json" or "csv". JSON: a list of steps
 * from the root, each {object_id (hex string), class, shallow_bytes} plus, on the first,
 * root_type (a lower_snake_case key), and on the others how it was reached: field (a
 * field name; with "static": true for a static field; "<class>", "<super>",
 * "<classloader>", "<signers>", "<protection domain>" for class links) or index (an array
 * element). An unreachable target gives []. Returns 0, or -1 with a message. */
int ms_hprof_path_print(FILE *fp, const ms_hgraph *g, const ms_hprof_path *p,
                        const char *format, char *err, size_t errlen);

/* How a path step was reached through edge e (or MS_HPATH_CLASS_EDGE): a field name
 * ("<class>", "<super>"... for class links), or for an array element field == NULL and
 * index. */
typedef struct ms_hprof_edge_ref {
    const char *field;
    uint32_t index;
    int is_static;
} ms_hprof_edge_ref;
ms_hprof_edge_ref ms_hprof_edge_describe(const ms_hgraph *g, uint64_t e);
/* Writes step k of p as the JSON object documented above (no separator); extra (JSON
 * members with a leading comma, or NULL) goes before the closing brace. */
void ms_hprof_path_step_json(FILE *fp, const ms_hgraph *g, const ms_hprof_path *p, size_t k,
                             const char *extra);

#endif
