/* The watch loop: samples a process at an interval, evaluates KOOM-style trackers, runs
 * actions on triggers and writes the series and each trigger's evidence (0600 files,
 * created exclusively). Never prints: messages go to the caller's callback; never
 * blocks on an action (actions run as child processes, reaped as they end). */
#define _GNU_SOURCE
#include "analysis/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/accounting.h"
#include "analysis/watch_agent.h"
#include "core/fileio.h"
#include "core/proc_read.h"
#include "core/proc_smaps.h"
#include "core/proc_status.h"
#include "core/proc_task.h"

/* ---- metrics ---- */

static const char *const metric_names[MS_MET_CAT_FIRST] = {
    [MS_MET_RSS] = "rss",         [MS_MET_PSS] = "pss",         [MS_MET_USS] = "uss",
    [MS_MET_SWAP] = "swap",       [MS_MET_VMSIZE] = "vmsize",   [MS_MET_THREADS] = "threads",
    [MS_MET_FDS] = "fds",         [MS_MET_MEMAVAIL] = "memavail",
    [MS_MET_LEAKED_THREADS] = "leaked_threads",
};

const char *ms_watch_metric_name(enum ms_watch_metric m)
{
    if ((unsigned)m < MS_MET_CAT_FIRST)
        return metric_names[m];
    if ((unsigned)m < MS_MET_COUNT)
        return ms_acct_cat_name((enum ms_acct_cat)(m - MS_MET_CAT_FIRST));
    return "?";
}

double ms_watch_metric_value(const ms_watch_sample *s, enum ms_watch_metric m)
{
    switch (m) {
    case MS_MET_RSS: return (double)s->rss_kb;
    case MS_MET_PSS: return (double)s->pss_kb;
    case MS_MET_USS: return (double)s->uss_kb;
    case MS_MET_SWAP: return (double)s->swap_kb;
    case MS_MET_VMSIZE: return (double)s->vmsize_kb;
    case MS_MET_THREADS: return (double)s->threads;
    case MS_MET_FDS: return (double)s->fds;
    case MS_MET_LEAKED_THREADS: return (double)s->leaked_threads;
    case MS_MET_MEMAVAIL:
        return s->mem_total_kb ? 100.0 * (double)s->mem_available_kb / (double)s->mem_total_kb
                               : 100.0;
    default:
        if ((unsigned)m >= MS_MET_CAT_FIRST && (unsigned)m < MS_MET_COUNT)
            return (double)s->cat_rss_kb[m - MS_MET_CAT_FIRST];
        return 0;
    }
}

static int is_memory_metric(int m)
{
    return m == MS_MET_RSS || m == MS_MET_PSS || m == MS_MET_USS || m == MS_MET_SWAP ||
           m == MS_MET_VMSIZE || m >= MS_MET_CAT_FIRST;
}

/* ---- tracker specs ---- */

/* Copies the token [s, e) into buf as a string; -1 when it is empty or does not fit. */
static int copy_token(const char *s, const char *e, char *buf, size_t cap)
{
    size_t n = (size_t)(e - s);
    if (n == 0 || n >= cap)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 0;
}

int ms_watch_parse_duration(const char *s, uint64_t *ms)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || v > 1e9)
        return -1;
    double mul = 1000;
    if (!strcmp(end, "ms"))
        mul = 1;
    else if (!strcmp(end, "s") || !*end)
        mul = 1000;
    else if (!strcmp(end, "m"))
        mul = 60000;
    else if (!strcmp(end, "h"))
        mul = 3600000;
    else
        return -1;
    *ms = (uint64_t)llround(v * mul);
    return 0;
}

static int parse_duration(const char *s, const char *e, uint64_t *ms)
{
    char buf[32];
    if (copy_token(s, e, buf, sizeof buf) != 0)
        return -1;
    return ms_watch_parse_duration(buf, ms);
}

static int parse_amount(const char *s, const char *e, int metric, double *out)
{
    char buf[32];
    if (copy_token(s, e, buf, sizeof buf) != 0)
        return -1;
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || !(v >= 0) || v > 1e15)
        return -1;
    if (metric == MS_MET_MEMAVAIL) {
        if (*end == '%')
            end++;
        if (*end || v > 100)
            return -1;
    } else if (is_memory_metric(metric)) {
        if (*end == 'K' || *end == 'k')
            end++;
        else if (*end == 'M' || *end == 'm')
            v *= 1024, end++;
        else if (*end == 'G' || *end == 'g')
            v *= 1024 * 1024, end++;
        if (*end == 'B' || *end == 'b')
            end++;
        if (*end)
            return -1;
    } else if (*end) {
        return -1;
    }
    *out = v;
    return 0;
}

