/* libFuzzer target for the suppression-file parser and what uses its rules: the bytes are
 * read as a suppression file (from memory, as ms_supp_load reads a file); the rules it
 * accepts are applied to a small snapshot whose frames have names, files and modules
 * (leak records of every class) and their hits written; the first line is also tried as
 * a --filter-function name. Any crash, leak or sanitizer report is a bug, and so is a
 * class total that grows or a record kept twice. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/suppress.h"

static char *dup_or_die(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

/* Three stacks over one module, their functions named the way an imported dump names
 * them (META sym.<pc>), and a leak record of every class. */
static ms_snapshot *fixture(void)
{
    static const char *const names[][2] = {
        {"sym.index", "3"},
        {"sym.401000", "leaky_alloc"},
        {"sym.401100", "std::vector<int, std::allocator<int> >::push_back(int const&)"},
        {"sym.401200", "main"},
    };
    static const uint64_t pcs[3][3] = {{0x401000, 0x401100, 0x401200}, {0x401100, 0x401200, 0},
                                       {0x401200, 0, 0}};
    ms_snapshot *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->path = dup_or_die("fixture.msnap");
    s->nmeta = sizeof names / sizeof names[0];
    s->meta = calloc(s->nmeta, sizeof *s->meta);
    s->nmodules = 1;
    s->modules = calloc(1, sizeof *s->modules);
    s->nstacks = 3;
    s->stacks = calloc(3, sizeof *s->stacks);
    s->nleaks = 4;
    s->leaks = calloc(4, sizeof *s->leaks);
    if (!s->meta || !s->modules || !s->stacks || !s->leaks)
        abort();
    for (size_t i = 0; i < s->nmeta; i++)
        s->meta[i] = (ms_kv){dup_or_die(names[i][0]), dup_or_die(names[i][1])};
    s->modules[0].path = dup_or_die("/usr/lib/x86_64-linux-gnu/libfuzzed.so.1");
    s->modules[0].nseg = 1;
    s->modules[0].segs = calloc(1, sizeof *s->modules[0].segs);
    if (!s->modules[0].segs)
        abort();
    s->modules[0].segs[0].vaddr = 0x400000;
    s->modules[0].segs[0].memsz = 0x10000;
    for (uint32_t i = 0; i < 3; i++) {
        ms_stack *st = &s->stacks[i];
        st->id = i + 1;
        st->depth = 3 - i;
        st->pcs = calloc(3, sizeof *st->pcs);
        if (!st->pcs)
            abort();
        memcpy(st->pcs, pcs[i], sizeof pcs[i]);
        st->c.live_blocks = st->c.alloc_blocks = 10 + i;
        st->c.live_bytes = st->c.alloc_bytes = 1000 * (i + 1);
    }
    s->has_leaks = 1;
    for (uint32_t c = 0; c < 4; c++) {
        s->leaks[c] = (ms_snap_leak_rec){.stack_id = c % 3 + 1, .leak_class = (uint8_t)c,
                                         .blocks = 2 + c, .bytes = 64 * (c + 1)};
        s->leak_summary.blocks[c] = 2 + c;
        s->leak_summary.bytes[c] = 64 * (c + 1);
    }
    return s;
}

static void check_totals(const ms_snapshot *s)
{
    uint64_t blocks[MS_LEAK_CLASS_COUNT] = {0};
    for (size_t i = 0; i < s->nleaks; i++)
        blocks[s->leaks[i].leak_class] += s->leaks[i].blocks;
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++)
        if (s->leak_summary.blocks[c] != blocks[c] || s->leak_summary.blocks[c] > 2 + c)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    char err[512];
    ms_suppressions *sp = ms_supp_parse(f, "fuzz.supp", err, sizeof err);
    fclose(f);
    if (!sp && !strstr(err, "fuzz.supp"))
        abort(); /* every error names the file */
    FILE *null = fopen("/dev/null", "w");
    if (sp) {
        ms_snapshot *s = fixture();
        long dropped = ms_supp_apply(s, NULL, sp);
        if (dropped < 0 || (size_t)dropped + s->nleaks != 4)
            abort();
        int reachable = 0;
        for (size_t i = 0; i < s->nleaks; i++)
            reachable += s->leaks[i].leak_class == MS_LEAK_REACHABLE;
        if (reachable != 1) /* reachable blocks are no leak: never suppressed */
            abort();
        check_totals(s);
        if (null)
            ms_supp_write(sp, "fuzz: ", null);
        ms_snapshot_free(s);
        ms_supp_free(sp);
    }
    const uint8_t *nl = memchr(data, '\n', size);
    size_t n = nl ? (size_t)(nl - data) : size;
    if (n > 0 && n < 256 && !memchr(data, 0, n)) {
        char name[256];
        memcpy(name, data, n);
        name[n] = 0;
        ms_snapshot *s = fixture();
        long kept = ms_filter_function(s, NULL, name);
        if (kept < 0 || (size_t)kept != s->nstacks || s->nstacks > 3)
            abort();
        ms_snapshot_free(s);
    }
    if (null)
        fclose(null);
    return 0;
}
