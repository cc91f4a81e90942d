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

typedef struct bid_list {
    char **id, **path;
    size_t n, cap;
} bid_list;

static int on_bid(void *ctx, char **f, size_t n)
{
    bid_list *l = ctx;
    if (n < 2 || !f[0][0])
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **a = realloc(l->id, cap * sizeof *a), **b;
        if (!a)
            return -1;
        l->id = a;
        b = realloc(l->path, cap * sizeof *b);
        if (!b)
            return -1;
        l->path = b;
        l->cap = cap;
    }
    l->id[l->n] = strdup(f[0]);
    l->path[l->n] = strdup(f[1]);
    if (!l->id[l->n] || !l->path[l->n])
        return -1;
    l->n++;
    return 0;
}

typedef struct offs {
    uint64_t *off;
    uint8_t *is_pc;
    size_t n, cap;
} offs;

static int on_off(void *ctx, char **f, size_t n)
{
    offs *o = ctx;
    if (n < 2)
        return 0;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 1024;
        uint64_t *a = realloc(o->off, cap * sizeof *a);
        if (!a)
            return -1;
        o->off = a;
        uint8_t *b = realloc(o->is_pc, cap);
        if (!b)
            return -1;
        o->is_pc = b;
        o->cap = cap;
    }
    o->off[o->n] = strtoull(f[0], NULL, 10);
    o->is_pc[o->n] = f[1][0] == '1';
    o->n++;
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

/* Symbols of one build id from one file, inserted as one statement. Returns the number
 * of offsets resolved to a function, or -1 with err. */
static long one_build(ms_ch *ch, const char *bid, const char *file, char *err, size_t errlen)
{
    char *sql = NULL, *out = NULL, *body = NULL;
    size_t sl = 0, sc = 0, blen = 0;
    long resolved = -1;
    offs o = {0};
    /* the offsets of this build id in pushed frames that have no symbols yet (a pc that
     * is the first frame of a stack recorded as an exact pc is looked up as it is; every
     * other frame is a return address) */
    if (ms_ch_quote(&sql, &sl, &sc, bid) != 0)
        goto oom;
    char *full = NULL;
    if (asprintf(&full, "SELECT off, max(is_pc) FROM (SELECT frame_offsets[i] AS off,"
                        " (i = 1 AND first_is_pc) AS is_pc FROM memsight_stacks"
                        " ARRAY JOIN arrayEnumerate(frame_build_ids) AS i"
                        " WHERE frame_build_ids[i] = %s) WHERE off NOT IN"
                        " (SELECT offset FROM memsight_symbols WHERE build_id = %s)"
                        " GROUP BY off FORMAT TabSeparated", sql, sql) < 0)
        goto oom;
    int rc = ms_ch_exec(ch, full, NULL, 0, &out, NULL, err, errlen);
    free(full);
    if (rc != 0)
        goto done;
    if (ms_ch_tsv(out, on_off, &o) != 0)
        goto oom;
    if (o.n == 0) {
        resolved = 0;
        goto done;
    }

    ms_module mod = {0};
    ms_snap_segment seg = {0, UINT64_MAX >> 1, 0, 5, 0};
    mod.path = (char *)file;
    if (strncmp(bid, "path:", 5) != 0) {
        int n = unhex(bid, mod.build_id, sizeof mod.build_id);
        if (n <= 0) {
            snprintf(err, errlen, "ClickHouse holds a malformed build id '%.80s'", bid);
            goto done;
        }
        mod.build_id_len = (uint32_t)n;
    }
    mod.nseg = 1;
    mod.segs = &seg;
    ms_snapshot snap;
    memset(&snap, 0, sizeof snap);
    snap.modules = &mod;
    snap.nmodules = 1;
    ms_symbolizer *sym = ms_symbolizer_new(&snap);
    if (!sym)
        goto oom;
    FILE *f = open_memstream(&body, &blen);
    if (!f) {
        ms_symbolizer_free(sym);
        goto oom;
    }
    resolved = 0;
    for (size_t i = 0; i < o.n; i++) {
        ms_frame fr[16];
        int nf = ms_symbolize(sym, o.off[i], !o.is_pc[i], fr, 16);
        resolved += nf > 0 && fr[nf - 1].function != NULL;
        for (int d = 0; d < nf; d++) {
            ms_json j;
            ms_json_init(&j, f, 0);
            ms_json_object_begin(&j);
            ms_json_kv_str(&j, "build_id", bid);
            ms_json_kv_u64(&j, "offset", o.off[i]);
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
    if (fclose(f) != 0)
        goto oom;
    if (ms_ch_exec(ch, "INSERT INTO memsight_symbols FORMAT JSONEachRow", body, blen, NULL, NULL,
                   err, errlen) != 0)
        resolved = -1;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    resolved = -1;
done:
    free(o.off);
    free(o.is_pc);
    free(sql);
    free(out);
    free(body);
    return resolved;
}

int ms_fleet_symbolize(ms_ch *ch, const char *const *files, size_t nfiles,
                       void (*note)(void *ctx, const char *msg), void *ctx, char *err,
                       size_t errlen)
{
    char *out = NULL;
    if (ms_ch_exec(ch, "SELECT b, any(p) FROM memsight_stacks ARRAY JOIN frame_build_ids AS b,"
                       " frame_modules AS p GROUP BY b ORDER BY b FORMAT TabSeparated",
                   NULL, 0, &out, NULL, err, errlen) != 0)
        return -1;
    bid_list l = {0};
    int rc = -1;
    char (*fid)[160] = nfiles ? calloc(nfiles, sizeof *fid) : NULL;
    if (ms_ch_tsv(out, on_bid, &l) != 0 || (nfiles && !fid)) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nfiles; i++) {
        file_build_id(files[i], fid[i], sizeof fid[i]);
        if (!fid[i][0])
            say(note, ctx, "%s: not an ELF file with a build id: ignored", files[i]);
    }
    rc = 0;
    for (size_t b = 0; b < l.n; b++) {
        const char *bid = l.id[b], *file = NULL;
        for (size_t i = 0; i < nfiles && !file; i++)
            if (!strcmp(fid[i], bid))
                file = files[i];
        char local[160];
        if (!file && !strncmp(bid, "path:", 5) && access(bid + 5, R_OK) == 0)
            file = bid + 5;
        if (!file && l.path[b][0]) {
            file_build_id(l.path[b], local, sizeof local);
            if (!strcmp(local, bid))
                file = l.path[b];
        }
        if (!file) {
            /* the symbolizer also finds /usr/lib/debug/.build-id/xx/....debug by itself */
            char dbg[400];
            snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
            if (strlen(bid) > 2 && access(dbg, R_OK) == 0)
                file = l.path[b][0] ? l.path[b] : dbg;
        }
        if (!file) {
            say(note, ctx, "%s (%s): no file with this build id here", bid, l.path[b]);
            continue;
        }
        long n = one_build(ch, bid, file, err, errlen);
        if (n < 0) {
            rc = -1;
            goto done;
        }
        say(note, ctx, "%s (%s): %ld new offsets with a function", bid, file, n);
    }
done:
    for (size_t i = 0; i < l.n; i++) {
        free(l.id[i]);
        free(l.path[i]);
    }
    free(l.id);
    free(l.path);
    free(fid);
    free(out);
    return rc;
}
