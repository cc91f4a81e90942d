/* GOT (PLT) hooks: for an agent dlopen'ed into a running program, rewrites the JUMP_SLOT
 * and GLOB_DAT slots of the hooked names in every loaded module so that the program's
 * calls reach the agent, and re-runs after every dlopen made through the hook.
 * Runs inside the target: no malloc, no stdio, no lock held; ELF data is bounds-checked
 * against the module's own loaded segments before it is read or written. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/arch/arch.h"
#include "agent/platform/elf_mod.h"
#include "agent/platform/got_hook.h"
#include "agent/libc/libc.h"

static void *ms_got_dlopen(const char *name, int flags);

/* The names whose slots are rewritten (and whose definitions are redirected, dlopen
 * excepted: see ms_got_dlopen); `own` is filled by ms_got_prepare(). `takes`:
 * the function accepts a pointer from an allocator (free, realloc, ...). Those slots are
 * patched first, in every module, and only then the ones that hand out blocks with an
 * agent header: no thread can pass such a block to an unpatched free meanwhile. */
static struct {
    const char *name;
    void *own;
    int takes;
} ms_got_table[] = {
    {"free", NULL, 1},           {"realloc", NULL, 1},        {"reallocarray", NULL, 1},
    {"malloc_usable_size", NULL, 1}, {"munmap", NULL, 1},     {"mremap", NULL, 1},
    {"mprotect", NULL, 1},       {"dlclose", NULL, 1},        {"pthread_join", NULL, 1},
    {"pthread_tryjoin_np", NULL, 1}, {"pthread_timedjoin_np", NULL, 1},
    {"pthread_clockjoin_np", NULL, 1},
    {"pthread_detach", NULL, 1}, {"pthread_exit", NULL, 1},   {"malloc", NULL, 0},
    {"calloc", NULL, 0},         {"memalign", NULL, 0},       {"posix_memalign", NULL, 0},
    {"aligned_alloc", NULL, 0},  {"valloc", NULL, 0},         {"pvalloc", NULL, 0},
    {"mmap", NULL, 0},           {"mmap64", NULL, 0},         {"pthread_create", NULL, 0},
    {"_exit", NULL, 0},          {"_Exit", NULL, 0},          {"dlopen", NULL, 0},
};
#define MS_GOT_N (sizeof ms_got_table / sizeof ms_got_table[0])
#define MS_GOT_DLOPEN (MS_GOT_N - 1)

static ms_got_stats ms_got_st;
static int ms_got_prepared;
static int ms_got_off; /* detached (memsight detach): the dlopen hook hooks nothing */

/* Definitions redirected (st_value as the loader found it), so that a detach can put
 * back those of the names that hand out memory. Only the defining modules (libc, a
 * linked allocator) have them: a few dozen. Written under the loader's lock (the walk). */
#define MS_GOT_DEFLOG_MAX 512
static struct {
    ElfW(Addr) *at;
    ElfW(Addr) old;
    int idx;
    int prot; /* the page's protection to put back after a store */
} ms_got_deflog[MS_GOT_DEFLOG_MAX];
static size_t ms_got_ndeflog;
static uint64_t ms_got_deflog_lost; /* redirected but not logged: cannot be put back */

/* Real functions for the restore of each name (filled by ms_got_unhook_gives). */
static void *ms_got_real_of[32];

/* The agent's own load base (dladdr of one of its functions). */
static void *ms_got_self_base(Dl_info *info)
{
    if (!dladdr((void *)(uintptr_t)&ms_got_self_base, info))
        return NULL;
    return info->dli_fbase;
}

/* 1 if `name` looked up through handle h is defined in the module based at `base`
 * itself: a non-PIE program that takes a function's address exports an undefined symbol
 * whose value is its own PLT stub, which dlsym returns (and which jumps through the
 * program's GOT slot: calling it from a hook would recurse). */
static void *ms_got_defined_in(void *h, const char *name, void *base)
{
    void *p = dlsym(h, name);
    Dl_info di;
    return ms_libc_dladdr_def(p, &di) && di.dli_fbase == base ? p : NULL;
}