int ms_tracker_parse(ms_tracker *t, const char *spec, int default_n, uint64_t default_cooldown_ms,
                     char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (strlen(spec) >= sizeof t->spec) {
        snprintf(err, errlen, "tracker '%.40s...': too long", spec);
        return -1;
    }
    strcpy(t->spec, spec);
    t->consecutive = default_n > 0 ? default_n : 3;
    t->cooldown_ms = default_cooldown_ms;
    const char *p = spec;
    size_t ml = strcspn(p, "<>+");
    int m;
    for (m = 0; m < MS_MET_COUNT; m++) {
        const char *name = ms_watch_metric_name((enum ms_watch_metric)m);
        if (strlen(name) == ml && !strncmp(p, name, ml))
            break;
    }
    if (m == MS_MET_COUNT || !p[ml]) {
        snprintf(err, errlen,
                 "tracker '%s': expected METRIC>VALUE, METRIC<VALUE or METRIC+VALUE/WINDOW with "
                 "METRIC one of rss, pss, uss, swap, vmsize, threads, fds, memavail, "
                 "leaked_threads, or a category (native_heap, stack, code, file, anon, shmem, "
                 "guard, other)",
                 spec);
        return -1;
    }
    t->metric = m;
    char op = p[ml];
    p += ml + 1;
    const char *opts = strchr(p, ',');
    const char *vend = opts ? opts : p + strlen(p);
    if (op == '+') {
        const char *slash = memchr(p, '/', (size_t)(vend - p));
        if (!slash || parse_amount(p, slash, m, &t->threshold) != 0 ||
            parse_duration(slash + 1, vend, &t->window_ms) != 0 || t->window_ms == 0) {
            snprintf(err, errlen, "tracker '%s': growth needs VALUE/WINDOW, e.g. rss+50M/10s", spec);
            return -1;
        }
        if (m == MS_MET_MEMAVAIL) {
            snprintf(err, errlen, "tracker '%s': memavail has no growth form", spec);
            return -1;
        }
        t->kind = MS_TRK_GROWTH;
    } else {
        if (parse_amount(p, vend, m, &t->threshold) != 0) {
            snprintf(err, errlen, "tracker '%s': bad value", spec);
            return -1;
        }
        t->kind = op == '>' ? MS_TRK_ABOVE : MS_TRK_BELOW;
    }
    while (opts && *opts == ',') {
        const char *o = opts + 1;
        const char *oe = strchr(o, ',');
        if (!oe)
            oe = o + strlen(o);
        if (!strncmp(o, "n=", 2)) {
            char *end;
            long n = strtol(o + 2, &end, 10);
            if (end != oe || n < 1 || n > 1000000) {
                snprintf(err, errlen, "tracker '%s': bad n=", spec);
                return -1;
            }
            t->consecutive = (int)n;
        } else if (!strncmp(o, "cooldown=", 9)) {
            if (parse_duration(o + 9, oe, &t->cooldown_ms) != 0) {
                snprintf(err, errlen, "tracker '%s': bad cooldown=", spec);
                return -1;
            }
        } else {
            snprintf(err, errlen, "tracker '%s': unknown option '%.*s' (n=, cooldown=)", spec,
                     (int)(oe - o), o);
            return -1;
        }
        opts = oe;
    }
    return 0;
}

int ms_tracker_eval(ms_tracker *t, const ms_watch_sample *series, size_t n, int allowed)
{
    t->fired = 0;
    if (n == 0)
        return 0;
    const ms_watch_sample *now = &series[n - 1];
    double v = ms_watch_metric_value(now, t->metric);
    if (t->kind == MS_TRK_GROWTH) {
        /* Compare with the oldest sample inside the window. */
        uint64_t from = now->t_ms > t->window_ms ? now->t_ms - t->window_ms : 0;
        size_t lo = 0, hi = n - 1;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (series[mid].t_ms < from)
                lo = mid + 1;
            else
                hi = mid;
        }
        v -= ms_watch_metric_value(&series[lo], t->metric);
        t->exceeded = v > t->threshold;
    } else if (t->kind == MS_TRK_ABOVE) {
        t->exceeded = v > t->threshold;
    } else {
        t->exceeded = v < t->threshold;
    }
    if (t->metric == MS_MET_LEAKED_THREADS && !now->has_agent_threads)
        t->exceeded = 0; /* no agent snapshot with thread lives yet: unknown, not 0 */
    t->value = v;
    t->streak = t->exceeded ? t->streak + 1 : 0;
    t->run = t->streak;
    if (allowed && t->streak >= t->consecutive &&
        (t->fire_count == 0 || now->t_ms - t->last_fire_ms >= t->cooldown_ms)) {
        t->fired = 1;
        t->fire_count++;
        t->last_fire_ms = now->t_ms;
        t->streak = 0;
        return 1;
    }
    return 0;
}

/* ---- sampling ---- */

