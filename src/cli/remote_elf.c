/* A running process seen from outside (remote_elf.h): /proc/PID/maps, the dynamic symbols
 * of its modules, its memory. Reads only; every input bounds-checked. */
#define _GNU_SOURCE
#include "remote_elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_common.h"
#include "core/fileio.h"
#include "memsight/attach.h"

#define set_err ms_cli_errf

/* ===========================================================================
 * /proc/PID/maps
 * ========================================================================= */
static int parse_hex(const char **s, uint64_t *out)
{
    uint64_t v = 0;
    int n = 0;
    for (; n < 17; n++) {
        char c = **s;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            break;
        v = v * 16 + d;
        (*s)++;
    }
    *out = v;
    return n > 0 && n <= 16 ? 0 : -1;
}

int ms_rmaps_read(int pid, ms_rmaps *out, char *err, size_t errlen)
{
    char path[64], e2[256];
    size_t len;
    memset(out, 0, sizeof *out);
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    char *text = ms_read_file(path, &len, e2, sizeof e2);
    if (!text) {
        set_err(err, errlen, "cannot read %s: %s", path, e2);
        return -1;
    }
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    ms_rmap *m = calloc(cap, sizeof *m);
    if (!m) {
        free(text);
        set_err(err, errlen, "out of memory reading %s", path);
        return -1;
    }
    size_t n = 0;
    char *line = text, *end = text + len;
    while (line < end && n < cap) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        if (!nl)
            nl = end;
        *nl = 0;
        /* lo-hi perms off dev inode path */
        const char *s = line;
        ms_rmap r;
        memset(&r, 0, sizeof r);
        int ok = parse_hex(&s, &r.lo) == 0 && *s++ == '-' && parse_hex(&s, &r.hi) == 0 &&
                 *s++ == ' ' && r.hi > r.lo;
        if (ok) {
            for (int k = 0; k < 4 && ok; k++, s++)
                ok = *s != 0 && *s != ' ' ? (r.perms[k] = *s, 1) : 0;
            ok = ok && *s++ == ' ' && parse_hex(&s, &r.off) == 0;
        }
        if (ok) {
            int fields = 0; /* dev, inode */
            while (*s && fields < 2) {
                while (*s == ' ')
                    s++;
                while (*s && *s != ' ')
                    s++;
                fields++;
            }
            while (*s == ' ')
                s++;
            r.path = (char *)s;
            m[n++] = r;
        }
        line = nl + 1;
    }
    out->m = m;
    out->n = n;
    out->text = text;
    return 0;
}

void ms_rmaps_free(ms_rmaps *m)
{
    free(m->m);
    free(m->text);
    memset(m, 0, sizeof *m);
}

const ms_rmap *ms_rmaps_find(const ms_rmaps *m, uint64_t addr)
{
    for (size_t i = 0; i < m->n; i++)
        if (addr >= m->m[i].lo && addr < m->m[i].hi)
            return &m->m[i];
    return NULL;
}

const ms_rmap *ms_rmaps_module(const ms_rmaps *m, const char *prefix)
{
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < m->n; i++) {
        const char *p = m->m[i].path;
        if (p[0] != '/')
            continue;
        const char *b = strrchr(p, '/') + 1;
        if (!strncmp(b, prefix, pl))
            return &m->m[i];
    }
    return NULL;
}

void ms_rpath(int pid, const char *path, char *out, size_t cap)
{
    int n = snprintf(out, cap, "/proc/%d/root", pid);
    size_t pl = strlen(path);
    if (n > 0 && (size_t)n + pl < cap)
        memcpy(out + n, path, pl + 1);
}

/* ===========================================================================
 * ELF files
 * ========================================================================= */
static int read_at(int fd, uint64_t off, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

int ms_relf_ident(const char *file, int *machine, int *elfclass, char *err, size_t errlen)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "cannot open %s: %s", file, strerror(errno));
        return -1;
    }
    unsigned char id[EI_NIDENT + 4];
    int rc = read_at(fd, 0, id, sizeof id);
    close(fd);
    if (rc != 0 || memcmp(id, ELFMAG, SELFMAG) != 0) {
        set_err(err, errlen, "%s is not an ELF file", file);
        return -1;
    }
    *elfclass = id[EI_CLASS];
    uint16_t mach;
    memcpy(&mach, id + EI_NIDENT + 2, 2); /* e_type, then e_machine: same offset in both classes */
    *machine = id[EI_DATA] == ELFDATA2LSB ? mach : (uint16_t)((mach >> 8) | (mach << 8));
    return 0;
}

