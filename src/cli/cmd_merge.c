/* `memsight merge A B... -o OUT`: sums the stacks of several snapshots of one program
 * (same module offsets) into one snapshot file. Thin: arguments and dispatch; the work
 * is in src/analysis/merge.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "analysis/merge.h"
#include "commands.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight merge [options] -o OUT FILE...\n"
            "\n"
            "Merges snapshots of one program (several hosts, runs or processes) into one\n"
            "snapshot: counters of stacks with the same module offsets are summed, so the\n"
            "result reports, diffs and exports like any snapshot. Per-block data, leak-scan\n"
            "results, threads and peaks belong to one process and are left out.\n"
            "\n"
            "options:\n"
            "  -o, --output OUT   the merged snapshot (created 0600; required)\n"
            "      --force        merge even when the executables differ\n"
            "  -h, --help         this help\n");
}

int ms_cmd_merge(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    ms_merge_opts mo = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'F': mo.allow_different_programs = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!output || optind >= argc) {
        fprintf(stderr, "memsight merge: expected -o OUT and at least one snapshot file\n");
        usage(stderr);
        return 2;
    }
    size_t n = (size_t)(argc - optind);
    ms_snapshot **in = calloc(n, sizeof *in);
    if (!in) {
        fprintf(stderr, "memsight merge: out of memory\n");
        return 1;
    }
    char err[1024];
    int rc = 1;
    ms_snapshot *m = NULL;
    for (size_t i = 0; i < n; i++) {
        in[i] = ms_snapshot_load(argv[optind + (int)i], err, sizeof err);
        if (!in[i]) {
            fprintf(stderr, "memsight merge: %s\n", err);
            goto done;
        }
    }
    m = ms_merge(in, n, &mo, err, sizeof err);
    if (!m || ms_merge_write(m, output, err, sizeof err) != 0) {
        fprintf(stderr, "memsight merge: %s\n", err);
        goto done;
    }
    fprintf(stderr, "memsight merge: %zu snapshots, %zu stacks -> %s\n", n, m->nstacks, output);
    rc = 0;
done:
    ms_snapshot_free(m);
    for (size_t i = 0; i < n; i++)
        ms_snapshot_free(in[i]);
    free(in);
    return rc;
}
