/* `memsight symbolize`: function, file and line of the (build id, offset) pairs pushed
 * frames hold, loaded into memsight_symbols once per build id from the ELF or debug files
 * found for it (fleet.h). Fleet queries join them when they print. Tools only. */
#define _GNU_SOURCE
#include "fleet/fleet.h"

#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/json_writer.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

/* The GNU build id of an ELF file in hex, or "" when it has none or is not ELF; and
 * whether it has DWARF (.debug_info: source lines), when dwarf is not NULL. */
static void file_build_id_dwarf(const char *path, char *out, size_t outlen, int *dwarf)
{
    out[0] = 0;
    if (dwarf)
        *dwarf = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *bid;
    ssize_t n = e ? dwelf_elf_gnu_build_id(e, &bid) : -1;
    if (n > 0 && (size_t)n * 2 < outlen)
        for (ssize_t i = 0; i < n; i++)
            snprintf(out + 2 * i, 3, "%02x", ((const uint8_t *)bid)[i]);
    size_t shstr;
    if (e && dwarf && elf_getshdrstrndx(e, &shstr) == 0)
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !*dwarf; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstr, sh.sh_name) : NULL;
            *dwarf = name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) &&
                     sh.sh_type != SHT_NOBITS;
        }
    if (e)
        elf_end(e);
    close(fd);
}


/* ===========================================================================
 * debuginfod: libdw's client (libdebuginfod.so.1, Debian's libdebuginfod1), loaded when
 * first needed as libdw itself loads it. It honours DEBUGINFOD_URLS (the servers, space
 * separated), DEBUGINFOD_CACHE_PATH and DEBUGINFOD_TIMEOUT.
 * ========================================================================= */
typedef struct dfd {
    void *lib, *client;
    void *(*begin)(void);
    int (*find_debuginfo)(void *, const unsigned char *, int, char **);
    int (*find_executable)(void *, const unsigned char *, int, char **);
    void (*end)(void *);
    char why[256]; /* why it cannot be asked, once known */
    int tried;
} dfd;

/* The debug file (else the executable) of build id `bid` (hex) from the servers of
 * DEBUGINFOD_URLS, as a path in the client's cache (malloc'ed), or NULL with why. */
static char *debuginfod_fetch(dfd *d, const char *bid, char *why, size_t whylen)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    if (!urls || !*urls) {
        snprintf(why, whylen, "DEBUGINFOD_URLS is not set");
        return NULL;
    }
    if (!d->tried) {
        d->tried = 1;
        d->lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!d->lib) {
            snprintf(d->why, sizeof d->why, "libdebuginfod.so.1 cannot be loaded (Debian package"
                     " libdebuginfod1): %s", dlerror());
        } else {
            *(void **)&d->begin = dlsym(d->lib, "debuginfod_begin");
            *(void **)&d->find_debuginfo = dlsym(d->lib, "debuginfod_find_debuginfo");
            *(void **)&d->find_executable = dlsym(d->lib, "debuginfod_find_executable");
            *(void **)&d->end = dlsym(d->lib, "debuginfod_end");
            if (!d->begin || !d->find_debuginfo || !d->find_executable || !d->end ||
                !(d->client = d->begin()))
                snprintf(d->why, sizeof d->why, "libdebuginfod.so.1 cannot start a client");
        }
    }
    if (!d->client) {
        snprintf(why, whylen, "%s", d->why);
        return NULL;
    }
    if (!strncmp(bid, "path:", 5)) {
        snprintf(why, whylen, "no build id to ask debuginfod by");
        return NULL;
    }
    char *path = NULL;
    int fd = d->find_debuginfo(d->client, (const unsigned char *)bid, 0, &path);
    if (fd < 0) {
        free(path);
        path = NULL;
        int fd2 = d->find_executable(d->client, (const unsigned char *)bid, 0, &path);
        if (fd2 < 0) {
            free(path);
            snprintf(why, whylen, "debuginfod (%s) has neither its debug file nor its executable: %s",
                     urls, strerror(-fd));
            return NULL;
        }
        fd = fd2;
    }
    close(fd);
    return path;
}

static void debuginfod_close(dfd *d)
{
    if (d->client)
        d->end(d->client);
    if (d->lib)
        dlclose(d->lib);
}