/* A handle of the first module, in the order the program's own lookups search (the
 * program, then the modules loaded at start-up in order, then global dlopen'ed ones),
 * that really defines `name`; NULL if none but the agent does. */
static void *ms_got_definer(const char *name, void **base_out)
{
    Dl_info self;
    void *mainh = dlopen(NULL, RTLD_LAZY);
    struct link_map *lm = NULL;
    if (!ms_got_self_base(&self) || !mainh || dlinfo(mainh, RTLD_DI_LINKMAP, &lm) != 0)
        return NULL;
    for (; lm; lm = lm->l_next) {
        Dl_info mi;
        if (!lm->l_ld || !dladdr(lm->l_ld, &mi) || !mi.dli_fbase)
            continue;
        int is_main = lm->l_prev == NULL;
        void *h = is_main ? mainh
                          : (lm->l_name && lm->l_name[0] ? dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY)
                                                         : NULL);
        if (!h)
            continue;
        if (ms_got_defined_in(h, name, mi.dli_fbase)) {
            *base_out = mi.dli_fbase;
            return h;
        }
        if (!is_main)
            dlclose(h);
    }
    return NULL;
}

/* dlsym(RTLD_DEFAULT, name) when it gives a real definition (no allocation: the usual
 * case), with its module's base; NULL when it gives a PLT stub or nothing. */
static void *ms_got_default_def(const char *name, void **base_out)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    Dl_info di;
    if (!ms_libc_dladdr_def(p, &di))
        return NULL;
    *base_out = di.dli_fbase;
    return p;
}

int ms_got_default_is_own(const char *name)
{
    Dl_info self;
    void *base = NULL;
    if (ms_got_default_def(name, &base))
        return base == ms_got_self_base(&self);
    /* a PLT stub of the program: walk the modules (dlopen handles, which allocate) */
    void *h = ms_got_definer(name, &base);
    if (h && base != ms_got_self_base(&self)) /* the handle stays: modules are not closed */
        return 0;
    return h != NULL;
}

void *ms_got_real_sym(const char *name)
{
    /* one allocator: the module that defines malloc gives every function it defines;
     * the rest (mmap, pthread_create, ...) come from its own dependencies (libc) */
    static void *alloc_h;
    static void *alloc_base;
    Dl_info self;
    void *own = ms_got_self_base(&self);
    void *base = NULL;
    void *d = ms_got_default_def(name, &base);
    if (!alloc_h && d && base != own) /* the usual case: the program's lookup is exact */
        return d;
    if (!alloc_h) { /* a PLT stub of the program: find the module that defines malloc */
        void *mbase = NULL;
        void *h = ms_got_definer("malloc", &mbase);
        if (!h || mbase == own)
            return NULL;
        alloc_base = mbase;
        alloc_h = h;
    }
    void *p = ms_got_defined_in(alloc_h, name, alloc_base);
    if (!p) {
        p = dlsym(alloc_h, name);
        Dl_info di;
        if (p && (!ms_libc_dladdr_def(p, &di) || di.dli_fbase == own))
            p = dlsym(RTLD_NEXT, name); /* a PLT stub or the agent: after the agent */
    }
    return p;
}

/* The agent's own definition of `name` through `h`, a handle of the agent (NULL if the
 * lookup ends in another module: the agent does not define it). */
static void *ms_got_own_sym(void *h, const Dl_info *self, const char *name)
{
    void *p = dlsym(h, name);
    Dl_info def;
    if (p && (!dladdr(p, &def) || def.dli_fbase != self->dli_fbase))
        p = NULL;
    return p;
}

