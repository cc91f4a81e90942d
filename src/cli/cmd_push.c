/* `memsight push URL SNAPSHOT...|DIR`: sends snapshots to ClickHouse (docs/fleet.md),
 * creating the tables when they are missing. Thin: the work is in src/fleet/push.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_common.h"
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
            "Nothing is deleted: a file not pushed (each is named) is pushed by a later run,\n"
            "once.\n"
            "\n"
            "  -q, --quiet              print only errors\n"
            "      --connect-timeout S  seconds to connect (default 10)\n"
            "      --timeout S          seconds for each request as a whole (default 120)\n"
            "      --tries N            tries of a batch whose transport fails (default 3;\n"
            "                           waits 1, 2, 4... s between them)\n");
}

static int cmp_str(const void *a, const void *b);

static void progress(void *ctx, const ms_push_item *it)
{
    char p[1024], e[1200];
    ms_fleet_esc(it->path, p, sizeof p);
    if (it->status == MS_PUSH_FAILED)
        fprintf(stderr, "memsight push: %s: not pushed: %s\n", p, ms_fleet_esc(it->err, e, sizeof e));
    else if (!*(int *)ctx)
        fprintf(stderr, "memsight push: %s: %s\n", p,
                it->status == MS_PUSH_ALREADY ? "already in ClickHouse, not sent again" : "pushed");
}

/* Adds path, or every .msnap in it when it is a directory (sorted), to the list. */
static int add_path(const char *path, char ***list, size_t *n, size_t *cap)
{
    struct stat st;
    int isdir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    DIR *d = isdir ? opendir(path) : NULL;
    if (isdir && !d) {
        fprintf(stderr, "memsight push: %s: cannot read the directory\n", path);
        return -1;
    }
    size_t first = *n;
    struct dirent *e = NULL;
    do {
        char *p = NULL;
        if (d) {
            e = readdir(d);
            if (!e)
                break;
            size_t l = strlen(e->d_name);
            if (l < 7 || strcmp(e->d_name + l - 6, ".msnap"))
                continue;
            if (asprintf(&p, "%s/%s", path, e->d_name) < 0)
                p = NULL;
        } else {
            p = strdup(path);
        }
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 256;
            char **q = realloc(*list, c * sizeof *q);
            if (!q) {
                free(p);
                p = NULL;
            } else {
                *list = q;
                *cap = c;
            }
        }
        if (!p) {
            fprintf(stderr, "memsight push: out of memory\n");
            if (d)
                closedir(d);
            return -1;
        }
        (*list)[(*n)++] = p;
    } while (d);
    if (d) {
        closedir(d);
        qsort(*list + first, *n - first, sizeof **list, cmp_str);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ms_cmd_push(int argc, char **argv)
{
    enum { O_CONNECT = 256, O_TIMEOUT, O_TRIES };
    static const struct option opts[] = {{"quiet", no_argument, 0, 'q'},
                                         {"connect-timeout", required_argument, 0, O_CONNECT},
                                         {"timeout", required_argument, 0, O_TIMEOUT},
                                         {"tries", required_argument, 0, O_TRIES},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int quiet = 0, c;
    long connect_s = 10, total_s = 120, tries = 3;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = 1; break;
        case O_CONNECT:
        case O_TIMEOUT:
        case O_TRIES: {
            long v;
            if (ms_cli_parse_long(optarg, 1, c == O_TRIES ? 100 : 86400, &v) != 0) {
                fprintf(stderr, "memsight push: --%s: '%s' is not %s\n",
                        c == O_CONNECT ? "connect-timeout" : c == O_TIMEOUT ? "timeout" : "tries", optarg,
                        c == O_TRIES ? "1..100" : "1..86400 seconds");
                return 2;
            }
            *(c == O_CONNECT ? &connect_s : c == O_TIMEOUT ? &total_s : &tries) = v;
            break;
        }
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
    ms_ch_set_timeouts(ch, connect_s, total_s);
    char **paths = NULL;
    size_t npaths = 0, cap = 0, done = 0, skipped = 0, failed = 0;
    for (int i = optind + 1; i < argc; i++)
        if (add_path(argv[i], &paths, &npaths, &cap) != 0)
            failed++;
    ms_push_item *items = calloc(npaths ? npaths : 1, sizeof *items);
    int schema_ok = items && ms_fleet_schema(ch, (int)tries, err, sizeof err) == 0;
    if (!items) {
        fprintf(stderr, "memsight push: out of memory\n");
        failed = npaths ? npaths : 1;
    } else if (!schema_ok) {
        /* nothing can be sent: every file is named, and stays for a later push */
        char u[600], e[1200];
        fprintf(stderr, "memsight push: %s: cannot create or check the tables: %s\n",
                ms_fleet_esc(argv[optind], u, sizeof u), ms_fleet_esc(err, e, sizeof e));
        for (size_t i = 0; i < npaths; i++) {
            items[i].path = paths[i];
            items[i].status = MS_PUSH_FAILED;
            snprintf(items[i].err, sizeof items[i].err, "ClickHouse unreachable or refusing (above)");
            progress(&quiet, &items[i]);
        }
        failed += npaths;
    } else {
        for (size_t i = 0; i < npaths; i++)
            items[i].path = paths[i];
        ms_fleet_push(ch, items, npaths, (int)tries, progress, &quiet);
        for (size_t i = 0; i < npaths; i++) {
            done += items[i].status == MS_PUSH_DONE;
            skipped += items[i].status == MS_PUSH_ALREADY;
            failed += items[i].status == MS_PUSH_FAILED;
        }
    }
    for (size_t i = 0; i < npaths; i++)
        free(paths[i]);
    free(paths);
    free(items);
    if (!quiet || failed)
        fprintf(stderr, "memsight push: %zu pushed, %zu already there, %zu failed%s\n", done, skipped,
                failed, failed ? " (kept: a later push sends them, once)" : "");
    ms_ch_close(ch);
    return failed ? 1 : 0;
}
