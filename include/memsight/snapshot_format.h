/* memsight snapshot file format: constants and on-disk record layouts.
 * Shared by the agent (writer, must not allocate) and the tools (reader).
 * docs/snapshot-format.md describes every byte; keep the two in step. */
#ifndef MEMSIGHT_SNAPSHOT_FORMAT_H
#define MEMSIGHT_SNAPSHOT_FORMAT_H

#include <stdint.h>

/* ---------------------------------------------------------------------------
 * File header (32 bytes), all integers little-endian.
 * A reader accepts any file whose major version it knows (older minors and its own
 * minor, and newer minors, whose unknown chunks it skips); it refuses a newer major.
 * ------------------------------------------------------------------------- */
#define MS_SNAP_MAGIC "MSIGSNAP" /* 8 bytes, no terminator on disk */
#define MS_SNAP_VERSION_MAJOR 1
#define MS_SNAP_VERSION_MINOR 4 /* 1.1: kind reserved; 1.2: TEMP and HIST chunks;
                                 * 1.3: THRL chunk; 1.4: GARD kinds 6 and 7 */

typedef struct ms_snap_header {
    char magic[8];
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size; /* 32: lets a later version grow the header */
    uint64_t flags;       /* MS_SNAP_F_* */
    uint64_t reserved;
} ms_snap_header;

#define MS_SNAP_F_SAMPLED 0x1u /* per-stack counters are estimates from sampling */

/* ---------------------------------------------------------------------------
 * Chunks follow the header back to back. Each is a 24-byte chunk header, then
 * `length` payload bytes, then zero padding to a multiple of 8. The CRC is zlib's
 * crc32 of the payload (without padding). The last chunk is END; a file without
 * it is truncated.
 * ------------------------------------------------------------------------- */
typedef struct ms_chunk_header {
    uint32_t type;   /* MS_CHUNK_*: four ASCII characters read as a little-endian u32 */
    uint32_t flags;  /* MS_CHUNKF_* */
    uint64_t length; /* payload bytes */
    uint32_t crc32;
    uint32_t reserved;
} ms_chunk_header;

#define MS_FOURCC(a, b, c, d) \
    ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

/* A chunk with this flag must be understood; a reader that does not know its type
 * refuses the file instead of skipping it. */
#define MS_CHUNKF_REQUIRED 0x1u

#define MS_CHUNK_META MS_FOURCC('M', 'E', 'T', 'A') /* process metadata, key/value strings */
#define MS_CHUNK_MODS MS_FOURCC('M', 'O', 'D', 'S') /* loaded modules */
#define MS_CHUNK_STKS MS_FOURCC('S', 'T', 'K', 'S') /* interned stacks with their counters */
#define MS_CHUNK_PEAK MS_FOURCC('P', 'E', 'A', 'K') /* per-stack live counters at the peak */
#define MS_CHUNK_BLKS MS_FOURCC('B', 'L', 'K', 'S') /* every live block (full mode) */
#define MS_CHUNK_THRD MS_FOURCC('T', 'H', 'R', 'D') /* threads */
#define MS_CHUNK_HLTH MS_FOURCC('H', 'L', 'T', 'H') /* agent health counters */
#define MS_CHUNK_LEAK MS_FOURCC('L', 'E', 'A', 'K') /* leak-scan result */
#define MS_CHUNK_ACCT MS_FOURCC('A', 'C', 'C', 'T') /* /proc accounting at snapshot time */
#define MS_CHUNK_TEMP MS_FOURCC('T', 'E', 'M', 'P') /* temporary allocations per stack */
#define MS_CHUNK_HIST MS_FOURCC('H', 'I', 'S', 'T') /* allocation size histogram */
#define MS_CHUNK_GARD MS_FOURCC('G', 'A', 'R', 'D') /* an error caught by guard pages */
#define MS_CHUNK_THRL MS_FOURCC('T', 'H', 'R', 'L') /* thread lives: leaked, alive, counters */
#define MS_CHUNK_END  MS_FOURCC('E', 'N', 'D', ' ') /* last chunk: u32 number of chunks before it */