/* Opens the file mapped at `r` as this process can see it: through /proc/PID/root, or the
 * mapping itself (/proc/PID/map_files) when the file was replaced or deleted since. */
static int open_mapped(int pid, const ms_rmap *r, char *file, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", r->path);
    char *del = strstr(path, " (deleted)");
    if (del && del[10] == 0)
        *del = 0;
    else {
        ms_rpath(pid, path, file, cap);
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            return fd;
    }
    snprintf(file, cap, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, r->lo, r->hi);
    return open(file, O_RDONLY | O_CLOEXEC);
}

typedef struct elf_view {
    Elf64_Ehdr eh;
    Elf64_Phdr ph[64];
    int nph;
} elf_view;

static int read_headers(int fd, const char *file, elf_view *v, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || read_at(fd, 0, &v->eh, sizeof v->eh) != 0 ||
        memcmp(v->eh.e_ident, ELFMAG, SELFMAG) != 0) {
        set_err(err, errlen, "%s: not an ELF file", file);
        return -1;
    }
    if (v->eh.e_ident[EI_CLASS] != ELFCLASS64 || v->eh.e_ident[EI_DATA] != ELFDATA2LSB) {
        set_err(err, errlen, "%s: not a 64-bit little-endian ELF file", file);
        return -1;
    }
    if (v->eh.e_phentsize != sizeof(Elf64_Phdr) || v->eh.e_phnum == 0 || v->eh.e_phnum > 64 ||
        v->eh.e_phoff > (uint64_t)st.st_size ||
        (uint64_t)st.st_size - v->eh.e_phoff < (uint64_t)v->eh.e_phnum * sizeof(Elf64_Phdr) ||
        read_at(fd, v->eh.e_phoff, v->ph, v->eh.e_phnum * sizeof(Elf64_Phdr)) != 0) {
        set_err(err, errlen, "%s: bad program headers (%u of %u bytes at %" PRIu64 ")", file,
                v->eh.e_phnum, v->eh.e_phentsize, (uint64_t)v->eh.e_phoff);
        return -1;
    }
    v->nph = v->eh.e_phnum;
    return 0;
}

int ms_relf_open(int pid, const ms_rmaps *maps, const char *path, ms_relf *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    const ms_rmap *first = NULL;
    for (size_t i = 0; i < maps->n; i++)
        if (!strcmp(maps->m[i].path, path) && (!first || maps->m[i].lo < first->lo))
            first = &maps->m[i];
    if (!first) {
        set_err(err, errlen, "%s is not mapped in process %d", path, pid);
        return -1;
    }
    int fd = open_mapped(pid, first, out->file, sizeof out->file);
    if (fd < 0) {
        set_err(err, errlen, "cannot open %s (mapped in process %d): %s", path, pid, strerror(errno));
        return -1;
    }
    elf_view v;
    int rc = read_headers(fd, out->file, &v, err, errlen);
    close(fd);
    if (rc != 0)
        return -1;
    out->machine = v.eh.e_machine;
    out->elfclass = v.eh.e_ident[EI_CLASS];
    /* the bias: the mapping of the first PT_LOAD's page, minus that page's address */
    const Elf64_Phdr *load0 = NULL, *text = NULL;
    for (int i = 0; i < v.nph; i++) {
        if (v.ph[i].p_type != PT_LOAD)
            continue;
        if (!load0)
            load0 = &v.ph[i];
        if ((v.ph[i].p_flags & PF_X) && !text)
            text = &v.ph[i];
    }
    if (!load0) {
        set_err(err, errlen, "%s: no loadable segment", out->file);
        return -1;
    }
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t want_off = load0->p_offset & ~(pg - 1);
    const ms_rmap *m0 = NULL;
    for (size_t i = 0; i < maps->n; i++)
        if (!strcmp(maps->m[i].path, path) && maps->m[i].off == want_off &&
            (!m0 || maps->m[i].lo < m0->lo))
            m0 = &maps->m[i];
    if (!m0 || m0->lo < (load0->p_vaddr & ~(pg - 1))) {
        set_err(err, errlen, "%s: its mappings in process %d do not match its segments", path, pid);
        return -1;
    }
    out->bias = m0->lo - (load0->p_vaddr & ~(pg - 1));
    if (text && text->p_filesz && text->p_vaddr + text->p_filesz >= text->p_vaddr) {
        out->text_end = out->bias + text->p_vaddr + text->p_filesz;
        out->text_page_end = (out->text_end + pg - 1) & ~(pg - 1);
    }
    return 0;
}

