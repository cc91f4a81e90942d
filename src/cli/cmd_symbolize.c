/* `memsight symbolize --clickhouse URL [FILE...]`: loads function, file and line of the
 * frames pushed to ClickHouse, once per build id, from the ELF or debug files it finds
 * (docs/fleet.md). Thin: the work is in src/fleet/symbols.c. */
#include <getopt.h>
#include <stdio.h>

#include "commands.h"
#include "fleet/fleet.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight symbolize --clickhouse URL [options] [ELF-FILE...]\n"
            "\n"
            "For every build id in the pushed frames, finds its ELF or debug file (among the\n"
            "files given, at the module path the frames recorded, under\n"
            "/usr/lib/debug/.build-id, or from the debuginfod servers of DEBUGINFOD_URLS when\n"
            "what is here is stripped) and loads function, file and line of the offsets\n"
            "without a source line yet into the memsight_symbols table. Says how many offsets\n"
            "stayed unresolved and why; never stores \"not found\", so a later run with a\n"
            "better file completes them.\n"
            "\n"
            "  -q, --quiet   print only errors\n"
            "      --force   look every offset up again (a result as good as the stored one\n"
            "                replaces it)\n");
}

static void note(void *ctx, const char *m)
{
    if (!*(int *)ctx)
        fprintf(stderr, "memsight symbolize: %s\n", m);
}

int ms_cmd_symbolize(int argc, char **argv)
{
    enum { O_CH = 256, O_FORCE };
    static const struct option opts[] = {{"clickhouse", required_argument, 0, O_CH},
                                         {"force", no_argument, 0, O_FORCE},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *url = NULL;
    int quiet = 0, force = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case O_CH: url = optarg; break;
        case O_FORCE: force = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!url) {
        fprintf(stderr, "memsight symbolize: --clickhouse URL is required\n");
        return 2;
    }
    char err[1024];
    ms_ch *ch = ms_ch_open(url, err, sizeof err);
    if (!ch) {
        fprintf(stderr, "memsight symbolize: %s\n", err);
        return 2;
    }
    int rc = 0;
    if (ms_fleet_schema(ch, 3, err, sizeof err) != 0 ||
        ms_fleet_symbolize(ch, (const char *const *)argv + optind, (size_t)(argc - optind), force, note,
                           &quiet, err, sizeof err) != 0) {
        char e[1200];
        fprintf(stderr, "memsight symbolize: %s\n", ms_fleet_esc(err, e, sizeof e));
        rc = 1;
    }
    ms_ch_close(ch);
    return rc;
}