/* ---------------------------------------------------------------------------
 * Payloads. "str" below is u32 length + bytes (no terminator), "kv" a list of
 * (str key, str value). Counts come first in every list payload.
 *
 * META: u32 n, then n kv. Known keys (values are text): pid, ppid, exe, cmdline
 *       (arguments joined by NUL bytes), hostname, start_ns, snapshot_ns (CLOCK_REALTIME
 *       nanoseconds), reason (exit|signal|interval|peak|trigger|leakcheck|api|fatal), seq
 *       (number in a series), options (the agent's option string), sample_interval
 *       (bytes, 0 = full), min_size, unwinder, labels (k=v;k=v).
 *
 * MODS: u32 n, then n modules:
 *       u64 load_bias; str path; u32 build_id_len; build_id bytes (padded to 4);
 *       u32 nseg; nseg * ms_snap_segment.
 *
 * STKS: u32 n, then n stacks: ms_snap_stack_rec followed by depth * u64 pcs,
 *       innermost first. The innermost pc is the return address into the caller of
 *       the allocation function; all pcs are return addresses except where
 *       MS_STACKF_FIRST_IS_PC says the first is an exact pc.
 *
 * PEAK: u64 peak_live_bytes_total; u64 peak_ns; u32 n; n * ms_snap_peak_rec.
 *
 * BLKS: u64 n, then n * ms_snap_block. `process` was a reserved 0 before merges kept
 *       blocks: older readers take every block as the snapshot's own process.
 *
 * THRD: u32 n, then n threads: u32 tid; u32 flags; u64 stack_lo; u64 stack_hi; str name.
 *
 * HLTH: u32 n, then n (str name, u64 value). Known names in docs/snapshot-format.md.
 *
 * LEAK: ms_snap_leak_summary, then u32 n, then n * ms_snap_leak_rec.
 *
 * ACCT: u32 n, then n (str name, u64 value): kB values from /proc at snapshot time.
 *
 * GARD: ms_snap_guard, then three stacks (allocation, free, access), each u32 depth,
 *       u32 flags (MS_STACKF_*), depth * u64 pcs innermost first. The access stack's
 *       first pc is the faulting instruction (MS_STACKF_FIRST_IS_PC) when a fault found
 *       the error, the return address into the caller of free otherwise.
 * THRL (1.3): u32 m, then m (str name, u64 value) counters (created, joined, detached,
 *       exited, untracked, alive, leaked); u32 rec_size (72; a reader skips bytes past
 *       the fields it knows); u32 n; n records: rec_size bytes (ms_snap_thread_life
 *       first) followed by str name.
 * ------------------------------------------------------------------------- */

/* THRL record flags (the THRD flags 0x2 detached, 0x4 exited, 0x10 main, 0x20 started,
 * and how the thread was made and how it ended). */
#define MS_THRL_F_DETACHED 0x2u
#define MS_THRL_F_EXITED 0x4u
#define MS_THRL_F_MAIN 0x10u
#define MS_THRL_F_STARTED 0x20u
#define MS_THRL_F_ATTR_DETACHED 0x40u /* created detached through its attributes */
#define MS_THRL_F_RETURNED 0x80u      /* its start routine returned */
#define MS_THRL_F_PTHREAD_EXIT 0x100u /* it called pthread_exit */
#define MS_THRL_F_CANCELLED 0x200u    /* it ended otherwise: cancellation */

typedef struct ms_snap_thread_life {
    uint32_t tid;
    uint32_t flags;       /* MS_THRL_F_* */
    uint32_t stack_id;    /* pthread_create's call stack (kind stack), 0 if none */
    uint32_t creator_tid;
    uint64_t create_ns;   /* CLOCK_REALTIME */
    uint64_t exit_ns;     /* CLOCK_REALTIME, 0 while running */
    uint64_t stack_size;  /* asked for (attributes or the default), else the usable size */
    uint64_t guard_size;
    uint64_t stack_lo, stack_hi; /* usable stack */
    uint64_t start_routine;      /* the address of its start routine */
} ms_snap_thread_life; /* 72 bytes */

