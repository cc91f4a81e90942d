/* Suppressions and filters, as LeakSanitizer, valgrind and heaptrack users know them:
 * a suppression file names known leaks (in system libraries, in code one cannot change)
 * by function, file or module, and the leak report leaves them out; a function filter
 * keeps only the call stacks through one function (heaptrack's --filter-bt-function).
 * Both change a loaded snapshot in place, before any report is written, so every format
 * agrees. Tools only: the files read are untrusted and answered with file:line errors. */
#ifndef MS_ANALYSIS_SUPPRESS_H
#define MS_ANALYSIS_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/symbolize.h"
#include "core/snapshot.h"

typedef struct ms_supp_rule {
    char *text;    /* as written after "leak:" */
    char *glob;    /* fnmatch pattern: '*' added unless anchored with ^ or $ */
    int line;
    uint64_t hits_records, hits_blocks, hits_bytes;
} ms_supp_rule;

typedef struct ms_suppressions {
    char *path;
    ms_supp_rule *rules;
    size_t nrules;
} ms_suppressions;

/* Reads a suppression file: one rule per line, "leak:PATTERN" (LeakSanitizer's form) or
 * a bare PATTERN; '#' starts a comment; blank lines are skipped. PATTERN matches a frame
 * whose function, source file or module contains it ('*' matches anything; '^' and '$'
 * anchor it to the start or end of the name). NULL + "file:line: reason" on error. */
ms_suppressions *ms_supp_load(const char *path, char *err, size_t errlen);
/* The same from an open stream (read to its end, not closed); path names it in errors. */
ms_suppressions *ms_supp_parse(FILE *f, const char *path, char *err, size_t errlen);
void ms_supp_free(ms_suppressions *sp);

/* Drops the snapshot's lost (not still-reachable) leak records whose allocation stack has
 * a frame matching a rule (the first rule that matches is credited) and takes them out
 * of the class totals.
 * Returns the number of records dropped; -1 on out of memory. */
long ms_supp_apply(ms_snapshot *s, ms_symbolizer *sym, ms_suppressions *sp);
/* "suppressed: N blocks (B bytes) by RULE (file:line)" lines, rules that matched. */
void ms_supp_write(const ms_suppressions *sp, const char *prefix, FILE *out);

/* Keeps only the stacks that have a frame whose function contains `name` (a
 * substring), with their blocks and leak records; returns how many stacks remain, -1
 * on out of memory. The totals of every report are then those of the kept stacks, the
 * peak their sum at the process peak; the size histogram (whole process) is dropped. */
long ms_filter_function(ms_snapshot *s, ms_symbolizer *sym, const char *name);

#endif
