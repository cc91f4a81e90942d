/* In-memory model of a snapshot, as the tools see it after reading a file (or after
 * importing another format, e.g. an Android native heap dump), and the reader.
 * Tools only: this code allocates freely and is never linked into the agent. */
#ifndef MS_CORE_SNAPSHOT_H
#define MS_CORE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memsight/snapshot_format.h"

typedef struct ms_kv {
    char *key;
    char *value;
} ms_kv;

typedef struct ms_health_item {
    char *name;
    uint64_t value;
} ms_health_item;

typedef struct ms_module {
    uint64_t load_bias;
    char *path;
    uint8_t build_id[64];
    uint32_t build_id_len;
    uint32_t nseg;
    ms_snap_segment *segs;
} ms_module;

typedef struct ms_stack {
    uint32_t id;
    uint8_t kind;   /* enum ms_alloc_kind */
    uint16_t flags; /* MS_STACKF_* */
    uint32_t depth;
    uint64_t *pcs;  /* innermost first */
    ms_snap_counters c;
    /* live counters at the process peak (valid when the snapshot has_peak) */
    uint64_t peak_live_blocks;
    uint64_t peak_live_bytes;
    /* allocations freed by their thread before it allocated anything else (TEMP chunk) */
    uint64_t temp_blocks;
} ms_stack;

/* One bucket of the allocation size histogram (HIST chunk): sizes lo..hi inclusive. */
typedef struct ms_size_bucket {
    uint64_t lo, hi, count;
} ms_size_bucket;

typedef struct ms_thread {
    uint32_t tid;
    uint32_t flags;
    uint64_t stack_lo, stack_hi;
    char *name;
} ms_thread;

/* An error caught by guard pages (GARD chunk): the three stacks have id 0, kind heap and
 * depth 0 when not known (no free for a live block, no block for a stray pointer). */
typedef struct ms_guard_error {
    ms_snap_guard g;
    ms_stack alloc, freed, access;
} ms_guard_error;
/* One thread of the THRL chunk (format 1.3): running, or ended and never joined nor
 * detached (leaked, ms_thread_life_leaked). */
typedef struct ms_thread_life {
    ms_snap_thread_life r;
    char *name;
} ms_thread_life;

static inline int ms_thread_life_leaked(const ms_thread_life *t)
{
    return (t->r.flags & MS_THRL_F_EXITED) &&
           !(t->r.flags & (MS_THRL_F_DETACHED | MS_THRL_F_MAIN));
}

typedef struct ms_snapshot {
    char *path; /* file it was read from (for messages) */
    uint16_t version_major, version_minor;
    uint64_t flags; /* MS_SNAP_F_* */

    ms_kv *meta;
    size_t nmeta;

    ms_module *modules;
    size_t nmodules;

    ms_stack *stacks; /* sorted by id */
    size_t nstacks;

    int has_peak;
    uint64_t peak_live_bytes_total;
    uint64_t peak_ns;

    int has_temp;         /* TEMP chunk: stacks' temp_blocks are known */
    ms_size_bucket *hist; /* HIST chunk, ascending and disjoint; NULL when absent */
    size_t nhist;

    ms_snap_block *blocks;
    size_t nblocks;
    int has_blocks;

    ms_thread *threads;
    size_t nthreads;

    ms_health_item *health;
    size_t nhealth;

    int has_leaks;
    ms_snap_leak_summary leak_summary;
    ms_snap_leak_rec *leaks;
    size_t nleaks;
    ms_health_item *leak_stats; /* the scan's statistics after the records, by name */
    size_t nleak_stats;

    ms_health_item *acct; /* ACCT chunk: name -> kB */
    size_t nacct;

    ms_guard_error *guard; /* GARD chunk; NULL when the snapshot has none */
    int has_thread_life;            /* THRL chunk */
    ms_health_item *thread_counters; /* created, joined, detached, exited, untracked, ... */
    size_t nthread_counters;
    ms_thread_life *thread_lives;
    size_t nthread_lives;

    size_t unknown_chunks; /* skipped, newer minor version */
} ms_snapshot;

/* Reads a snapshot file. Returns NULL on error with a message naming the file and the
 * problem (offset, chunk type) in err. */
ms_snapshot *ms_snapshot_read(const char *path, char *err, size_t errlen);
/* A snapshot an agent was asked for and the tool waited for: read only if it is a regular
 * file owned by `owner` (never a FIFO, device or symlink planted at the name). */
ms_snapshot *ms_snapshot_read_awaited(const char *path, uid_t owner, char *err, size_t errlen);
/* Same, from memory (for fuzzing); `name` is used in messages. */
ms_snapshot *ms_snapshot_parse(const uint8_t *data, size_t len, const char *name, char *err,
                               size_t errlen);
void ms_snapshot_free(ms_snapshot *s);

/* Lookups. */
const char *ms_snapshot_meta(const ms_snapshot *s, const char *key); /* NULL if absent */
const ms_stack *ms_snapshot_stack(const ms_snapshot *s, uint32_t id); /* binary search */
const ms_module *ms_snapshot_module_for_pc(const ms_snapshot *s, uint64_t pc);
/* 0 with *value set when the health counter exists, -1 when it does not. */
int ms_snapshot_health(const ms_snapshot *s, const char *name, uint64_t *value);
/* The same for the THRL counters (leaked, alive, created...). */
int ms_snapshot_thread_counter(const ms_snapshot *s, const char *name, uint64_t *value);

#endif