typedef struct ms_snap_segment {
    uint64_t vaddr;  /* p_vaddr: add load_bias for the runtime address */
    uint64_t memsz;  /* p_memsz */
    uint64_t offset; /* p_offset in the file */
    uint32_t flags;  /* p_flags (PF_X=1, PF_W=2, PF_R=4) */
    uint32_t reserved;
} ms_snap_segment;

enum ms_alloc_kind {
    MS_KIND_HEAP = 0,  /* malloc family */
    MS_KIND_MMAP = 1,  /* mmap/mremap regions made by the program */
    MS_KIND_STACK = 2, /* thread stacks */
    MS_KIND_RESERVED = 3, /* PROT_NONE address space (format 1.1): not memory */
    MS_KIND_COUNT
};

#define MS_STACKF_TRUNCATED 0x1u   /* the walk hit max depth */
#define MS_STACKF_UNWIND_FAIL 0x2u /* the walk stopped on an error */
#define MS_STACKF_FIRST_IS_PC 0x4u

typedef struct ms_snap_counters {
    uint64_t live_blocks;
    uint64_t live_bytes;
    uint64_t alloc_blocks; /* cumulative */
    uint64_t alloc_bytes;
    uint64_t free_blocks;
    uint64_t free_bytes;
} ms_snap_counters;

typedef struct ms_snap_stack_rec {
    uint32_t id;    /* stack id referenced by blocks, peaks and leaks; 0 is "no stack" */
    uint8_t kind;   /* enum ms_alloc_kind */
    uint8_t reserved;
    uint16_t flags; /* MS_STACKF_* */
    uint32_t depth;
    uint32_t reserved2;
    ms_snap_counters c;
} ms_snap_stack_rec; /* followed by depth u64 pcs */

typedef struct ms_snap_peak_rec {
    uint32_t stack_id;
    uint32_t reserved;
    uint64_t live_blocks;
    uint64_t live_bytes;
} ms_snap_peak_rec;

typedef struct ms_snap_block {
    uint64_t address;
    uint64_t size;      /* bytes the program asked for */
    uint64_t time_ns;   /* CLOCK_REALTIME at allocation */
    uint32_t stack_id;
    uint32_t tid;
    uint8_t kind;       /* enum ms_alloc_kind */
    uint8_t reserved;
    uint16_t process;   /* 0: the snapshot's process; k: META process.<k>.* (a merge) */
    uint8_t reserved2[4];
} ms_snap_block;

enum ms_leak_class {
    MS_LEAK_DEFINITE = 0,
    MS_LEAK_INDIRECT = 1,
    MS_LEAK_POSSIBLE = 2,
    MS_LEAK_REACHABLE = 3,
    MS_LEAK_CLASS_COUNT
};

/* ms_snap_guard.kind */
enum ms_guard_kind {
    MS_GUARD_KIND_UNKNOWN = 0,   /* a fault in the pool no block explains */
    MS_GUARD_KIND_UAF = 1,       /* use after free */
    MS_GUARD_KIND_OVERFLOW = 2,  /* past the end of the block */
    MS_GUARD_KIND_UNDERFLOW = 3, /* before its start */
    MS_GUARD_KIND_DOUBLE_FREE = 4,
    MS_GUARD_KIND_INVALID_FREE = 5, /* a pointer into the pool that is no block's start */
    MS_GUARD_KIND_SLACK_OVER = 6,   /* bytes written in its page past the end (address: the
                                     * farthest), found at free, realloc or a snapshot */
    MS_GUARD_KIND_SLACK_UNDER = 7,  /* bytes written in its page before the start (address:
                                     * the farthest) */
    MS_GUARD_KIND_COUNT
};
/* The names reports use for them (stderr, text and JSON reports); "unknown-kind" for a
 * kind above these, which only a newer minor version may write (a reader keeps the error
 * and says the kind is unknown to it: the record's other fields mean the same). */