#define MAX_TABLE (64u << 20)

int ms_relf_sym(const ms_relf *e, const char *name, uint64_t *addr, char *err, size_t errlen)
{
    *addr = 0;
    int fd = open(e->file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "cannot open %s: %s", e->file, strerror(errno));
        return -1;
    }
    struct stat st;
    elf_view v;
    int rc = -1;
    Elf64_Shdr *sh = NULL;
    Elf64_Sym *syms = NULL;
    char *strs = NULL;
    uint16_t *vers = NULL;
    if (read_headers(fd, e->file, &v, err, errlen) != 0 || fstat(fd, &st) != 0)
        goto out;
    uint64_t fsize = (uint64_t)st.st_size;
    if (v.eh.e_shentsize != sizeof(Elf64_Shdr) || v.eh.e_shnum == 0 || v.eh.e_shnum > 65000 ||
        v.eh.e_shoff > fsize || fsize - v.eh.e_shoff < (uint64_t)v.eh.e_shnum * sizeof(Elf64_Shdr)) {
        set_err(err, errlen, "%s: bad section headers", e->file);
        goto out;
    }
    sh = malloc(v.eh.e_shnum * sizeof *sh);
    if (!sh || read_at(fd, v.eh.e_shoff, sh, v.eh.e_shnum * sizeof *sh) != 0) {
        set_err(err, errlen, "%s: cannot read the section headers", e->file);
        goto out;
    }
    const Elf64_Shdr *ds = NULL, *vs = NULL;
    for (unsigned i = 0; i < v.eh.e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM && !ds)
            ds = &sh[i];
        else if (sh[i].sh_type == SHT_GNU_versym && !vs)
            vs = &sh[i];
    }
    if (!ds) { /* no dynamic symbols: nothing defined for others */
        rc = 0;
        goto out;
    }
    const Elf64_Shdr *ss = ds->sh_link < v.eh.e_shnum ? &sh[ds->sh_link] : NULL;
    if (!ss || ds->sh_size > MAX_TABLE || ss->sh_size > MAX_TABLE || ds->sh_offset > fsize ||
        fsize - ds->sh_offset < ds->sh_size || ss->sh_offset > fsize ||
        fsize - ss->sh_offset < ss->sh_size || ss->sh_size == 0) {
        set_err(err, errlen, "%s: bad dynamic symbol table", e->file);
        goto out;
    }
    size_t nsym = ds->sh_size / sizeof(Elf64_Sym);
    syms = malloc(nsym ? nsym * sizeof *syms : 1);
    strs = malloc(ss->sh_size + 1);
    if (!syms || !strs || read_at(fd, ds->sh_offset, syms, nsym * sizeof *syms) != 0 ||
        read_at(fd, ss->sh_offset, strs, ss->sh_size) != 0) {
        set_err(err, errlen, "%s: cannot read the dynamic symbols", e->file);
        goto out;
    }
    strs[ss->sh_size] = 0;
    if (vs && vs->sh_size == nsym * 2 && vs->sh_offset <= fsize && fsize - vs->sh_offset >= vs->sh_size) {
        vers = malloc(vs->sh_size);
        if (vers && read_at(fd, vs->sh_offset, vers, vs->sh_size) != 0) {
            free(vers);
            vers = NULL;
        }
    }
    /* the default version wins over a hidden (compatibility) one */
    int best = -1;
    for (size_t i = 1; i < nsym; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_name >= ss->sh_size || s->st_shndx == SHN_UNDEF || !s->st_value ||
            strcmp(strs + s->st_name, name) != 0)
            continue;
        int rank = vers && (vers[i] & 0x8000) ? 1 : 2;
        if (rank > best) {
            best = rank;
            *addr = e->bias + s->st_value;
        }
    }
    rc = 0;
