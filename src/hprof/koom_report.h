/* KOOM's heap report (Kwai's HeapAnalysisService writes it as JSON with Gson, the
 * HeapReport class): the leaks found with KOOM's rules as gcPaths, KOOM's class counters
 * as classInfos, the large bitmaps and arrays as leakObjects, so that a backend built for
 * KOOM's uploads reads memsight's analysis unchanged. Prints only into the given FILE. */
#ifndef MS_HPROF_KOOM_REPORT_H
#define MS_HPROF_KOOM_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "hprof/graph.h"
#include "hprof/large.h"
#include "hprof/leaks.h"

/* Writes {"runningInfo", "gcPaths", "classInfos", "leakObjects", "analysisDone"} for leaks
 * l (found with ms_hprof_find_leaks_koom) and large objects big. Returns 0, or -1 with a
 * message (a write error). */
int ms_hprof_koom_print(FILE *fp, const ms_hgraph *g, const ms_hprof_leaks *l,
                        const ms_hprof_large *big, char *err, size_t errlen);

#endif