static inline const char *ms_guard_kind_name(unsigned kind)
{
    static const char *const names[MS_GUARD_KIND_COUNT] = {
        "unknown-in-pool", "use-after-free", "buffer-overflow", "buffer-underflow",
        "double-free", "invalid-free", "heap-buffer-overflow", "heap-buffer-underflow",
    };
    return kind < MS_GUARD_KIND_COUNT ? names[kind] : "unknown-kind";
}

typedef struct ms_snap_guard {
    uint32_t kind;        /* enum ms_guard_kind */
    uint32_t access_tid;  /* the thread that faulted or called free */
    uint32_t alloc_tid;   /* 0: no block */
    uint32_t free_tid;    /* 0: not freed */
    uint64_t address;     /* the faulting address, or the pointer given to free */
    uint64_t block_address; /* the block the error is about (0: none) */
    uint64_t block_size;
    uint64_t slot_address; /* its page */
    uint64_t slot_size;
    uint32_t alloc_stack_id; /* ids in this process's stack table (informational) */
    uint32_t free_stack_id;
} ms_snap_guard;

/* ms_snap_leak_summary.flags (docs/snapshot-format.md, "LEAK chunk details") */
#define MS_LEAK_F_UNSTOPPED 0x1u   /* some threads did not stop: scanned without registers */
#define MS_LEAK_F_READ_ERRORS 0x2u /* unreadable memory was skipped */
#define MS_LEAK_F_TRUNCATED 0x4u   /* more records than the limit: the smallest were dropped */
#define MS_LEAK_F_AT_EXIT 0x8u     /* the scan ran at process exit */

typedef struct ms_snap_leak_summary {
    uint64_t blocks[MS_LEAK_CLASS_COUNT];
    uint64_t bytes[MS_LEAK_CLASS_COUNT];
    uint64_t pause_ns; /* how long the program's threads were stopped */
    uint64_t scan_ns;  /* how long the scan took (in the forked child) */
    uint64_t flags;
} ms_snap_leak_summary;

/* Interior-pointer heuristics of the leak scan (option leak_heuristics; valgrind's
 * --leak-check-heuristics, and LeakSanitizer's rule): an interior pointer of one of these
 * shapes counts as a start pointer. Bit i is heuristic i of ms_leak_heuristic_names. */
#define MS_LEAK_H_STDSTRING 0x1u /* pointer 3 words in: length, capacity, refcount */
#define MS_LEAK_H_LENGTH64 0x2u  /* pointer 8 bytes in, after the length of the rest */
#define MS_LEAK_H_NEWARRAY 0x4u  /* pointer 1 word in, after new[]'s element count */
#define MS_LEAK_H_MULTIPLEINHERITANCE 0x8u /* a vtable pointer there and at the start */
#define MS_LEAK_H_INTERIOR 0x10u /* any interior pointer (LeakSanitizer's rule) */
#define MS_LEAK_H_VALGRIND 0xfu  /* valgrind's "all", its default since 3.11 */
#define MS_LEAK_H_COUNT 5

typedef struct ms_snap_leak_rec {
    uint32_t stack_id;   /* allocation stack of the lost (root) block */
    uint8_t leak_class;  /* enum ms_leak_class */
    uint8_t sample_len;  /* valid bytes in sample[] */
    uint16_t heuristics; /* still reachable: MS_LEAK_H_* that kept some of its blocks (was 0) */
    uint64_t blocks;     /* folded: the root block plus what it holds indirectly */
    uint64_t bytes;
    uint64_t example_address;
    uint64_t example_size;
    uint8_t sample[32];  /* first bytes of the example block */
} ms_snap_leak_rec;

#endif
