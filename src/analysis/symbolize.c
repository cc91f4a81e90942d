/* Offline symbolization with elfutils: each module of a snapshot is reported to one
 * Dwfl at its recorded load bias (after checking its build-id), then pcs are resolved
 * to function, file, line and inlined frames. Never trusts a file whose build-id
 * differs from the recorded one. Tools only. */
#include "analysis/symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* From the C++ runtime (libstdc++), linked into the tools. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_INLINE 32

enum mod_state { MOD_UNTRIED = 0, MOD_OK, MOD_UNAVAILABLE };

/* A module's function symbols sorted by address: elfutils' own address-to-symbol
 * lookup scans the whole table each time, far too slow for thousands of pcs. */
typedef struct sym_entry {
    uint64_t addr, size;
    const char *name;
    int rank; /* prefer global over weak over local names at one address */
} sym_entry;

struct symtab {
    sym_entry *e;
    size_t n;
    int built;
};

typedef struct cache_slot {
    uint64_t key; /* pc << 1 | is_return_address; 0 = empty (pc 0 is never cached) */
    uint32_t first, count;
} cache_slot;

struct ms_symbolizer {
    const ms_snapshot *s;
    Dwfl *dwfl;
    Dwfl_Callbacks cb;
    char *debuginfo_path;
    unsigned char *mod_state; /* per snapshot module */
    struct symtab *symtabs;   /* per snapshot module, built on first use */

    cache_slot *slots;
    size_t nslots, nused;
    ms_frame *frames;
    size_t nframes, capframes;

    char **strings; /* owned strings (demangled names) */
    size_t nstrings, capstrings;

    char **warnings;
    size_t nwarnings;
};

/* ---------------------------------------------------------------------------
 * Small owned-memory helpers.
 * ------------------------------------------------------------------------- */
static const char *own(ms_symbolizer *sym, char *str)
{
    if (!str)
        return NULL;
    if (sym->nstrings == sym->capstrings) {
        size_t cap = sym->capstrings ? sym->capstrings * 2 : 64;
        char **n = realloc(sym->strings, cap * sizeof *n);
        if (!n) {
            free(str);
            return NULL;
        }
        sym->strings = n;
        sym->capstrings = cap;
    }
    sym->strings[sym->nstrings++] = str;
    return str;
}

__attribute__((format(printf, 2, 3))) static void warn(ms_symbolizer *sym, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char **n = realloc(sym->warnings, (sym->nwarnings + 1) * sizeof *n);
    if (!n)
        return;
    sym->warnings = n;
    if ((n[sym->nwarnings] = strdup(line)))
        sym->nwarnings++;
}

static const char *demangle(ms_symbolizer *sym, const char *name)
{
    if (!name || name[0] != '_' || name[1] != 'Z')
        return name;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0 || !d) {
        free(d);
        return name;
    }
    const char *r = own(sym, d);
    return r ? r : name;
}

/* ---------------------------------------------------------------------------
 * Modules: reported lazily, the first time one of their pcs is looked up.
 * ------------------------------------------------------------------------- */
static void hex(const uint8_t *b, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 3 <= outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, "%02x", b[i]);
    if (outlen)
        out[o < outlen ? o : outlen - 1] = 0;
}

/* Whether the ELF file open on fd carries the recorded build-id (or none was recorded);
 * when not, why says so. */
static int build_id_matches(const ms_module *m, int fd, char *why, size_t whylen)
{
    if (m->build_id_len == 0)
        return 1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf) {
        snprintf(why, whylen, "not an ELF file (%s)", elf_errmsg(-1));
        return 0;
    }
    const void *bid = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &bid);
    int ok = n == (ssize_t)m->build_id_len && memcmp(bid, m->build_id, (size_t)n) == 0;
    if (!ok) {
        char want[130], have[130];
        hex(m->build_id, m->build_id_len, want, sizeof want);
        if (n > 0)
            hex(bid, (size_t)n, have, sizeof have);
        else
            snprintf(have, sizeof have, "none");
        snprintf(why, whylen,
                 "build-id %s differs from the recorded %s (the file changed since the snapshot)",
                 have, want);
    }
    elf_end(elf);
    return ok;
}

