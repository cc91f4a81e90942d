/* Growth of every stack across a series of snapshots of one program: live bytes per
 * stack at each snapshot, and a ranking of leak suspects by steady growth (a stack that
 * grows in every interval ranks above one that jumps once). Tools only. */
#ifndef MS_ANALYSIS_TREND_H
#define MS_ANALYSIS_TREND_H

#include <stdio.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"

typedef struct ms_trend_stack {
    long id;            /* index in ms_trend.keys (frames and key) */
    uint64_t *bytes;    /* live bytes at each snapshot */
    uint64_t *blocks;   /* live blocks at each snapshot */
    uint32_t grew, shrank; /* intervals in which live bytes rose / fell */
    int64_t growth;     /* last - first */
    double slope;       /* bytes per second (least squares); per snapshot when no times */
    double steadiness;  /* (grew - shrank) / intervals, clipped to [0, 1] */
    double share;       /* growth / sum of the positive growths */
    double score;       /* steadiness^2 * (0.5 + 0.5 * share), 0 when growth <= 0 */
} ms_trend_stack;

typedef struct ms_trend {
    size_t nsnap;
    const char **paths;   /* borrowed from the snapshots */
    double *t_s;          /* seconds since the first snapshot (index when unknown) */
    int have_times;
    uint64_t *total_bytes; /* per snapshot */
    uint64_t *total_blocks;
    ms_agg *keys;         /* union of every snapshot's stacks (counters of the last) */
    ms_trend_stack *stacks; /* one per keys->stacks[i] */
    size_t nstacks;
    size_t *rank;         /* stack indexes by score (suspects first) */
    size_t nsuspects;     /* leading entries of rank with score > 0 */
    int64_t total_growth;
    /* the process peak the agent recorded (PEAK of the newest snapshot that has one),
     * placed on the time axis when the snapshots carry times */
    int has_peak;
    uint64_t peak_bytes;
    double peak_t_s;      /* seconds since the first snapshot; < 0: before it or unknown */
} ms_trend;

/* Orders a series in place by snapshot_ns (then seq, then the given order). */
void ms_trend_sort_series(ms_snapshot **series, size_t n);
/* syms[i] may be NULL. The snapshots must outlive the trend (paths are borrowed). */
ms_trend *ms_trend_build(ms_snapshot *const *series, size_t n, ms_symbolizer *const *syms,
                         ms_agg_key by, char *err, size_t errlen);
void ms_trend_free(ms_trend *t);
/* A slope rounded to whole bytes, clamped to what an int64 holds. */
int64_t ms_trend_slope_i64(double slope);

int ms_trend_write_text(const ms_trend *t, const ms_export_opts *o, FILE *out, char *err,
                        size_t errlen);
int ms_trend_write_json(const ms_trend *t, const ms_export_opts *o, FILE *out, char *err,
                        size_t errlen);
/* Inline SVG charts for the HTML report: total live bytes over time, and the live bytes
 * of the top `top` suspects over time. */
void ms_trend_write_charts(const ms_trend *t, int top, FILE *out);

#endif
