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
            "result reports, diffs and exports like any snapshot. Live blocks are kept with\n"
            "their process when every input lists them; leak-scan results are united; the\n"
            "peak becomes the sum of the per-process peaks when every input has one;\n"
            "threads are left out. Standard error says what became of each.\n"
            "\n"
            "options:\n"
            "  -o, --output OUT   the merged snapshot (created 0600; required)\n"
            "      --force        merge even when the executables differ\n"
            "  -h, --help         this help\n");
}

/* What became of the parts that belong to one process, said plainly. */
static void report_parts(const ms_merge_info *i, const ms_snapshot *m, size_t n)
{
    if (i->blocks_kept)
        fprintf(stderr, "memsight merge: blocks: %zu kept, each with its process (process.<k>.* "
                        "in the metadata)\n", m->nblocks);
    else if (i->with_blocks)
        fprintf(stderr, "memsight merge: blocks: not kept: %s\n",
                i->with_blocks < n ? "only some snapshots list their blocks, and a partial list "
                                     "would pass for every live block"
                                   : "more than 65535 processes");
    if (i->with_leaks)
        fprintf(stderr, "memsight merge: leak scans: %zu of %zu snapshots; results united, "
                        "records of one stack and class summed (%zu records)\n",
                i->with_leaks, n, m->nleaks);
    if (i->peak_kept)
        fprintf(stderr, "memsight merge: peak: the sum of the %zu per-process peaks, an upper "
                        "bound of the processes' joint peak, not a moment one of them saw\n", n);
    else if (i->with_peak)
        fprintf(stderr, "memsight merge: peak: not kept: only %zu of %zu snapshots record one\n",
                i->with_peak, n);
    if (i->temp_kept)
        fprintf(stderr, "memsight merge: temporary allocations: summed per stack\n");
    else if (i->with_temp)
        fprintf(stderr, "memsight merge: temporary allocations: not kept: only %zu of %zu "
                        "snapshots count them\n", i->with_temp, n);
    if (i->hist_kept)
        fprintf(stderr, "memsight merge: size histogram: summed bucket by bucket\n");
    else if (i->with_hist == n)
        fprintf(stderr, "memsight merge: size histogram: not kept: the snapshots' buckets "
                        "overlap without being equal\n");
    else if (i->with_hist)
        fprintf(stderr, "memsight merge: size histogram: not kept: only %zu of %zu snapshots "
                        "have one\n", i->with_hist, n);
    if (i->with_threads)
        fprintf(stderr, "memsight merge: threads: not kept (a thread belongs to one process; "
                        "blocks keep their thread id)\n");
    if (i->unknown_stacks)
        fprintf(stderr, "memsight merge: warning: %zu blocks or leak records name a stack their "
                        "snapshot does not list; kept without a stack\n", i->unknown_stacks);
    if (i->repeated)
        fprintf(stderr, "memsight merge: warning: %zu processes appear in more than one snapshot "
                        "(same host, pid and start time): their counters are counted twice\n",
                i->repeated);
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
    ms_merge_info info;
    ms_merge_opts mo = {.info = &info};
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
    fprintf(stderr, "memsight merge: %zu snapshots of %zu processes, %zu stacks -> %s\n", n,
            info.processes, m->nstacks, output);
    report_parts(&info, m, n);
    rc = 0;
done:
    ms_snapshot_free(m);
    for (size_t i = 0; i < n; i++)
        ms_snapshot_free(in[i]);
    free(in);
    return rc;
}
