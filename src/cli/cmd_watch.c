/* `memsight watch PID...`: samples processes' memory at an interval, writes the series,
 * fires actions when KOOM-style trackers trigger, and offers the numbers to Prometheus.
 * Thin: the loop is ms_watch_run (src/analysis/watch.h), one thread per process, the
 * metrics are src/fleet/metrics.h; this file parses options and prints its messages. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/report_model.h"
#include "analysis/watch.h"
#include "cli_common.h"
#include "commands.h"
#include "core/labels.h"
#include "core/proc_task.h"
#include "fleet/metrics.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* One watched process: its loop's options and result, and what feeds the metrics. */
typedef struct watch_job {
    ms_watch_opts o;
    ms_watch_result res;
    ms_tracker trackers[64];
    int quiet, started, failed, multi;
    char err[1024];
    pthread_t thread;
    ms_metrics *metrics;
    const char *metrics_file;
    pthread_mutex_t *file_mu;
} watch_job;

static void on_message(void *ctx, const char *m)
{
    watch_job *j = ctx;
    if (j->multi && !j->quiet)
        fprintf(stderr, "memsight watch: pid %d: %s\n", j->o.pid, m);
    else if (!j->quiet)
        fprintf(stderr, "memsight watch: %s\n", m);
}

/* A newer snapshot of the agent in --agent-dir (read by the watch loop): its numbers for
 * the metrics. */
static void on_agent(void *ctx, const ms_snapshot *s)
{
    watch_job *j = ctx;
    if (!j->metrics)
        return;
    ms_metrics_agent a = {0};
    ms_report_totals t;
    ms_report_totals_compute(s, &t);
    a.live_bytes = t.kind[MS_KIND_HEAP].live_bytes;
    a.live_blocks = t.kind[MS_KIND_HEAP].live_blocks;
    a.mmap_live_bytes = t.kind[MS_KIND_MMAP].live_bytes;
    const char *ns = ms_snapshot_meta(s, "snapshot_ns");
    a.snapshot_unix_s = ns ? strtoull(ns, NULL, 10) / 1000000000ull : 0;
    a.has_leaks = s->has_leaks;
    for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT && s->has_leaks; c++) {
        a.leak_bytes[c] = s->leak_summary.bytes[c];
        a.leak_blocks[c] = s->leak_summary.blocks[c];
    }
    static const char *const dropped[] = {"dropped_blocks", "dropped_stacks", "dropped_regions"};
    for (size_t i = 0; i < 3; i++) {
        uint64_t v;
        if (ms_snapshot_health(s, dropped[i], &v) == 0)
            a.dropped += v;
    }
    a.has_threads = ms_snapshot_thread_counter(s, "leaked", &a.leaked_threads) == 0;
    const char *lv = ms_snapshot_meta(s, "labels");
    snprintf(a.labels, sizeof a.labels, "%s", lv ? lv : "");
    const char *hv = ms_snapshot_meta(s, "hostname");
    snprintf(a.host, sizeof a.host, "%s", hv ? hv : "");
    ms_metrics_set_agent(j->metrics, j->o.pid, &a);
}

static void write_metrics_file(watch_job *j)
{
    if (j->metrics_file) {
        char err[1024];
        pthread_mutex_lock(j->file_mu);
        int rc = ms_metrics_write_file(j->metrics, j->metrics_file, err, sizeof err);
        pthread_mutex_unlock(j->file_mu);
        if (rc != 0) {
            char m[1100];
            snprintf(m, sizeof m, "metrics file: %s", err);
            on_message(j, m);
        }
    }
}

static void on_sample(void *ctx, const ms_watch_sample *s, const ms_tracker *t, size_t nt)
{
    watch_job *j = ctx;
    if (!j->metrics)
        return;
    ms_metrics_set_sample(j->metrics, j->o.pid, s, t, nt);
    write_metrics_file(j);
}

