/* Importer of Android malloc-debug native heap dumps (the text `am dumpheap -n` and the
 * backtrace dump signal write: "Android Native Heap Dump v1.0/v1.1/v1.2") into the
 * in-memory snapshot model, so every exporter works on them. Tools only; the input is
 * untrusted text: every field is bounds-checked, a bad line is named, never a crash. */
#ifndef MS_ANALYSIS_ANDROID_DUMP_H
#define MS_ANALYSIS_ANDROID_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "core/snapshot.h"

#define MS_ANDROID_DUMP_MAGIC "Android Native Heap Dump v"

/* 1 when data starts like an Android native heap dump. */
int ms_android_dump_sniff(const void *data, size_t len);

/* Parses a dump held in memory (need not be NUL-terminated); `name` is used in
 * messages and as the snapshot's path. The snapshot is freed with ms_snapshot_free.
 * Stacks with the same backtrace are merged (their records summed); function names
 * from bt_info lines are kept as "sym.<hex pc>" meta entries; MAPS becomes the module
 * list. A dump only knows live allocations: allocated/freed counters stay 0. */
ms_snapshot *ms_android_dump_parse(const char *data, size_t len, const char *name, char *err,
                                   size_t errlen);

#endif
