/* Process memory accounting in the manner of dumpsys meminfo: every mapping of a parsed
 * smaps is put in one category (native heap, thread stacks, code, other files, anonymous
 * mmap, shared memory, guard/reserved, other) and summed; totals RSS, PSS, USS, swap,
 * swap-PSS. Also writes the result as text, JSON or CSV. Never prints on its own. */
#ifndef MS_ANALYSIS_ACCOUNTING_H
#define MS_ANALYSIS_ACCOUNTING_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/proc_smaps.h"
#include "core/proc_task.h"

enum ms_acct_cat {
    MS_CAT_NATIVE_HEAP, /* [heap], glibc arenas, [anon:libc_malloc], blocks the agent saw */
    MS_CAT_STACK,       /* [stack], thread stacks found by sp or guard page, their guards */
    MS_CAT_CODE,        /* the executable and shared objects (all their mappings) */
    MS_CAT_FILE,        /* other file mappings */
    MS_CAT_ANON,        /* anonymous mmap not known to belong to the above */
    MS_CAT_SHMEM,       /* /dev/shm, memfd, SysV, shared anonymous */
    MS_CAT_GUARD,       /* ---p reservations and guard pages not tied to a stack */
    MS_CAT_OTHER,       /* [vdso], [vvar], [vsyscall] and other kernel-named mappings */
    MS_CAT_COUNT
};

/* The stable name of a category ("native_heap", "stack", ...), used in every format. */
const char *ms_acct_cat_name(enum ms_acct_cat c);

typedef struct ms_acct_counts {
    uint64_t mappings;
    uint64_t size_kb, rss_kb, pss_kb;
    uint64_t shared_clean_kb, shared_dirty_kb, private_clean_kb, private_dirty_kb;
    uint64_t swap_kb, swap_pss_kb;
} ms_acct_counts;

static inline uint64_t ms_acct_uss(const ms_acct_counts *c)
{
    return c->private_clean_kb + c->private_dirty_kb;
}

/* Address ranges the caller knows about (from an agent snapshot): [lo, hi). */
typedef struct ms_addr_range {
    uint64_t lo, hi;
} ms_addr_range;

/* What the classifier may use besides the mapping names. All optional. */
typedef struct ms_acct_hints {
    const char *exe;                /* the main executable's path */
    const ms_thread_sp *threads;    /* thread stack pointers */
    size_t nthreads;
    const ms_addr_range *stacks;    /* thread stack ranges (snapshot THRD) */
    size_t nstacks;
    const ms_addr_range *heap;      /* malloc blocks (snapshot BLKS, kind heap), sorted by lo */
    size_t nheap;
} ms_acct_hints;

/* How a mapping was put in its category (for the explain view and the docs). */
enum ms_acct_why {
    MS_WHY_NAME,        /* its name says it */
    MS_WHY_SP,          /* a thread's stack pointer is inside it */
    MS_WHY_GUARD_BELOW, /* rw anonymous mapping right above a small ---p guard */
    MS_WHY_ARENA,       /* glibc arena heap: 64 MiB aligned, rw head + ---p tail */
    MS_WHY_HINT,        /* a range from the hints */
    MS_WHY_NEIGHBOUR,   /* guard page of a stack, or .bss of an object */
    MS_WHY_PERMS,       /* no-access or shared anonymous */
    MS_WHY_DEFAULT
};

typedef struct ms_acct {
    ms_acct_counts cat[MS_CAT_COUNT];
    ms_acct_counts total;
    size_t n;          /* mappings classified */
    uint8_t *vma_cat;  /* per mapping: enum ms_acct_cat */
    uint8_t *vma_why;  /* per mapping: enum ms_acct_why */
    int *vma_tid;      /* per mapping: thread whose sp is inside it, or 0 */
    uint32_t *vma_count; /* per row: mappings merged into it (ms_acct_merge_by_name), or NULL */
    size_t threads_matched; /* threads whose sp fell inside a mapping */
    uint32_t present;  /* union of the smaps fields present (bits of enum ms_smaps_field) */
} ms_acct;

/* Classifies every mapping of sm and sums. Returns 0, or -1 (out of memory) with a
 * message. */
int ms_acct_build(ms_acct *a, const ms_smaps *sm, const ms_acct_hints *h, char *err,
                  size_t errlen);
void ms_acct_free(ms_acct *a);

/* showmap's default view: one row per (name, category), its counters summed and the
 * number of mappings in vma_count. out_sm's names point into sm's, so sm must outlive it;
 * a row's start is its lowest start and its end start + the summed sizes. Totals and
 * categories are unchanged. Returns 0 or -1 (out of memory). */
int ms_acct_merge_by_name(const ms_smaps *sm, const ms_acct *a, ms_smaps *out_sm, ms_acct *out_a);

/* Adds one mapping's counters to c. */
void ms_acct_add(ms_acct_counts *c, const ms_vma *v);

/* ---- output ---- */
enum ms_acct_format { MS_FMT_TEXT, MS_FMT_JSON, MS_FMT_CSV };
enum ms_acct_sort { MS_SORT_PSS, MS_SORT_RSS, MS_SORT_USS, MS_SORT_SWAP, MS_SORT_SIZE,
                    MS_SORT_ADDR };
/* Parses "text|json|csv" and "pss|rss|uss|swap|size|addr". Return -1 if unknown. */
int ms_acct_parse_format(const char *s);
int ms_acct_parse_sort(const char *s);

