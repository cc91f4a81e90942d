/* Process memory in Prometheus's text exposition format (metrics.h). Tools only: the
 * registry is a mutex-protected array, rendered into a malloc'ed buffer. */
#define _GNU_SOURCE
#include "fleet/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "analysis/report_model.h"
#include "core/fileio.h"
#include "core/labels.h"

#define MAX_TRACKERS 64

typedef struct mproc {
    int pid;
    char program[64];
    int has_sample, has_agent;
    ms_watch_sample s;
    size_t ntrackers;
    char spec[MAX_TRACKERS][96];
    uint64_t fired[MAX_TRACKERS];
    uint64_t samples;
    ms_metrics_agent a;
} mproc;

struct ms_metrics {
    pthread_mutex_t mu;
    char labels[MS_LABELS_MAX];
    char host[65]; /* this machine's name: the host label where the agent gives none */
    mproc *p;
    size_t n, cap;
};

ms_metrics *ms_metrics_new(const char *labels)
{
    ms_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    snprintf(m->labels, sizeof m->labels, "%s", labels ? labels : "");
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->host, sizeof m->host, "%s", u.nodename);
    return m;
}

void ms_metrics_free(ms_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m->p);
    free(m);
}

static mproc *find(ms_metrics *m, int pid)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->p[i].pid == pid)
            return &m->p[i];
    return NULL;
}

int ms_metrics_add(ms_metrics *m, int pid, const char *program)
{
    int rc = 0;
    pthread_mutex_lock(&m->mu);
    if (!find(m, pid)) {
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 8;
            mproc *p = realloc(m->p, cap * sizeof *p);
            if (!p) {
                rc = -1;
                goto out;
            }
            m->p = p;
            m->cap = cap;
        }
        mproc *q = &m->p[m->n++];
        memset(q, 0, sizeof *q);
        q->pid = pid;
        snprintf(q->program, sizeof q->program, "%s", program ? program : "");
    }
out:
    pthread_mutex_unlock(&m->mu);
    return rc;
}

void ms_metrics_set_sample(ms_metrics *m, int pid, const ms_watch_sample *s,
                           const ms_tracker *trackers, size_t ntrackers)
{
    pthread_mutex_lock(&m->mu);
    mproc *q = find(m, pid);
    if (q) {
        q->s = *s;
        q->has_sample = 1;
        q->samples++;
        q->ntrackers = ntrackers < MAX_TRACKERS ? ntrackers : MAX_TRACKERS;
        for (size_t i = 0; i < q->ntrackers; i++) {
            snprintf(q->spec[i], sizeof q->spec[i], "%s", trackers[i].spec);
            q->fired[i] = (uint64_t)trackers[i].fire_count;
        }
    }
    pthread_mutex_unlock(&m->mu);
}

void ms_metrics_set_agent(ms_metrics *m, int pid, const ms_metrics_agent *a)
{
    pthread_mutex_lock(&m->mu);
    mproc *q = find(m, pid);
    if (q) {
        q->a = *a;
        q->has_agent = 1;
    }
    pthread_mutex_unlock(&m->mu);
}

void ms_metrics_remove(ms_metrics *m, int pid)
{
    pthread_mutex_lock(&m->mu);
    mproc *q = find(m, pid);
    if (q) {
        *q = m->p[m->n - 1];
        m->n--;
    }
    pthread_mutex_unlock(&m->mu);
}

/* ===========================================================================
 * Rendering
 * ========================================================================= */
/* A label value as the exposition format quotes it: \\, \" and \n escaped. */
static void put_value(FILE *f, const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '\\' || c == '"')
            fputc('\\', f), fputc(c, f);
        else if (c == '\n')
            fputs("\\n", f);
        else
            fputc(c, f);
    }
}

static int has_key(const char *labels, const ms_label *l)
{
    size_t pos = 0;
    ms_label u;
    while (ms_labels_next(labels, &pos, &u))
        if (u.key_len == l->key_len && !memcmp(u.key, l->key, u.key_len))
            return 1;
    return 0;
}

static void put_labels(FILE *f, const char *labels, const char *except, int *first)
{
    size_t pos = 0;
    ms_label l;
    const char *why;
    while (ms_labels_next(labels, &pos, &l)) {
        if (ms_label_check(l.key, l.key_len + 1 + l.value_len, &why) != 0)
            continue; /* from a snapshot file: only what a writer would accept */
        if (except && has_key(except, &l))
            continue;
        fprintf(f, "%s%.*s=\"", *first ? "" : ",", (int)l.key_len, l.key);
        put_value(f, l.value, l.value_len);
        fputc('"', f);
        *first = 0;
    }
}

