/* `memsight symbolize`: function, file and line of the (build id, offset) pairs pushed
 * frames hold, loaded into memsight_symbols once per build id from the ELF or debug files
 * found for it (fleet.h). Fleet queries join them when they print. Tools only. */
#define _GNU_SOURCE
#include "fleet/fleet.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/json_writer.h"
#include "analysis/symbolize.h"
#include "core/snapshot.h"

/* The GNU build id of an ELF file in hex, or "" when it has none or is not ELF. */
static void file_build_id(const char *path, char *out, size_t outlen)
{
    out[0] = 0;
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
    if (e)
        elf_end(e);
    close(fd);
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
    uint8_t *is_pc;
    size_t n, cap;
} pending;

static int on_pending(void *ctx, char **f, size_t n)
{
    pending *p = ctx;
    if (n != 4)
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
        p->cap = cap;
    }
    p->bid[p->n] = strdup(f[0]);
    p->path[p->n] = strdup(f[1]);
    p->off[p->n] = strtoull(f[2], NULL, 10);
    p->is_pc[p->n] = f[3][0] == '1';
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

/* Symbols of offs[0..n) of one build id from one file, inserted as one statement.
 * Returns the number of offsets resolved to a function, or -1 with err. */
static long one_build(ms_ch *ch, const char *bid, const char *file, const uint64_t *offs,
                      const uint8_t *is_pc, size_t n, char *err, size_t errlen)
{
    ms_module mod = {0};
    ms_snap_segment seg = {0, UINT64_MAX >> 1, 0, 5, 0};
    mod.path = (char *)file;
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
    long resolved = 0;
    for (size_t i = 0; i < n; i++) {
        ms_frame fr[16];
        int nf = ms_symbolize(sym, offs[i], !is_pc[i], fr, 16);
        resolved += nf > 0 && fr[nf - 1].function != NULL;
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
    if (blen && ms_ch_exec(ch, "INSERT INTO memsight_symbols FORMAT JSONEachRow", body, blen, NULL,
                           NULL, err, errlen) != 0)
        resolved = -1;
    free(body);
    return resolved;
}

int ms_fleet_symbolize(ms_ch *ch, const char *const *files, size_t nfiles,
                       void (*note)(void *ctx, const char *msg), void *ctx, char *err,
                       size_t errlen)
{
    /* One pass over the pushed frames: every (build id, offset) without symbols yet, in
     * build-id order (a pc that is the first frame of a stack recorded as an exact pc is
     * looked up as it is; every other frame is a return address). */
    char *out = NULL;
    if (ms_ch_exec(ch, "SELECT b, any(p), off, max(is_pc) FROM (SELECT b, p, off,"
                       " (i = 1 AND first_is_pc) AS is_pc FROM memsight_stacks"
                       " ARRAY JOIN frame_build_ids AS b, frame_modules AS p, frame_offsets AS off,"
                       " arrayEnumerate(frame_build_ids) AS i)"
                       " WHERE (b, off) NOT IN (SELECT build_id, offset FROM memsight_symbols)"
                       " GROUP BY b, off ORDER BY b, off FORMAT TabSeparated",
                   NULL, 0, &out, NULL, err, errlen) != 0)
        return -1;
    pending pd = {0};
    int rc = -1;
    char (*fid)[160] = nfiles ? calloc(nfiles, sizeof *fid) : NULL;
    int prc = ms_ch_tsv(out, on_pending, &pd);
    if (prc == -2) {
        snprintf(err, errlen, "ClickHouse answered rows of an unexpected shape");
        goto done;
    }
    if (prc != 0 || (nfiles && !fid)) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nfiles; i++) {
        file_build_id(files[i], fid[i], sizeof fid[i]);
        if (!fid[i][0])
            say(note, ctx, "%s: not an ELF file with a build id: ignored", files[i]);
    }
    rc = 0;
    for (size_t lo = 0, hi; lo < pd.n; lo = hi) {
        const char *bid = pd.bid[lo], *file = NULL, *path = pd.path[lo];
        for (hi = lo + 1; hi < pd.n && !strcmp(pd.bid[hi], bid); hi++)
            ;
        for (size_t i = 0; i < nfiles && !file; i++)
            if (!strcmp(fid[i], bid))
                file = files[i];
        char local[160];
        if (!file && !strncmp(bid, "path:", 5) && access(bid + 5, R_OK) == 0)
            file = bid + 5;
        if (!file && path[0]) {
            file_build_id(path, local, sizeof local);
            if (!strcmp(local, bid))
                file = path;
        }
        if (!file) {
            /* the symbolizer itself also looks under /usr/lib/debug/.build-id */
            char dbg[400];
            snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
            if (strlen(bid) > 2 && access(dbg, R_OK) == 0)
                file = path[0] ? path : dbg;
        }
        if (!file) {
            say(note, ctx, "%s (%s): no file with this build id here", bid, path);
            continue;
        }
        long k = one_build(ch, bid, file, pd.off + lo, pd.is_pc + lo, hi - lo, err, errlen);
        if (k < 0) {
            rc = -1;
            goto done;
        }
        say(note, ctx, "%s (%s): %ld new offsets with a function", bid, file, k);
    }
    if (pd.n == 0)
        say(note, ctx, "every pushed frame has its symbols already: 0 new offsets");
done:
    for (size_t i = 0; i < pd.n; i++) {
        free(pd.bid[i]);
        free(pd.path[i]);
    }
    free(pd.bid);
    free(pd.path);
    free(pd.off);
    free(pd.is_pc);
    free(fid);
    free(out);
    return rc;
}
