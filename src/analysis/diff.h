/* Per-stack comparison of two snapshots (A older, B newer): change in live bytes and
 * blocks, sorted by growth, written as text, JSON, differential collapsed stacks or a
 * differential flame graph. Tools only; never prints on its own. */
#ifndef MS_ANALYSIS_DIFF_H
#define MS_ANALYSIS_DIFF_H

#include <stdio.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"

typedef struct ms_diff_row {
    long ia, ib;          /* index in a / b aggregate, -1 when absent there */
    const char *key;      /* frames joined with ';', root first */
    ms_snap_counters a, b;
} ms_diff_row;

typedef struct ms_diff {
    ms_agg *a, *b;
    ms_diff_row *rows;
    size_t nrows;
    const char *name_a, *name_b; /* file names, for headers */
    int64_t dt_ns;               /* snapshot_ns(B) - snapshot_ns(A), 0 when unknown */
} ms_diff;

ms_diff *ms_diff_build(const ms_snapshot *a, ms_symbolizer *sa, const ms_snapshot *b,
                       ms_symbolizer *sb, ms_agg_key by, char *err, size_t errlen);
/* Rows by change of the metric, largest growth first. */
void ms_diff_sort(ms_diff *d, ms_metric m);
void ms_diff_free(ms_diff *d);

int64_t ms_diff_delta(const ms_diff_row *r, ms_metric m);

int ms_diff_write_text(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                       size_t errlen);
int ms_diff_write_json(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                       size_t errlen);
/* "frame;frame value_a value_b" per stack: the input of difffolded-style tools. */
int ms_diff_write_collapsed(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                            size_t errlen);
/* Differential flame graph: widths by B, red where the stack grew, blue where it shrank. */
int ms_diff_write_svg(const ms_diff *d, const ms_export_opts *o, FILE *out, char *err,
                      size_t errlen);

#endif