/* path opened, if it carries the recorded build-id; else -1. */
static int open_checked(const ms_module *m, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char why[256];
    if (build_id_matches(m, fd, why, sizeof why))
        return fd;
    close(fd);
    return -1;
}

/* Looks for <root>/.build-id/xx/yyyy.debug under MEMSIGHT_DEBUG_DIRS (colon-separated)
 * and /usr/lib/debug: the debug file of exactly the recorded build. Returns an open fd
 * (its build-id checked) and its path, or -1. */
static int open_by_build_id(const ms_module *m, char *path, size_t len)
{
    if (m->build_id_len < 2)
        return -1;
    char rest[130];
    hex(m->build_id + 1, m->build_id_len - 1, rest, sizeof rest);
    const char *env = getenv("MEMSIGHT_DEBUG_DIRS");
    char roots[4096];
    snprintf(roots, sizeof roots, "%s%s/usr/lib/debug", env ? env : "", env && *env ? ":" : "");
    for (char *save = NULL, *r = strtok_r(roots, ":", &save); r; r = strtok_r(NULL, ":", &save)) {
        int w = snprintf(path, len, "%s/.build-id/%02x/%s.debug", r, m->build_id[0], rest);
        if (w < 0 || (size_t)w >= len)
            continue;
        int fd = open_checked(m, path);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

/* Looks for the module's path under each root of MEMSIGHT_SYSROOT (colon-separated):
 * the target's own files for a snapshot written on another system (an AArch64 device
 * or qemu-user's -L prefix: /lib/libc.so.6 of the target is <root>/lib/libc.so.6 here).
 * Returns an open fd (its build-id checked) and its path, or -1. */
static int open_in_sysroot(const ms_module *m, char *path, size_t len)
{
    const char *env = getenv("MEMSIGHT_SYSROOT");
    if (!env || !*env)
        return -1;
    char roots[4096];
    snprintf(roots, sizeof roots, "%s", env);
    for (char *save = NULL, *r = strtok_r(roots, ":", &save); r; r = strtok_r(NULL, ":", &save)) {
        int w = snprintf(path, len, "%s%s", r, m->path);
        if (w < 0 || (size_t)w >= len)
            continue;
        int fd = open_checked(m, path);
        if (fd >= 0)
            return fd;
    }
    return -1;
}

static void load_module(ms_symbolizer *sym, size_t idx)
{
    const ms_module *m = &sym->s->modules[idx];
    sym->mod_state[idx] = MOD_UNAVAILABLE;
    if (!m->path || !m->path[0] || m->path[0] == '[')
        return; /* [vdso] and other anonymous modules have no file */
    char why[512] = "";
    const char *file = m->path;
    int fd = -1;
    if (m->path[0] != '/') {
        /* A path relative to a directory the snapshot does not name: musl's loader names
         * the program as it was started (./prog), and agents before this one wrote it so.
         * The program's own path is in META: that file, when its build-id matches. */
        const char *exe = ms_snapshot_meta(sym->s, "exe");
        const char *base = strrchr(m->path, '/'), *ebase = exe ? strrchr(exe, '/') : NULL;
        base = base ? base + 1 : m->path;
        snprintf(why, sizeof why, "a relative path, not the program's");
        if (ebase && strcmp(ebase + 1, base) == 0) {
            fd = open(exe, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                snprintf(why, sizeof why, "a relative path; the program's %s: cannot open (%s)",
                         exe, strerror(errno));
            else if (!build_id_matches(m, fd, why, sizeof why)) {
                close(fd);
                fd = -1;
            } else {
                file = exe;
                warn(sym, "%s: a relative path; using %s, the program's path", m->path, exe);
            }
        }
    } else if ((fd = open(m->path, O_RDONLY | O_CLOEXEC)) < 0) {
        snprintf(why, sizeof why, "cannot open (%s)", strerror(errno));
    } else if (!build_id_matches(m, fd, why, sizeof why)) {
        close(fd);
        fd = -1;
    }
    char dbg[4096];
    if (fd < 0 && m->path[0] == '/' && (fd = open_in_sysroot(m, dbg, sizeof dbg)) >= 0)
        file = dbg;
    if (fd < 0) {
        fd = open_by_build_id(m, dbg, sizeof dbg);
        if (fd < 0) {
            warn(sym, "%s: %s; its frames stay unresolved", m->path, why);
            return;
        }
        warn(sym, "%s: %s; using %s, found by its build-id", m->path, why, dbg);
        file = dbg;
    }
    dwfl_report_begin_add(sym->dwfl);
    Dwfl_Module *dm = dwfl_report_elf(sym->dwfl, m->path, file, fd, m->load_bias, true);
    dwfl_report_end(sym->dwfl, NULL, NULL);
    if (!dm) {
        close(fd);
        warn(sym, "%s: cannot read: %s; its frames stay unresolved", file, dwfl_errmsg(-1));
        return;
    }
    sym->mod_state[idx] = MOD_OK;
}

static int cmp_sym(const void *a, const void *b)
{
    const sym_entry *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return y->rank - x->rank; /* best name first among equal addresses */
}

static void symtab_build(struct symtab *t, Dwfl_Module *dm)
{
    t->built = 1;
    int n = dwfl_module_getsymtab(dm);
    if (n <= 0)
        return;
    t->e = malloc((size_t)n * sizeof *t->e);
    if (!t->e)
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym es;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(dm, i, &es, &addr, &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(es.st_info);
        if (!name || !*name || shndx == SHN_UNDEF ||
            (type != STT_FUNC && type != STT_GNU_IFUNC))
            continue;
        int bind = GELF_ST_BIND(es.st_info);
        t->e[t->n++] = (sym_entry){addr, es.st_size, name,
                                   bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0};
    }
    qsort(t->e, t->n, sizeof *t->e, cmp_sym);
    /* Keep one entry per address (the best-ranked, sorted first). */
    size_t w = 0;
    for (size_t i = 0; i < t->n; i++)
        if (w == 0 || t->e[w - 1].addr != t->e[i].addr)
            t->e[w++] = t->e[i];
    t->n = w;
}

/* The function symbol covering addr, or NULL. */
static const char *symtab_lookup(struct symtab *t, Dwfl_Module *dm, uint64_t addr)
{
    if (!t->built)
        symtab_build(t, dm);
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const sym_entry *e = &t->e[lo - 1];
    if (e->size ? addr - e->addr < e->size : (lo == t->n || addr < t->e[lo].addr))
        return e->name;
    /* A sized symbol may be shadowed by a smaller one that starts inside it. */
    for (size_t k = lo - 1; k-- > 0 && lo - 1 - k < 8;)
        if (t->e[k].size && addr - t->e[k].addr < t->e[k].size)
            return t->e[k].name;
    return NULL;
}

ms_symbolizer *ms_symbolizer_new(const ms_snapshot *s)
{
    ms_symbolizer *sym = calloc(1, sizeof *sym);
    if (!sym)
        return NULL;
    sym->s = s;
    /* Separate debug files: beside the file, then under the debug roots by build-id. */
    const char *env = getenv("MEMSIGHT_DEBUG_DIRS");
    size_t dl = 32 + (env ? strlen(env) : 0);
    sym->debuginfo_path = malloc(dl);
    if (sym->debuginfo_path)
        snprintf(sym->debuginfo_path, dl, "-.debug:%s%s/usr/lib/debug", env ? env : "",
                 env && *env ? ":" : "");
    sym->cb.find_elf = dwfl_build_id_find_elf;
    sym->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    sym->cb.section_address = dwfl_offline_section_address;
    sym->cb.debuginfo_path = &sym->debuginfo_path;
    sym->dwfl = dwfl_begin(&sym->cb);
    sym->mod_state = calloc(s->nmodules ? s->nmodules : 1, 1);
    sym->symtabs = calloc(s->nmodules ? s->nmodules : 1, sizeof *sym->symtabs);
    sym->nslots = 1024;
    sym->slots = calloc(sym->nslots, sizeof *sym->slots);
    if (!sym->dwfl || !sym->mod_state || !sym->symtabs || !sym->slots || !sym->debuginfo_path) {
        ms_symbolizer_free(sym);
        return NULL;
    }
    return sym;
}

void ms_symbolizer_free(ms_symbolizer *sym)
{
    if (!sym)
        return;
    if (sym->dwfl)
        dwfl_end(sym->dwfl);
    free(sym->debuginfo_path);
    free(sym->mod_state);
    for (size_t i = 0; sym->symtabs && i < sym->s->nmodules; i++)
        free(sym->symtabs[i].e);
    free(sym->symtabs);
    free(sym->slots);
    free(sym->frames);
    for (size_t i = 0; i < sym->nstrings; i++)
        free(sym->strings[i]);
    free(sym->strings);
    for (size_t i = 0; i < sym->nwarnings; i++)
        free(sym->warnings[i]);
    free(sym->warnings);
    free(sym);
}

size_t ms_symbolizer_warnings(const ms_symbolizer *sym, const char *const **lines)
{
    *lines = (const char *const *)sym->warnings;
    return sym->nwarnings;
}

/* ---------------------------------------------------------------------------
 * DWARF: function names and inline chains.
 * ------------------------------------------------------------------------- */
static const char *die_string(Dwarf_Die *die, int at)
{
    Dwarf_Attribute attr;
    return dwarf_formstring(dwarf_attr_integrate(die, at, &attr));
}

static const char *die_function_name(ms_symbolizer *sym, Dwarf_Die *die)
{
    const char *n = die_string(die, DW_AT_linkage_name);
    if (!n)
        n = die_string(die, DW_AT_MIPS_linkage_name);
    if (n)
        return demangle(sym, n);
    return die_string(die, DW_AT_name);
}

static int is_function_scope(Dwarf_Die *die)
{
    int tag = dwarf_tag(die);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
           tag == DW_TAG_entry_point;
}

/* Fills out[] from the DWARF scopes at addr; returns the number of frames (0 when the
 * module has no DWARF for it). */
static int dwarf_frames(ms_symbolizer *sym, Dwfl_Module *dm, Dwarf_Addr addr, ms_frame *out,
                        int max_out)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(dm, addr, &bias);
    if (!cu)
        return 0;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(dm, addr);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);

    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cu, addr - bias, &scopes);
    int n = 0;
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    Dwarf_Die die;
    int have = 0;
    for (int i = 0; i < ns && !have; i++)
        if (is_function_scope(&scopes[i])) {
            die = scopes[i];
            have = 1;
        }
    while (have && n < max_out) {
        ms_frame *f = &out[n++];
        f->function = die_function_name(sym, &die);
        f->file = file;
        f->line = line;
        f->inlined = dwarf_tag(&die) == DW_TAG_inlined_subroutine;
        if (!f->inlined)
            break;
        /* The caller's position is the call site recorded on the inlined instance. */
        Dwarf_Attribute attr;
        Dwarf_Word cf = 0, cl = 0;
        file = NULL;
        line = 0;
        if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_file, &attr), &cf) == 0) {
            if (!files)
                dwarf_getsrcfiles(cu, &files, &nfiles);
            if (files && cf < nfiles)
                file = dwarf_filesrc(files, cf, NULL, NULL);
        }
        if (dwarf_formudata(dwarf_attr(&die, DW_AT_call_line, &attr), &cl) == 0)
            line = (int)cl;
        /* dwarf_getscopes follows an inlined instance into its abstract definition;
         * the caller is found among the scopes enclosing the concrete instance. */
        free(scopes);
        scopes = NULL;
        ns = dwarf_getscopes_die(&die, &scopes);
        have = 0;
        for (int i = 1; i < ns && !have; i++)
            if (is_function_scope(&scopes[i])) {
                die = scopes[i];
                have = 1;
            }
    }
    free(scopes);
    return n;
}

