/* Loaded modules' ELF data (elf_mod.h). */
#define _GNU_SOURCE
#include "agent/platform/elf_mod.h"

#include <elf.h>
#include <string.h>
#include <unistd.h>

/* 1 if [p, p+n) lies inside one PT_LOAD segment of the module. */
int ms_mod_has(const ms_mod_view *m, uintptr_t p, size_t n)
{
    if (p + n < p)
        return 0;
    for (int i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *ph = &m->phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = m->base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (p >= lo && p + n <= hi)
            return 1;
    }
    return 0;
}

/* A d_ptr value as an address: the loader relocates most of them in place, but not all
 * loaders do; accept whichever reading lands inside the module. */
static uintptr_t ms_mod_ptr(const ms_mod_view *m, uintptr_t v, size_t n)
{
    if (ms_mod_has(m, v, n))
        return v;
    if (v + m->base >= v && ms_mod_has(m, v + m->base, n))
        return v + m->base;
    return 0;
}

static uint32_t ms_gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static uint32_t ms_elf_hash(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++) {
        h = (h << 4) + (unsigned char)*s;
        uint32_t g = h & 0xf0000000u;
        h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* The symbol at idx if it lies inside the module and is named `name`. */
static ElfW(Sym) *ms_sym_named(const ms_mod_view *m, const ms_mod_syms *y, uint32_t idx,
                               const char *name)
{
    uintptr_t sa = y->symtab + (uintptr_t)idx * sizeof(ElfW(Sym));
    if (sa < y->symtab || !ms_mod_has(m, sa, sizeof(ElfW(Sym))))
        return NULL;
    ElfW(Sym) *sym = (ElfW(Sym) *)sa;
    size_t n = strlen(name);
    if (sym->st_name >= y->strsz || y->strsz - sym->st_name <= n ||
        memcmp((const char *)y->strtab + sym->st_name, name, n + 1) != 0)
        return NULL;
    return sym;
}

/* 1 with m and d filled, 0 for a module with nothing to patch, -1 for one whose dynamic
 * section fails a bounds check. */
int ms_mod_open(const struct dl_phdr_info *info, ms_mod_view *m, ms_mod_dyn *d)
{
    *m = (ms_mod_view){.base = info->dlpi_addr, .phdr = info->dlpi_phdr, .phnum = info->dlpi_phnum};
    if (!m->phdr || m->phnum <= 0)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    size_t ndyn = 0;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *ph = &m->phdr[i];
        if (ph->p_type == PT_DYNAMIC) {
            dyn = (const ElfW(Dyn) *)(m->base + ph->p_vaddr);
            ndyn = ph->p_memsz / sizeof(ElfW(Dyn));
        } else if (ph->p_type == PT_GNU_RELRO) {
            /* the loader protects whole pages only: the last partial page stays writable */
            m->relro_lo = (m->base + ph->p_vaddr) & ~(pg - 1);
            m->relro_hi = (m->base + ph->p_vaddr + ph->p_memsz) & ~(pg - 1);
        }
    }
    if (!dyn || !ndyn || !ms_mod_has(m, (uintptr_t)dyn, ndyn * sizeof(ElfW(Dyn))))
        return 0; /* a static module has nothing to patch */
    *d = (ms_mod_dyn){0};
    int pltrel_rela = 1;
    for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        uintptr_t v = dyn[i].d_un.d_ptr;
        switch (dyn[i].d_tag) {
        case DT_JMPREL: d->jmprel = v; break;
        case DT_PLTRELSZ: d->pltrelsz = v; break;
        case DT_PLTREL: pltrel_rela = v == DT_RELA; break;
        case DT_RELA: d->rela = v; break;
        case DT_RELASZ: d->relasz = v; break;
        case DT_SYMTAB: d->symtab = v; break;
        case DT_STRTAB: d->strtab = v; break;
        case DT_STRSZ: d->strsz = v; break;
        case DT_GNU_HASH: d->gnuhash = v; break;
        case DT_HASH: d->hash = v; break;
        default: break;
        }
    }
    int bad = 0;
    if (!d->symtab || !d->strtab || !d->strsz)
        return 0;
    d->symtab = ms_mod_ptr(m, d->symtab, sizeof(ElfW(Sym)));
    d->strtab = ms_mod_ptr(m, d->strtab, d->strsz);
    bad |= !d->symtab || !d->strtab;
    if (d->jmprel && d->pltrelsz && pltrel_rela) {
        d->jmprel = ms_mod_ptr(m, d->jmprel, d->pltrelsz);
        bad |= !d->jmprel;
    } else {
        d->jmprel = 0;
    }
    if (d->rela && d->relasz) {
        d->rela = ms_mod_ptr(m, d->rela, d->relasz);
        bad |= !d->rela;
    } else {
        d->rela = 0;
    }
    return bad ? -1 : 1;
}