int ms_got_prepare(void)
{
    if (__atomic_load_n(&ms_got_prepared, __ATOMIC_ACQUIRE))
        return 0;
    Dl_info self;
    if (!ms_got_self_base(&self) || !self.dli_fname)
        return -ENOENT;
    /* a handle of the agent itself: the lookup starts with the agent's definitions */
    void *h = dlopen(self.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return -ENOENT;
    int rc = 0;
    for (size_t i = 0; i < MS_GOT_DLOPEN && rc == 0; i++) {
        ms_got_table[i].own = ms_got_own_sym(h, &self, ms_got_table[i].name);
        if (!ms_got_table[i].own)
            rc = -ENOENT;
    }
    dlclose(h); /* the agent stays: it is linked with -z nodelete */
    if (rc != 0)
        return rc;
    ms_got_table[MS_GOT_DLOPEN].own = (void *)(uintptr_t)&ms_got_dlopen;
    __atomic_store_n(&ms_got_prepared, 1, __ATOMIC_RELEASE);
    return 0;
}

void ms_got_get_stats(ms_got_stats *out)
{
    out->modules = __atomic_load_n(&ms_got_st.modules, __ATOMIC_RELAXED);
    out->slots = __atomic_load_n(&ms_got_st.slots, __ATOMIC_RELAXED);
    out->rejected = __atomic_load_n(&ms_got_st.rejected, __ATOMIC_RELAXED);
    out->dlopens = __atomic_load_n(&ms_got_st.dlopens, __ATOMIC_RELAXED);
    out->symbols = __atomic_load_n(&ms_got_st.symbols, __ATOMIC_RELAXED);
    out->restored = __atomic_load_n(&ms_got_st.restored, __ATOMIC_RELAXED);
    out->deflog_lost = __atomic_load_n(&ms_got_deflog_lost, __ATOMIC_RELAXED);
}

/* ===========================================================================
 * One module
 * ========================================================================= */
static int ms_sys_mprotect_raw(uintptr_t page, size_t len, int prot)
{
    return (int)syscall(SYS_mprotect, (void *)page, len, prot);
}

static unsigned ms_hex_digit(char c)
{
    return c <= '9' ? (unsigned)(c - '0') : (unsigned)((c | 32) - 'a' + 10);
}

/* 1 if the page holding `addr` is mapped writable now, 0 if not, -1 if unknown
 * (/proc/self/maps, read with raw calls into a stack buffer, parsed as it streams). */
static int ms_page_writable(uintptr_t addr)
{
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    int field = 0, pos = 0, res = -1;
    uintptr_t lo = 0, hi = 0;
    while (res < 0) {
        long r = syscall(SYS_read, (int)fd, buf, sizeof buf);
        if (r <= 0)
            break;
        for (long i = 0; i < r && res < 0; i++) {
            char c = buf[i];
            if (c == '\n') {
                field = pos = 0;
                lo = hi = 0;
            } else if (field == 0) { /* "lo-hi perms ..." */
                if (c == '-')
                    field = 1;
                else
                    lo = lo * 16 + ms_hex_digit(c);
            } else if (field == 1) {
                if (c == ' ')
                    field = 2;
                else
                    hi = hi * 16 + ms_hex_digit(c);
            } else if (field == 2 && pos++ == 1) {
                if (addr >= lo && addr < hi)
                    res = c == 'w';
                field = 3;
            }
        }
    }
    syscall(SYS_close, (int)fd);
    return res;
}

/* Writes `val` into the slot at `slot` (inside a PT_LOAD of the module). 1 if written. */
static int ms_got_write(const ms_mod_view *m, uintptr_t slot, void *val)
{
    void **s = (void **)slot;
    if (__atomic_load_n(s, __ATOMIC_RELAXED) == val)
        return 0;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = slot & ~(pg - 1);
    size_t len = ((slot + sizeof(void *) + pg - 1) & ~(pg - 1)) - page;
    int ro = slot < m->relro_hi && slot + sizeof(void *) > m->relro_lo;
    /* a RELRO page still writable: the loader is relocating the module in another
     * thread (it protects the page when done: made read-only now, its next write would
     * fault), or the program opened it itself. Written as it is, left as it is. */
    if (ro && ms_page_writable(slot) == 1)
        ro = 0;
    if (ro && ms_sys_mprotect_raw(page, len, PROT_READ | PROT_WRITE) != 0)
        return 0;
    __atomic_store_n(s, val, __ATOMIC_RELEASE);
    if (ro)
        ms_sys_mprotect_raw(page, len, PROT_READ);
    return 1;
}

static int ms_got_name_index(const char *s, size_t room)
{
    for (size_t i = 0; i < MS_GOT_N; i++) {
        size_t n = strlen(ms_got_table[i].name);
        if (n < room && memcmp(s, ms_got_table[i].name, n + 1) == 0)
            return (int)i;
    }
    return -1;
}

/* Calls fn for every JUMP_SLOT and GLOB_DAT slot of one relocation table that lies in
 * the module, with the name of its symbol (inside strtab, `room` bytes to its end). */
typedef uint64_t (*ms_slot_fn)(const ms_mod_view *m, uintptr_t slot, const char *name,
                               size_t room, void *arg);
static uint64_t ms_got_each_slot(const ms_mod_view *m, uintptr_t rel, size_t relsz,
                                 uintptr_t symtab, uintptr_t strtab, size_t strsz,
                                 ms_slot_fn fn, void *arg)
{
    uint64_t n = 0;
    for (size_t off = 0; off + sizeof(ElfW(Rela)) <= relsz; off += sizeof(ElfW(Rela))) {
        const ElfW(Rela) *r = (const ElfW(Rela) *)(rel + off);
        unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
        if (type != MS_ARCH_R_JUMP_SLOT && type != MS_ARCH_R_GLOB_DAT)
            continue;
        size_t si = (size_t)ELF64_R_SYM(r->r_info);
        if (si == 0 || si > SIZE_MAX / sizeof(ElfW(Sym)))
            continue;
        uintptr_t sa = symtab + si * sizeof(ElfW(Sym));
        if (sa < symtab || !ms_mod_has(m, sa, sizeof(ElfW(Sym))))
            continue;
        const ElfW(Sym) *sym = (const ElfW(Sym) *)sa;
        if (sym->st_name >= strsz)
            continue;
        uintptr_t slot = m->base + r->r_offset;
        if (slot < m->base || (slot & (sizeof(void *) - 1)) || !ms_mod_has(m, slot, sizeof(void *)))
            continue;
        n += fn(m, slot, (const char *)strtab + sym->st_name, strsz - sym->st_name, arg);
    }
    return n;
}

typedef struct ms_table_walk {
    int self, takes, restore;
} ms_table_walk;

static uint64_t ms_got_table_slot(const ms_mod_view *m, uintptr_t slot, const char *name,
                                  size_t room, void *arg)
{
    const ms_table_walk *t = arg;
    int idx = ms_got_name_index(name, room);
    if (idx < 0 || ms_got_table[idx].takes != t->takes || (t->self && idx == (int)MS_GOT_DLOPEN))
        return 0;
    if (t->restore) { /* only slots that hold the agent's function: the rest are the program's */
        void *real = ms_got_real_of[idx];
        if (real && __atomic_load_n((void **)slot, __ATOMIC_RELAXED) == ms_got_table[idx].own)
            return (uint64_t)ms_got_write(m, slot, real);
        return 0;
    }
    return (uint64_t)ms_got_write(m, slot, ms_got_table[idx].own);
}

/* Walks one relocation table; returns the number of slots patched. */
static uint64_t ms_got_relocs(const ms_mod_view *m, uintptr_t rel, size_t relsz, uintptr_t symtab,
                              uintptr_t strtab, size_t strsz, int self, int takes, int restore)
{
    ms_table_walk t = {self, takes, restore};
    return ms_got_each_slot(m, rel, relsz, symtab, strtab, strsz, ms_got_table_slot, &t);
}

/* ===========================================================================
 * Definitions: a module loaded later (by the program, or by glibc itself for NSS and
 * iconv, whose internal dlopen reaches no GOT slot) has its slots filled by the loader
 * from the definition it finds, in libc or a linked allocator. Pointing that definition
 * at the agent (st_value = agent function - module base) binds such a module to the
 * agent before any of its code runs: no block of ours can reach the real free or
 * realloc from it, and its constructors are recorded too.
 * ========================================================================= */
/* Stores `val` into a symbol's st_value: the page made writable for the store (keeping
 * its other rights), then `prot` again. 1 if written. */
static int ms_got_store_def(ElfW(Addr) *field, ElfW(Addr) val, int prot)
{
    uintptr_t at = (uintptr_t)field;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = at & ~(pg - 1);
    size_t len = ((at + sizeof(ElfW(Addr)) + pg - 1) & ~(pg - 1)) - page;
    int opened = ms_page_writable(at) == 1; /* opened by someone else: left so */
    if (!opened && ms_sys_mprotect_raw(page, len, prot | PROT_WRITE) != 0)
        return 0;
    __atomic_store_n(field, val, __ATOMIC_RELEASE);
    if (!opened)
        ms_sys_mprotect_raw(page, len, prot);
    return 1;
}

/* Points one defined function symbol at `own`; 1 if written. Only where the entry's page
 * belongs to one non-writable segment alone (a page shared with another segment would
 * change protection under the program's feet): made writable for the store, then as the
 * segment says again. The segment may be executable: without -z separate-code (the
 * default of AArch64's linker) the symbol table shares the text segment; it keeps its
 * execute right throughout, in case code shares the page. */
static int ms_got_define(const ms_mod_view *m, ElfW(Sym) *sym, void *own, int idx)
{
    if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || !sym->st_value ||
        ELF64_ST_TYPE(sym->st_info) != STT_FUNC)
        return 0;
    ElfW(Addr) want = (ElfW(Addr))((uintptr_t)own - m->base);
    ElfW(Addr) old = __atomic_load_n(&sym->st_value, __ATOMIC_RELAXED);
    if (old == want)
        return 0;
    uintptr_t at = (uintptr_t)&sym->st_value;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = at & ~(pg - 1);
    size_t len = ((at + sizeof(ElfW(Addr)) + pg - 1) & ~(pg - 1)) - page;
    const ElfW(Phdr) *seg = NULL;
    for (int i = 0; i < m->phnum; i++) {
        const ElfW(Phdr) *ph = &m->phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = m->base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (at >= lo && at + sizeof(ElfW(Addr)) <= hi) {
            seg = ph;
            continue;
        }
        if ((lo & ~(pg - 1)) < page + len && ((hi + pg - 1) & ~(pg - 1)) > page)
            return 0; /* another segment shares the page */
    }
    if (!seg || (seg->p_flags & PF_W) != 0)
        return 0;
    int prot = PROT_READ | ((seg->p_flags & PF_X) ? PROT_EXEC : 0);
    if (!ms_got_store_def(&sym->st_value, want, prot))
        return 0;
    if (ms_got_ndeflog < MS_GOT_DEFLOG_MAX) {
        ms_got_deflog[ms_got_ndeflog].at = &sym->st_value;
        ms_got_deflog[ms_got_ndeflog].old = old;
        ms_got_deflog[ms_got_ndeflog].idx = idx;
        ms_got_deflog[ms_got_ndeflog].prot = prot;
        ms_got_ndeflog++;
    } else {
        ms_got_deflog_lost++;
    }
    return 1;
}

