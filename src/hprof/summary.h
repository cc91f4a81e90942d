/* `memsight hprof summary`: what a heap dump holds (header, counts of classes,
 * instances, arrays, roots by type, heaps, shallow bytes, problems) as text or JSON.
 * Reads the graph only; writes only to the FILE it is given. */
#ifndef MS_HPROF_SUMMARY_H
#define MS_HPROF_SUMMARY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/graph.h"

typedef struct ms_hsummary {
    uint64_t classes, instances, obj_arrays, prim_arrays;
    uint64_t shallow;        /* all objects, in the graph's size model */
    uint64_t roots[256];     /* GC root sub-records by tag */
    uint64_t heap_objects[256], heap_shallow[256]; /* by g->heaps index */
} ms_hsummary;

void ms_hsummary_compute(const ms_hgraph *g, ms_hsummary *s);

/* format: "text" or "json". path is shown as given. Returns 0, or -1 with a message. */
int ms_hsummary_print(FILE *fp, const char *path, const ms_hgraph *g, const ms_hsummary *s,
                      const char *format, char *err, size_t errlen);

#endif
