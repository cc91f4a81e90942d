/* Watching a process's memory over time, in the manner of KOOM's trackers: sample
 * smaps_rollup, status, fd count and meminfo at an interval, keep the series, evaluate
 * threshold and growth trackers (each firing only after N consecutive exceedances, with a
 * cooldown and a cap on triggers per run) and run actions on a trigger with the evidence
 * written beside them. Never prints: messages go to the caller's callback. */
#ifndef MS_ANALYSIS_WATCH_H
#define MS_ANALYSIS_WATCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/accounting.h"
#include "core/snapshot.h"

/* ---- samples ---- */

enum ms_watch_metric {
    MS_MET_RSS,      /* kB, smaps_rollup Rss */
    MS_MET_PSS,      /* kB */
    MS_MET_USS,      /* kB, Private_Clean + Private_Dirty */
    MS_MET_SWAP,     /* kB */
    MS_MET_VMSIZE,   /* kB, status VmSize (the 32-bit address-space tracker) */
    MS_MET_THREADS,  /* count, status Threads */
    MS_MET_FDS,      /* count, entries of /proc/PID/fd */
    MS_MET_MEMAVAIL, /* percent of MemTotal that is MemAvailable, system-wide */
    MS_MET_LEAKED_THREADS, /* count: threads ended, never joined nor detached (the agent's
                            * newest snapshot in the agent directory) */
    /* RSS kB of one accounting category (native_heap, stack, code, file, anon, shmem,
     * guard, other: enum ms_acct_cat order); needs the categories sampled. */
    MS_MET_CAT_FIRST,
    MS_MET_COUNT = MS_MET_CAT_FIRST + MS_CAT_COUNT
};
const char *ms_watch_metric_name(enum ms_watch_metric m);

typedef struct ms_watch_sample {
    uint64_t t_ms;    /* since the first sample (monotonic clock) */
    uint64_t unix_ms; /* wall clock */
    uint64_t rss_kb, pss_kb, pss_anon_kb, pss_file_kb, pss_shmem_kb, uss_kb;
    uint64_t private_dirty_kb, swap_kb, swap_pss_kb;
    uint64_t vmsize_kb, vmhwm_kb, threads, fds;
    uint64_t mem_total_kb, mem_available_kb;
    int has_agent_threads;                /* leaked_threads is known (an agent snapshot) */
    uint64_t leaked_threads;              /* THRL's leaked count in that snapshot */
    int has_cats;                         /* the categories below were sampled */
    uint64_t cat_rss_kb[MS_CAT_COUNT];    /* RSS per accounting category */
} ms_watch_sample;

/* The value of a metric in a sample (memavail as a percentage, 0..100). */
double ms_watch_metric_value(const ms_watch_sample *s, enum ms_watch_metric m);

/* ---- trackers ---- */

enum ms_tracker_kind {
    MS_TRK_ABOVE,  /* value > threshold */
    MS_TRK_BELOW,  /* value < threshold */
    MS_TRK_GROWTH, /* value - value at (now - window) > threshold */
};

typedef struct ms_tracker {
    /* configuration */
    char spec[96];          /* as given, for messages and the series header */
    int metric;             /* enum ms_watch_metric */
    int kind;               /* enum ms_tracker_kind */
    double threshold;       /* kB for memory metrics, a count, or a percentage */
    uint64_t window_ms;     /* growth window */
    int consecutive;        /* exceedances in a row needed to fire (>= 1) */
    uint64_t cooldown_ms;   /* no second firing sooner than this after one */
    /* state, updated by ms_tracker_eval */
    double value;           /* measured at the last evaluation */
    int exceeded;           /* last evaluation exceeded the threshold */
    int streak;             /* consecutive exceedances not yet used by a firing */
    int run;                /* the streak as counted at the last evaluation (before a
                             * firing reset it): what the series shows */
    int fired;              /* the last evaluation fired */
    int fire_count;
    uint64_t last_fire_ms;
} ms_tracker;

/* Parses a duration ("500ms", "2s", "1.5s", "1m", "1h"; a bare number is seconds) into
 * milliseconds. Returns 0, or -1 when it is not one. */
int ms_watch_parse_duration(const char *s, uint64_t *ms);

