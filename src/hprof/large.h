/* KOOM's heap questions (Kwai's OOM monitor): bitmaps larger than a pixel count (width x
 * height from android.graphics.Bitmap's fields), primitive and object arrays larger than
 * a byte size, and the number of live threads, each large object with its retained size.
 * Reads the graph and, for the Bitmap fields, the dump file (values.h); never prints
 * except into the FILE given to the print function. */
#ifndef MS_HPROF_LARGE_H
#define MS_HPROF_LARGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hprof/dominators.h"
#include "hprof/graph.h"

/* KOOM's defaults (HeapAnalysisService, OOMMonitorConfig). */
#define MS_HLARGE_BITMAP_PIXELS (768u * 1366u + 1u)
#define MS_HLARGE_ARRAY_BYTES (256u * 1024u)
#define MS_HLARGE_THREADS 750u

typedef struct ms_hprof_large_opts {
    uint64_t bitmap_pixels; /* a bitmap of at least this many pixels is large */
    uint64_t array_bytes;   /* an array of at least this many bytes (shallow size) is large */
    uint32_t threads;       /* more live threads than this is too many */
} ms_hprof_large_opts;

enum { MS_HLARGE_BITMAP = 0, MS_HLARGE_PRIM_ARRAY = 1, MS_HLARGE_OBJ_ARRAY = 2 };

typedef struct ms_hprof_large_obj {
    ms_hidx obj;
    uint8_t what;        /* MS_HLARGE_* */
    int32_t width, height; /* bitmaps */
    uint64_t retained;   /* 0 without dominators */
} ms_hprof_large_obj;

typedef struct ms_hprof_large {
    size_t n;
    ms_hprof_large_obj *objs; /* bitmaps, then arrays; largest retained first in each */
    size_t bitmaps;           /* Bitmap instances in the dump */
    uint32_t threads;         /* live threads (java.lang.Thread held by a thread root) */
    int retained_known;       /* retained sizes computed (dominators given) */
    ms_hprof_large_opts opts;
} ms_hprof_large;

/* Finds the large objects of the dump at path whose graph is g (r: its dominators, or
 * NULL: retained sizes are then printed as not computed). Returns 0, or -1 with a
 * message. */
int ms_hprof_find_large(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                        const ms_hprof_large_opts *o, ms_hprof_large *out, char *err, size_t errlen);
void ms_hprof_large_free(ms_hprof_large *l);

/* Output of `memsight hprof large`: text or JSON {"bitmaps": [{object_id, class, width,
 * height, pixels, shallow_bytes, retained_bytes}], "arrays": [{object_id, class,
 * shallow_bytes, retained_bytes}] (retained_bytes null when not computed), "bitmap_count", "threads", "thread_limit",
 * "too_many_threads", and the thresholds}. Returns 0, or -1 with a message. */
int ms_hprof_large_print(FILE *fp, const ms_hgraph *g, const ms_hprof_large *l, const char *format,
                         char *err, size_t errlen);

#endif