static void *job_main(void *arg)
{
    watch_job *j = arg;
    if (ms_watch_run(&j->o, &j->res, j->err, sizeof j->err) != 0)
        j->failed = 1;
    if (j->metrics) {
        /* no longer watched: its series end, in the file too (the collector would
         * otherwise go on exporting the last values as if they were current) */
        ms_metrics_remove(j->metrics, j->o.pid);
        write_metrics_file(j);
    }
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight watch [options] PID...\n"
            "\n"
            "Samples smaps_rollup, status, the fd count and /proc/meminfo at an interval and\n"
            "fires actions when a tracker triggers (see docs/accounting.md). With several\n"
            "PIDs, each is watched on its own; -o and -e then get the pid added to the name.\n"
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
            "                             leaked_threads>10  (threads ended, never\n"
            "                             joined nor detached: needs --agent-dir)\n"
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
            "      --metrics-listen ADDR:PORT\n"
            "                           serve the numbers on http://ADDR:PORT/metrics for\n"
            "                           Prometheus (docs/fleet.md)\n"
            "      --metrics-file PATH  write them for node_exporter's textfile collector\n"
            "                           after every sample (atomically)\n"
            "      --label KEY=VALUE    a label of every series (repeatable)\n"
            "      --agent-dir DIR      where the agent in the process writes snapshots (its\n"
            "                           out=, with interval= for fresh numbers): the newest\n"
            "                           gives leaked_threads and, for the metrics, tracked\n"
            "                           heap, leak-scan and leaked-thread numbers\n"
            "  -q, --quiet              no progress messages\n");
}

