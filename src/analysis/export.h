/* Entry points shared between `memsight report` and the exporters, so each output
 * format lives in its own file: text.c/json (report), pprof, collapsed, svg, html.
 * Tools only. */
#ifndef MS_ANALYSIS_EXPORT_H
#define MS_ANALYSIS_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/symbolize.h"
#include "core/snapshot.h"

/* Which number a flame graph / collapsed output / ranking uses. */
typedef enum ms_metric {
    MS_METRIC_LIVE_BYTES = 0, /* default */
    MS_METRIC_LIVE_BLOCKS,
    MS_METRIC_ALLOC_BYTES,
    MS_METRIC_ALLOC_BLOCKS,
} ms_metric;

typedef struct ms_export_opts {
    ms_metric metric;
    int top;           /* how many stacks a table shows (0 = format's default) */
    const char *title; /* optional */
    int frame_table;   /* json: frames once in a table, stacks refer to them by index */
    int site_caller;   /* text, json: sites are the allocator's callers, not the program's frames */
} ms_export_opts;

/* Opens any snapshot-like file: a memsight snapshot, or an Android malloc-debug native
 * heap dump ("Android Native Heap Dump v1.x"), sniffed by content. NULL + message. */
ms_snapshot *ms_snapshot_load(const char *path, char *err, size_t errlen);

/* Each writes one format of one snapshot to out; 0 or -1 with a message. */
int ms_export_text(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                   char *err, size_t errlen);
int ms_export_json(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                   char *err, size_t errlen);
int ms_export_pprof(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                    char *err, size_t errlen);
int ms_export_collapsed(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o,
                        FILE *out, char *err, size_t errlen);
int ms_export_svg(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                  char *err, size_t errlen);
/* The HTML report takes a series (n >= 1, oldest first); the last is the one detailed. */
int ms_export_html(ms_snapshot *const *series, size_t n, ms_symbolizer *sym,
                   const ms_export_opts *o, FILE *out, char *err, size_t errlen);

/* Valgrind massif's format (ms_print, massif-visualizer) of a series (n >= 1, oldest
 * first): one massif snapshot per snapshot with its allocation tree, and the process
 * peak as massif's peak snapshot. syms may be NULL, or hold one symbolizer (or NULL) per
 * snapshot (massif.c). */
int ms_export_massif(ms_snapshot *const *series, size_t n, ms_symbolizer *const *syms, FILE *out,
                     char *err, size_t errlen);

/* The single-snapshot exporter of a format name (text, json, pprof, collapsed, svg), or
 * NULL. Linking this (load.c) also links every exporter, whatever the caller names. */
typedef int (*ms_export_fn)(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o,
                            FILE *out, char *err, size_t errlen);
ms_export_fn ms_export_find(const char *format);

#endif
