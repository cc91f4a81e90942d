/* The leak scan's map of readable memory: /proc/self/maps parsed with raw system calls
 * into caller-provided memory, and the checked view the mark phase reads through.
 * Runs inside the target (in the forked scan child): no malloc, no stdio, no locks. */
#ifndef MS_AGENT_LEAK_MAPS_H
#define MS_AGENT_LEAK_MAPS_H

#include <stddef.h>
#include <stdint.h>

enum {
    MS_LKM_R = 0x1,
    MS_LKM_W = 0x2,
    MS_LKM_X = 0x4,
    MS_LKM_SKIP = 0x8, /* readable but never read: devices, [vvar], [vsyscall] */
    MS_LKM_STACK = 0x10, /* the main thread's [stack] */
    MS_LKM_ANON = 0x20,  /* anonymous memory, or the [heap] */
    MS_LKM_FILE = 0x40,  /* a mapping of a file (its path starts with '/') */
};

typedef struct ms_lk_map {
    uint64_t lo, hi;
    uint32_t flags; /* MS_LKM_* */
    uint32_t reserved;
} ms_lk_map;

#define MS_LK_MAX_OWN 32

typedef struct ms_lk_maps {
    ms_lk_map *m; /* sorted by lo (the kernel lists them so) */
    size_t n, cap;
    size_t truncated; /* mappings that did not fit */
    /* the scanner's own memory, never read as the program's: the kernel may place it
     * in a hole the program left (or merge it with a neighbouring mapping) */
    uint64_t own_lo[MS_LK_MAX_OWN], own_hi[MS_LK_MAX_OWN];
    size_t nown;
    /* the agent's mappings (its tables, and per-thread memory such as the last block
     * a thread allocated), sorted by lo, never read either: a root range that runs
     * past its mapping, as the TLS guess does, may reach one placed right next to it */
    const uint64_t *agent_lo, *agent_hi;
    size_t nagent;
} ms_lk_maps;

/* Declares [lo, hi) as the scanner's own memory. Returns 0, or -1 when full. */
int ms_lk_maps_own(ms_lk_maps *maps, uint64_t lo, uint64_t hi);

/* Reads /proc/self/maps into maps->m (capacity maps->cap). Returns 0 or -errno. */
int ms_lk_maps_read(ms_lk_maps *maps);
/* The mapping containing addr, or NULL. */
const ms_lk_map *ms_lk_maps_find(const ms_lk_maps *maps, uint64_t addr);
/* ms_lk_view_fn over the maps (ctx = ms_lk_maps *): readable and not skipped. With
 * `need_w`, only writable mappings count (for roots that may be large files). */
const void *ms_lk_maps_view(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail);
const void *ms_lk_maps_view_w(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail);

/* ms_lk_vtable_fn over the maps (ctx = ms_lk_maps *): addr lies in a readable file
 * mapping, and of its first 20 words there, skipping zeros, the first two point into
 * executable file mappings (valgrind's test for the multipleinheritance heuristic). */
int ms_lk_maps_is_vtable(void *ctx, uint64_t addr);

/* Text parser of one maps line, exposed for the unit test: returns 1 and fills *out,
 * 0 for an unparsable line. */
int ms_lk_maps_parse_line(const char *s, size_t len, ms_lk_map *out);

#endif
