/* Allocation sites (sites.h). Tools only. */
#include "analysis/sites.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/report_model.h"

int ms_site_mode_parse(const char *name, ms_site_mode *mode)
{
    if (!strcmp(name, "program"))
        *mode = MS_SITE_PROGRAM;
    else if (!strcmp(name, "caller"))
        *mode = MS_SITE_CALLER;
    else
        return -1;
    return 0;
}

/* Module file names of the C and C++ runtimes, up to their ".so" or version. */
static const char *const runtime_modules[] = {
    "libc.so", "libc-", "libstdc++.so", "libgcc_s.so", "libm.so", "libm-", "libpthread.so",
    "libdl.so", "librt.so", "ld-linux", "ld-musl-", "libc.musl-", "libc++.so", "libc++abi.so",
    "libmemsight",
};

int ms_site_is_runtime(const ms_frame *f)
{
    if (f->file && !strncmp(f->file, "/usr/include/", 13))
        return 1;
    if (!f->module)
        return 0;
    const char *b = strrchr(f->module, '/');
    b = b ? b + 1 : f->module;
    for (size_t i = 0; i < sizeof runtime_modules / sizeof runtime_modules[0]; i++)
        if (!strncmp(b, runtime_modules[i], strlen(runtime_modules[i])))
            return 1;
    return 0;
}

size_t ms_site_index(const ms_frame *f, size_t n, ms_site_mode mode)
{
    for (size_t i = 0; mode == MS_SITE_PROGRAM && i < n; i++)
        if (!ms_site_is_runtime(&f[i]))
            return i;
    return 0;
}

ms_agg *ms_sites_build(const ms_snapshot *s, ms_symbolizer *sym, ms_site_mode mode, char *err,
                       size_t errlen)
{
    ms_agg *a = ms_agg_new();
    for (size_t i = 0; a && i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (st->kind == MS_KIND_RESERVED) /* address space, not memory */
            continue;
        size_t n = 0;
        ms_frame *f = ms_report_frames(s, sym, st, &n);
        if (!f)
            goto oom;
        char *site = n ? ms_agg_frame_name(&f[ms_site_index(f, n, mode)], MS_AGG_BY_LINES, 1)
                       : strdup("[no stack]");
        free(f);
        if (!site)
            goto oom;
        const char *names[2];
        uint32_t k = 0;
        if (ms_agg_kind_root(st->kind))
            names[k++] = ms_agg_kind_root(st->kind);
        names[k++] = site;
        long idx = ms_agg_add(a, names, k, st->kind, &st->c, st->id);
        free(site);
        if (idx < 0)
            goto oom;
        a->stacks[idx].peak_bytes += st->peak_live_bytes;
        a->stacks[idx].temps += st->temp_blocks;
    }
    if (a)
        return a;
oom:
    ms_agg_free(a);
    snprintf(err, errlen, "%s: out of memory while grouping allocation sites",
             s->path ? s->path : "snapshot");
    return NULL;
}