/* Redirects every definition of `name` in the module (each symbol version); returns how
 * many were written. */
typedef struct ms_got_redirect_arg {
    void *own;
    int idx; /* in ms_got_table */
} ms_got_redirect_arg;

static uint64_t ms_got_redirect_def(const ms_mod_view *m, ElfW(Sym) *sym, void *arg)
{
    const ms_got_redirect_arg *a = arg;
    return (uint64_t)ms_got_define(m, sym, a->own, a->idx);
}

static uint64_t ms_got_redirect(const ms_mod_view *m, const ms_mod_syms *y, int idx)
{
    ms_got_redirect_arg a = {ms_got_table[idx].own, idx};
    return ms_mod_each_named(m, y, ms_got_table[idx].name, ms_got_redirect_def, &a);
}

#define MS_GOT_SEEN_MAX 512
typedef struct ms_got_pass {
    int takes;      /* which half of the table this pass patches */
    int restore;    /* put the real functions back instead (detach) */
    uint64_t slots; /* patched in this pass */
    /* modules patched by the first pass (load bias), so the second counts each once */
    uintptr_t *seen;
    size_t nseen;
} ms_got_pass;

static int ms_got_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    ms_got_pass *pass = arg;
    ms_mod_view m;
    ms_mod_dyn d;
    uintptr_t vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    uintptr_t interp = (uintptr_t)getauxval(AT_BASE);
    int rc = ms_mod_open(info, &m, &d);
    if (rc == 0)
        return 0;
    if ((vdso && ms_mod_has(&m, vdso, 1)) || (interp && ms_mod_has(&m, interp, 1)))
        return 0; /* the vdso, and the dynamic loader (its calls never go through a GOT) */
    int self = ms_mod_has(&m, (uintptr_t)&ms_got_module, 1);
    if (rc < 0) {
        if (pass->takes) /* counted once, not per pass */
            __atomic_fetch_add(&ms_got_st.rejected, 1, __ATOMIC_RELAXED);
        return 0;
    }
    uintptr_t jmprel = d.jmprel, rela = d.rela, symtab = d.symtab, strtab = d.strtab;
    size_t pltrelsz = d.pltrelsz, relasz = d.relasz, strsz = d.strsz;
    if (pass->restore) {
        uint64_t n = 0;
        if (jmprel)
            n += ms_got_relocs(&m, jmprel, pltrelsz, symtab, strtab, strsz, self, 0, 1);
        if (rela)
            n += ms_got_relocs(&m, rela, relasz, symtab, strtab, strsz, self, 0, 1);
        pass->slots += n;
        return 0;
    }
    if (!self) {
        /* definitions first: a module loaded from now on is bound to the agent */
        ms_mod_syms y = ms_mod_syms_of(&m, &d);
        uint64_t defs = 0;
        for (size_t i = 0; i < MS_GOT_DLOPEN; i++) /* dlopen: see ms_got_dlopen */
            if (ms_got_table[i].takes == pass->takes)
                defs += ms_got_redirect(&m, &y, (int)i);
        if (defs)
            __atomic_fetch_add(&ms_got_st.symbols, defs, __ATOMIC_RELAXED);
    }
    uint64_t n = 0;
    if (jmprel)
        n += ms_got_relocs(&m, jmprel, pltrelsz, symtab, strtab, strsz, self, pass->takes, 0);
    if (rela)
        n += ms_got_relocs(&m, rela, relasz, symtab, strtab, strsz, self, pass->takes, 0);
    if (n)
        __atomic_fetch_add(&ms_got_st.slots, n, __ATOMIC_RELAXED);
    pass->slots += n;
    /* a module counts once, in the second pass, if either pass patched one of its slots */
    if (pass->takes) {
        if (n && pass->nseen < MS_GOT_SEEN_MAX)
            pass->seen[pass->nseen++] = m.base;
        else if (n) /* no room to remember it: count it now */
            __atomic_fetch_add(&ms_got_st.modules, 1, __ATOMIC_RELAXED);
        return 0;
    }
    int before = 0;
    for (size_t i = 0; i < pass->nseen && !before; i++)
        before = pass->seen[i] == m.base;
    if (n || before)
        __atomic_fetch_add(&ms_got_st.modules, 1, __ATOMIC_RELAXED);
    return 0;
}

