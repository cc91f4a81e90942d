/* `memsight trend FILES...|DIR`: live bytes of every stack across a series of
 * snapshots and the leak suspects ranked by steady growth. Thin: arguments, collecting
 * the series and dispatch; the work is in src/analysis/trend.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/android_dump.h"
#include "analysis/export.h"
#include "analysis/stack_agg.h"
#include "analysis/symbolize.h"
#include "analysis/trend.h"
#include "cli_common.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight trend [options] FILE... | DIR\n"
            "\n"
            "Follows every call stack across a series of snapshots of one program (files,\n"
            "or a directory holding them; ordered by snapshot time) and ranks leak suspects\n"
            "by steady growth: the share of intervals in which the stack grew, its slope in\n"
            "bytes per second and its share of the total growth. A stack that grows in\n"
            "every snapshot ranks above one that jumps once.\n"
            "\n"
            "options:\n"
            "  -f, --format FMT   text (default), json, html (report of the last snapshot with\n"
            "                     charts of the series), massif (ms_print, massif-visualizer)\n"
            "  -n, --top N        suspects and stacks shown (text default 10)\n"
            "      --by KEY       lines (function and file:line, default), symbols (function\n"
            "                     names: across builds) or pcs (module offsets)\n"
            "  -o, --output FILE  write to FILE (created 0600) instead of stdout\n"
            "      --no-symbols   do not read symbol files\n"
            "  -h, --help         this help\n");
}

/* A directory entry is taken when its first bytes are a snapshot's or a dump's. */
static int looks_like_snapshot(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    char head[32];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    if (n < 8)
        return 0;
    return !memcmp(head, MS_SNAP_MAGIC, 8) || ms_android_dump_sniff(head, (size_t)n);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **list_dir(const char *dir, size_t *n, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return NULL;
    }
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".tmp."))
            continue;
        char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
            break;
        struct stat st;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode) || !looks_like_snapshot(p)) {
            free(p);
            continue;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(p);
                break;
            }
            v = nv;
        }
        v[(*n)++] = p;
    }
    closedir(d);
    if (!*n) {
        snprintf(err, errlen, "%s: no snapshot files in this directory", dir);
        free(v);
        return NULL;
    }
    qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

int ms_cmd_trend(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'}, {"top", required_argument, NULL, 'n'},
        {"by", required_argument, NULL, 'b'},     {"output", required_argument, NULL, 'o'},
        {"no-symbols", no_argument, NULL, 'S'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *format = "text", *output = NULL;
    ms_export_opts opts = {.metric = MS_METRIC_LIVE_BYTES};
    ms_agg_key by = MS_AGG_BY_LINES;
    int symbols = 1, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:n:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': format = optarg; break;
        case 'n':
            if (ms_cli_parse_top("trend", optarg, &opts.top) != 0)
                return 2;
            break;
        case 'b':
            if (ms_cli_parse_agg_key("trend", optarg, &by) != 0)
                return 2;
            break;
        case 'o': output = optarg; break;
        case 'S': symbols = 0; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (strcmp(format, "text") && strcmp(format, "json") && strcmp(format, "html") &&
        strcmp(format, "massif")) {
        fprintf(stderr, "memsight trend: unknown format '%s' (text, json, html, massif)\n", format);
        return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "memsight trend: expected snapshot files or a directory\n");
        usage(stderr);
        return 2;
    }
    char err[1024];
    char **files = NULL;
    size_t nfiles = 0;
    int owned = 0;
    struct stat st;
    if (argc - optind == 1 && stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode)) {
        files = list_dir(argv[optind], &nfiles, err, sizeof err);
        if (!files) {
            fprintf(stderr, "memsight trend: %s\n", err);
            return 1;
        }
        owned = 1;
    } else {
        files = argv + optind;
        nfiles = (size_t)(argc - optind);
    }

    int rc = 1;
    ms_snapshot **series = calloc(nfiles, sizeof *series);
    ms_symbolizer **syms = calloc(nfiles, sizeof *syms);
    ms_trend *t = NULL;
    if (!series || !syms) {
        fprintf(stderr, "memsight trend: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < nfiles; i++) {
        series[i] = ms_snapshot_load(files[i], err, sizeof err);
        if (!series[i]) {
            fprintf(stderr, "memsight trend: %s\n", err);
            goto done;
        }
    }
    ms_trend_sort_series(series, nfiles);
    /* a series mixes programs only by mistake (a shared output directory): say so */
    for (size_t i = 1; i < nfiles; i++) {
        const char *e0 = ms_agg_meta(series[0], "exe"), *ei = ms_agg_meta(series[i], "exe");
        if (e0 && ei && strcmp(e0, ei) != 0) {
            fprintf(stderr, "memsight trend: warning: %s is of %s, %s of %s; stacks of different "
                    "programs are followed as one series\n",
                    series[i]->path, ei, series[0]->path, e0);
            break;
        }
    }
    if (symbols)
        for (size_t i = 0; i < nfiles; i++)
            syms[i] = ms_symbolizer_new(series[i]);

    ms_cli_output outf;
    if (ms_cli_output_open(&outf, "trend", output) != 0)
        goto done;
    FILE *out = outf.fp;
    int wrc;
    if (!strcmp(format, "html")) {
        wrc = ms_export_html(series, nfiles, syms[nfiles - 1], &opts, out, err, sizeof err);
    } else if (!strcmp(format, "massif")) {
        wrc = ms_export_massif(series, nfiles, syms, out, err, sizeof err);
    } else {
        t = ms_trend_build(series, nfiles, syms, by, err, sizeof err);
        wrc = !t ? -1
              : !strcmp(format, "json") ? ms_trend_write_json(t, &opts, out, err, sizeof err)
                                        : ms_trend_write_text(t, &opts, out, err, sizeof err);
    }
    if (wrc != 0) {
        fprintf(stderr, "memsight trend: %s\n", err);
        ms_cli_output_abort(&outf);
        goto done;
    }
    if (ms_cli_output_finish(&outf, "trend") != 0)
        goto done;
    rc = 0;
done:
    ms_trend_free(t);
    for (size_t i = 0; series && i < nfiles; i++) {
        if (syms)
            ms_symbolizer_free(syms[i]);
        ms_snapshot_free(series[i]);
    }
    free(series);
    free(syms);
    if (owned) {
        for (size_t i = 0; i < nfiles; i++)
            free(files[i]);
        free(files);
    }
    return rc;
}