/* ---------------------------------------------------------------------------
 * Lookup with a per-pc cache.
 * ------------------------------------------------------------------------- */
static uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static cache_slot *cache_find(ms_symbolizer *sym, uint64_t key)
{
    size_t mask = sym->nslots - 1;
    for (size_t i = hash64(key) & mask;; i = (i + 1) & mask)
        if (sym->slots[i].key == key || sym->slots[i].key == 0)
            return &sym->slots[i];
}

static int cache_grow(ms_symbolizer *sym)
{
    cache_slot *old = sym->slots;
    size_t oldn = sym->nslots;
    sym->slots = calloc(oldn * 2, sizeof *sym->slots);
    if (!sym->slots) {
        sym->slots = old;
        return -1;
    }
    sym->nslots = oldn * 2;
    for (size_t i = 0; i < oldn; i++)
        if (old[i].key)
            *cache_find(sym, old[i].key) = old[i];
    free(old);
    return 0;
}

static void resolve(ms_symbolizer *sym, uint64_t pc, int is_ret, ms_frame *out, int *n)
{
    const ms_snapshot *s = sym->s;
    uint64_t addr = is_ret && pc > 0 ? pc - 1 : pc;
    const ms_module *m = ms_snapshot_module_for_pc(s, addr);
    ms_frame base = {.address = pc};
    if (m) {
        base.module = m->path;
        base.module_offset = pc - m->load_bias;
        size_t idx = (size_t)(m - s->modules);
        if (sym->mod_state[idx] == MOD_UNTRIED)
            load_module(sym, idx);
        if (sym->mod_state[idx] != MOD_OK)
            m = NULL;
    }
    Dwfl_Module *dm = m ? dwfl_addrmodule(sym->dwfl, addr) : NULL;
    *n = 0;
    if (dm)
        *n = dwarf_frames(sym, dm, addr, out, MAX_INLINE);
    if (dm && (*n == 0 || !out[*n - 1].function)) {
        /* No DWARF here: the ELF symbol tables (.symtab, else .dynsym) give the function. */
        const char *name = symtab_lookup(&sym->symtabs[m - s->modules], dm, addr);
        if (*n == 0) {
            out[0] = base;
            Dwfl_Line *l = dwfl_module_getsrc(dm, addr);
            if (l)
                out[0].file = dwfl_lineinfo(l, NULL, &out[0].line, NULL, NULL, NULL);
            *n = 1;
        }
        out[*n - 1].function = demangle(sym, name);
    }
    if (*n == 0) {
        out[0] = base;
        *n = 1;
    }
    for (int i = 0; i < *n; i++) {
        out[i].address = pc;
        out[i].module = base.module;
        out[i].module_offset = base.module_offset;
        if (out[i].line < 0)
            out[i].line = 0;
    }
}

