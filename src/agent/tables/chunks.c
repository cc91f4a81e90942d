/* Tables that grow with use (chunks.h). Runs inside the target: mmap only, no lock. */
#include "agent/tables/chunks.h"

#include "agent/tables/tables.h"

int ms_chunks_init(ms_chunks *c, uint64_t capacity, unsigned shift, size_t elem)
{
    return ms_chunks_init_tail(c, capacity, shift, elem, 0);
}

int ms_chunks_init_tail(ms_chunks *c, uint64_t capacity, unsigned shift, size_t elem, size_t tail)
{
    c->shift = shift;
    c->elem = elem;
    c->tail = tail;
    c->nchunks = (capacity + (1ull << shift) - 1) >> shift;
    if (c->nchunks == 0)
        c->nchunks = 1;
    c->dir = ms_sys_mmap(c->nchunks * sizeof(void *));
    return c->dir ? 0 : -1;
}

void ms_table_grow_failed(void)
{
    static int told;
    MS_HEALTH_INC(table_grow_failures);
    if (__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
        return;
    static const char *const parts[] = {
        "a table of the agent could not grow (no address space or memory left): records "
        "from now on may be dropped, the snapshot's health counts them (table_grow_failures)"};
    ms_say(parts, 1);
}

int ms_chunks_ensure(ms_chunks *c, uint64_t i)
{
    uint64_t k = i >> c->shift;
    if (k >= c->nchunks)
        return -1;
    if (__atomic_load_n(&c->dir[k], __ATOMIC_ACQUIRE))
        return 0;
    size_t bytes = ((size_t)c->elem << c->shift) + c->tail;
    void *p = ms_sys_mmap(bytes);
    if (!p) { /* counted once per chunk that could not be mapped, not per attempt */
        if (__atomic_exchange_n(&c->failed_at, k + 1, __ATOMIC_RELAXED) != k + 1)
            ms_table_grow_failed();
        return -1;
    }
    void *none = 0;
    if (!__atomic_compare_exchange_n(&c->dir[k], &none, p, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        ms_sys_munmap(p, bytes); /* another thread mapped it first */
    return 0;
}

uint64_t ms_chunks_mapped(const ms_chunks *c)
{
    uint64_t n = 0;
    for (uint64_t k = 0; k < c->nchunks; k++)
        n += __atomic_load_n(&c->dir[k], __ATOMIC_RELAXED) != 0;
    return n * (((uint64_t)c->elem << c->shift) + c->tail);
}
