/* The entry points' cache line (alloc.c): the variants malloc, free, calloc and realloc
 * jump to, and the guard pool's address range, which free() tests every pointer against.
 * One line, read by every call of every thread: a free that tests the range finds it in
 * the line it loads its jump from. Written rarely: the variants once the agent is ready
 * (alloc.c), the range once, when the pool is reserved (guard.c). */
#ifndef MS_AGENT_ENTRY_H
#define MS_AGENT_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "agent/platform/platform.h"

typedef struct ms_entry_fns {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free_maybe)(void *); /* free of a pointer the address filter may know */
} ms_entry_fns;

typedef union ms_entry_line {
    struct {
        ms_entry_fns f;
        /* the guard pool ([guard_lo, guard_lo + guard_span), span 0 until reserved) */
        uintptr_t guard_lo, guard_span;
    } s;
    char line[64];
} ms_entry_line;

extern ms_entry_line ms_entry MS_INTERNAL;

#endif