ms_mod_syms ms_mod_syms_of(const ms_mod_view *m, const ms_mod_dyn *d)
{
    return (ms_mod_syms){.symtab = d->symtab, .strtab = d->strtab, .strsz = d->strsz,
                         .gnuhash = d->gnuhash ? ms_mod_ptr(m, d->gnuhash, 16) : 0,
                         .hash = d->hash ? ms_mod_ptr(m, d->hash, 8) : 0};
}

/* The hash tables are bounds-checked like the rest. */
uint64_t ms_mod_each_named(const ms_mod_view *m, const ms_mod_syms *y, const char *name,
                           ms_mod_sym_fn fn, void *arg)
{
    uint64_t n = 0;
    if (y->gnuhash && ms_mod_has(m, y->gnuhash, 16)) {
        const uint32_t *h = (const uint32_t *)y->gnuhash;
        uint32_t nb = h[0], symoff = h[1], bloom = h[2];
        if (!nb || bloom > (1u << 24))
            return 0;
        uintptr_t buckets = y->gnuhash + 16 + (uintptr_t)bloom * sizeof(ElfW(Addr));
        uintptr_t chain = buckets + (uintptr_t)nb * 4;
        uint32_t hv = ms_gnu_hash(name);
        uintptr_t bp = buckets + (uintptr_t)(hv % nb) * 4;
        if (!ms_mod_has(m, bp, 4))
            return 0;
        uint32_t i = *(const uint32_t *)bp;
        for (uint32_t k = 0; i >= symoff && k < (1u << 20); k++, i++) {
            uintptr_t cp = chain + (uintptr_t)(i - symoff) * 4;
            if (!ms_mod_has(m, cp, 4))
                break;
            uint32_t cv = *(const uint32_t *)cp;
            ElfW(Sym) *sym = (cv | 1) == (hv | 1) ? ms_sym_named(m, y, i, name) : NULL;
            if (sym)
                n += (uint64_t)fn(m, sym, arg);
            if (cv & 1)
                break;
        }
        return n;
    }
    if (y->hash && ms_mod_has(m, y->hash, 8)) {
        const uint32_t *h = (const uint32_t *)y->hash;
        uint32_t nb = h[0], nc = h[1];
        if (!nb || !ms_mod_has(m, y->hash, 8 + ((size_t)nb + nc) * 4))
            return 0;
        uint32_t i = h[2 + ms_elf_hash(name) % nb];
        for (uint32_t k = 0; i && i < nc && k < nc; k++, i = h[2 + nb + i]) {
            ElfW(Sym) *sym = ms_sym_named(m, y, i, name);
            if (sym)
                n += (uint64_t)fn(m, sym, arg);
        }
    }
    return n;
}

typedef struct ms_mod_at {
    uintptr_t p;
    const char *name, *file;
    size_t size;
    int found;
} ms_mod_at;

static uint64_t ms_mod_size_if_at(const ms_mod_view *m, ElfW(Sym) *sym, void *arg)
{
    ms_mod_at *a = arg;
    if (sym->st_shndx == SHN_UNDEF || m->base + sym->st_value != a->p || !sym->st_size)
        return 0;
    a->size = (size_t)sym->st_size;
    return 1;
}

static int ms_mod_at_walk(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    ms_mod_at *a = arg;
    ms_mod_view m = {.base = info->dlpi_addr, .phdr = info->dlpi_phdr, .phnum = info->dlpi_phnum};
    if (!m.phdr || m.phnum <= 0 || !ms_mod_has(&m, a->p, 1))
        return 0;
    a->found = 1;
    a->file = info->dlpi_name ? info->dlpi_name : "";
    ms_mod_dyn d;
    if (a->name && ms_mod_open(info, &m, &d) == 1) {
        ms_mod_syms y = ms_mod_syms_of(&m, &d);
        ms_mod_each_named(&m, &y, a->name, ms_mod_size_if_at, a);
    }
    return 1;
}

int ms_mod_func_at(const void *p, const char *name, const char **file, size_t *size)
{
    ms_mod_at a = {.p = (uintptr_t)p, .name = name};
    if (!p)
        return 0;
    dl_iterate_phdr(ms_mod_at_walk, &a);
    if (file)
        *file = a.file;
    if (size)
        *size = a.size;
    return a.found;
}
