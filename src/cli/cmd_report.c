/* `memsight report FILE`: reads a snapshot and writes one report format (text, json,
 * or an exporter's pprof/collapsed/svg/html). Thin: parsing arguments and dispatching;
 * the work is in src/analysis. Errors name the file and the reason. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/export.h"
#include "analysis/sites.h"
#include "analysis/suppress.h"
#include "analysis/symbolize.h"
#include "analysis/trend.h"
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
#pragma weak ms_export_massif
#pragma weak ms_trend_sort_series

typedef int (*export_fn)(const ms_snapshot *, ms_symbolizer *, const ms_export_opts *, FILE *,
                         char *, size_t);

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
    {"html", NULL, 0},
    {"massif", NULL, 0},
};

static int format_available(const struct format *f)
{
    if (f->available)
        return 1;
    if (!strcmp(f->name, "html"))
        return ms_export_html != NULL;
    if (!strcmp(f->name, "massif"))
        return ms_export_massif != NULL;
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
            "  -f, --format FMT   text (default), json, pprof, collapsed, svg, html or massif\n"
            "                     (html and massif take the run's interval snapshots too)\n"
            "  -n, --top N        stacks shown per table (text: 10; json: all)\n"
            "      --json-frames FORM  json: inline (default: every frame written in every\n"
            "                     stack) or table (each frame once, stacks list indexes)\n"
            "      --sites WHICH  text, json: group allocation sites by the innermost frame of the\n"
            "                     program (program, the default) or the allocator's caller\n"
            "                     (caller: strdup, operator new...)\n"
            "  -m, --metric M     live-bytes (default), live-blocks, alloc-bytes, alloc-blocks\n"
            "                     (what flame graphs and collapsed stacks count)\n"
            "  -o, --output FILE  write to FILE (created 0600) instead of stdout\n"
            "      --no-symbols   do not read symbol files (addresses and modules only)\n"
            "      --no-series    html, massif: this snapshot alone, not its run's series\n"
            "      --suppress FILE   known leaks (leak:PATTERN lines, LeakSanitizer's form)\n"
            "                        left out of the leak report\n"
            "      --filter-function NAME   only the stacks through a function named so\n"
            "                        (a substring; heaptrack's --filter-bt-function)\n"
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

/* The snapshots of the same run as s (same pid and agent start time, in the same
 * directory, taken up to s: its interval, signal and peak snapshots), oldest first,
 * ending with s. Returns the count (1: s alone); *out is malloc'ed. Unreadable
 * neighbours are skipped (they are not what was asked for). */
static size_t run_series(ms_snapshot *s, const char *path, ms_snapshot ***out)
{
    ms_snapshot **v = malloc(sizeof *v);
    if (!v)
        return 0;
    v[0] = s;
    *out = v;
    size_t n = 1, cap = 1;
    const char *pid = ms_snapshot_meta(s, "pid"), *start = ms_snapshot_meta(s, "start_ns");
    const char *when = ms_snapshot_meta(s, "snapshot_ns");
    if (!pid || !start || !when || !ms_trend_sort_series)
        return n;
    char dir[4096], prefix[64];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, sizeof dir, ".");
    if (!*dir)
        snprintf(dir, sizeof dir, "/");
    snprintf(prefix, sizeof prefix, "memsight-%s-", pid);
    DIR *d = opendir(dir);
    if (!d)
        return n;
    uint64_t until = strtoull(when, NULL, 10);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || nl < 6 ||
            strcmp(e->d_name + nl - 6, ".msnap") || !strcmp(e->d_name, base))
            continue;
        char p[4096 + 256], err[256];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        ms_snapshot *o = ms_snapshot_read(p, err, sizeof err);
        if (!o)
            continue;
        const char *os = ms_snapshot_meta(o, "start_ns"), *ow = ms_snapshot_meta(o, "snapshot_ns");
        const char *op = ms_snapshot_meta(o, "pid");
        if (!os || !ow || !op || strcmp(os, start) || strcmp(op, pid) ||
            strtoull(ow, NULL, 10) > until) {
            ms_snapshot_free(o);
            continue;
        }
        if (n == cap) {
            ms_snapshot **nv = realloc(v, 2 * cap * sizeof *nv);
            if (!nv) {
                ms_snapshot_free(o);
                break;
            }
            v = nv;
            cap *= 2;
            *out = v;
        }
        v[n++] = o;
    }
    closedir(d);
    ms_trend_sort_series(v, n);
    return n;
}