static int unhex(const char *h, uint8_t *out, size_t cap)
{
    size_t n = strlen(h);
    if (n % 2 || n / 2 > cap || n == 0)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return (int)(n / 2);
}

/* (build id, offset) pairs without symbols, with a module path of the build id */
typedef struct pending {
    char **bid, **path;
    uint64_t *off;
    uint8_t *is_pc, *had; /* had: the best quality memsight_symbols holds for it */
    size_t n, cap;
} pending;

static int on_pending(void *ctx, char **f, size_t n)
{
    pending *p = ctx;
    if (n != 5)
        return -2;
    if (!f[0][0])
        return 0; /* a pc outside every module: nothing to look it up in */
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 1024;
        char **a = realloc(p->bid, cap * sizeof *a);
        if (!a)
            return -1;
        p->bid = a;
        char **b = realloc(p->path, cap * sizeof *b);
        if (!b)
            return -1;
        p->path = b;
        uint64_t *o = realloc(p->off, cap * sizeof *o);
        if (!o)
            return -1;
        p->off = o;
        uint8_t *c = realloc(p->is_pc, cap);
        if (!c)
            return -1;
        p->is_pc = c;
        uint8_t *h = realloc(p->had, cap);
        if (!h)
            return -1;
        p->had = h;
        p->cap = cap;
    }
    p->bid[p->n] = strdup(f[0]);
    p->path[p->n] = strdup(f[1]);
    p->off[p->n] = strtoull(f[2], NULL, 10);
    p->is_pc[p->n] = f[3][0] == '1';
    p->had[p->n] = (uint8_t)strtoul(f[4], NULL, 10);
    if (!p->bid[p->n] || !p->path[p->n])
        return -1;
    p->n++;
    return 0;
}