/* Parses a tracker: METRIC>VALUE, METRIC<VALUE or METRIC+VALUE/WINDOW, optionally
 * followed by ",n=N", ",cooldown=DURATION". METRIC is rss, pss, uss, swap, vmsize,
 * threads, fds, memavail, leaked_threads (needs the agent's snapshots), or a category name (native_heap, stack, code, file, anon,
 * shmem, guard, other: that category's RSS). Memory values are kB unless suffixed K, M, G (KiB, MiB, GiB);
 * memavail takes a percentage ("memavail<5%"); durations are 500ms, 2s, 1m. Defaults for
 * n and cooldown come from the arguments. Returns 0 or -1 with a message. */
int ms_tracker_parse(ms_tracker *t, const char *spec, int default_n, uint64_t default_cooldown_ms,
                     char *err, size_t errlen);

/* Evaluates t at the last sample of series[0..n-1] (n >= 1), updating its state.
 * `allowed` is 0 when the run's trigger budget is spent: the tracker then never fires.
 * Returns 1 when it fires. Firing resets the streak. */
int ms_tracker_eval(ms_tracker *t, const ms_watch_sample *series, size_t n, int allowed);

/* ---- the loop ---- */

enum ms_series_format { MS_SERIES_CSV, MS_SERIES_JSONL };

/* Where a tracker fired, as told to the event callback. */
typedef struct ms_watch_trigger {
    int index;            /* 1-based number of the trigger in this run */
    const ms_tracker *tracker;
    const ms_watch_sample *sample;
    const char *evidence_prefix; /* files of this trigger start with this path */
} ms_watch_trigger;

typedef struct ms_watch_opts {
    int pid;
    uint64_t interval_ms;   /* default 1000 */
    uint64_t duration_ms;   /* stop after this long (0: until the process exits) */
    uint64_t count;         /* stop after this many samples (0: no limit) */
    ms_tracker *trackers;   /* parsed with ms_tracker_parse; state is updated */
    size_t ntrackers;
    int max_triggers;       /* per run, over all trackers (0: default 3; <0: unlimited) */
    int categories;         /* also read the full smaps each sample and record the RSS of
                             * every category (implied by a category tracker); costs
                             * the kernel's smaps generation, ~6 us per mapping */

    const char *series_path;   /* time series output (NULL: none) */
    int series_format;         /* enum ms_series_format */
    const char *evidence_dir;  /* where trigger evidence goes (NULL: a new directory
                                * "memsight-watch-PID-YYYYMMDD-HHMMSS" in the cwd) */
    /* The agent's output directory: its newest snapshot of the process, read again when
     * it changes, gives leaked_threads (and on_agent). Required by a leaked_threads
     * tracker. */
    const char *agent_dir;
    void (*on_agent)(void *ctx, const ms_snapshot *s); /* each newer snapshot read */

    /* Actions on every trigger (any combination). */
    const char *exec_cmd;      /* run with /bin/sh -c, MEMSIGHT_* in its environment */
    int act_dump;              /* run `<self_exe> dump PID` */
    int act_leaks;             /* run `<self_exe> leaks PID` */
    int act_heap_dump;         /* run `jcmd PID GC.heap_dump <prefix>.hprof` */
    const char *self_exe;      /* memsight executable (NULL: /proc/self/exe) */
    const char *jcmd;          /* jcmd executable (NULL: $JAVA_HOME/bin/jcmd, else PATH) */
    uint64_t action_wait_ms;   /* at the end, wait this long for actions (0: 120 s) */

    volatile sig_atomic_t *stop; /* set to non-zero from anywhere to end the loop */
    /* Progress messages and triggers (may be NULL). */
    void (*on_message)(void *ctx, const char *msg);
    void (*on_trigger)(void *ctx, const ms_watch_trigger *trig);
    /* After every sample, its trackers evaluated and any trigger's evidence written. */
    void (*on_sample)(void *ctx, const ms_watch_sample *s, const ms_tracker *trackers,
                      size_t ntrackers);
    void *ctx;
} ms_watch_opts;

typedef struct ms_watch_result {
    size_t samples;
    int triggers;
    int actions_started;
    int actions_failed;      /* exited non-zero, killed, or could not start */
    int target_exited;       /* the loop ended because the process went away */
} ms_watch_result;

/* Samples pid until it exits, the duration or count is reached, or *stop is set.
 * Returns 0 (also when the target exited), or -1 with a message when it could not
 * start (no such process, not allowed, output not writable). */
int ms_watch_run(const ms_watch_opts *o, ms_watch_result *res, char *err, size_t errlen);

/* Takes one sample of pid now (t_ms left 0), with the categories when `categories`.
 * Returns 0 or -errno with a message. */
int ms_watch_sample_once(int pid, ms_watch_sample *s, int categories, char *err, size_t errlen);

#endif
