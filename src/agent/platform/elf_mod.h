/* A loaded module's ELF data as the loader mapped it: its segments, its dynamic section's
 * tables, the definitions of a name (every symbol version). Shared by the GOT hooks and
 * the start-up look-ups of C library functions. Every read is bounds-checked against the
 * module's own loaded segments first. Runs inside the target: no malloc. */
#ifndef MS_AGENT_ELF_MOD_H
#define MS_AGENT_ELF_MOD_H

#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/platform/platform.h"

typedef struct ms_mod_view {
    uintptr_t base;
    const ElfW(Phdr) *phdr;
    int phnum;
    uintptr_t relro_lo, relro_hi; /* pages the loader made read-only (0, 0: none) */
} ms_mod_view;

/* The tables of a module's dynamic section, bounds-checked. */
typedef struct ms_mod_dyn {
    uintptr_t jmprel, rela, symtab, strtab, gnuhash, hash;
    size_t pltrelsz, relasz, strsz;
} ms_mod_dyn;

/* What a name look-up needs (hash tables 0 when absent or out of bounds). */
typedef struct ms_mod_syms {
    uintptr_t symtab, strtab, gnuhash, hash;
    size_t strsz;
} ms_mod_syms;

/* 1 if [p, p+n) lies inside one PT_LOAD segment of the module. */
int ms_mod_has(const ms_mod_view *m, uintptr_t p, size_t n) MS_INTERNAL;
/* 1 with m and d filled, 0 for a module without a dynamic symbol table, -1 for one whose
 * dynamic section fails a bounds check. */
int ms_mod_open(const struct dl_phdr_info *info, ms_mod_view *m, ms_mod_dyn *d) MS_INTERNAL;
/* The look-up tables of an opened module. */
ms_mod_syms ms_mod_syms_of(const ms_mod_view *m, const ms_mod_dyn *d) MS_INTERNAL;

/* Calls fn for every symbol named `name` in the module (each version, defined or not)
 * and returns the sum of what it returned. */
typedef uint64_t (*ms_mod_sym_fn)(const ms_mod_view *m, ElfW(Sym) *sym, void *arg);
uint64_t ms_mod_each_named(const ms_mod_view *m, const ms_mod_syms *y, const char *name,
                           ms_mod_sym_fn fn, void *arg) MS_INTERNAL;

/* The loaded module whose segments hold p: its file name as the loader knows it ("" for
 * the main program) and the size of the function `name` if one of its definitions begins
 * exactly at p (0 otherwise). 0 when no module holds p. Unlike dladdr, which scans every
 * symbol of the module, the name is looked up through the module's hash table. */
int ms_mod_func_at(const void *p, const char *name, const char **file, size_t *size) MS_INTERNAL;

#endif
