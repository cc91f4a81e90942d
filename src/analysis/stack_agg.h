/* Shared helpers of the exporters, diff, trend and merge: resolving a pc to display
 * frames, aggregating a snapshot's stacks by symbolized frames (or by module offsets)
 * and building the call tree a flame graph draws. Tools only; never prints. */
#ifndef MS_ANALYSIS_STACK_AGG_H
#define MS_ANALYSIS_STACK_AGG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/export.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

/* How stacks of different snapshots (or different pcs of one snapshot) are judged the
 * same. SYMBOLS: by the resolved function names (inlined frames included), falling back
 * to module+offset for unresolved pcs. PCS: by module path and offset of every pc.
 * LINES: by function name and source location ("worker mt.c:12"), so that two call
 * sites in one function stay apart; frames without a line as with SYMBOLS. */
/* FOLDED: what flame-graph tools read in collapsed stacks: function names, the innermost
 * frame (the allocation site) with its "file:line" so that two call sites of one function
 * stay apart, inlined frames marked "_[i]" (flamegraph.pl's inline annotation). */
typedef enum ms_agg_key {
    MS_AGG_BY_SYMBOLS = 0,
    MS_AGG_BY_PCS = 1,
    MS_AGG_BY_LINES = 2,
    MS_AGG_FOLDED = 3,
} ms_agg_key;

/* Resolves one recorded pc of a stack into source frames (innermost first) through the
 * symbolizer (may be NULL), then through names the snapshot itself carries (imported
 * dumps), filling module/module_offset from the snapshot's modules. Returns >= 1. */
int ms_agg_resolve(const ms_snapshot *s, ms_symbolizer *sym, uint64_t pc, int is_return_address,
                   ms_frame *out, int max_out);
/* The module holding pc, or NULL (linear search over segments, then module ranges). */
const ms_module *ms_agg_module_for_pc(const ms_snapshot *s, uint64_t pc);
/* Meta value or NULL (does not need the reader). */
const char *ms_agg_meta(const ms_snapshot *s, const char *key);
/* Whether the recorded pc at index i of stack st is a return address. */
int ms_agg_is_return_address(const ms_stack *st, uint32_t i);

/* The meta key prefix under which an importer stores a function name for a pc
 * ("sym.<hex pc>" -> "function"), used when no symbol file is available. */
#define MS_AGG_SYM_PREFIX "sym."
/* Importers call this once their names are in: it moves the "sym." entries to the front
 * of the meta list, sorted by pc, behind a "sym.index" = count entry, so each lookup is
 * a binary search instead of a scan. Returns 0 or -1 (out of memory; meta unchanged). */
int ms_agg_index_names(ms_snapshot *s);

typedef struct ms_agg_stack {
    uint32_t nframes;
    uint32_t *frames; /* indexes into ms_agg.names, root (outermost) first */
    char *key;        /* frames joined with ';' (root first), plus kind prefix */
    ms_snap_counters c;
    uint8_t kind;
    uint32_t nsrc;    /* how many recorded stacks were merged into this one */
    uint32_t first_id;
    uint64_t peak_bytes; /* live at the process peak (ms_agg_build, when the snapshot has it) */
    uint64_t temps;      /* temporary allocations (ms_agg_build) */
} ms_agg_stack;

typedef struct ms_agg {
    char **names; /* interned frame names */
    size_t nnames, capnames;
    uint32_t *name_hash; /* open addressing over names: index+1, 0 empty */
    size_t name_hash_cap;

    ms_agg_stack *stacks;
    size_t nstacks, capstacks;
    uint32_t *stack_hash; /* open addressing over stacks by key: index+1 */
    size_t stack_hash_cap;

    ms_snap_counters total;
} ms_agg;

/* A frame's name in an aggregate keyed by `by` (innermost: the stack's first frame);
 * malloc'ed, NULL on out of memory. */
char *ms_agg_frame_name(const ms_frame *f, ms_agg_key by, int innermost);
/* The root frame a kind's stacks get ("[mmap]", "[thread stacks]"), NULL for the heap. */
const char *ms_agg_kind_root(uint8_t kind);

/* Empty aggregate (for building by hand, e.g. in diff and tests). */
ms_agg *ms_agg_new(void);
/* Aggregates every stack of s. NULL + message on out of memory. */
ms_agg *ms_agg_build(const ms_snapshot *s, ms_symbolizer *sym, ms_agg_key by, char *err,
                     size_t errlen);
/* Adds one stack given as names root-first; merges with an equal key. Returns its
 * index or -1 (out of memory). */
long ms_agg_add(ms_agg *a, const char *const *names_root_first, uint32_t n, uint8_t kind,
                const ms_snap_counters *c, uint32_t src_id);
/* Interns a string in a's name table; returns its index or -1 (out of memory). */
long ms_agg_intern(ms_agg *a, const char *name);
/* Index of the stack with this key, or -1. */
long ms_agg_find(const ms_agg *a, const char *key);
void ms_agg_free(ms_agg *a);

uint64_t ms_metric_value(const ms_snap_counters *c, ms_metric m);
const char *ms_metric_name(ms_metric m); /* "live_bytes"... */
const char *ms_metric_unit(ms_metric m); /* "bytes" or "count" */
int ms_metric_parse(const char *text, ms_metric *m); /* 0 or -1 */
/* Stack indexes sorted by the metric, largest first (ties by key); caller frees. */
size_t *ms_agg_order(const ms_agg *a, ms_metric m);

/* Adds counters. */
void ms_counters_add(ms_snap_counters *dst, const ms_snap_counters *src);

/* Formats n bytes as "12.3 MiB" into buf. */
const char *ms_fmt_bytes(uint64_t n, char *buf, size_t len);
const char *ms_fmt_sbytes(int64_t n, char *buf, size_t len); /* with a sign */

/* Writes s escaped for XML/HTML text and attributes. */
void ms_xml_escape(FILE *out, const char *s);
/* Writes s as a JSON string literal (with quotes); safe inside <script> too. */
void ms_json_string(FILE *out, const char *s);

/* ---- flame graph (flamegraph.c) ------------------------------------------------- */

/* Writes a flame graph of a (and, when base is not NULL, a differential one: widths by
 * a, colours by the change from base to a). embedded: an <svg> element for an HTML
 * page instead of a standalone SVG document. */
typedef struct ms_flame_opts {
    ms_metric metric;
    const char *title;
    const char *subtitle;
    int embedded;
    int width; /* pixels, 0 = 1200 */
} ms_flame_opts;
int ms_flame_write(const ms_agg *a, const ms_agg *base, const ms_flame_opts *o, FILE *out,
                   char *err, size_t errlen);

#endif