out:
    free(vers);
    free(strs);
    free(syms);
    free(sh);
    close(fd);
    return rc;
}

/* ===========================================================================
 * Memory
 * ========================================================================= */
static int mem_io(int pid, uint64_t addr, void *buf, size_t len, int write, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r = write ? pwrite(fd, (const char *)buf + done, len - done, (off_t)(addr + done))
                          : pread(fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (r <= 0) {
            set_err(err, errlen, "cannot %s %zu bytes at 0x%" PRIx64 " in process %d: %s",
                    write ? "write" : "read", len, addr, pid, r < 0 ? strerror(errno) : "end of memory");
            close(fd);
            return -1;
        }
        done += (size_t)r;
    }
    close(fd);
    return 0;
}

int ms_rmem_read(int pid, uint64_t addr, void *buf, size_t len, char *err, size_t errlen)
{
    return mem_io(pid, addr, buf, len, 0, err, errlen);
}

int ms_rmem_write(int pid, uint64_t addr, const void *buf, size_t len, char *err, size_t errlen)
{
    return mem_io(pid, addr, (void *)(uintptr_t)buf, len, 1, err, errlen);
}

int ms_rattach_read(int pid, uint64_t at, memsight_attach_state *st, char *err, size_t errlen)
{
    /* a version-1 agent (an older library still mapped in a long-running process) has
     * the first part alone: the rest reads as zero (no mode known, no replies) */
    size_t v1 = offsetof(memsight_attach_state, sample_interval);
    if (ms_rmem_read(pid, at, st, v1, err, errlen) != 0)
        return -1;
    if (st->magic != MEMSIGHT_ATTACH_MAGIC || st->version < 1 ||
        st->version > MEMSIGHT_ATTACH_VERSION) {
        set_err(err, errlen, "process %d: the agent's attach state has an unknown "
                "layout (magic %016" PRIx64 ", version %u)", pid, st->magic, st->version);
        return -1;
    }
    memset((char *)st + v1, 0, sizeof *st - v1);
    if (st->version >= 2 &&
        ms_rmem_read(pid, at + v1, (char *)st + v1, sizeof *st - v1, err, errlen) != 0)
        return -1;
    st->out[sizeof st->out - 1] = 0;
    st->last_snapshot[sizeof st->last_snapshot - 1] = 0;
    st->options[sizeof st->options - 1] = 0;
    st->note[sizeof st->note - 1] = 0;
    return 0;
}

int ms_rattach_state_at(int pid, memsight_attach_state *st, uint64_t *addr, char *err,
                        size_t errlen)
{
    ms_rmaps maps;
    if (ms_rmaps_read(pid, &maps, err, errlen) != 0)
        return -1;
    const ms_rmap *a = ms_rmaps_module(&maps, "libmemsight.so");
    int rc = 0;
    if (a) {
        ms_relf e;
        uint64_t at = 0;
        char path[4096];
        snprintf(path, sizeof path, "%s", a->path);
        rc = -1;
        if (ms_relf_open(pid, &maps, path, &e, err, errlen) == 0 &&
            ms_relf_sym(&e, MEMSIGHT_ATTACH_SYMBOL, &at, err, errlen) == 0) {
            if (!at) {
                rc = 1; /* an agent without attach support: never attached */
                memset(st, 0, sizeof *st);
                if (addr)
                    *addr = 0;
            } else if (ms_rattach_read(pid, at, st, err, errlen) == 0) {
                rc = 1;
                if (addr)
                    *addr = at;
            }
        }
    }
    ms_rmaps_free(&maps);
    return rc;
}

int ms_rattach_state(int pid, memsight_attach_state *st, char *err, size_t errlen)
{
    return ms_rattach_state_at(pid, st, NULL, err, errlen);
}
