/* `memsight fleet top|trend|leaks --clickhouse URL`: fleet-wide aggregations that run
 * inside ClickHouse over pushed snapshots (docs/fleet.md). Thin: src/fleet/query.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "fleet/fleet.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight fleet top|trend|leaks --clickhouse URL [options]\n"
            "\n"
            "  top     stacks by live bytes, over the newest snapshot of every process\n"
            "  trend   stacks that grow across each process's snapshots (scored as\n"
            "          'memsight trend' does), ranked by their summed score over the fleet\n"
            "  leaks   leaked bytes by stack, over the newest leak scan of every process\n"
            "\n"
            "  -g, --group-by KEYS   comma-separated label keys (or host, program, reason):\n"
            "                        one ranking per combination of their values\n"
            "  -w, --where KEY=VALUE only snapshots with this label (or host, program,\n"
            "                        reason) value; repeatable, all must hold\n"
            "  -n, --top N           stacks per group (default 10)\n"
            "  -f, --format text|json\n"
            "  -o, --output FILE     write there (0600, atomically) instead of stdout\n");
}

int ms_cmd_fleet(int argc, char **argv)
{
    enum { O_CH = 256 };
    static const struct option opts[] = {
        {"clickhouse", required_argument, 0, O_CH}, {"group-by", required_argument, 0, 'g'},
        {"where", required_argument, 0, 'w'},       {"top", required_argument, 0, 'n'},
        {"format", required_argument, 0, 'f'},      {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    ms_fleet_opts o = {.top = 10};
    if (!strcmp(argv[1], "top"))
        o.query = MS_FLEET_TOP;
    else if (!strcmp(argv[1], "trend"))
        o.query = MS_FLEET_TREND;
    else if (!strcmp(argv[1], "leaks"))
        o.query = MS_FLEET_LEAKS;
    else {
        fprintf(stderr, "memsight fleet: unknown query '%s' (top, trend or leaks)\n", argv[1]);
        return 2;
    }
    const char *url = NULL, *outpath = NULL;
    char groups[512] = "";
    int c;
    long v;
    optind = 2;
    while ((c = getopt_long(argc, argv, "g:w:n:f:o:h", opts, NULL)) != -1) {
        switch (c) {
        case O_CH: url = optarg; break;
        case 'g':
            if (strlen(optarg) >= sizeof groups) {
                fprintf(stderr, "memsight fleet: --group-by too long\n");
                return 2;
            }
            strcpy(groups, optarg);
            break;
        case 'w':
            if (o.nwhere == sizeof o.where / sizeof o.where[0]) {
                fprintf(stderr, "memsight fleet: at most 16 --where\n");
                return 2;
            }
            o.where[o.nwhere++] = optarg;
            break;
        case 'n':
            if (ms_cli_parse_long(optarg, 1, 100000, &v) != 0) {
                fprintf(stderr, "memsight fleet: --top: '%s' is not 1..100000\n", optarg);
                return 2;
            }
            o.top = (int)v;
            break;
        case 'f':
            if (strcmp(optarg, "text") && strcmp(optarg, "json")) {
                fprintf(stderr, "memsight fleet: --format text or json, not '%s'\n", optarg);
                return 2;
            }
            o.json = !strcmp(optarg, "json");
            break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "memsight fleet: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!url) {
        fprintf(stderr, "memsight fleet: --clickhouse URL is required\n");
        return 2;
    }
    char err[1024];
    for (char *save = NULL, *k = strtok_r(groups, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        if (o.ngroup == sizeof o.group_by / sizeof o.group_by[0]) {
            fprintf(stderr, "memsight fleet: at most 8 --group-by keys\n");
            return 2;
        }
        if (ms_fleet_check_key(k, err, sizeof err) != 0) {
            fprintf(stderr, "memsight fleet: --group-by: %s\n", err);
            return 2;
        }
        o.group_by[o.ngroup++] = k;
    }
    for (size_t i = 0; i < o.nwhere; i++) {
        const char *eq = strchr(o.where[i], '=');
        char key[80];
        if (!eq || eq == o.where[i] || (size_t)(eq - o.where[i]) >= sizeof key) {
            fprintf(stderr, "memsight fleet: --where '%s': KEY=VALUE\n", o.where[i]);
            return 2;
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - o.where[i]), o.where[i]);
        if (ms_fleet_check_key(key, err, sizeof err) != 0) {
            fprintf(stderr, "memsight fleet: --where: %s\n", err);
            return 2;
        }
    }
    ms_ch *ch = ms_ch_open(url, err, sizeof err);
    if (!ch) {
        fprintf(stderr, "memsight fleet: %s\n", err);
        return 2;
    }
    ms_cli_output out;
    if (ms_cli_output_open(&out, "fleet", outpath) != 0) {
        ms_ch_close(ch);
        return 1;
    }
    int rc = 0;
    if (ms_fleet_query(ch, &o, out.fp, err, sizeof err) != 0) {
        fprintf(stderr, "memsight fleet: %s\n", err);
        ms_cli_output_abort(&out);
        rc = 1;
    } else if (ms_cli_output_finish(&out, "fleet") != 0) {
        rc = 1;
    }
    ms_ch_close(ch);
    return rc;
}
