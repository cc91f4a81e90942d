/* `memsight watch PID`: samples a process's memory at an interval, writes the series and
 * fires actions when KOOM-style trackers trigger. Thin: the loop is ms_watch_run
 * (src/analysis/watch.h); this file parses options and prints its messages. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/watch.h"
#include "commands.h"
#include "core/proc_task.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_message(void *ctx, const char *m)
{
    if (!*(int *)ctx)
        fprintf(stderr, "memsight watch: %s\n", m);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight watch [options] PID\n"
            "\n"
            "Samples smaps_rollup, status, the fd count and /proc/meminfo at an interval and\n"
            "fires actions when a tracker triggers (see docs/accounting.md).\n"
            "\n"
            "  -i, --interval DUR       sampling interval (default 1s; 200ms, 2s, 1m)\n"
            "  -d, --duration DUR       stop after this long (default: until the process exits)\n"
            "  -c, --count N            stop after N samples\n"
            "  -o, --output FILE        write the time series (CSV, or JSON lines if FILE ends\n"
            "                           in .jsonl or .json, or with --series-format)\n"
            "      --series-format csv|jsonl\n"
            "      --categories         also record each category's RSS (reads the full\n"
            "                           smaps every sample; implied by a category trigger)\n"
            "  -t, --trigger SPEC       a tracker, repeatable:\n"
            "                             rss>500M  pss>1G  uss>...  swap>...  vmsize>3.5G\n"
            "                             threads>750  fds>1000  memavail<5%%\n"
            "                             rss+50M/10s   (growth over a window)\n"
            "                             native_heap+20M/1m  anon>1G  (a category's RSS)\n"
            "                           optional ',n=N,cooldown=DUR' after a spec\n"
            "  -n, --consecutive N      exceedances in a row before firing (default 3)\n"
            "      --cooldown DUR       minimum time between firings of a tracker (default 60s)\n"
            "      --max-triggers N     triggers per run, all trackers together (default 3;\n"
            "                           -1: no limit)\n"
            "  -e, --evidence-dir DIR   where trigger evidence goes (default: a new\n"
            "                           memsight-watch-PID-YYYYMMDD-HHMMSS)\n"
            "      --exec CMD           run CMD with /bin/sh on a trigger (MEMSIGHT_PID,\n"
            "                           MEMSIGHT_TRIGGER, MEMSIGHT_EVIDENCE_DIR/PREFIX set)\n"
            "      --dump               ask the agent in the process for a snapshot\n"
            "      --leaks              ask the agent for a leak scan\n"
            "      --heap-dump          Java heap dump with jcmd GC.heap_dump\n"
            "  -q, --quiet              no progress messages\n");
}

int ms_cmd_watch(int argc, char **argv)
{
    enum { O_SERIES_FMT = 256, O_COOLDOWN, O_MAX, O_EXEC, O_DUMP, O_LEAKS, O_HEAP, O_CATS };
    static const struct option opts[] = {
        {"interval", required_argument, 0, 'i'},    {"duration", required_argument, 0, 'd'},
        {"count", required_argument, 0, 'c'},       {"output", required_argument, 0, 'o'},
        {"series-format", required_argument, 0, O_SERIES_FMT},
        {"trigger", required_argument, 0, 't'},     {"consecutive", required_argument, 0, 'n'},
        {"cooldown", required_argument, 0, O_COOLDOWN},
        {"max-triggers", required_argument, 0, O_MAX},
        {"evidence-dir", required_argument, 0, 'e'}, {"exec", required_argument, 0, O_EXEC},
        {"dump", no_argument, 0, O_DUMP},           {"leaks", no_argument, 0, O_LEAKS},
        {"heap-dump", no_argument, 0, O_HEAP},      {"quiet", no_argument, 0, 'q'},
        {"categories", no_argument, 0, O_CATS},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    ms_watch_opts o = {.interval_ms = 1000, .max_triggers = 3};
    const char *specs[64];
    size_t nspecs = 0;
    int consecutive = 3, quiet = 0, fmt_set = 0, c;
    uint64_t cooldown = 60000;
    optind = 1;
    while ((c = getopt_long(argc, argv, "i:d:c:o:t:n:e:qh", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'i':
            if (ms_watch_parse_duration(optarg, &o.interval_ms) != 0 || o.interval_ms < 10) {
                fprintf(stderr, "memsight watch: bad --interval '%s' (at least 10ms)\n", optarg);
                return 2;
            }
            break;
        case 'd':
            if (ms_watch_parse_duration(optarg, &o.duration_ms) != 0) {
                fprintf(stderr, "memsight watch: bad --duration '%s'\n", optarg);
                return 2;
            }
            break;
        case 'c':
            o.count = strtoull(optarg, &end, 10);
            if (*end || !o.count) {
                fprintf(stderr, "memsight watch: bad --count '%s'\n", optarg);
                return 2;
            }
            break;
        case 'o': o.series_path = optarg; break;
        case O_SERIES_FMT:
            if (!strcmp(optarg, "csv"))
                o.series_format = MS_SERIES_CSV;
            else if (!strcmp(optarg, "jsonl") || !strcmp(optarg, "json"))
                o.series_format = MS_SERIES_JSONL;
            else {
                fprintf(stderr, "memsight watch: unknown series format '%s'\n", optarg);
                return 2;
            }
            fmt_set = 1;
            break;
        case 't':
            if (nspecs == sizeof specs / sizeof specs[0]) {
                fprintf(stderr, "memsight watch: too many triggers\n");
                return 2;
            }
            specs[nspecs++] = optarg;
            break;
        case 'n': {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1000000) {
                fprintf(stderr, "memsight watch: bad --consecutive '%s'\n", optarg);
                return 2;
            }
            consecutive = (int)v;
            break;
        }
        case O_COOLDOWN:
            if (ms_watch_parse_duration(optarg, &cooldown) != 0) {
                fprintf(stderr, "memsight watch: bad --cooldown '%s'\n", optarg);
                return 2;
            }
            break;
        case O_MAX: {
            long v = strtol(optarg, &end, 10);
            if (*end || v < -1 || v == 0 || v > 1000000) {
                fprintf(stderr, "memsight watch: bad --max-triggers '%s' (>= 1, or -1)\n", optarg);
                return 2;
            }
            o.max_triggers = (int)v;
            break;
        }
        case 'e': o.evidence_dir = optarg; break;
        case O_EXEC: o.exec_cmd = optarg; break;
        case O_DUMP: o.act_dump = 1; break;
        case O_LEAKS: o.act_leaks = 1; break;
        case O_HEAP: o.act_heap_dump = 1; break;
        case O_CATS: o.categories = 1; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    char *end;
    long pid = strtol(argv[optind], &end, 10);
    if (*end || pid <= 0 || pid > 0x3fffffff) {
        fprintf(stderr, "memsight watch: bad pid '%s'\n", argv[optind]);
        return 2;
    }
    o.pid = (int)pid;
    if (o.series_path && !fmt_set) {
        size_t l = strlen(o.series_path);
        if ((l > 6 && !strcmp(o.series_path + l - 6, ".jsonl")) ||
            (l > 5 && !strcmp(o.series_path + l - 5, ".json")))
            o.series_format = MS_SERIES_JSONL;
    }
    ms_tracker trackers[64];
    char err[1024];
    for (size_t i = 0; i < nspecs; i++)
        if (ms_tracker_parse(&trackers[i], specs[i], consecutive, cooldown, err, sizeof err) != 0) {
            fprintf(stderr, "memsight watch: %s\n", err);
            return 2;
        }
    o.trackers = trackers;
    o.ntrackers = nspecs;
    for (size_t i = 0; i < nspecs; i++)
        if (trackers[i].metric == MS_MET_VMSIZE && ms_proc_elf_class(o.pid) == 64 && !quiet) {
            fprintf(stderr, "memsight watch: note: vmsize is the tracker for 32-bit processes "
                            "(4 GiB of address space); pid %d is 64-bit\n", o.pid);
            break;
        }
    if (!nspecs && (o.exec_cmd || o.act_dump || o.act_leaks || o.act_heap_dump))
        fprintf(stderr, "memsight watch: warning: actions given but no --trigger\n");
    o.stop = &g_stop;
    o.on_message = on_message;
    o.ctx = &quiet;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    ms_watch_result res;
    if (ms_watch_run(&o, &res, err, sizeof err) != 0) {
        fprintf(stderr, "memsight watch: %s\n", err);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "memsight watch: %zu samples, %d trigger(s), %d action(s) started, %d failed%s\n",
                res.samples, res.triggers, res.actions_started, res.actions_failed,
                res.target_exited ? "; the process exited" : "");
    return res.actions_failed ? 3 : 0;
}