typedef struct ms_acct_write_opts {
    int format;         /* enum ms_acct_format */
    int sort;           /* enum ms_acct_sort */
    int pid;
    int with_mappings;  /* include the per-mapping table */
    size_t limit;       /* at most this many mappings (0: all) */
} ms_acct_write_opts;

/* Writes the accounting of sm/a. The JSON layout is documented in docs/accounting.md:
 * {"pid", "totals": {...}, "categories": [...], "mappings": [...]}. Returns 0 or -1 on a
 * write error. */
int ms_acct_write(FILE *out, const ms_smaps *sm, const ms_acct *a,
                  const ms_acct_write_opts *o);

/* Writes s as a JSON string literal (quotes included), escaping control characters
 * and invalid UTF-8 bytes as \u00XX. */
void ms_acct_json_string(FILE *out, const char *s);

/* ---- RSS explained: /proc accounting joined with an agent snapshot ---- */

struct ms_snapshot;
struct ms_symbolizer;

/* Where each explained part of RSS comes from; they add up to the total RSS. */
enum ms_explain_part {
    MS_EX_HEAP_TRACKED,  /* resident bytes of live malloc blocks the agent tracks */
    MS_EX_HEAP_OVERHEAD, /* allocator headers and alignment of those blocks */
    MS_EX_HEAP_FREE,     /* the rest of the native heap: free space the allocator keeps */
    MS_EX_MMAP_TRACKED,  /* mappings made by the program's own mmap calls (by stack) */
    MS_EX_STACKS,        /* thread stacks and their guards */
    MS_EX_CODE,
    MS_EX_FILE,          /* other file mappings not tracked as mmap */
    MS_EX_SHMEM,         /* shared memory not tracked as mmap */
    MS_EX_OTHER,         /* [vdso], guards, reservations */
    MS_EX_UNEXPLAINED,   /* anonymous memory no tracked call made */
    MS_EX_COUNT
};
const char *ms_explain_part_name(enum ms_explain_part p);

typedef struct ms_explain_stack {
    uint32_t stack_id;
    uint64_t bytes;   /* live bytes of the tracked regions */
    uint64_t regions;
    uint64_t rss_kb;  /* resident kB of the mappings they cover (pro rata) */
} ms_explain_stack;

typedef struct ms_explain_thread {
    uint32_t tid;
    const char *name;  /* from the snapshot (lives as long as it) */
    uint64_t stack_kb; /* resident kB of the mappings its stack range covers */
} ms_explain_thread;

/* glibc's mallinfo2() in the process at the snapshot (HLTH `mallinfo2_*`), bytes. */
typedef struct ms_explain_mallinfo {
    uint64_t arena, ordblks, smblks, hblks, hblkhd, fsmblks, uordblks, fordblks, keepcost;
} ms_explain_mallinfo;

/* How the heap's RSS beyond the tracked bytes was split. */
enum ms_explain_split {
    MS_SPLIT_NONE,     /* overhead and free space together, in heap_free */
    MS_SPLIT_CHUNKS,   /* overhead from glibc's chunk layout over every live block */
    MS_SPLIT_MALLINFO, /* free space from mallinfo2 (overhead from the chunk layout when
                        * every block is known, else in-use bytes minus tracked ones) */
};

typedef struct ms_explain {
    uint64_t rss_kb;
    uint64_t part_kb[MS_EX_COUNT];
    /* the native heap */
    uint64_t heap_rss_kb;
    uint64_t heap_tracked_bytes, heap_tracked_blocks;
    uint64_t heap_chunk_bytes;  /* the same blocks as glibc chunks (header + alignment) */
    uint64_t heap_untouched_kb; /* tracked bytes beyond the heap's RSS (never written) */
    const char *heap_method;    /* how overhead and free were separated */
    enum ms_explain_split heap_split;
    uint64_t heap_agent_header_bytes; /* the agent's 16-byte block headers (in unexplained) */
    int has_mallinfo;
    ms_explain_mallinfo mi;
    uint64_t heap_untracked_bytes;  /* mallinfo2 in-use bytes no tracked block explains:
                                     * blocks the agent never saw (in unexplained) */
    uint64_t heap_free_unresident_kb; /* fordblks beyond the free part: not resident */
    uint64_t heap_unaccounted_kb;   /* heap RSS mallinfo2 counts neither in use nor free */
    size_t arena_heaps;             /* glibc arena heaps found in smaps (not the main arena) */
    int sampled;                /* the snapshot's counters are sampling estimates */
    int has_blocks;
    /* tracked mmap by call stack, largest RSS first */
    ms_explain_stack *mmap_stacks;
    size_t nmmap_stacks;
    size_t threads_in_snapshot;
    ms_explain_thread *threads; /* the snapshot's threads with a known stack range */
    size_t nthreads;
    uint64_t agent_tables_bytes; /* the agent's own reserved tables (HLTH), in unexplained */
} ms_explain;

/* Joins sm (read from the process just after the snapshot s was taken) with s. `threads`
 * are the stack pointers read from /proc (optional). Returns 0 or -1 with a message. */
int ms_explain_build(ms_explain *ex, const ms_smaps *sm, const struct ms_snapshot *s,
                     const char *exe, const ms_thread_sp *threads, size_t nthreads, char *err,
                     size_t errlen);
void ms_explain_free(ms_explain *ex);
/* Writes the explanation as text or JSON (documented in docs/accounting.md). sym may be
 * NULL (frames then show as addresses). Returns 0 or -1 on a write error. */
int ms_explain_write(FILE *out, const ms_explain *ex, const struct ms_snapshot *s,
                     struct ms_symbolizer *sym, int format, int pid, const char *snapshot_path);

#endif
