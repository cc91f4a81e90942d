/* Merge of several snapshots of one program (e.g. from many hosts or runs) into one:
 * counters of stacks with the same module offsets are summed, modules are united by
 * build-id (or path). The result is written as a snapshot file. Tools only. */
#ifndef MS_ANALYSIS_MERGE_H
#define MS_ANALYSIS_MERGE_H

#include <stddef.h>

#include "core/snapshot.h"

typedef struct ms_merge_opts {
    int allow_different_programs; /* merge even when the executables differ */
} ms_merge_opts;

/* Builds the merged snapshot in memory (free with ms_snapshot_free). Per-block data,
 * leak-scan results, threads and peaks do not survive a merge (they belong to one
 * process); health counters are summed. NULL + message on error. */
ms_snapshot *ms_merge(ms_snapshot *const *in, size_t n, const ms_merge_opts *o, char *err,
                      size_t errlen);

/* Writes a snapshot file (META, MODS, STKS, HLTH, END) 0600 under a temporary name
 * renamed into place. Returns 0 or -1 with a message. */
int ms_merge_write(const ms_snapshot *s, const char *path, char *err, size_t errlen);

#endif