int ms_cmd_watch(int argc, char **argv)
{
    enum { O_SERIES_FMT = 256, O_COOLDOWN, O_MAX, O_EXEC, O_DUMP, O_LEAKS, O_HEAP, O_CATS,
           O_MLISTEN, O_MFILE, O_LABEL, O_AGENTDIR };
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
        {"metrics-listen", required_argument, 0, O_MLISTEN},
        {"metrics-file", required_argument, 0, O_MFILE},
        {"label", required_argument, 0, O_LABEL},
        {"agent-dir", required_argument, 0, O_AGENTDIR},
        {"help", no_argument, 0, 'h'},              {0, 0, 0, 0}};
    ms_watch_opts o = {.interval_ms = 1000, .max_triggers = 3};
    const char *specs[64];
    size_t nspecs = 0;
    int consecutive = 3, quiet = 0, fmt_set = 0, c;
    const char *mlisten = NULL, *mfile = NULL, *agent_dir = NULL;
    char labels[MS_LABELS_MAX] = "";
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
        case O_MLISTEN: mlisten = optarg; break;
        case O_MFILE: mfile = optarg; break;
        case O_AGENTDIR: agent_dir = optarg; break;
        case O_LABEL:
            if (ms_cli_add_label("watch", labels, optarg) != 0)
                return 2;
            break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    size_t npids = (size_t)(argc - optind);
    int *pids = calloc(npids, sizeof *pids);
    watch_job *jobs = calloc(npids, sizeof *jobs);
    if (!pids || !jobs) {
        fprintf(stderr, "memsight watch: out of memory\n");
        free(pids);
        free(jobs);
        return 1;
    }
    int rc = 2;
    for (size_t k = 0; k < npids; k++) {
        char *end;
        long pid = strtol(argv[optind + (int)k], &end, 10);
        if (*end || pid <= 0 || pid > 0x3fffffff) {
            fprintf(stderr, "memsight watch: bad pid '%s'\n", argv[optind + (int)k]);
            goto out;
        }
        for (size_t q = 0; q < k; q++)
            if (pids[q] == (int)pid) {
                fprintf(stderr, "memsight watch: pid %ld given twice\n", pid);
                goto out;
            }
        pids[k] = (int)pid;
    }
    if (o.series_path && !fmt_set) {
        size_t l = strlen(o.series_path);
        if ((l > 6 && !strcmp(o.series_path + l - 6, ".jsonl")) ||
            (l > 5 && !strcmp(o.series_path + l - 5, ".json")))
            o.series_format = MS_SERIES_JSONL;
    }
    char err[1024];
    for (size_t i = 0; i < nspecs; i++) {
        ms_tracker t;
        if (ms_tracker_parse(&t, specs[i], consecutive, cooldown, err, sizeof err) != 0) {
            fprintf(stderr, "memsight watch: %s\n", err);
            goto out;
        }
        if (t.metric == MS_MET_VMSIZE && !quiet)
            for (size_t k = 0; k < npids; k++)
                if (ms_proc_elf_class(pids[k]) == 64) {
                    fprintf(stderr, "memsight watch: note: vmsize is the tracker for 32-bit "
                                    "processes (4 GiB of address space); pid %d is 64-bit\n",
                            pids[k]);
                    break;
                }
    }
    if (!nspecs && (o.exec_cmd || o.act_dump || o.act_leaks || o.act_heap_dump))
        fprintf(stderr, "memsight watch: warning: actions given but no --trigger\n");
    if (npids > 1 && o.evidence_dir && mkdir(o.evidence_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "memsight watch: %s: %s\n", o.evidence_dir, strerror(errno));
        goto out;
    }

    ms_metrics *metrics = NULL;
    ms_metrics_server *srv = NULL;
    pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER;
    if (mlisten || mfile) {
        metrics = ms_metrics_new(labels);
        if (!metrics) {
            fprintf(stderr, "memsight watch: out of memory\n");
            rc = 1;
            goto out;
        }
    } else if (labels[0]) {
        fprintf(stderr, "memsight watch: --label goes with --metrics-listen or --metrics-file\n");
        goto out;
    }
    o.stop = &g_stop;
    o.on_message = on_message;
    o.on_sample = on_sample;
    o.agent_dir = agent_dir;
    o.on_agent = on_agent;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    char (*paths)[2][4096] = calloc(npids, sizeof *paths);
    if (!paths) {
        fprintf(stderr, "memsight watch: out of memory\n");
        rc = 1;
        goto out_metrics;
    }
    for (size_t k = 0; k < npids; k++) {
        watch_job *j = &jobs[k];
        j->o = o;
        j->o.pid = pids[k];
        j->o.ctx = j;
        for (size_t i = 0; i < nspecs; i++)
            ms_tracker_parse(&j->trackers[i], specs[i], consecutive, cooldown, err, sizeof err);
        j->o.trackers = j->trackers;
        j->o.ntrackers = nspecs;
        j->quiet = quiet;
        j->multi = npids > 1;
        j->metrics = metrics;
        j->metrics_file = mfile;
        j->file_mu = &file_mu;
        if (npids > 1 && o.series_path) { /* series.csv -> series.PID.csv */
            const char *dot = strrchr(o.series_path, '.'), *slash = strrchr(o.series_path, '/');
            if (!dot || (slash && dot < slash))
                dot = o.series_path + strlen(o.series_path);
            snprintf(paths[k][0], sizeof paths[k][0], "%.*s.%d%s", (int)(dot - o.series_path),
                     o.series_path, pids[k], dot);
            j->o.series_path = paths[k][0];
        }
        if (npids > 1 && o.evidence_dir) {
            snprintf(paths[k][1], sizeof paths[k][1], "%s/%d", o.evidence_dir, pids[k]);
            j->o.evidence_dir = paths[k][1];
        }
        if (metrics) {
            char comm[64] = "", cpath[64];
            snprintf(cpath, sizeof cpath, "/proc/%d/comm", pids[k]);
            FILE *f = fopen(cpath, "r");
            if (f) {
                if (fgets(comm, sizeof comm, f))
                    comm[strcspn(comm, "\n")] = 0;
                fclose(f);
            }
            if (ms_metrics_add(metrics, pids[k], comm) != 0) {
                fprintf(stderr, "memsight watch: out of memory\n");
                rc = 1;
                goto out_paths;
            }
        }
    }
    if (mlisten) {
        srv = ms_metrics_serve(metrics, mlisten, err, sizeof err);
        if (!srv) {
            fprintf(stderr, "memsight watch: --metrics-listen: %s\n", err);
            rc = 1;
            goto out_paths;
        }
        if (!quiet)
            fprintf(stderr, "memsight watch: metrics on port %d, path /metrics\n",
                    ms_metrics_server_port(srv));
    }
    if (npids == 1) {
        job_main(&jobs[0]);
        jobs[0].started = 1;
    } else {
        /* signals go to this thread, which only waits: the loops see g_stop */
        for (size_t k = 0; k < npids; k++)
            jobs[k].started = pthread_create(&jobs[k].thread, NULL, job_main, &jobs[k]) == 0;
        for (size_t k = 0; k < npids; k++)
            if (jobs[k].started)
                pthread_join(jobs[k].thread, NULL);
    }
    rc = 0;
    for (size_t k = 0; k < npids; k++) {
        watch_job *j = &jobs[k];
        if (!j->started || j->failed) {
            fprintf(stderr, "memsight watch: %s%s\n", j->started ? "" : "cannot start a thread: ",
                    j->err);
            rc = 1;
            continue;
        }
        char who[32] = "";
        if (npids > 1)
            snprintf(who, sizeof who, "pid %d: ", j->o.pid);
        if (!quiet)
            fprintf(stderr,
                    "memsight watch: %s%zu samples, %d trigger(s), %d action(s) started, "
                    "%d failed%s\n",
                    who, j->res.samples, j->res.triggers, j->res.actions_started,
                    j->res.actions_failed, j->res.target_exited ? "; the process exited" : "");
        if (j->res.actions_failed && rc == 0)
            rc = 3;
    }
    ms_metrics_server_stop(srv);
out_paths:
    free(paths);
out_metrics:
    ms_metrics_free(metrics);
out:
    free(pids);
    free(jobs);
    return rc;
}
