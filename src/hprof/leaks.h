/* Leak finding in heap dumps, after LeakCanary's Shark: objects whose lifecycle has ended
 * (destroyed Activities, detached Fragments, objects a LeakCanary KeyedWeakReference
 * still watches) but that are still strongly reachable, with their shortest path from a
 * GC root, grouped by Shark's leak signature. Reads the graph and the dump file (for
 * primitive field values); never changes either; prints only into the given FILE. */
#ifndef MS_HPROF_LEAKS_H
#define MS_HPROF_LEAKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/dominators.h"
#include "hprof/graph.h"
#include "hprof/inspect.h"
#include "hprof/matchers.h"
#include "hprof/paths.h"

typedef struct ms_hprof_leakgroup {
    char signature[41];    /* lowercase hex SHA-1, as Shark's leak signature */
    const char *reason;    /* why the first object is leaking (static text) */
    size_t count;          /* leaking objects with this signature */
    uint64_t retained;     /* sum of their retained sizes (0 without dominators) */
    ms_hidx *objs;         /* count entries, the shortest trace's object first */
    ms_hprof_path trace;   /* from a GC root to objs[0] */
    uint8_t *status;       /* trace.len entries, MS_LEAK_* after Shark's propagation */
    uint8_t *suspect;      /* trace.len entries: reference k -> k+1 is a leak suspect */
    uint8_t *reasons;      /* trace.len entries: each object's own reason (inspect.h) */
    int matcher;           /* library leak: index of the matched reference (matchers.h);
                              -1: an application leak */
    char pattern[300];     /* library leak: the matcher's pattern text */
    const char *description; /* library leak: what is known about it */
    char thread_name[48];  /* the trace starts at a thread holding a Java local: its
                              name when the dump has it, else "" */
    size_t nbehind;        /* leaking objects every path to which goes through another
                              leaking object, the first on its shortest path one of this
                              group's objects (Shark leaves them out of its traces) */
    ms_hidx *behind;       /* nbehind entries */
    ms_hidx *behind_via;   /* for each, that object of this group */
    uint8_t *behind_reason; /* for each, why it is leaking (inspect.h reason index) */
} ms_hprof_leakgroup;

typedef struct ms_hprof_leaks {
    size_t ngroups;
    ms_hprof_leakgroup *groups; /* largest retained first, then most objects */
    size_t leaking;             /* leaking objects found, reachable or not */
    size_t behind;              /* of those, reachable only through another leaking object
                                   (listed with the group of the first one on its path) */
    size_t unreachable;         /* of those, not strongly reachable (not leaks) */
    int retained_known;         /* retained sizes computed (dominators given) */
    size_t library_groups;      /* groups that are library leaks (after the others) */
    ms_hbuild build;            /* the device, as android.os.Build says */
    uint32_t *koom_classes;     /* KOOM's rules: per class, what KOOM counts (inspect.h) */
} ms_hprof_leaks;

/* Finds the leaks of the dump (objects the inspectors of inspect.h call leaking); the
 * path search avoids the references of matchers.h (ignored ones never, library leaks
 * last), and a leak whose path needs a library-leak reference is grouped by that
 * reference's pattern, apart from application leaks (grouped by Shark's signature).
 * Finds the leaks of the dump at path whose graph is g. r (dominators of g) may be NULL:
 * retained sizes are then 0 and retained_known 0 (printed as not computed). Returns 0 with *out (free with ms_hprof_leaks_free), or -1
 * with a message (the file cannot be read again, out of memory). */
int ms_hprof_find_leaks(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                        ms_hprof_leaks *out, char *err, size_t errlen);
/* The same with KOOM's rules (inspect.h ms_hinspect_run_koom) choosing the leaking
 * objects: what Kwai's KOOM reports from a dump taken near an out-of-memory error. */
int ms_hprof_find_leaks_koom(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                             const ms_hkoom_opts *o, ms_hprof_leaks *out, char *err, size_t errlen);
void ms_hprof_leaks_free(ms_hprof_leaks *l);

/* Output of `memsight hprof leaks`. format "text" or "json". JSON: a list of groups
 * {signature, kind ("application" or "library"), class, reason, count, retained_bytes
 * (null when not computed), objects (hex ids), trace, behind (the leaking objects reachable
 * only through this group's: {object_id, class, reason, through})} plus, for library
 * leaks, pattern and description; trace is a
 * path (paths.h JSON steps) whose steps also carry status ("NOT_LEAKING", "UNKNOWN",
 * "LEAKING"), reason (why, when known) and, on the steps a suspect reference leaves from,
 * "suspect": true.
 * Returns 0, or -1 with a message. */
int ms_hprof_leaks_print(FILE *fp, const ms_hgraph *g, const ms_hprof_leaks *l,
                         const char *format, char *err, size_t errlen);

/* SHA-1 of data as 40 lowercase hex digits and a NUL (exposed for tests). */
void ms_hprof_sha1_hex(const void *data, size_t len, char out[41]);

#endif
