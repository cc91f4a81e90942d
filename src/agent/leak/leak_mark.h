/* Reachability core of the leak scan: conservative mark of a sorted array of tracked
 * blocks from root ranges, valgrind's four classes, and folding of indirectly lost blocks
 * under the lost block that holds them. Pure and agent-independent: it never allocates
 * (the caller passes workspace), never recurses, and reads memory only through `view`. */
#ifndef MS_AGENT_LEAK_MARK_H
#define MS_AGENT_LEAK_MARK_H

#include <stddef.h>
#include <stdint.h>

/* Gives read access to [addr, addr+len) of the scanned image. Returns a local pointer
 * valid for *avail bytes (0 < *avail <= len), or NULL when addr is not readable, with
 * *avail = how many bytes to skip (> 0). Never faults. */
typedef const void *(*ms_lk_view_fn)(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail);

/* Internal mark states; after ms_lk_classify `cls` holds enum ms_leak_class. */
enum {
    MS_LK_UNREACHED = 0,
    MS_LK_REACHED = 1,  /* chain of start pointers from a root */
    MS_LK_POSSIBLE = 2, /* reached, but only with an interior pointer on the way */
    MS_LK_LEADER = 3,   /* unreached and heads a clique: definitely lost */
    MS_LK_INDIRECT = 4, /* unreached, held by a lost block */
};

#define MS_LK_F_INTERIOR 0x1u /* an interior pointer from a root or reached block hit it */

typedef struct ms_lk_block {
    uint64_t addr;
    uint64_t size;     /* bytes the program asked for; 0 matches as 1 byte */
    uint32_t stack_id; /* caller's tag, carried through */
    uint32_t leader;   /* INDIRECT: index of the block whose clique claimed it */
    uint8_t state;     /* MS_LK_* while marking, enum ms_leak_class after classify */
    uint8_t flags;     /* MS_LK_F_* */
    uint8_t kind;      /* caller's tag, carried through */
    uint8_t heur;      /* REACHED by an interior pointer a heuristic took for a start:
                        * its MS_LEAK_H_* bit index + 1 (0: by a start pointer) */
    uint8_t reserved[4];
} ms_lk_block;

/* Optional lookup index: 64 KiB granules of the address space -> the range of blocks
 * that overlap it, in an open-addressing table (ms_lk_index_build). */
typedef struct ms_lk_gran {
    uint64_t g;     /* granule number + 1 (0 = empty slot) */
    uint32_t first; /* first block overlapping the granule */
    uint32_t end;   /* one past the last block starting at or before its end */
} ms_lk_gran;
#define MS_LK_GRAN_SHIFT 16

/* Whether addr looks like a vtable (multipleinheritance heuristic): it lies in a readable
 * file mapping, and of its first 20 words (within that mapping), skipping zeros, the first
 * two point into executable file mappings. */
typedef int (*ms_lk_vtable_fn)(void *ctx, uint64_t addr);

typedef struct ms_lk_scan {
    ms_lk_block *b; /* sorted by addr, non-overlapping */
    size_t n;
    ms_lk_gran *idx; /* NULL: binary search over all blocks */
    uint64_t idx_mask;
    uint32_t *stack; /* mark queue (a ring): capacity >= n */
    size_t stack_cap;
    size_t head, tail; /* pushed at tail, taken at head (counters, modulo the capacity) */
    ms_lk_view_fn view;
    void *ctx;
    uint64_t lo, hi; /* lowest block start, highest block end */
    unsigned heur;   /* MS_LEAK_H_* in force (ms_lk_set_heuristics); 0 after init */
    ms_lk_vtable_fn is_vtable; /* NULL: multipleinheritance never matches */
    void *vtable_ctx;
    /* statistics */
    uint64_t words;         /* words examined */
    uint64_t skipped_bytes; /* unreadable bytes skipped */
    uint64_t overflow;      /* pushes refused because the stack was full (never expected) */
} ms_lk_scan;

/* Sorts blocks by address (radix sort, stable) using tmp (n entries) as scratch. */
void ms_lk_sort(ms_lk_block *b, size_t n, ms_lk_block *tmp);

/* Resets marks and prepares a scan. Blocks must be sorted (ms_lk_sort). Overlapping
 * blocks (a corrupt table) are tolerated: lookups find the last one starting at or below
 * the address. */
void ms_lk_init(ms_lk_scan *s, ms_lk_block *b, size_t n, uint32_t *stack, size_t stack_cap,
                ms_lk_view_fn view, void *ctx);

/* Interior pointers of the shapes in `set` (MS_LEAK_H_*) count as start pointers, as
 * valgrind's --leak-check-heuristics: a block reached only so is still reachable, and
 * remembers which heuristic kept it (ms_lk_block.heur) unless a start pointer reaches it
 * too. Call after ms_lk_init, before the roots. */
void ms_lk_set_heuristics(ms_lk_scan *s, unsigned set, ms_lk_vtable_fn is_vtable, void *ctx);

/* Which heuristic of `set` takes interior pointer v into block i for a start pointer:
 * its MS_LEAK_H_* bit index + 1, or 0. Exposed for the unit test. */
unsigned ms_lk_heuristic(const ms_lk_scan *s, size_t i, uint64_t v, unsigned set);

/* Bytes of workspace ms_lk_index_build needs for these blocks (after ms_lk_init). */
size_t ms_lk_index_size(const ms_lk_scan *s);
/* Builds the granule index in mem (ms_lk_index_size bytes, zeroed). Lookups work
 * without it, only slower (a binary search over every block). */
void ms_lk_index_build(ms_lk_scan *s, void *mem, size_t bytes);

/* Index of the block containing address v, or -1. (The mark also ignores a 16-byte
 * aligned pointer into the last 8 bytes of a block: glibc's next-chunk header.) */
long ms_lk_find(const ms_lk_scan *s, uint64_t v);

/* Roots: every aligned 8-byte word of [lo, hi), and single values (registers). */
void ms_lk_root_range(ms_lk_scan *s, uint64_t lo, uint64_t hi);
void ms_lk_root_value(ms_lk_scan *s, uint64_t v);
/* A value the caller knows to be a start pointer even if it is interior (e.g. glibc's
 * DTV pointer, which points one entry into its block). */
void ms_lk_root_start(ms_lk_scan *s, uint64_t v);

/* After all roots: propagates reachability, then possible reachability. */
void ms_lk_mark(ms_lk_scan *s);

/* Splits what is left into cliques: a definitely lost leader and the blocks it holds
 * (indirectly lost); then sets every block's state to its enum ms_leak_class. */
void ms_lk_classify(ms_lk_scan *s);

/* For a definitely or indirectly lost block, the index of the definitely lost block its
 * leak is folded under (itself for a definitely lost one). Valid after classify. */
size_t ms_lk_fold_root(const ms_lk_scan *s, size_t i);

#endif
