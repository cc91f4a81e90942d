/* `memsight push URL SNAPSHOT...|DIR`: sends snapshots to ClickHouse (docs/fleet.md),
 * creating the tables when they are missing. Thin: the work is in src/fleet/push.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "fleet/fleet.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight push [options] URL SNAPSHOT...|DIR...\n"
            "\n"
            "Sends snapshots to ClickHouse over its HTTP interface (URL: http://host:8123,\n"
            "optionally ?database=DB, user:password@ before the host), one row per call stack\n"
            "with the snapshot's labels, host, program, time and reason, and the frames as\n"
            "(build id, offset) pairs. Creates the tables when missing. A snapshot already\n"
            "there is not sent again. A directory stands for every .msnap file in it.\n"
            "\n"
            "  -q, --quiet   print only errors\n");
}

static int push_one(ms_ch *ch, const char *path, int quiet, size_t *done, size_t *skipped)
{
    char err[1024];
    int already;
    size_t rows;
    if (ms_fleet_push(ch, path, &already, &rows, err, sizeof err) != 0) {
        fprintf(stderr, "memsight push: %s: not pushed: %s\n", path, err);
        return -1;
    }
    if (already)
        (*skipped)++;
    else
        (*done)++;
    if (!quiet)
        fprintf(stderr, "memsight push: %s: %s\n", path,
                already ? "already in ClickHouse, not sent again" : "pushed");
    (void)rows;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ms_cmd_push(int argc, char **argv)
{
    static const struct option opts[] = {
        {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int quiet = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind < 2) {
        usage(stderr);
        return 2;
    }
    char err[1024];
    ms_ch *ch = ms_ch_open(argv[optind], err, sizeof err);
    if (!ch) {
        fprintf(stderr, "memsight push: %s\n", err);
        return 2;
    }
    if (ms_fleet_schema(ch, err, sizeof err) != 0) {
        fprintf(stderr, "memsight push: %s: cannot create the tables: %s\n", argv[optind], err);
        ms_ch_close(ch);
        return 1;
    }
    size_t done = 0, skipped = 0, failed = 0;
    for (int i = optind + 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            if (!d) {
                fprintf(stderr, "memsight push: %s: cannot read the directory\n", argv[i]);
                failed++;
                continue;
            }
            char **names = NULL;
            size_t n = 0, cap = 0;
            struct dirent *e;
            while ((e = readdir(d))) {
                size_t l = strlen(e->d_name);
                if (l < 7 || strcmp(e->d_name + l - 6, ".msnap"))
                    continue;
                if (n == cap) {
                    cap = cap ? 2 * cap : 64;
                    char **p = realloc(names, cap * sizeof *p);
                    if (!p)
                        break;
                    names = p;
                }
                if (asprintf(&names[n], "%s/%s", argv[i], e->d_name) >= 0)
                    n++;
            }
            closedir(d);
            if (n)
                qsort(names, n, sizeof *names, cmp_str);
            for (size_t k = 0; k < n; k++) {
                failed += push_one(ch, names[k], quiet, &done, &skipped) != 0;
                free(names[k]);
            }
            free(names);
            continue;
        }
        failed += push_one(ch, argv[i], quiet, &done, &skipped) != 0;
    }
    if (!quiet || failed)
        fprintf(stderr, "memsight push: %zu pushed, %zu already there, %zu failed\n", done, skipped,
                failed);
    ms_ch_close(ch);
    return failed ? 1 : 0;
}