static void say(void (*note)(void *, const char *), void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(void (*note)(void *, const char *), void *ctx, const char *fmt, ...)
{
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (note)
        note(ctx, m);
}

/* What became of the offsets of one build id. */
typedef struct outcome {
    size_t lines;    /* function, file and line */
    size_t fn_only;  /* a function from the symbol table, no source line (no DWARF) */
    size_t none;     /* no symbol covers it in the file */
    size_t stored;   /* offsets whose rows were inserted (better than what was there) */
} outcome;

/* Symbols of offs[0..n) of one build id from one file, inserted as one statement: only
 * what improves on the quality memsight_symbols holds (had[]; with force also what
 * equals it), never "nothing found" (a later, better file must not be blocked). Returns
 * 0 with *oc, or -1 with err. */
static int one_build(ms_ch *ch, const char *bid, const char *file, const uint64_t *offs,
                     const uint8_t *is_pc, const uint8_t *had, size_t n, int force, outcome *oc,
                     char *err, size_t errlen)
{
    ms_module mod = {0};
    ms_snap_segment seg = {0, UINT64_MAX >> 1, 0, 5, 0};
    mod.path = (char *)file;
    memset(oc, 0, sizeof *oc);
    if (strncmp(bid, "path:", 5) != 0) {
        int k = unhex(bid, mod.build_id, sizeof mod.build_id);
        if (k <= 0) {
            snprintf(err, errlen, "ClickHouse holds a malformed build id '%.80s'", bid);
            return -1;
        }
        mod.build_id_len = (uint32_t)k;
    }
    mod.nseg = 1;
    mod.segs = &seg;
    ms_snapshot snap;
    memset(&snap, 0, sizeof snap);
    snap.modules = &mod;
    snap.nmodules = 1;
    char *body = NULL;
    size_t blen = 0;
    ms_symbolizer *sym = ms_symbolizer_new(&snap);
    FILE *f = sym ? open_memstream(&body, &blen) : NULL;
    if (!f) {
        ms_symbolizer_free(sym);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t loaded = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    for (size_t i = 0; i < n; i++) {
        ms_frame fr[16];
        int nf = ms_symbolize(sym, offs[i], !is_pc[i], fr, 16);
        int q = 0; /* 2: every frame with a line; 1: a function without; 0: nothing */
        if (nf > 0 && fr[nf - 1].function)
            q = fr[0].file && fr[0].line > 0 ? 2 : 1;
        oc->lines += q == 2;
        oc->fn_only += q == 1;
        oc->none += q == 0;
        if (q == 0 || q < had[i] || (q == had[i] && !force))
            continue;
        oc->stored++;
        for (int d = 0; d < nf; d++) {
            ms_json j;
            ms_json_init(&j, f, 0);
            ms_json_object_begin(&j);
            ms_json_kv_str(&j, "build_id", bid);
            ms_json_kv_u64(&j, "offset", offs[i]);
            ms_json_kv_u64(&j, "idx", (uint64_t)d);
            ms_json_kv_str(&j, "function", fr[d].function ? fr[d].function : "");
            ms_json_kv_str(&j, "file", fr[d].file ? fr[d].file : "");
            ms_json_kv_u64(&j, "line", fr[d].line > 0 ? (uint64_t)fr[d].line : 0);
            ms_json_kv_u64(&j, "inlined", fr[d].inlined != 0);
            ms_json_kv_u64(&j, "quality", (uint64_t)q);
            ms_json_kv_u64(&j, "loaded", loaded);
            ms_json_object_end(&j);
            fputc('\n', f);
        }
    }
    ms_symbolizer_free(sym);
    if (fclose(f) != 0) {
        free(body);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    if (blen && ms_ch_exec(ch, "INSERT INTO memsight_symbols FORMAT JSONEachRow", body, blen, NULL,
                           NULL, err, errlen) != 0)
        rc = -1;
    free(body);
    return rc;
}

int ms_fleet_symbolize(ms_ch *ch, const char *const *files, size_t nfiles, int force,
                       void (*note)(void *ctx, const char *msg), void *ctx, char *err,
                       size_t errlen)
{
    /* One pass over the pushed frames: every (build id, offset) without a source line
     * yet (every one with force), with the best quality stored for it, in build-id order
     * (a pc that is the first frame of a stack recorded as an exact pc is looked up as it
     * is; every other frame is a return address). */
    char *out = NULL;
    char sql[1200];
    snprintf(sql, sizeof sql,
             "SELECT b, p, off, is_pc, q FROM (SELECT b, any(p) AS p, off, max(is_pc) AS is_pc FROM"
             " (SELECT b, p, off, (i = 1 AND first_is_pc) AS is_pc FROM memsight_stacks"
             " ARRAY JOIN frame_build_ids AS b, frame_modules AS p, frame_offsets AS off,"
             " arrayEnumerate(frame_build_ids) AS i) GROUP BY b, off)"
             " ANY LEFT JOIN (SELECT build_id AS b, offset AS off, max(quality) AS q"
             " FROM memsight_symbols GROUP BY b, off) USING (b, off)"
             " %s ORDER BY b, off FORMAT TabSeparated", force ? "" : "WHERE q < 2");
    if (ms_ch_exec_retry(ch, 3, sql, &out, NULL, err, errlen) != 0)
        return -1;
    pending pd = {0};
    int rc = -1;
    dfd dd = {0};
    char (*fid)[160] = nfiles ? calloc(nfiles, sizeof *fid) : NULL;
    char **abs = nfiles ? calloc(nfiles, sizeof *abs) : NULL;
    int *fdw = nfiles ? calloc(nfiles, sizeof *fdw) : NULL;
    int prc = ms_ch_tsv(out, on_pending, &pd);
    char e1[600], e2[600], e3[600];
    if (prc == -2) {
        snprintf(err, errlen, "ClickHouse answered rows of an unexpected shape");
        goto done;
    }
    if (prc != 0 || (nfiles && (!fid || !abs || !fdw))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* the files given, by absolute path: the symbolizer opens modules by absolute path only */
    for (size_t i = 0; i < nfiles; i++) {
        abs[i] = realpath(files[i], NULL);
        if (!abs[i]) {
            say(note, ctx, "%s: %s: ignored", ms_fleet_esc(files[i], e1, sizeof e1), strerror(errno));
            continue;
        }
        file_build_id_dwarf(abs[i], fid[i], sizeof fid[i], &fdw[i]);
        if (!fid[i][0])
            say(note, ctx, "%s: not an ELF file with a build id: ignored",
                ms_fleet_esc(files[i], e1, sizeof e1));
    }
    rc = 0;
    size_t tot_lines = 0, tot_fn = 0, tot_none = 0, tot_nofile = 0, nofile_builds = 0, stored = 0;
    for (size_t lo = 0, hi; lo < pd.n; lo = hi) {
        const char *bid = pd.bid[lo], *path = pd.path[lo];
        char *file = NULL, *fetched = NULL;
        int dwarf = 0;
        for (hi = lo + 1; hi < pd.n && !strcmp(pd.bid[hi], bid); hi++)
            ;
        ms_fleet_esc(bid, e1, sizeof e1);
        ms_fleet_esc(path, e2, sizeof e2);
        /* among the files given, one with DWARF first */
        for (int want = 1; want >= 0 && !file; want--)
            for (size_t i = 0; i < nfiles && !file; i++)
                if (abs[i] && !strcmp(fid[i], bid) && fdw[i] >= want)
                    file = abs[i], dwarf = fdw[i];
        char local[160];
        int ldw = 0;
        if (!file && !strncmp(bid, "path:", 5) && bid[5] == '/' && access(bid + 5, R_OK) == 0) {
            file = (char *)bid + 5;
            file_build_id_dwarf(file, local, sizeof local, &dwarf);
        }
        if (!file && path[0] == '/') {
            file_build_id_dwarf(path, local, sizeof local, &ldw);
            if (!strcmp(local, bid))
                file = (char *)path, dwarf = ldw;
        }
        if (!file) {
            /* the symbolizer itself also looks under /usr/lib/debug/.build-id */
            char dbg[400];
            snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
            if (strlen(bid) > 2 && strncmp(bid, "path:", 5) && access(dbg, R_OK) == 0)
                file = path[0] == '/' ? (char *)path : dbg, dwarf = 1;
        }
        char why[512] = "";
        if (!dwarf) {
            /* stripped or missing here: the build's debug file from debuginfod */
            fetched = debuginfod_fetch(&dd, bid, why, sizeof why);
            if (fetched) {
                say(note, ctx, "%s (%s): fetched from debuginfod: %s", e1, e2,
                    ms_fleet_esc(fetched, e3, sizeof e3));
                file = fetched;
            }
        }
        if (!file) {
            say(note, ctx, "%s (%s): no file with this build id here, %zu offsets stay unresolved (%s)",
                e1, e2, hi - lo, ms_fleet_esc(why, e3, sizeof e3));
            tot_nofile += hi - lo;
            nofile_builds++;
            continue;
        }
        outcome oc;
        if (one_build(ch, bid, file, pd.off + lo, pd.is_pc + lo, pd.had + lo, hi - lo, force, &oc, err,
                      errlen) != 0) {
            free(fetched);
            rc = -1;
            goto done;
        }
        ms_fleet_esc(file, e3, sizeof e3);
        say(note, ctx, "%s (%s): %zu offsets: %zu with a source line, %zu with a function only%s,"
            " %zu unresolved%s; %zu new offsets with a function stored", e1, e3, hi - lo, oc.lines,
            oc.fn_only, !oc.fn_only ? "" : dwarf ? " (the file has no source line for them)"
                                               : " (no DWARF here: give the debug file, or set DEBUGINFOD_URLS)",
            oc.none, oc.none ? " (no symbol covers them in the file)" : "", oc.stored);
        tot_lines += oc.lines;
        tot_fn += oc.fn_only;
        tot_none += oc.none;
        stored += oc.stored;
        free(fetched);
    }
    if (pd.n == 0)
        say(note, ctx, "every pushed frame has its symbols with source lines already: 0 new offsets");
    else
        say(note, ctx, "%zu offsets looked up: %zu with a source line, %zu with a function only,"
            " %zu unresolved in their file, %zu without a file (%zu build ids); %zu stored",
            pd.n, tot_lines, tot_fn, tot_none, tot_nofile, nofile_builds, stored);
done:
    debuginfod_close(&dd);
    for (size_t i = 0; i < pd.n; i++) {
        free(pd.bid[i]);
        free(pd.path[i]);
    }
    for (size_t i = 0; abs && i < nfiles; i++)
        free(abs[i]);
    free(abs);
    free(fdw);
    free(pd.bid);
    free(pd.path);
    free(pd.off);
    free(pd.is_pc);
    free(pd.had);
    free(fid);
    free(out);
    return rc;
}
