/* `memsight hprof histogram`: per class (class loaders kept apart) instance count,
 * shallow bytes and, when the dominator tree was computed, retained bytes; sortable;
 * text, JSON or CSV. Reads the graph only; writes only to the FILE it is given. */
#ifndef MS_HPROF_HISTOGRAM_H
#define MS_HPROF_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/graph.h"

typedef struct ms_hhist_row {
    uint32_t cls; /* class index; class objects count as java.lang.Class */
    uint64_t instances, shallow, retained;
} ms_hhist_row;

typedef struct ms_hhist {
    size_t n;
    ms_hhist_row *rows; /* only classes with at least one instance */
    int have_retained;
    uint64_t total_instances, total_shallow;
} ms_hhist;

enum ms_hhist_sort {
    MS_HHIST_SORT_SHALLOW = 0,
    MS_HHIST_SORT_RETAINED,
    MS_HHIST_SORT_INSTANCES,
    MS_HHIST_SORT_NAME,
};

/* Builds the histogram. class_retained (g->nclass entries, may be NULL) gives the
 * retained bytes per class. Returns 0, or -1 with a message. */
int ms_hhist_build(const ms_hgraph *g, const uint64_t *class_retained, ms_hhist *out,
                   char *err, size_t errlen);
/* Parses "shallow", "retained", "instances"/"count", "name"; -1 when unknown. */
int ms_hhist_sort_key(const char *s);
/* Sorts descending by the key (ascending for name); ties by name, then class index. */
void ms_hhist_sort(ms_hhist *h, const ms_hgraph *g, int key);
/* Prints the first top rows (0 = all). format: "text", "json", "csv". JSON: a list of
 * {class, loader, instances, shallow_bytes, retained_bytes} (retained_bytes null when not
 * computed). Returns 0, or -1 with a message. */
int ms_hhist_print(FILE *fp, const ms_hgraph *g, const ms_hhist *h, size_t top,
                   const char *format, char *err, size_t errlen);
void ms_hhist_free(ms_hhist *h);

#endif
