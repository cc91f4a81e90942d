/* What the text and JSON reports share: totals by kind, stacks ranked by a metric,
 * the source frames of a stack, and the plain-language reading of the health counters.
 * Tools only; computes, never prints. */
#ifndef MS_ANALYSIS_REPORT_MODEL_H
#define MS_ANALYSIS_REPORT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/export.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

typedef struct ms_report_totals {
    ms_snap_counters all; /* every kind but reserved (address space, not memory) */
    ms_snap_counters kind[MS_KIND_COUNT];
} ms_report_totals;

void ms_report_totals_compute(const ms_snapshot *s, ms_report_totals *t);
uint64_t ms_report_metric(const ms_stack *st, ms_metric m);
/* Stacks ranked by m, largest first (ties: cumulative bytes, then id), stacks of kind
 * reserved after all others; only those with a non-zero m unless include_zero. malloc'ed; NULL (*n = 0) on out-of-memory. */
const ms_stack **ms_report_ranked(const ms_snapshot *s, ms_metric m, int include_zero,
                                  size_t *n);

/* At most this many source frames per recorded pc (a pc inside inlined code gives several). */
#define MS_REPORT_MAX_INLINE 16

/* Source frames of a stack, innermost first, inlined frames included; *n frames in a
 * malloc'ed array (NULL on out-of-memory). sym may be NULL (addresses only). Names an
 * imported dump carries fill functions the symbolizer could not resolve (stack_agg.h). */
ms_frame *ms_report_frames(const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st,
                           size_t *n);

/* Health counters that mean records were lost (dropped_*, lost_*, snapshot_errors) and
 * their sum; the names are joined into buf as "name=value, ...". */
uint64_t ms_report_lost(const ms_snapshot *s, char *buf, size_t len);
/* The name the program was started by (argv[0]'s last part) when it is not the name of
 * its executable (a symlink: redis-server runs /usr/bin/redis-check-rdb), else NULL. */
const char *ms_report_started_as(const ms_snapshot *s, char *buf, size_t cap);
/* What the agent said of the option items it ignored (META option_errors), or NULL. */
const char *ms_report_option_errors(const ms_snapshot *s);

/* The short summary `memsight run` prints at exit: totals and the top stacks by live
 * bytes, a few frames each (report_text.c). 0 or -1 on a write error. */
int ms_report_summary(const ms_snapshot *s, ms_symbolizer *sym, int top, FILE *out);

/* Sum of the stacks' temporary allocations (0 without a TEMP chunk). */
uint64_t ms_report_temporaries(const ms_snapshot *s);
/* Seconds from the agent's start to the peak, or a negative value when unknown. */
double ms_report_peak_after_start(const ms_snapshot *s);

/* One stack's frames as each report form shows them (report_text.c, report_json.c,
 * html_report.c), for sections kept in files of their own. The JSON one writes the
 * "frames" key and array; -1 when out of memory. */
struct ms_json;
void ms_report_text_frames(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st);
/* The error guard pages caught (s->guard set), as `memsight report` prints it. */
void ms_report_text_guard(FILE *out, const ms_snapshot *s, ms_symbolizer *sym);
int ms_report_json_frames(struct ms_json *j, const ms_snapshot *s, ms_symbolizer *sym,
                          const ms_stack *st);
void ms_report_html_frames(FILE *out, const ms_snapshot *s, ms_symbolizer *sym,
                           const ms_stack *st); /* st NULL: "no stack" */

const char *ms_kind_name(unsigned kind);
const char *ms_leak_class_name(unsigned cls);
/* Interior-pointer heuristics of the leak scan (MS_LEAK_H_*, bit i = name i). */
extern const char *const ms_leak_heuristic_names[MS_LEAK_H_COUNT];
/* "stdstring,length64" for a set, "none" for 0. */
void ms_leak_heuristic_list(unsigned set, char *buf, size_t len);
/* From the scan's statistics: the heuristics in force, or -1 when the snapshot does not
 * say (written before they existed); the still reachable blocks and bytes each kept. */
int ms_leak_heuristics_used(const ms_snapshot *s, uint64_t blocks[MS_LEAK_H_COUNT],
                            uint64_t bytes[MS_LEAK_H_COUNT]);

/* The "of which reachable via heuristic" lines under the leak classes (none when no
 * block needed one). */
void ms_report_text_heuristics(FILE *out, const ms_snapshot *s, const char *indent);

/* For a snapshot of an agent started by memsight attach: one line saying what its leak
 * scan covers (docs/leaks.md, "After memsight attach"); NULL otherwise. */
const char *ms_leak_attach_note(const ms_snapshot *s);

#endif
