/* `memsight fleet top|trend|leaks --clickhouse URL`: fleet-wide aggregations that run
 * inside ClickHouse over pushed snapshots (docs/fleet.md). Thin: src/fleet/query.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "commands.h"
#include "fleet/fleet.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight fleet top|trend|leaks --clickhouse URL [options]\n"
            "       memsight fleet diff --clickhouse URL --group-by KEY A B [options]\n"
            "\n"
            "  top     stacks by live bytes, over the newest snapshot of every process\n"
            "  trend   stacks that grow across each process's snapshots (scored as\n"
            "          'memsight trend' does), ranked by their summed score over the fleet,\n"
            "          with the time each began to grow\n"
            "  leaks   leaked bytes by stack, over the newest leak scan of every process\n"
            "  diff    live bytes per process by stack, processes whose KEY is B against\n"
            "          those whose KEY is A (newest snapshot of each)\n"
            "\n"
            "  -s, --since TIME      only snapshots taken then or later: UTC\n"
            "                        (2026-12-05T15:00:00Z, 2026-12-05) or a duration before\n"
            "                        now (2h, 90m, 1d12h); a process not seen since does not\n"
            "                        count\n"
            "  -u, --until TIME      only snapshots taken then or earlier (the same forms)\n"
            "  -g, --group-by KEYS   comma-separated label keys (or host, program, reason):\n"
            "                        one ranking per combination of their values\n"
            "  -w, --where KEY=VALUE only snapshots with this label (or host, program,\n"
            "                        reason) value; repeatable, all must hold\n"
            "  -n, --top N           stacks per group (default 10)\n"
            "  -f, --format text|json|pprof   pprof: a gzip'd profile.proto, the group values\n"
            "                        as labels (go tool pprof, Pyroscope)\n"
            "  -o, --output FILE     write there (0600, atomically) instead of stdout\n");
}

int ms_cmd_fleet(int argc, char **argv)
{
    enum { O_CH = 256 };
    static const struct option opts[] = {
        {"clickhouse", required_argument, 0, O_CH}, {"group-by", required_argument, 0, 'g'},
        {"where", required_argument, 0, 'w'},       {"top", required_argument, 0, 'n'},
        {"format", required_argument, 0, 'f'},      {"output", required_argument, 0, 'o'},
        {"since", required_argument, 0, 's'},       {"until", required_argument, 0, 'u'},
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
    else if (!strcmp(argv[1], "diff"))
        o.query = MS_FLEET_DIFF;
    else {
        fprintf(stderr, "memsight fleet: unknown query '%s' (top, trend, leaks or diff)\n", argv[1]);
        return 2;
    }
    const char *url = NULL, *outpath = NULL;
    char groups[512] = "";
    int c;
    long v;
    optind = 2;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    char err[1024];
    while ((c = getopt_long(argc, argv, "g:w:n:f:o:s:u:h", opts, NULL)) != -1) {
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
            if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "pprof")) {
                fprintf(stderr, "memsight fleet: --format text, json or pprof, not '%s'\n", optarg);
                return 2;
            }
            o.format = !strcmp(optarg, "json") ? MS_FLEET_JSON : !strcmp(optarg, "pprof") ? MS_FLEET_PPROF
                                                                                        : MS_FLEET_TEXT;
            break;
        case 's':
        case 'u':
            if (ms_fleet_parse_time(optarg, now_ns, c == 's' ? &o.since_ns : &o.until_ns, err,
                                    sizeof err) != 0) {
                fprintf(stderr, "memsight fleet: --%s: %s\n", c == 's' ? "since" : "until", err);
                return 2;
            }
            break;
        case 'o': outpath = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (o.query == MS_FLEET_DIFF && argc - optind == 2) {
        o.diff_a = argv[optind];
        o.diff_b = argv[optind + 1];
        optind += 2;
    } else if (o.query == MS_FLEET_DIFF) {
        fprintf(stderr, "memsight fleet diff: the two values to compare, A and B, are required\n");
        return 2;
    }
    if (optind != argc) {
        fprintf(stderr, "memsight fleet: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.since_ns && o.until_ns && o.since_ns > o.until_ns) {
        fprintf(stderr, "memsight fleet: --since is after --until\n");
        return 2;
    }
    if (!url) {
        fprintf(stderr, "memsight fleet: --clickhouse URL is required\n");
        return 2;
    }
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
    if (o.query == MS_FLEET_DIFF && o.ngroup != 1) {
        fprintf(stderr, "memsight fleet diff: --group-by takes exactly one key (version, host...)\n");
        return 2;
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
        char e[1200];
        fprintf(stderr, "memsight fleet: %s\n", ms_fleet_esc(err, e, sizeof e));
        ms_cli_output_abort(&out);
        rc = 1;
    } else if (ms_cli_output_finish(&out, "fleet") != 0) {
        rc = 1;
    }
    ms_ch_close(ch);
    return rc;
}
