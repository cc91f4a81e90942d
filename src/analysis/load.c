/* ms_snapshot_load: opens any snapshot-like file by its content (a memsight snapshot,
 * or an Android malloc-debug native heap dump) so every command and exporter accepts
 * both. Tools only; returns NULL with a message, never prints. */
#include <stdlib.h>
#include <string.h>

#include "analysis/android_dump.h"
#include "analysis/export.h"
#include "core/fileio.h"

ms_snapshot *ms_snapshot_load(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    char *data = ms_read_file(path, &len, err, errlen);
    if (!data)
        return NULL;
    ms_snapshot *s = NULL;
    size_t mlen = strlen(MS_SNAP_MAGIC);
    if (len >= mlen && memcmp(data, MS_SNAP_MAGIC, mlen) == 0)
        s = ms_snapshot_parse((const uint8_t *)data, len, path, err, errlen);
    else if (ms_android_dump_sniff(data, len))
        s = ms_android_dump_parse(data, len, path, err, errlen);
    else
        snprintf(err, errlen,
                 "%s: not a memsight snapshot (no %s magic) nor an Android native heap dump",
                 path, MS_SNAP_MAGIC);
    free(data);
    return s;
}

ms_export_fn ms_export_find(const char *format)
{
    static const struct {
        const char *name;
        ms_export_fn fn;
    } formats[] = {
        {"text", ms_export_text},   {"json", ms_export_json},         {"pprof", ms_export_pprof},
        {"collapsed", ms_export_collapsed}, {"svg", ms_export_svg},
    };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(format, formats[i].name))
            return formats[i].fn;
    return NULL;
}
