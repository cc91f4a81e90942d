/* Tables that grow with use: an array of fixed-size elements mapped in chunks as they
 * are first needed, found through a directory of chunk pointers. Elements never move, so
 * lock-free readers keep their pointers; the address space taken is what is used plus a
 * chunk, not the table's capacity (a program under `ulimit -v` keeps its memory).
 * Runs inside the target: mmap only, a CAS to publish a chunk, never a lock. */
#ifndef MS_AGENT_CHUNKS_H
#define MS_AGENT_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

typedef struct ms_chunks {
    void **dir;        /* one pointer per chunk (mmap'ed), NULL until mapped */
    uint64_t nchunks;
    unsigned shift;    /* 1 << shift elements per chunk */
    size_t elem;       /* bytes per element */
    size_t tail;       /* bytes after each chunk's elements, for its user (0: none) */
    uint64_t failed_at; /* 1 + the last chunk that could not be mapped */
} ms_chunks;

/* A directory for `capacity` elements; 0 or -1 (no memory). */
int ms_chunks_init(ms_chunks *c, uint64_t capacity, unsigned shift, size_t elem)
    __attribute__((visibility("hidden")));
/* The same, each chunk mapped with `tail` more bytes after its elements (zeroed, like
 * them): per-element data its user keeps apart from the elements, found from the chunk
 * pointer the element's look-up already loaded. */
int ms_chunks_init_tail(ms_chunks *c, uint64_t capacity, unsigned shift, size_t elem,
                        size_t tail) __attribute__((visibility("hidden")));
/* Maps the chunk holding element i if it is not yet: 0, or -1 when it cannot be mapped
 * (counted once per chunk in the health counter table_grow_failures) or i is beyond the capacity. */
int ms_chunks_ensure(ms_chunks *c, uint64_t i) __attribute__((visibility("hidden")));

/* Element i, or NULL when its chunk is not mapped (any i is safe to ask for). */
static inline void *ms_chunks_get(const ms_chunks *c, uint64_t i)
{
    uint64_t k = i >> c->shift;
    if (k >= c->nchunks)
        return 0;
    char *b = (char *)__atomic_load_n(&c->dir[k], __ATOMIC_ACQUIRE);
    return b ? b + (i & ((1ull << c->shift) - 1)) * c->elem : 0;
}

/* Element i of a chunk known to be mapped (ms_chunks_ensure succeeded for it). */
static inline void *ms_chunks_at(const ms_chunks *c, uint64_t i)
{
    char *b = (char *)__atomic_load_n(&c->dir[i >> c->shift], __ATOMIC_ACQUIRE);
    return b + (i & ((1ull << c->shift) - 1)) * c->elem;
}

/* ms_chunks_at for a table whose chunk shift and element type are constants (the hot
 * tables): no loads of c->shift and c->elem, no multiplication. */
#define MS_CHUNKS_AT(c, i, shift, type)                                                  \
    ((type *)__atomic_load_n(&(c)->dir[(uint64_t)(i) >> (shift)], __ATOMIC_ACQUIRE) +     \
     ((uint64_t)(i) & ((1ull << (shift)) - 1)))

/* Bytes of the chunks mapped so far (their tails included). */
uint64_t ms_chunks_mapped(const ms_chunks *c) __attribute__((visibility("hidden")));

#endif
