/* `memsight report FILE`: reads a snapshot and writes one report format (text, json,
 * or an exporter's pprof/collapsed/svg/html). Thin: parsing arguments and dispatching;
 * the work is in src/analysis. Errors name the file and the reason. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "analysis/symbolize.h"
#include "cli_common.h"
#include "commands.h"
#include "core/snapshot.h"

/* Exporters and the multi-format loader live in other files of src/analysis; a build
 * without one says so instead of failing to link. */
#pragma weak ms_snapshot_load
#pragma weak ms_export_pprof
#pragma weak ms_export_collapsed
#pragma weak ms_export_svg
#pragma weak ms_export_html

typedef int (*export_fn)(const ms_snapshot *, ms_symbolizer *, const ms_export_opts *, FILE *,
                         char *, size_t);

static int export_html_one(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o,
                           FILE *out, char *err, size_t errlen)
{
    ms_snapshot *series[1] = {(ms_snapshot *)s};
    return ms_export_html(series, 1, sym, o, out, err, errlen);
}

static const struct format {
    const char *name;
    export_fn fn;
    int available;
} formats[] = {
    {"text", ms_export_text, 1},
    {"json", ms_export_json, 1},
    {"pprof", ms_export_pprof, 0},
    {"collapsed", ms_export_collapsed, 0},
    {"svg", ms_export_svg, 0},
    {"html", export_html_one, 0},
};

static int format_available(const struct format *f)
{
    if (f->available)
        return 1;
    if (!strcmp(f->name, "html"))
        return ms_export_html != NULL;
    return f->fn != NULL;
}

static const struct metric {
    const char *name;
    ms_metric m;
} metrics[] = {
    {"live-bytes", MS_METRIC_LIVE_BYTES},
    {"live-blocks", MS_METRIC_LIVE_BLOCKS},
    {"alloc-bytes", MS_METRIC_ALLOC_BYTES},
    {"alloc-blocks", MS_METRIC_ALLOC_BLOCKS},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight report [options] FILE\n"
            "\n"
            "Reads a snapshot written by the agent (or an Android native heap dump) and\n"
            "reports live and cumulative memory by call stack, symbolized.\n"
            "\n"
            "options:\n"
            "  -f, --format FMT   text (default), json, pprof, collapsed, svg or html\n"
            "  -n, --top N        stacks shown per table (text: 10; json: all)\n"
            "  -m, --metric M     live-bytes (default), live-blocks, alloc-bytes, alloc-blocks\n"
            "                     (what flame graphs and collapsed stacks count)\n"
            "  -o, --output FILE  write to FILE (created 0600) instead of stdout\n"
            "      --no-symbols   do not read symbol files (addresses and modules only)\n"
            "  -h, --help         this help\n"
            "\n"
            "The JSON report is documented in docs/json-report.md.\n");
}

static ms_snapshot *report_open(const char *path, char *err, size_t errlen)
{
    if (ms_snapshot_load)
        return ms_snapshot_load(path, err, errlen);
    return ms_snapshot_read(path, err, errlen);
}

int ms_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"top", required_argument, NULL, 'n'},
        {"metric", required_argument, NULL, 'm'}, {"output", required_argument, NULL, 'o'},
        {"no-symbols", no_argument, NULL, 'S'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format = "text", *output = NULL;
    ms_export_opts opts = {.metric = MS_METRIC_LIVE_BYTES};
    int symbols = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:n:m:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'n':
            if (ms_cli_parse_top("report", optarg, &opts.top) != 0)
                return 2;
            break;
        case 'm': {
            size_t i;
            for (i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
                if (!strcmp(optarg, metrics[i].name))
                    break;
            if (i == sizeof metrics / sizeof metrics[0]) {
                fprintf(stderr, "memsight report: unknown metric '%s'\n", optarg);
                return 2;
            }
            opts.metric = metrics[i].m;
            break;
        }
        case 'o': output = optarg; break;
        case 'S': symbols = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "memsight report: expected one snapshot file\n");
        usage(stderr);
        return 2;
    }
    const struct format *fmt = NULL;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(format, formats[i].name))
            fmt = &formats[i];
    if (!fmt) {
        fprintf(stderr, "memsight report: unknown format '%s' (text, json, pprof, collapsed, svg, html)\n",
                format);
        return 2;
    }
    if (!format_available(fmt)) {
        fprintf(stderr, "memsight report: format '%s' is not available in this build\n", format);
        return 2;
    }

    char err[1024];
    const char *path = argv[optind];
    ms_snapshot *s = report_open(path, err, sizeof err);
    if (!s) {
        fprintf(stderr, "memsight report: %s\n", err);
        return 1;
    }
    ms_symbolizer *sym = symbols ? ms_symbolizer_new(s) : NULL;
    if (symbols && !sym)
        fprintf(stderr, "memsight report: cannot start the symbolizer; addresses only\n");

    int rc = 0;
    ms_cli_output out;
    if (ms_cli_output_open(&out, "report", output) != 0) {
        rc = 1;
        goto done;
    }
    if (fmt->fn(s, sym, &opts, out.fp, err, sizeof err) != 0) {
        fprintf(stderr, "memsight report: %s\n", err);
        ms_cli_output_abort(&out);
        rc = 1;
        goto done;
    }
    if (ms_cli_output_finish(&out, "report") != 0)
        rc = 1;
done:
    ms_symbolizer_free(sym);
    ms_snapshot_free(s);
    return rc;
}
