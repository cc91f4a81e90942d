/* The leak scan's mark and classify on a synthetic heap, for bench-leak-mark.sh (counted
 * under callgrind): N blocks of 64 bytes in one arena, a tree of start pointers from one
 * root (each block holds its two children), and in every block one interior pointer
 * 8 bytes into another block: reached anyway by the tree, but found before it half of
 * the time, so the heuristics run for it. Reads through the agent's real view
 * (leak_maps.c) over one mapping.
 * usage: bench-leak-mark N HEURISTICS (MS_LEAK_H_* bits as a number) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/leak/leak_maps.h"
#include "agent/leak/leak_mark.h"
#include "memsight/snapshot_format.h"

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    unsigned heur = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 0;
    uint64_t *arena = aligned_alloc(4096, (n * 64 + 4096 + 4095) & ~(size_t)4095);
    ms_lk_block *b = calloc(n, sizeof *b), *tmp = calloc(n, sizeof *tmp);
    uint32_t *stk = calloc(n, sizeof *stk);
    if (!arena || !b || !tmp || !stk)
        return 1;
    uint64_t base = (uint64_t)(uintptr_t)arena + 4096; /* the root page first */
    memset(arena, 0, n * 64 + 4096);
    for (size_t i = 0; i < n; i++) {
        uint64_t *w = (uint64_t *)(uintptr_t)(base + i * 64);
        w[0] = 5; /* a count that divides nothing here: newarray and length64 say no */
        if (2 * i + 1 < n)
            w[2] = base + (2 * i + 1) * 64;
        if (2 * i + 2 < n)
            w[3] = base + (2 * i + 2) * 64;
        w[4] = base + ((i * 7919 + 13) % n) * 64 + 8;
        b[i].addr = base + i * 64;
        b[i].size = 64;
    }
    arena[0] = base;
    static ms_lk_map one;
    ms_lk_maps maps;
    memset(&maps, 0, sizeof maps);
    one.lo = (uint64_t)(uintptr_t)arena;
    one.hi = base + n * 64;
    one.flags = MS_LKM_R | MS_LKM_W | MS_LKM_ANON;
    maps.m = &one;
    maps.n = 1;
    ms_lk_scan s;
    ms_lk_sort(b, n, tmp);
    ms_lk_init(&s, b, n, stk, n, ms_lk_maps_view, &maps);
    size_t ib = ms_lk_index_size(&s);
    void *idx = calloc(1, ib);
    ms_lk_index_build(&s, idx, ib);
    ms_lk_set_heuristics(&s, heur, ms_lk_maps_is_vtable, &maps);
    ms_lk_root_range(&s, (uint64_t)(uintptr_t)arena, base);
    ms_lk_mark(&s);
    ms_lk_classify(&s);
    size_t reach = 0;
    for (size_t i = 0; i < n; i++)
        reach += b[i].state == MS_LEAK_REACHABLE;
    printf("blocks=%zu reachable=%zu words=%llu\n", n, reach, (unsigned long long)s.words);
    return reach == n ? 0 : 2;
}