/* html and massif: the run's series when it has one. */
static int export_series(const char *format, ms_snapshot *s, const char *path, int series_wanted,
                         ms_symbolizer *sym, int symbols, const ms_export_opts *o, FILE *out,
                         char *err, size_t errlen)
{
    ms_snapshot **v = NULL;
    size_t n = series_wanted ? run_series(s, path, &v) : 0;
    ms_snapshot *one[1] = {s};
    if (n == 0) {
        free(v);
        v = NULL;
        n = 1;
    }
    ms_snapshot **ser = v ? v : one;
    if (n > 1)
        fprintf(stderr, "memsight report: with %zu earlier snapshot(s) of the same run\n", n - 1);
    ms_symbolizer **syms = calloc(n, sizeof *syms);
    int rc = -1;
    if (!syms) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        syms[i] = ser[i] == s ? sym : symbols ? ms_symbolizer_new(ser[i]) : NULL;
    if (!strcmp(format, "massif"))
        rc = ms_export_massif(ser, n, syms, out, err, errlen);
    else
        rc = ms_export_html(ser, n, sym, o, out, err, errlen);
    for (size_t i = 0; i < n; i++)
        if (ser[i] != s)
            ms_symbolizer_free(syms[i]);
done:
    free(syms);
    for (size_t i = 0; v && i < n; i++)
        if (v[i] != s)
            ms_snapshot_free(v[i]);
    free(v);
    return rc;
}

int ms_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"top", required_argument, NULL, 'n'},
        {"metric", required_argument, NULL, 'm'}, {"output", required_argument, NULL, 'o'},
        {"no-symbols", no_argument, NULL, 'S'},   {"help", no_argument, NULL, 'h'},
        {"no-series", no_argument, NULL, 'N'},
        {"suppress", required_argument, NULL, 'U'},
        {"filter-function", required_argument, NULL, 'F'},
        {"json-frames", required_argument, NULL, 'J'},
        {"sites", required_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    const char *format = "text", *output = NULL;
    ms_export_opts opts = {.metric = MS_METRIC_LIVE_BYTES};
    int symbols = 1, series = 1, c;
    const char *supp_path = NULL, *filter_fn = NULL;
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
        case 'N': series = 0; break;
        case 'U': supp_path = optarg; break;
        case 'F': filter_fn = optarg; break;
        case 'J':
            if (strcmp(optarg, "table") && strcmp(optarg, "inline")) {
                fprintf(stderr, "memsight report: --json-frames: '%s' is neither table nor "
                                "inline\n", optarg);
                return 2;
            }
            opts.frame_table = !strcmp(optarg, "table");
            break;
        case 'G': {
            ms_site_mode mode;
            if (ms_site_mode_parse(optarg, &mode) != 0) {
                fprintf(stderr, "memsight report: --sites: '%s' is neither program nor caller\n",
                        optarg);
                return 2;
            }
            opts.site_caller = mode == MS_SITE_CALLER;
            break;
        }
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
        fprintf(stderr, "memsight report: unknown format '%s' (text, json, pprof, collapsed, svg, html, massif)\n",
                format);
        return 2;
    }
    if (opts.frame_table && strcmp(format, "json")) {
        fprintf(stderr, "memsight report: --json-frames is for -f json, not %s\n", format);
        return 2;
    }
    if (!format_available(fmt)) {
        fprintf(stderr, "memsight report: format '%s' is not available in this build\n", format);
        return 2;
    }
    if (!strcmp(format, "pprof") && !output && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "memsight report: pprof is gzip'd binary data, not for a terminal: "
                        "give -o FILE or redirect the output\n");
        return 2;
    }

    char err[1024];
    ms_suppressions *supp = NULL;
    if (supp_path && !(supp = ms_supp_load(supp_path, err, sizeof err))) {
        fprintf(stderr, "memsight report: --suppress: %s\n", err);
        return 2;
    }
    if (filter_fn && !*filter_fn) {
        fprintf(stderr, "memsight report: --filter-function: an empty name\n");
        ms_supp_free(supp);
        return 2;
    }
    const char *path = argv[optind];
    ms_snapshot *s = report_open(path, err, sizeof err);
    if (!s) {
        fprintf(stderr, "memsight report: %s\n", err);
        ms_supp_free(supp);
        return 1;
    }
    ms_symbolizer *sym = symbols ? ms_symbolizer_new(s) : NULL;
    if (symbols && !sym)
        fprintf(stderr, "memsight report: cannot start the symbolizer; addresses only\n");
    if (filter_fn) {
        long kept = ms_filter_function(s, sym, filter_fn);
        if (kept >= 0)
            fprintf(stderr, "memsight report: %ld stack(s) through a function named *%s*\n", kept,
                    filter_fn);
        series = 0; /* the earlier snapshots are not filtered: no charts that disagree */
    }
    if (supp) {
        if (s->has_leaks && ms_supp_apply(s, sym, supp) >= 0)
            ms_supp_write(supp, "memsight report: ", stderr);
        else if (!s->has_leaks)
            fprintf(stderr, "memsight report: --suppress: %s holds no leak scan\n", path);
    }

    int rc = 0;
    ms_cli_output out;
    if (ms_cli_output_open(&out, "report", output) != 0) {
        rc = 1;
        goto done;
    }
    int wrc = fmt->fn ? fmt->fn(s, sym, &opts, out.fp, err, sizeof err)
                      : export_series(format, s, path, series, sym, symbols, &opts, out.fp, err,
                                      sizeof err);
    if (wrc != 0) {
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
    ms_supp_free(supp);
    return rc;
}
