/* `memsight diff A B`: per-stack change between two snapshots (A older, B newer),
 * largest growth first, as text, JSON, differential collapsed stacks or a differential
 * flame graph. Thin: arguments and dispatch; the work is in src/analysis/diff.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "analysis/export.h"
#include "analysis/symbolize.h"
#include "cli_common.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight diff [options] A B\n"
            "\n"
            "Compares two snapshots of one program (A older, B newer) stack by stack:\n"
            "change in live bytes and blocks, largest growth first. Stacks are matched by\n"
            "their symbolized frames, so snapshots of different runs compare.\n"
            "\n"
            "options:\n"
            "  -f, --format FMT   text (default), json, collapsed (frames A B per line), svg\n"
            "                     (differential flame graph: widths from B, red grew, blue shrank)\n"
            "  -m, --metric M     live-bytes (default), live-blocks, alloc-bytes, alloc-blocks\n"
            "  -n, --top N        stacks shown in the text table (default 20)\n"
            "      --by KEY       lines (function and file:line, default), symbols (function\n"
            "                     names: across builds) or pcs (module offsets)\n"
            "  -o, --output FILE  write to FILE (created 0600) instead of stdout\n"
            "      --no-symbols   do not read symbol files\n"
            "  -h, --help         this help\n");
}

int ms_cmd_diff(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"metric", required_argument, NULL, 'm'},
        {"top", required_argument, NULL, 'n'},    {"by", required_argument, NULL, 'b'},
        {"output", required_argument, NULL, 'o'}, {"no-symbols", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *format = "text", *output = NULL;
    ms_export_opts opts = {.metric = MS_METRIC_LIVE_BYTES};
    ms_agg_key by = MS_AGG_BY_LINES;
    int symbols = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:m:n:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'm':
            if (ms_metric_parse(optarg, &opts.metric) != 0) {
                fprintf(stderr, "memsight diff: unknown metric '%s'\n", optarg);
                return 2;
            }
            break;
        case 'n':
            if (ms_cli_parse_top("diff", optarg, &opts.top) != 0)
                return 2;
            break;
        case 'b':
            if (ms_cli_parse_agg_key("diff", optarg, &by) != 0)
                return 2;
            break;
        case 'o': output = optarg; break;
        case 'S': symbols = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "memsight diff: expected two snapshot files\n");
        usage(stderr);
        return 2;
    }
    int (*write)(const ms_diff *, const ms_export_opts *, FILE *, char *, size_t) = NULL;
    if (!strcmp(format, "text"))
        write = ms_diff_write_text;
    else if (!strcmp(format, "json"))
        write = ms_diff_write_json;
    else if (!strcmp(format, "collapsed"))
        write = ms_diff_write_collapsed;
    else if (!strcmp(format, "svg"))
        write = ms_diff_write_svg;
    else {
        fprintf(stderr, "memsight diff: unknown format '%s' (text, json, collapsed, svg)\n", format);
        return 2;
    }

    char err[1024];
    int rc = 1;
    ms_snapshot *a = NULL, *b = NULL;
    ms_symbolizer *sa = NULL, *sb = NULL;
    ms_diff *d = NULL;
    if (!(a = ms_snapshot_load(argv[optind], err, sizeof err)) ||
        !(b = ms_snapshot_load(argv[optind + 1], err, sizeof err))) {
        fprintf(stderr, "memsight diff: %s\n", err);
        goto done;
    }
    /* as trend does: two programs compared by mistake (wrong file, shared directory) */
    const char *ea = ms_snapshot_meta(a, "exe"), *eb = ms_snapshot_meta(b, "exe");
    if (ea && eb && strcmp(ea, eb) != 0)
        fprintf(stderr, "memsight diff: warning: %s is of %s, %s of %s; stacks of different "
                        "programs are compared as one\n",
                a->path, ea, b->path, eb);
    if (symbols) {
        sa = ms_symbolizer_new(a);
        sb = ms_symbolizer_new(b);
    }
    d = ms_diff_build(a, sa, b, sb, by, err, sizeof err);
    if (!d) {
        fprintf(stderr, "memsight diff: %s\n", err);
        goto done;
    }
    ms_diff_sort(d, opts.metric);
    ms_cli_output out;
    if (ms_cli_output_open(&out, "diff", output) != 0)
        goto done;
    if (write(d, &opts, out.fp, err, sizeof err) != 0) {
        fprintf(stderr, "memsight diff: %s\n", err);
        ms_cli_output_abort(&out);
        goto done;
    }
    if (ms_cli_output_finish(&out, "diff") != 0)
        goto done;
    rc = 0;
done:
    ms_diff_free(d);
    ms_symbolizer_free(sa);
    ms_symbolizer_free(sb);
    ms_snapshot_free(a);
    ms_snapshot_free(b);
    return rc;
}