/* {host="..",pid="..",program="..",user labels,snapshot labels the user did not set,
 * extra}: host is the process's own name (its agent's, or its newest snapshot's), else
 * this machine's (label values escaped as the format says: a forged name stays a value) */
static void series(FILE *f, const ms_metrics *m, const mproc *q, const char *name,
                   const char *ek, const char *ev)
{
    int first = 1;
    fprintf(f, "%s{", name);
    const char *host = q && q->has_agent && q->a.host[0] ? q->a.host : m->host;
    if (host[0]) {
        fputs("host=\"", f);
        put_value(f, host, strnlen(host, 64));
        fputc('"', f);
        first = 0;
    }
    if (q) {
        fprintf(f, "%spid=\"%d\",program=\"", first ? "" : ",", q->pid);
        put_value(f, q->program, strlen(q->program));
        fputc('"', f);
        first = 0;
    }
    put_labels(f, m->labels, NULL, &first);
    if (q && q->has_agent)
        put_labels(f, q->a.labels, m->labels, &first);
    if (ek) {
        fprintf(f, "%s%s=\"", first ? "" : ",", ek);
        put_value(f, ev, strlen(ev));
        fputc('"', f);
    }
    fputs("} ", f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

#define KB(field) offsetof(ms_watch_sample, field)
static const struct {
    const char *name;
    size_t off;
    uint64_t scale;
    const char *help;
} gauges[] = {
    {"memsight_rss_bytes", KB(rss_kb), 1024, "Resident set size (smaps_rollup Rss)."},
    {"memsight_pss_bytes", KB(pss_kb), 1024, "Proportional set size (smaps_rollup Pss)."},
    {"memsight_uss_bytes", KB(uss_kb), 1024, "Unique set size: Private_Clean + Private_Dirty."},
    {"memsight_swap_bytes", KB(swap_kb), 1024, "Swapped-out memory (smaps_rollup Swap)."},
    {"memsight_swap_pss_bytes", KB(swap_pss_kb), 1024, "Swap shared proportionally (SwapPss)."},
    {"memsight_pss_anon_bytes", KB(pss_anon_kb), 1024, "PSS of anonymous memory (Pss_Anon)."},
    {"memsight_pss_file_bytes", KB(pss_file_kb), 1024, "PSS of file mappings (Pss_File)."},
    {"memsight_pss_shmem_bytes", KB(pss_shmem_kb), 1024, "PSS of shared memory (Pss_Shmem)."},
    {"memsight_private_dirty_bytes", KB(private_dirty_kb), 1024, "Private_Dirty."},
    {"memsight_vmsize_bytes", KB(vmsize_kb), 1024, "Address space (status VmSize)."},
    {"memsight_vmhwm_bytes", KB(vmhwm_kb), 1024, "Peak RSS (status VmHWM)."},
    {"memsight_threads", KB(threads), 1, "Threads (status Threads)."},
    {"memsight_fds", KB(fds), 1, "Open file descriptors (entries of /proc/PID/fd)."},
};

static uint64_t field(const ms_watch_sample *s, size_t off)
{
    uint64_t v;
    memcpy(&v, (const char *)s + off, sizeof v);
    return v;
}

static void render(ms_metrics *m, FILE *f)
{
    for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
        family(f, gauges[g].name, "gauge", gauges[g].help);
        for (size_t i = 0; i < m->n; i++)
            if (m->p[i].has_sample) {
                series(f, m, &m->p[i], gauges[g].name, NULL, NULL);
                fprintf(f, "%llu\n", (unsigned long long)(field(&m->p[i].s, gauges[g].off) *
                                                          gauges[g].scale));
            }
    }
    int any = 0;
    for (size_t i = 0; i < m->n; i++)
        any |= m->p[i].has_sample && m->p[i].s.has_cats;
    if (any) {
        family(f, "memsight_category_rss_bytes", "gauge",
               "RSS per accounting category, as memsight smaps counts it.");
        for (size_t i = 0; i < m->n; i++)
            for (int c = 0; c < MS_CAT_COUNT && m->p[i].has_sample && m->p[i].s.has_cats; c++) {
                series(f, m, &m->p[i], "memsight_category_rss_bytes", "category",
                       ms_acct_cat_name((enum ms_acct_cat)c));
                fprintf(f, "%llu\n", (unsigned long long)m->p[i].s.cat_rss_kb[c] * 1024);
            }
    }
    family(f, "memsight_samples_total", "counter", "Samples taken of the process.");
    for (size_t i = 0; i < m->n; i++) {
        series(f, m, &m->p[i], "memsight_samples_total", NULL, NULL);
        fprintf(f, "%llu\n", (unsigned long long)m->p[i].samples);
    }
    family(f, "memsight_trigger_firings_total", "counter",
           "Firings of each tracker (memsight watch -t SPEC).");
    for (size_t i = 0; i < m->n; i++)
        for (size_t t = 0; t < m->p[i].ntrackers; t++) {
            series(f, m, &m->p[i], "memsight_trigger_firings_total", "tracker", m->p[i].spec[t]);
            fprintf(f, "%llu\n", (unsigned long long)m->p[i].fired[t]);
        }
    static const struct {
        const char *name, *help;
        size_t off;
    } agent[] = {
        {"memsight_heap_live_bytes", "Live malloc-family bytes the agent tracks (newest snapshot).",
         offsetof(ms_metrics_agent, live_bytes)},
        {"memsight_heap_live_blocks", "Live malloc-family blocks the agent tracks (newest snapshot).",
         offsetof(ms_metrics_agent, live_blocks)},
        {"memsight_mmap_live_bytes", "Live mmap bytes the agent tracks (newest snapshot).",
         offsetof(ms_metrics_agent, mmap_live_bytes)},
        {"memsight_agent_dropped_records", "Records the agent lost (dropped blocks, stacks, regions).",
         offsetof(ms_metrics_agent, dropped)},
        {"memsight_snapshot_timestamp_seconds", "When the newest snapshot was taken (Unix time).",
         offsetof(ms_metrics_agent, snapshot_unix_s)},
    };
    for (size_t g = 0; g < sizeof agent / sizeof agent[0]; g++) {
        int head = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (!m->p[i].has_agent)
                continue;
            if (!head++)
                family(f, agent[g].name, "gauge", agent[g].help);
            uint64_t v;
            memcpy(&v, (const char *)&m->p[i].a + agent[g].off, sizeof v);
            series(f, m, &m->p[i], agent[g].name, NULL, NULL);
            fprintf(f, "%llu\n", (unsigned long long)v);
        }
    }
    int thr_head = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->p[i].has_agent || !m->p[i].a.has_threads)
            continue;
        if (!thr_head++)
            family(f, "memsight_leaked_threads", "gauge",
                   "Threads that ended without being joined or detached (newest snapshot).");
        series(f, m, &m->p[i], "memsight_leaked_threads", NULL, NULL);
        fprintf(f, "%llu\n", (unsigned long long)m->p[i].a.leaked_threads);
    }
    for (int b = 0; b < 2; b++) {
        const char *name = b ? "memsight_leak_blocks" : "memsight_leak_bytes";
        int head = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (!m->p[i].has_agent || !m->p[i].a.has_leaks)
                continue;
            if (!head++)
                family(f, name, "gauge", b ? "Blocks per class of the newest leak scan."
                                           : "Bytes per class of the newest leak scan.");
            for (unsigned c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
                series(f, m, &m->p[i], name, "class", ms_leak_class_name(c));
                fprintf(f, "%llu\n", (unsigned long long)(b ? m->p[i].a.leak_blocks[c]
                                                            : m->p[i].a.leak_bytes[c]));
            }
        }
    }
    /* the system's memory: one series per watcher, without a process */
    for (size_t i = 0; i < m->n; i++) {
        if (!m->p[i].has_sample)
            continue;
        family(f, "memsight_mem_total_bytes", "gauge", "System memory (MemTotal).");
        series(f, m, NULL, "memsight_mem_total_bytes", NULL, NULL);
        fprintf(f, "%llu\n", (unsigned long long)m->p[i].s.mem_total_kb * 1024);
        family(f, "memsight_mem_available_bytes", "gauge", "System memory available (MemAvailable).");
        series(f, m, NULL, "memsight_mem_available_bytes", NULL, NULL);
        fprintf(f, "%llu\n", (unsigned long long)m->p[i].s.mem_available_kb * 1024);
        break;
    }
}

char *ms_metrics_render(ms_metrics *m, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    pthread_mutex_lock(&m->mu);
    render(m, f);
    pthread_mutex_unlock(&m->mu);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int ms_metrics_write_file(ms_metrics *m, const char *path, char *err, size_t errlen)
{
    size_t n;
    char *text = ms_metrics_render(m, &n);
    if (!text) {
        snprintf(err, errlen, "out of memory rendering the metrics");
        return -1;
    }
    ms_outfile of;
    if (ms_outfile_open(&of, path, err, errlen) != 0) {
        free(text);
        return -1;
    }
    if (fwrite(text, 1, n, of.fp) != n) {
        free(text);
        ms_outfile_abort(&of);
        snprintf(err, errlen, "%s: write failed", path);
        return -1;
    }
    free(text);
    return ms_outfile_commit(&of, err, errlen);
}