uint64_t ms_got_hook_all(void)
{
    if (ms_got_prepare() != 0)
        return 0;
    uintptr_t seen[MS_GOT_SEEN_MAX]; /* 4 KiB of stack: no allocation here */
    ms_got_pass takes = {.takes = 1, .seen = seen}, gives = {.takes = 0};
    ms_enter();
    __atomic_store_n(&ms_got_off, 0, __ATOMIC_RELEASE);
    /* glibc's dl_iterate_phdr holds the loader's write lock during the walk: two threads
     * hooking at once (two dlopens) patch one after the other, never the same RELRO page
     * at the same time */
    ms_dl_iterate(ms_got_module, &takes);
    gives.seen = takes.seen;
    gives.nseen = takes.nseen;
    ms_dl_iterate(ms_got_module, &gives);
    ms_leave();
    return takes.slots + gives.slots;
}

/* ===========================================================================
 * Named slots of one module (ms_got_patch_module)
 * ========================================================================= */
typedef struct ms_named_walk {
    uintptr_t in;
    const char *const *names;
    void *const *fns;
    size_t n;
    uint64_t slots;
} ms_named_walk;

static uint64_t ms_named_slot(const ms_mod_view *m, uintptr_t slot, const char *name, size_t room,
                              void *arg)
{
    const ms_named_walk *w = arg;
    for (size_t i = 0; i < w->n; i++) {
        size_t len = strlen(w->names[i]);
        if (len < room && memcmp(name, w->names[i], len + 1) == 0)
            return (uint64_t)ms_got_write(m, slot, w->fns[i]);
    }
    return 0;
}

