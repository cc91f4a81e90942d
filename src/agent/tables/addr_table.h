/* Recorded blocks found by address, for the modes that record few blocks (sample=,
 * min_size=): such blocks carry no header (a header moved every recorded block into the
 * allocator's next size class), so free() must tell them from the many plain ones by
 * their address alone. A filter of counters answers "certainly plain" with one load for
 * almost every plain block; behind it, a table keyed by address gives the live entry.
 * Runs inside the target: no malloc (agent mappings), short spinlocks per shard, none
 * held across fork. */
#ifndef MS_AGENT_ADDR_TABLE_H
#define MS_AGENT_ADDR_TABLE_H

#include <stdint.h>

#include "agent/tables/tables.h"

/* 1: recorded blocks carry no header and are kept here (set once at start, kept by forked
 * children and across detach/attach, since blocks recorded either way outlive a mode). */
extern int ms_addr_mode MS_INTERNAL;

/* 2^MS_ADDR_FILTER_BITS one-byte counters of the live recorded blocks whose address
 * maps there (saturating: a counter that reached 255 stays). A block's counter is its
 * 16-byte granule within a 4 MiB window plus the window's number: blocks close in memory
 * share the filter's cache lines (one line per KiB of heap), so a program freeing its
 * blocks in any local order finds them in the L1 cache (a scattering hash made this load
 * the plain free's main cost: a cache miss per call). With N recorded live blocks a plain
 * block's free looks in the table with probability about N / 2^18 (a heap within one
 * window: never); 2^16 counters sent 2% of python3's plain frees at sample=4096 to the
 * table, each a cache miss or two there. The bootstrap arena's blocks are held here too
 * (ms_addr_hold): free() finds them behind a "maybe", not by a range compare of its own. */
#define MS_ADDR_FILTER_BITS 18
/* In the agent's bss, its pages touched only in these modes and only where the heap is
 * (at most 256 KiB): free() finds it at a fixed offset, without loading a pointer. */
extern uint8_t ms_addr_filter[1u << MS_ADDR_FILTER_BITS] MS_INTERNAL;

/* The granule (address bits 4..21) plus the window (bits 22..39), modulo 2^18, as the
 * top bits of one product: p * (2^42 + 2^24) holds granule << 46 and window << 46 and,
 * below bit 46, less than 2^46 for a 16-byte aligned p (no carry); bits 40 and up (a
 * pointer tag among them) fall off. One multiplication and a shift where shifts, xor and
 * mask took five instructions on free's path; the constant hidden from GCC, which would
 * rebuild the product from shifts. */
static inline uint32_t ms_addr_hash(const void *p)
{
    uint64_t m = (1ull << (46 - 4)) + (1ull << (46 - 22));
    __asm__("" : "+r"(m));
    return (uint32_t)(((uint64_t)(uintptr_t)p * m) >> (64 - MS_ADDR_FILTER_BITS));
}

/* 0 when p is certainly not a recorded block: the check free() makes for every block. */
static inline int ms_addr_maybe(const void *p)
{
    return ms_addr_filter[ms_addr_hash(p)] != 0;
}

/* A bootstrap-arena block (never freed): its counter raised for good. */
void ms_addr_hold(const void *p) MS_INTERNAL;

/* Turns the mode on (after the real allocator's functions are resolved: free() reaches
 * them through the filter without asking whether the agent is ready). 0. */
int ms_addr_init(void) MS_INTERNAL;
/* Keeps p -> live index idx. 0, or -ENOMEM when the table cannot grow (not kept). When
 * p was kept already (its block freed behind the agent's back, by an allocator's own
 * entry point: tc_free, dallocx, mi_free, and handed out again), *stale gets the index it
 * had, which the caller forgets; else 0. */
int ms_addr_insert(const void *p, uint32_t idx, uint32_t *stale) MS_INTERNAL;
/* Forgets p: the live index kept for it, or 0 when none was. */
uint32_t ms_addr_remove(const void *p) MS_INTERNAL;
/* Blocks kept, and agent memory the table and filter take (for HLTH). */
uint64_t ms_addr_count(void) MS_INTERNAL;
uint64_t ms_addr_bytes_reserved(void) MS_INTERNAL;
void ms_addr_fork_prepare(void) MS_INTERNAL;
void ms_addr_fork_parent(void) MS_INTERNAL;
void ms_addr_fork_child(void) MS_INTERNAL;

#endif
