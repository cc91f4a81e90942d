/* Per-class comparison of two heap dumps of the same program: change in instance count,
 * shallow and retained (dominated) bytes, ranked by growth. Classes are matched by name
 * (source form), all class loaders together, since ids differ between dumps. Reads the
 * graphs, never changes them; prints only into the given FILE. */
#ifndef MS_HPROF_DIFF_H
#define MS_HPROF_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/dominators.h"
#include "hprof/graph.h"

typedef struct ms_hprof_diff_row {
    const char *name;     /* points into one of the graphs' strings */
    uint64_t instances[2]; /* [0] in A, [1] in B */
    uint64_t shallow[2];
    uint64_t retained[2]; /* dominated size per class (ms_hprof_class_retained) */
} ms_hprof_diff_row;

typedef struct ms_hprof_diffresult {
    size_t n;
    ms_hprof_diff_row *rows; /* ranked: retained growth (shallow growth without retained
                                sizes), then shallow growth, then instance growth, then name */
    int have_retained;
} ms_hprof_diffresult;

/* Compares A and B. ra and rb (dominator results) may both be NULL: retained sizes are
 * then left out. The graphs must outlive the result (names point into them). Returns 0,
 * or -1 with a message. */
int ms_hprof_diff(const ms_hgraph *a, const ms_hprof_domresult *ra, const ms_hgraph *b,
                  const ms_hprof_domresult *rb, ms_hprof_diffresult *out, char *err, size_t errlen);
void ms_hprof_diff_free(ms_hprof_diffresult *d);

/* Output of `memsight hprof diff`: rows where something changed (all rows when all != 0),
 * the first top of them (0 = every one). JSON: a list of {class, instances_a,
 * instances_b, instances_delta, shallow_bytes_a, shallow_bytes_b, shallow_bytes_delta,
 * retained_bytes_a, retained_bytes_b, retained_bytes_delta} (retained_* only when
 * computed). Returns 0, or -1 with a message. */
int ms_hprof_diff_print(FILE *fp, const ms_hprof_diffresult *d, size_t top, int all,
                        const char *format, char *err, size_t errlen);

#endif