static int ms_named_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    ms_named_walk *w = arg;
    ms_mod_view m;
    ms_mod_dyn d;
    int rc = ms_mod_open(info, &m, &d);
    if (!ms_mod_has(&m, w->in, 1))
        return 0;
    if (rc > 0) {
        if (d.jmprel)
            w->slots += ms_got_each_slot(&m, d.jmprel, d.pltrelsz, d.symtab, d.strtab, d.strsz,
                                         ms_named_slot, w);
        if (d.rela)
            w->slots += ms_got_each_slot(&m, d.rela, d.relasz, d.symtab, d.strtab, d.strsz,
                                         ms_named_slot, w);
    }
    return 1; /* the module holding `in` was found: the walk ends */
}

uint64_t ms_got_patch_module(const void *in, const char *const *names, void *const *fns, size_t n)
{
    ms_named_walk w = {(uintptr_t)in, names, fns, n, 0};
    ms_enter();
    ms_dl_iterate(ms_named_module, &w);
    ms_leave();
    return w.slots;
}

/* Runs once, inside the module walk (the loader's lock held: no walk that writes the log
 * runs meanwhile). No loader call in here. */
static int ms_got_restore_defs(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    (void)arg;
    size_t keep = 0;
    for (size_t i = 0; i < ms_got_ndeflog; i++) {
        int idx = ms_got_deflog[i].idx;
        if (ms_got_table[idx].takes) {
            ms_got_deflog[keep++] = ms_got_deflog[i];
            continue;
        }
        ms_got_store_def(ms_got_deflog[i].at, ms_got_deflog[i].old, ms_got_deflog[i].prot);
    }
    ms_got_ndeflog = keep;
    return 1;
}