int ms_symbolize(ms_symbolizer *sym, uint64_t pc, int is_return_address, ms_frame *out,
                 int max_out)
{
    if (max_out < 1)
        return 0;
    uint64_t key = pc << 1 | (is_return_address ? 1u : 0u);
    cache_slot *slot = key ? cache_find(sym, key) : NULL;
    if (!slot || slot->key == 0) {
        ms_frame tmp[MAX_INLINE];
        int n = 0;
        resolve(sym, pc, is_return_address, tmp, &n);
        if (sym->nframes + (size_t)n > sym->capframes) {
            size_t cap = sym->capframes ? sym->capframes * 2 : 1024;
            while (cap < sym->nframes + (size_t)n)
                cap *= 2;
            ms_frame *f = realloc(sym->frames, cap * sizeof *f);
            if (!f) { /* no room to cache: answer without caching */
                int k = n < max_out ? n : max_out;
                memcpy(out, tmp, (size_t)k * sizeof *out);
                return k;
            }
            sym->frames = f;
            sym->capframes = cap;
        }
        memcpy(sym->frames + sym->nframes, tmp, (size_t)n * sizeof *tmp);
        if (!slot) {
            int k = n < max_out ? n : max_out;
            memcpy(out, tmp, (size_t)k * sizeof *out);
            return k;
        }
        slot->key = key;
        slot->first = (uint32_t)sym->nframes;
        slot->count = (uint32_t)n;
        sym->nframes += (size_t)n;
        if (++sym->nused * 2 > sym->nslots && cache_grow(sym) == 0)
            slot = cache_find(sym, key);
    }
    int k = (int)slot->count < max_out ? (int)slot->count : max_out;
    memcpy(out, sym->frames + slot->first, (size_t)k * sizeof *out);
    return k;
}
