/* Reads an HPROF heap dump (JAVA PROFILE 1.0.1/1.0.2/1.0.3, 4- or 8-byte ids, plain or
 * gzip) into the compact graph of graph.h, reading the file from disk once (then from
 * the page cache).
 * Never trusts the file: every length is bounds-checked; never prints (the CLI does). */
#ifndef MS_HPROF_READER_H
#define MS_HPROF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "hprof/graph.h"

typedef struct ms_hprof_read_opts {
    int size_flavor; /* enum ms_hsize_flavor; MS_HSIZE_AUTO by default */
    int compressed_oops; /* HotSpot 8-byte-id dumps: 0 = guess from array spacing as MAT
                          * does, 1 = assume compressed references, 2 = assume none
                          * (16-byte headers), 3 = compressed class pointers only
                          * (12-byte headers, 8-byte references) */
    int threads; /* 0: two threads for dumps of 64 MB and more when the machine has two
                  * cores or more; 1: one thread; 2: two threads whatever the size */
    int counts_only; /* 1: references are counted and checked but not stored (edge_off,
                      * edge_dst and edge_label stay NULL; nedge, dangling_refs and the
                      * problems are those of a full read): enough for summary and
                      * histogram without retained sizes, in one pass fewer */
    size_t window; /* bytes each pass reads at once; 0: 1 MiB (the tests use tiny ones so
                    * that records cross the windows' ends) */
    /* Called now and then with bytes processed and the total (both passes count);
     * NULL for none. */
    void (*progress)(void *arg, uint64_t done, uint64_t total);
    void *progress_arg;
} ms_hprof_read_opts;

/* Reads path (NULL opts = defaults). On success returns 0 and *out owns a graph to free
 * with ms_hgraph_free(); non-fatal problems are listed in (*out)->problems. On a fatal
 * error (unreadable, not HPROF, truncated, a length that does not fit, an unknown
 * heap-dump sub-record, absurd counts) returns -1 with a message in err naming the file
 * offset and record type. */
int ms_hprof_read(const char *path, const ms_hprof_read_opts *opts, ms_hgraph **out,
                  char *err, size_t errlen);

/* Same, from a buffer in memory (used by the fuzzer and unit tests). The buffer must
 * stay valid during the call only. */
int ms_hprof_read_mem(const void *data, size_t len, const ms_hprof_read_opts *opts,
                      ms_hgraph **out, char *err, size_t errlen);

/* Name of a top-level record tag ("HEAP_DUMP_SEGMENT") or sub-record tag
 * ("INSTANCE_DUMP"); "UNKNOWN" otherwise. */
const char *ms_hprof_record_name(uint8_t tag);
const char *ms_hprof_subrecord_name(uint8_t tag);

#endif