/* Detach: the names that hand out memory (malloc, mmap, pthread_create, dlopen...) get
 * their definitions and every slot that holds the agent's function back; those that take
 * memory back (free, realloc, munmap, joins...) stay with the agent: blocks recorded
 * while attached carry a header and must be freed through it, whenever that happens. */
uint64_t ms_got_unhook_gives(void)
{
    if (!__atomic_load_n(&ms_got_prepared, __ATOMIC_ACQUIRE))
        return 0;
    ms_enter();
    /* no more hooking from the dlopen hook (a call already inside it, or one through a
     * pointer the program took while hooked, passes through) */
    __atomic_store_n(&ms_got_off, 1, __ATOMIC_RELEASE);
    /* definitions first, under the loader's lock as every write of the log: the real
     * functions are then what the program's lookup finds */
    ms_dl_iterate(ms_got_restore_defs, NULL);
    for (size_t i = 0; i < MS_GOT_N && i < sizeof ms_got_real_of / sizeof ms_got_real_of[0]; i++) {
        void *r = NULL;
        if (!ms_got_table[i].takes) {
            r = ms_got_real_sym(ms_got_table[i].name);
            if (r == ms_got_table[i].own) /* the lookup still ends in the agent: leave it */
                r = NULL;
        }
        ms_got_real_of[i] = r;
    }
    ms_got_pass p = {.takes = 0, .restore = 1};
    ms_dl_iterate(ms_got_module, &p);
    __atomic_fetch_add(&ms_got_st.restored, p.slots, __ATOMIC_RELAXED);
    ms_leave();
    return p.slots;
}

/* The hooked dlopen: the real one, then the new modules (and their dependencies) are
 * patched where the loader did not bind them to the agent already (a definition that
 * could not be redirected). dlopen's own definition is never redirected: the agent's
 * lazily bound call to the real dlopen would then come back here. */
static void *ms_got_dlopen(const char *name, int flags)
{
    void *h = dlopen(name, flags);
    if (h && __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_READY &&
        !__atomic_load_n(&ms_got_off, __ATOMIC_ACQUIRE)) {
        int saved = errno;
        __atomic_fetch_add(&ms_got_st.dlopens, 1, __ATOMIC_RELAXED);
        ms_got_hook_all();
        errno = saved;
    }
    return h;
}
