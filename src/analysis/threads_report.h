/* The threads section of the reports (text, JSON, HTML) from a snapshot's THRL chunk:
 * counters, threads that ended without being joined or detached (leaked), grouped by the
 * call stack that created them, and the threads alive. Tools only; writes to `out`. */
#ifndef MS_ANALYSIS_THREADS_REPORT_H
#define MS_ANALYSIS_THREADS_REPORT_H

#include <stdio.h>

#include "analysis/json_writer.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

/* Threads of one kind (leaked or alive) grouped by the stack that created them. */
typedef struct ms_thr_group {
    uint32_t stack_id;
    size_t first, n;      /* into the sorted list */
    uint64_t stack_bytes; /* stacks and guards the group's threads hold */
} ms_thr_group;

typedef struct ms_thr_list {
    const ms_thread_life **t; /* sorted by creation stack, then by exit or start time */
    size_t n;
    ms_thr_group *g;          /* most threads first */
    size_t ng;
    uint64_t stack_bytes;
} ms_thr_list;

/* The leaked threads (leaked = 1) or the alive ones (0); -1 when out of memory. */
int ms_thr_list_make(const ms_snapshot *s, int leaked, ms_thr_list *l);
void ms_thr_list_free(ms_thr_list *l);
uint64_t ms_thr_counter(const ms_snapshot *s, const char *name); /* THRL counter, 0 if absent */
uint64_t ms_thr_snapshot_ns(const ms_snapshot *s);
/* Seconds between two CLOCK_REALTIME stamps; negative when unknown. */
double ms_thr_secs(uint64_t from, uint64_t to);
/* The function a start routine's address falls in (malloc'ed), or NULL. */
char *ms_thr_start_name(const ms_snapshot *s, ms_symbolizer *sym, uint64_t pc);

/* How a thread ended: "returned", "pthread_exit", "cancelled", or NULL while it runs. */
const char *ms_thread_end_name(uint32_t flags);

/* Each writes nothing when the snapshot has no THRL chunk (format before 1.3). `top`:
 * creation stacks shown per list (text, HTML). The JSON form lists every thread. The
 * HTML section is in threads_html.c (it needs the HTML report's frame lists). */
void ms_threads_text(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top);
int ms_threads_json(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym); /* -1: OOM */
void ms_threads_html(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top);

#endif
