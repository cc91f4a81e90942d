/* Merge of several snapshots of one program (e.g. from many hosts or runs) into one:
 * counters of stacks with the same module offsets are summed, modules are united by
 * build-id (or path), blocks, leaks and peaks carried with their stacks. The result is
 * written as a snapshot file. Tools only. */
#ifndef MS_ANALYSIS_MERGE_H
#define MS_ANALYSIS_MERGE_H

#include <stddef.h>

#include "core/snapshot.h"

/* What became of the parts that belong to one process (filled when asked). */
typedef struct ms_merge_info {
    size_t processes;        /* processes in the merged snapshot (META process.<k>.*) */
    size_t with_blocks, with_leaks, with_peak, with_threads; /* inputs that had them */
    int blocks_kept;         /* every input listed its blocks: all kept, with their process */
    int peak_kept;           /* every input had a PEAK: per-process peaks summed */
    size_t with_temp, with_hist; /* inputs with temporary counts, with a size histogram */
    int temp_kept;           /* every input had a TEMP: per-stack temporaries summed */
    int hist_kept;           /* every input had a HIST and the buckets agree: summed */
    size_t unknown_stacks;   /* blocks and leak records naming a stack their input lacks */
    size_t repeated;         /* processes found in more than one input (counted twice) */
} ms_merge_info;

typedef struct ms_merge_opts {
    int allow_different_programs; /* merge even when the executables differ */
    ms_merge_info *info;           /* when not NULL, filled */
} ms_merge_opts;

/* Builds the merged snapshot in memory (free with ms_snapshot_free). Stack counters,
 * health counters, /proc accounting values and leak-scan statistics are summed; live
 * blocks are kept with their stack ids remapped and their process (BLKS `process`,
 * META process.<k>.*) when every input lists them; leak-scan results are united (the
 * summary and the records of one stack and class summed); peaks, when every input has
 * one, become the sum of the per-process peaks; temporary allocations per stack and the
 * size histogram (bucket by bucket), when every input has them, are summed. Threads belong to one process and are
 * left out. NULL + message on error. */
ms_snapshot *ms_merge(ms_snapshot *const *in, size_t n, const ms_merge_opts *o, char *err,
                      size_t errlen);

/* Writes a snapshot file (META, MODS, STKS, and BLKS, PEAK, TEMP, HIST, LEAK, ACCT, HLTH when the
 * snapshot has them, END) 0600 under a temporary name renamed into place. Returns 0 or
 * -1 with a message. */
int ms_merge_write(const ms_snapshot *s, const char *path, char *err, size_t errlen);

#endif