static uint64_t now_ms(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Reads field 22 (starttime) of /proc/PID/stat and the state letter, to see the process
 * end (zombie) or its pid reused. Returns 0 or -errno. */
static int read_stat(int pid, uint64_t *start, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (r <= 0)
        return r < 0 ? -e : -ESRCH;
    buf[r] = '\0';
    char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ')
        return -EINVAL;
    *state = rp[2];
    const char *p = rp + 2, *end = buf + r;
    for (int field = 3; field < 22 && p < end; field++) {
        while (p < end && *p != ' ')
            p++;
        while (p < end && *p == ' ')
            p++;
    }
    if (!ms_parse_u64(&p, end, start))
        return -EINVAL;
    return 0;
}

/* The RSS of every category from the full smaps (the rollup has no per-mapping view).
 * Threads' stack pointers are not read each sample: stacks come from names and guard
 * pages here. */
static int sample_cats(ms_smaps *full, int pid, const char *exe, ms_watch_sample *s, char *err,
                       size_t errlen)
{
    int rc = ms_smaps_read(full, pid, MS_SRC_SMAPS, err, errlen);
    if (rc)
        return rc;
    ms_acct_hints h = {.exe = exe};
    ms_acct a;
    if (ms_acct_build(&a, full, &h, err, errlen) != 0)
        return -ENOMEM;
    for (int c = 0; c < MS_CAT_COUNT; c++)
        s->cat_rss_kb[c] = a.cat[c].rss_kb;
    s->has_cats = 1;
    ms_acct_free(&a);
    return 0;
}

static int sample_with(ms_smaps *sm, int *use_rollup, int pid, ms_watch_sample *s, char *err,
                       size_t errlen)
{
    memset(s, 0, sizeof *s);
    int rc = -ENOENT;
    if (*use_rollup) {
        rc = ms_smaps_read(sm, pid, MS_SRC_SMAPS_ROLLUP, err, errlen);
        if (rc == -ENOENT && ms_proc_task_count(pid, err, errlen) >= 0)
            *use_rollup = 0; /* a kernel without smaps_rollup (before 4.14) */
    }
    if (!*use_rollup)
        rc = ms_smaps_read(sm, pid, MS_SRC_SMAPS, err, errlen);
    if (rc)
        return rc;
    s->rss_kb = ms_smaps_sum(sm, MS_SM_RSS);
    s->pss_kb = ms_smaps_sum(sm, MS_SM_PSS);
    s->pss_anon_kb = ms_smaps_sum(sm, MS_SM_PSS_ANON);
    s->pss_file_kb = ms_smaps_sum(sm, MS_SM_PSS_FILE);
    s->pss_shmem_kb = ms_smaps_sum(sm, MS_SM_PSS_SHMEM);
    s->private_dirty_kb = ms_smaps_sum(sm, MS_SM_PRIVATE_DIRTY);
    s->uss_kb = ms_smaps_sum(sm, MS_SM_PRIVATE_CLEAN) + s->private_dirty_kb;
    s->swap_kb = ms_smaps_sum(sm, MS_SM_SWAP);
    s->swap_pss_kb = ms_smaps_sum(sm, MS_SM_SWAP_PSS);
    ms_proc_status st;
    if ((rc = ms_status_read(&st, pid, err, errlen)) != 0)
        return rc;
    s->vmsize_kb = st.v[MS_ST_VM_SIZE];
    s->vmhwm_kb = st.v[MS_ST_VM_HWM];
    s->threads = st.v[MS_ST_THREADS];
    long fds = ms_proc_fd_count(pid, err, errlen);
    if (fds == -ENOENT || fds == -ESRCH)
        return (int)fds;
    s->fds = fds > 0 ? (uint64_t)fds : 0; /* 0 when not allowed to list them */
    ms_meminfo mi;
    if (ms_meminfo_read(&mi, err, errlen) == 0) {
        s->mem_total_kb = mi.kb[MS_MI_MEM_TOTAL];
        s->mem_available_kb = mi.kb[MS_MI_MEM_AVAILABLE];
    }
    s->unix_ms = now_ms(CLOCK_REALTIME);
    return 0;
}

int ms_watch_sample_once(int pid, ms_watch_sample *s, int categories, char *err, size_t errlen)
{
    ms_smaps sm = {0};
    int use_rollup = 1;
    int rc = sample_with(&sm, &use_rollup, pid, s, err, errlen);
    if (rc == 0 && categories) {
        char exe[4096];
        rc = sample_cats(&sm, pid, ms_proc_exe(pid, exe, sizeof exe, err, errlen) == 0 ? exe : NULL,
                         s, err, errlen);
    }
    ms_smaps_free(&sm);
    return rc;
}

/* ---- series output ---- */

typedef struct trk_state {
    double value;
    uint8_t exceeded, fired;
    int streak;
} trk_state;

static void series_header(FILE *f, int fmt, const ms_watch_opts *o, int cats)
{
    if (fmt != MS_SERIES_CSV)
        return;
    fputs("t_ms,unix_ms,rss_kb,pss_kb,pss_anon_kb,pss_file_kb,pss_shmem_kb,uss_kb,"
          "private_dirty_kb,swap_kb,swap_pss_kb,vmsize_kb,vmhwm_kb,threads,fds,"
          "mem_total_kb,mem_available_kb",
          f);
    if (cats)
        for (int c = 0; c < MS_CAT_COUNT; c++)
            fprintf(f, ",%s_kb", ms_acct_cat_name((enum ms_acct_cat)c));
    for (size_t i = 0; i < o->ntrackers; i++)
        fprintf(f, ",t%zu_value,t%zu_exceeded,t%zu_streak,t%zu_fired", i, i, i, i);
    fputc('\n', f);
}

static void series_row(FILE *f, int fmt, const ms_watch_opts *o, int cats,
                       const ms_watch_sample *s, const trk_state *ts)
{
    unsigned long long v[] = {s->t_ms,          s->unix_ms,     s->rss_kb,
                              s->pss_kb,        s->pss_anon_kb, s->pss_file_kb,
                              s->pss_shmem_kb,  s->uss_kb,      s->private_dirty_kb,
                              s->swap_kb,       s->swap_pss_kb, s->vmsize_kb,
                              s->vmhwm_kb,      s->threads,     s->fds,
                              s->mem_total_kb,  s->mem_available_kb};
    static const char *const names[] = {
        "t_ms",     "unix_ms",  "rss_kb",        "pss_kb",    "pss_anon_kb",  "pss_file_kb",
        "pss_shmem_kb", "uss_kb", "private_dirty_kb", "swap_kb", "swap_pss_kb", "vmsize_kb",
        "vmhwm_kb", "threads",  "fds",           "mem_total_kb", "mem_available_kb"};
    size_t nv = sizeof v / sizeof v[0];
    if (fmt == MS_SERIES_CSV) {
        for (size_t i = 0; i < nv; i++)
            fprintf(f, "%s%llu", i ? "," : "", v[i]);
        if (cats)
            for (int c = 0; c < MS_CAT_COUNT; c++)
                fprintf(f, ",%llu", (unsigned long long)s->cat_rss_kb[c]);
        for (size_t i = 0; i < o->ntrackers; i++)
            fprintf(f, ",%.0f,%d,%d,%d", ts[i].value, ts[i].exceeded, ts[i].streak, ts[i].fired);
        fputc('\n', f);
    } else {
        fputc('{', f);
        for (size_t i = 0; i < nv; i++)
            fprintf(f, "%s\"%s\":%llu", i ? "," : "", names[i], v[i]);
        if (cats) {
            fputs(",\"categories\":{", f);
            for (int c = 0; c < MS_CAT_COUNT; c++)
                fprintf(f, "%s\"%s_kb\":%llu", c ? "," : "", ms_acct_cat_name((enum ms_acct_cat)c),
                        (unsigned long long)s->cat_rss_kb[c]);
            fputc('}', f);
        }
        fputs(",\"trackers\":[", f);
        for (size_t i = 0; i < o->ntrackers; i++) {
            fprintf(f, "%s{\"spec\":", i ? "," : "");
            ms_acct_json_string(f, o->trackers[i].spec);
            fprintf(f, ",\"value\":%.0f,\"exceeded\":%s,\"streak\":%d,\"fired\":%s}",
                    ts[i].value, ts[i].exceeded ? "true" : "false", ts[i].streak,
                    ts[i].fired ? "true" : "false");
        }
        fputs("]}\n", f);
    }
}

/* ---- the agent's snapshots ---- */

struct watch_state;
static void msg(const struct watch_state *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* What the agent's newest snapshot says, carried into every sample until a newer one. */
static void agent_fill(struct watch_state *w, ms_watch_sample *s);

/* ---- the loop's state ---- */

typedef struct action_child {
    pid_t pid;
    char what[16];
    int trigger;
} action_child;

typedef struct watch_state {
    const ms_watch_opts *o;
    ms_watch_result *res;
    ms_watch_sample *samples;
    trk_state *states; /* nsamples * ntrackers */
    size_t n, cap;
    char evdir[4096];
    int evdir_made;
    action_child *kids;
    size_t nkids, capkids;
    int cats;       /* categories sampled */
    ms_watch_agent agent; /* the agent's newest snapshot read (o->agent_dir) */
    int has_threads;
    uint64_t leaked_threads;
    char exe[4096]; /* the target's executable, for the categories */
} watch_state;

static void msg(const struct watch_state *w, const char *fmt, ...)
{
    if (!w->o->on_message)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    w->o->on_message(w->o->ctx, buf);
}

static int push_sample(watch_state *w, const ms_watch_sample *s)
{
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 256;
        size_t nt = w->o->ntrackers ? w->o->ntrackers : 1;
        ms_watch_sample *ns = realloc(w->samples, ncap * sizeof *ns);
        if (!ns)
            return -1;
        w->samples = ns;
        trk_state *nts = realloc(w->states, ncap * nt * sizeof *nts);
        if (!nts)
            return -1;
        w->states = nts;
        w->cap = ncap;
    }
    w->samples[w->n++] = *s;
    return 0;
}

static int ensure_evdir(watch_state *w, char *err, size_t errlen)
{
    if (w->evdir_made)
        return 0;
    char dir[4096];
    if (w->o->evidence_dir)
        snprintf(dir, sizeof dir, "%s", w->o->evidence_dir);
    else {
        /* One directory per run, so a second run never meets the first one's files. */
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        snprintf(dir, sizeof dir, "memsight-watch-%d-%04d%02d%02d-%02d%02d%02d", w->o->pid,
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%.400s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%.400s: not a directory", dir);
        return -1;
    }
    if (!realpath(dir, w->evdir)) {
        snprintf(err, errlen, "%.400s: %s", dir, strerror(errno));
        return -1;
    }
    w->evdir_made = 1;
    return 0;
}

/* Writes the series so far to path (0600, exclusive, renamed into place). */
static int write_series_file(const watch_state *w, const char *path, int fmt, char *err,
                             size_t errlen)
{
    ms_outfile of;
    if (ms_outfile_open(&of, path, err, errlen) != 0)
        return -1;
    series_header(of.fp, fmt, w->o, w->cats);
    for (size_t i = 0; i < w->n; i++)
        series_row(of.fp, fmt, w->o, w->cats, &w->samples[i], &w->states[i * w->o->ntrackers]);
    return ms_outfile_commit(&of, err, errlen);
}

static int write_smaps_file(const watch_state *w, const char *path, char *err, size_t errlen)
{
    ms_smaps sm = {0};
    int rc = ms_smaps_read(&sm, w->o->pid, MS_SRC_SMAPS, err, errlen);
    if (rc) {
        ms_smaps_free(&sm);
        return -1;
    }
    ms_thread_sp *thr = NULL;
    ms_acct_hints h = {0};
    char exe[4096];
    if (ms_proc_exe(w->o->pid, exe, sizeof exe, err, errlen) == 0)
        h.exe = exe;
    long nt = ms_proc_thread_sps(w->o->pid, &thr, err, errlen);
    if (nt > 0) {
        h.threads = thr;
        h.nthreads = (size_t)nt;
    }
    ms_acct a;
    rc = ms_acct_build(&a, &sm, &h, err, errlen);
    if (rc == 0) {
        ms_outfile of;
        rc = ms_outfile_open(&of, path, err, errlen);
        if (rc == 0) {
            ms_acct_write_opts wo = {.format = MS_FMT_JSON, .sort = MS_SORT_PSS,
                                     .pid = w->o->pid, .with_mappings = 1};
            if (ms_acct_write(of.fp, &sm, &a, &wo) != 0) {
                ms_outfile_abort(&of);
                snprintf(err, errlen, "%.400s: write error", path);
                rc = -1;
            } else {
                rc = ms_outfile_commit(&of, err, errlen);
            }
        }
        ms_acct_free(&a);
    }
    free(thr);
    ms_smaps_free(&sm);
    return rc;
}

/* Starts an action as a child with its output in log_path. Returns 0 or -1. */
static int spawn_action(watch_state *w, int trigger, const char *what, const char *log_path,
                        const char *file, char *const argv[], const char *prefix,
                        const ms_tracker *t)
{
    int logfd = open(log_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (logfd < 0) {
        msg(w, "trigger %d: %s: %s: %s", trigger, what, log_path, strerror(errno));
        return -1;
    }
    if (w->nkids == w->capkids) {
        size_t nc = w->capkids ? w->capkids * 2 : 8;
        action_child *nk = realloc(w->kids, nc * sizeof *nk);
        if (!nk) {
            close(logfd);
            return -1;
        }
        w->kids = nk;
        w->capkids = nc;
    }
    char pidbuf[16], idx[16];
    snprintf(pidbuf, sizeof pidbuf, "%d", w->o->pid);
    snprintf(idx, sizeof idx, "%d", trigger);
    pid_t c = fork();
    if (c < 0) {
        msg(w, "trigger %d: %s: fork: %s", trigger, what, strerror(errno));
        close(logfd);
        return -1;
    }
    if (c == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(logfd, 1);
        dup2(logfd, 2);
        setenv("MEMSIGHT_PID", pidbuf, 1);
        setenv("MEMSIGHT_TRIGGER", t->spec, 1);
        setenv("MEMSIGHT_TRIGGER_INDEX", idx, 1);
        setenv("MEMSIGHT_EVIDENCE_DIR", w->evdir, 1);
        setenv("MEMSIGHT_EVIDENCE_PREFIX", prefix, 1);
        if (strchr(file, '/'))
            execv(file, argv);
        else
            execvp(file, argv);
        dprintf(2, "memsight watch: cannot run %s: %s\n", file, strerror(errno));
        _exit(127);
    }
    close(logfd);
    action_child *k = &w->kids[w->nkids++];
    k->pid = c;
    k->trigger = trigger;
    snprintf(k->what, sizeof k->what, "%s", what);
    w->res->actions_started++;
    msg(w, "trigger %d: started %s (pid %d), output in %s", trigger, what, (int)c, log_path);
    return 0;
}

static void reap(watch_state *w, int block_ms)
{
    uint64_t deadline = now_ms(CLOCK_MONOTONIC) + (uint64_t)block_ms;
    for (;;) {
        for (size_t i = 0; i < w->nkids;) {
            int status;
            pid_t r = waitpid(w->kids[i].pid, &status, WNOHANG);
            if (r == 0) {
                i++;
                continue;
            }
            if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                w->res->actions_failed++;
                if (r > 0 && WIFEXITED(status))
                    msg(w, "trigger %d: %s exited with status %d", w->kids[i].trigger,
                        w->kids[i].what, WEXITSTATUS(status));
                else
                    msg(w, "trigger %d: %s did not finish normally", w->kids[i].trigger,
                        w->kids[i].what);
            } else {
                msg(w, "trigger %d: %s done", w->kids[i].trigger, w->kids[i].what);
            }
            w->kids[i] = w->kids[--w->nkids];
        }
        if (!w->nkids || block_ms <= 0 || now_ms(CLOCK_MONOTONIC) >= deadline)
            return;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
}

static void fire(watch_state *w, int index, const ms_tracker *t)
{
    char err[512], prefix[4200], path[4300];
    if (ensure_evdir(w, err, sizeof err) != 0) {
        msg(w, "trigger %d (%s): evidence directory: %s", index, t->spec, err);
        w->res->actions_failed++;
        return;
    }
    snprintf(prefix, sizeof prefix, "%s/trigger-%d", w->evdir, index);
    const ms_watch_sample *s = &w->samples[w->n - 1];
    msg(w, "trigger %d: %s (value %.0f at t=%llu ms)", index, t->spec, t->value,
        (unsigned long long)s->t_ms);

    /* Evidence: what fired, the series so far, the smaps categories now. */
    snprintf(path, sizeof path, "%s.json", prefix);
    ms_outfile of;
    if (ms_outfile_open(&of, path, err, sizeof err) == 0) {
        fprintf(of.fp, "{\"trigger\":%d,\"pid\":%d,\"tracker\":", index, w->o->pid);
        ms_acct_json_string(of.fp, t->spec);
        fprintf(of.fp,
                ",\"metric\":\"%s\",\"kind\":\"%s\",\"threshold\":%.0f,\"window_ms\":%llu,"
                "\"consecutive\":%d,\"value\":%.0f,\"sample_index\":%zu,\"t_ms\":%llu,"
                "\"unix_ms\":%llu,\"rss_kb\":%llu,\"pss_kb\":%llu}\n",
                ms_watch_metric_name((enum ms_watch_metric)t->metric),
                t->kind == MS_TRK_GROWTH ? "growth" : t->kind == MS_TRK_ABOVE ? "above" : "below",
                t->threshold, (unsigned long long)t->window_ms, t->consecutive, t->value, w->n - 1,
                (unsigned long long)s->t_ms, (unsigned long long)s->unix_ms,
                (unsigned long long)s->rss_kb, (unsigned long long)s->pss_kb);
        if (ms_outfile_commit(&of, err, sizeof err) != 0)
            msg(w, "trigger %d: %s", index, err);
    } else {
        msg(w, "trigger %d: %s", index, err);
    }
    snprintf(path, sizeof path, "%s-series.csv", prefix);
    if (write_series_file(w, path, MS_SERIES_CSV, err, sizeof err) != 0)
        msg(w, "trigger %d: series evidence: %s", index, err);
    snprintf(path, sizeof path, "%s-smaps.json", prefix);
    if (write_smaps_file(w, path, err, sizeof err) != 0)
        msg(w, "trigger %d: smaps evidence: %s", index, err);

    if (w->o->on_trigger) {
        ms_watch_trigger tr = {index, t, s, prefix};
        w->o->on_trigger(w->o->ctx, &tr);
    }

    /* Actions. */
    char pidbuf[16];
    snprintf(pidbuf, sizeof pidbuf, "%d", w->o->pid);
    const char *self = w->o->self_exe ? w->o->self_exe : "/proc/self/exe";
    if (w->o->exec_cmd) {
        char *argv[] = {"sh", "-c", (char *)w->o->exec_cmd, NULL};
        snprintf(path, sizeof path, "%s-exec.log", prefix);
        if (spawn_action(w, index, "exec", path, "/bin/sh", argv, prefix, t) != 0)
            w->res->actions_failed++;
    }
    if (w->o->act_dump) {
        char *argv[] = {"memsight", "dump", pidbuf, NULL};
        snprintf(path, sizeof path, "%s-dump.log", prefix);
        if (spawn_action(w, index, "dump", path, self, argv, prefix, t) != 0)
            w->res->actions_failed++;
    }
    if (w->o->act_leaks) {
        char *argv[] = {"memsight", "leaks", pidbuf, NULL};
        snprintf(path, sizeof path, "%s-leaks.log", prefix);
        if (spawn_action(w, index, "leaks", path, self, argv, prefix, t) != 0)
            w->res->actions_failed++;
    }
    if (w->o->act_heap_dump) {
        char jcmd[4096], hprof[4300];
        const char *jh = getenv("JAVA_HOME");
        if (w->o->jcmd)
            snprintf(jcmd, sizeof jcmd, "%s", w->o->jcmd);
        else if (jh && *jh)
            snprintf(jcmd, sizeof jcmd, "%s/bin/jcmd", jh);
        else
            snprintf(jcmd, sizeof jcmd, "jcmd");
        if (strchr(jcmd, '/') && access(jcmd, X_OK) != 0)
            snprintf(jcmd, sizeof jcmd, "jcmd");
        snprintf(hprof, sizeof hprof, "%s.hprof", prefix);
        char *argv[] = {"jcmd", pidbuf, "GC.heap_dump", hprof, NULL};
        snprintf(path, sizeof path, "%s-jcmd.log", prefix);
        if (spawn_action(w, index, "jcmd", path, jcmd, argv, prefix, t) != 0)
            w->res->actions_failed++;
    }
}

static void agent_fill(watch_state *w, ms_watch_sample *s)
{
    if (w->o->agent_dir) {
        char err[1024];
        ms_snapshot *snap = ms_watch_agent_newer(&w->agent, w->o->agent_dir, w->o->pid, err,
                                                 sizeof err);
        if (!snap && err[0])
            msg(w, "agent snapshot: %s", err);
        if (snap) {
            uint64_t v;
            if (ms_snapshot_thread_counter(snap, "leaked", &v) == 0) {
                w->has_threads = 1;
                w->leaked_threads = v;
            }
            if (w->o->on_agent)
                w->o->on_agent(w->o->ctx, snap);
            ms_snapshot_free(snap);
        }
    }
    s->has_agent_threads = w->has_threads;
    s->leaked_threads = w->leaked_threads;
}

int ms_watch_run(const ms_watch_opts *o, ms_watch_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (o->pid <= 0) {
        snprintf(err, errlen, "watch: bad pid %d", o->pid);
        return -1;
    }
    watch_state w = {.o = o, .res = res};
    uint64_t interval = o->interval_ms ? o->interval_ms : 1000;
    int max_trig = o->max_triggers == 0 ? 3 : o->max_triggers;
    uint64_t start_time;
    char state;
    int rc = read_stat(o->pid, &start_time, &state);
    if (rc != 0) {
        snprintf(err, errlen, "/proc/%d/stat: %s", o->pid,
                 rc == -ENOENT ? "no such process" : strerror(-rc));
        return -1;
    }
    w.cats = o->categories;
    for (size_t i = 0; i < o->ntrackers; i++) {
        if (o->trackers[i].metric >= MS_MET_CAT_FIRST)
            w.cats = 1;
        if (o->trackers[i].metric == MS_MET_LEAKED_THREADS && !o->agent_dir) {
            snprintf(err, errlen, "tracker '%s': leaked_threads comes from the agent's "
                                  "snapshots: give the directory it writes them to (--agent-dir)",
                     o->trackers[i].spec);
            return -1;
        }
    }
    if (w.cats && ms_proc_exe(o->pid, w.exe, sizeof w.exe, err, errlen) != 0)
        w.exe[0] = '\0';
    ms_smaps sm = {0}, full = {0};
    int use_rollup = 1;
    ms_watch_sample s;
    rc = sample_with(&sm, &use_rollup, o->pid, &s, err, errlen);
    if (rc == 0 && w.cats)
        rc = sample_cats(&full, o->pid, w.exe[0] ? w.exe : NULL, &s, err, errlen);
    if (rc != 0) {
        ms_smaps_free(&sm);
        ms_smaps_free(&full);
        return -1;
    }
    ms_outfile series = {0};
    int have_series = 0;
    if (o->series_path) {
        if (ms_outfile_open(&series, o->series_path, err, errlen) != 0) {
            ms_smaps_free(&sm);
            ms_smaps_free(&full);
            return -1;
        }
        have_series = 1;
        series_header(series.fp, o->series_format, o, w.cats);
        fflush(series.fp);
    }
    for (size_t i = 0; i < o->ntrackers; i++) {
        o->trackers[i].streak = 0;
        o->trackers[i].fire_count = 0;
    }
    uint64_t t0 = now_ms(CLOCK_MONOTONIC);
    uint64_t next = t0;
    int first = 1, ret = 0;
    for (;;) {
        if (!first) {
            uint64_t st2 = 0;
            rc = read_stat(o->pid, &st2, &state);
            if (rc != 0 || st2 != start_time || state == 'Z' || state == 'X') {
                res->target_exited = 1;
                msg(&w, "process %d exited", o->pid);
                break;
            }
            rc = sample_with(&sm, &use_rollup, o->pid, &s, err, errlen);
            if (rc == 0 && w.cats)
                rc = sample_cats(&full, o->pid, w.exe[0] ? w.exe : NULL, &s, err, errlen);
            if (rc != 0) {
                if (rc == -ENOENT || rc == -ESRCH || rc == -EINVAL) {
                    res->target_exited = 1;
                    msg(&w, "process %d exited", o->pid);
                } else {
                    msg(&w, "sampling stopped: %s", err);
                }
                break;
            }
        }
        first = 0;
        agent_fill(&w, &s);
        s.t_ms = now_ms(CLOCK_MONOTONIC) - t0;
        if (push_sample(&w, &s) != 0) {
            snprintf(err, errlen, "watch: out of memory after %zu samples", w.n);
            ret = -1;
            break;
        }
        trk_state *ts = &w.states[(w.n - 1) * o->ntrackers];
        for (size_t i = 0; i < o->ntrackers; i++) {
            ms_tracker *t = &o->trackers[i];
            int allowed = max_trig < 0 || res->triggers < max_trig;
            int f = ms_tracker_eval(t, w.samples, w.n, allowed);
            ts[i].value = t->value;
            ts[i].exceeded = (uint8_t)t->exceeded;
            ts[i].streak = t->run;
            ts[i].fired = (uint8_t)f;
            if (f)
                res->triggers++;
        }
        if (have_series) {
            series_row(series.fp, o->series_format, o, w.cats, &s, ts);
            fflush(series.fp);
        }
        int trig_index = res->triggers;
        for (size_t i = o->ntrackers; i-- > 0;) /* evidence after the row is complete */
            if (ts[i].fired)
                fire(&w, trig_index--, &o->trackers[i]);
        reap(&w, 0);
        res->samples = w.n;
        if (o->on_sample)
            o->on_sample(o->ctx, &s, o->trackers, o->ntrackers);
        if (o->count && w.n >= o->count)
            break;
        if (o->stop && *o->stop)
            break;
        uint64_t now = now_ms(CLOCK_MONOTONIC);
        if (o->duration_ms && now - t0 >= o->duration_ms)
            break;
        next += interval;
        if (next < now) /* a slow sample: skip the missed slots, keep the grid */
            next += ((now - next) / interval + 1) * interval;
        if (o->duration_ms && next - t0 > o->duration_ms)
            next = t0 + o->duration_ms;
        struct timespec ts_abs;
        clock_gettime(CLOCK_MONOTONIC, &ts_abs);
        uint64_t wait = next > now ? next - now : 0;
        ts_abs.tv_sec += (time_t)(wait / 1000);
        ts_abs.tv_nsec += (long)(wait % 1000) * 1000000;
        if (ts_abs.tv_nsec >= 1000000000) {
            ts_abs.tv_sec++;
            ts_abs.tv_nsec -= 1000000000;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts_abs, NULL) == EINTR)
            if (o->stop && *o->stop)
                break;
        if (o->stop && *o->stop)
            break;
    }
    res->samples = w.n;
    if (w.nkids) {
        uint64_t wait = o->action_wait_ms ? o->action_wait_ms : 120000;
        msg(&w, "waiting for %zu action(s) to finish", w.nkids);
        reap(&w, (int)(wait > 3600000 ? 3600000 : wait));
        for (size_t i = 0; i < w.nkids; i++) {
            msg(&w, "trigger %d: %s (pid %d) still running; left alone", w.kids[i].trigger,
                w.kids[i].what, (int)w.kids[i].pid);
            res->actions_failed++;
        }
    }
    if (have_series) {
        char e2[512];
        if (ms_outfile_commit(&series, e2, sizeof e2) != 0) {
            if (ret == 0)
                snprintf(err, errlen, "%s", e2);
            ret = -1;
        }
    }
    free(w.samples);
    free(w.states);
    free(w.kids);
    ms_smaps_free(&sm);
    ms_smaps_free(&full);
    return ret;
}
