/* libFuzzer target: the Android native heap dump importer on arbitrary text (or the
 * snapshot reader, for input that starts with the snapshot magic), then every exporter
 * (collapsed, pprof, svg, html), diff, trend and merge on whatever it accepts. Any
 * crash, overread or leak is a bug in code that reads untrusted files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/android_dump.h"
#include "analysis/diff.h"
#include "analysis/export.h"
#include "analysis/merge.h"
#include "analysis/trend.h"
#include "snapshot_crcs.h"

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink)
        sink = fopen("/dev/null", "w");
    char err[512];
    ms_snapshot *s;
    if (size >= 8 && !memcmp(data, MS_SNAP_MAGIC, 8)) {
        uint8_t *copy = malloc(size);
        if (!copy)
            return 0;
        memcpy(copy, data, size);
        fix_crcs(copy, size);
        s = ms_snapshot_parse(copy, size, "fuzz", err, sizeof err);
        free(copy);
    } else {
        s = ms_android_dump_parse((const char *)data, size, "fuzz", err, sizeof err);
    }
    if (!s)
        return 0;
    ms_export_opts o = {.metric = MS_METRIC_LIVE_BYTES, .top = 5};
    ms_export_collapsed(s, NULL, &o, sink, err, sizeof err);
    ms_export_pprof(s, NULL, &o, sink, err, sizeof err);
    ms_export_svg(s, NULL, &o, sink, err, sizeof err);
    ms_snapshot *series[2] = {s, s};
    ms_export_html(series, 1, NULL, &o, sink, err, sizeof err);
    ms_diff *d = ms_diff_build(s, NULL, s, NULL, MS_AGG_BY_PCS, err, sizeof err);
    if (d) {
        ms_diff_write_text(d, &o, sink, err, sizeof err);
        ms_diff_write_svg(d, &o, sink, err, sizeof err);
        ms_diff_free(d);
    }
    ms_snapshot *m = ms_merge(series, 2, NULL, err, sizeof err);
    if (m) {
        ms_export_collapsed(m, NULL, &o, sink, err, sizeof err);
        ms_snapshot_free(m);
    }
    ms_trend *t = ms_trend_build(series, 2, NULL, MS_AGG_BY_SYMBOLS, err, sizeof err);
    if (t) {
        ms_trend_write_json(t, &o, sink, err, sizeof err);
        ms_trend_free(t);
    }
    ms_snapshot_free(s);
    return 0;
}
