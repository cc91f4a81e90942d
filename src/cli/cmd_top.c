/* `memsight top`: processes ranked by PSS, USS, RSS or swap (procrank), from each
 * process's smaps_rollup (smaps summed where the kernel has no rollup). Processes that
 * vanish or may not be read are counted and skipped, never fatal. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/accounting.h"
#include "commands.h"
#include "core/proc_smaps.h"
#include "core/proc_status.h"
#include "core/proc_task.h"

typedef struct top_row {
    int pid;
    uint64_t vss, rss, pss, uss, swap, swap_pss;
    char cmd[160];
} top_row;

static int g_key;
static uint64_t row_key(const top_row *r)
{
    switch (g_key) {
    case MS_SORT_RSS: return r->rss;
    case MS_SORT_USS: return r->uss;
    case MS_SORT_SWAP: return r->swap;
    default: return r->pss;
    }
}
static int cmp_row(const void *a, const void *b)
{
    uint64_t x = row_key(a), y = row_key(b);
    if (x != y)
        return x > y ? -1 : 1;
    return ((const top_row *)a)->pid - ((const top_row *)b)->pid;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: memsight top [--sort pss|uss|rss|swap] [-n N] [--format text|json|csv]\n"
                 "\nProcesses ranked by memory (procrank). Processes that exit while being read\n"
                 "or may not be read are skipped and counted.\n");
}

/* Reads one process's totals. Returns 0, or -errno (gone, not allowed). */
static int read_one(ms_smaps *sm, int pid, top_row *r, int *have_rollup, char *err, size_t errlen)
{
    int rc = -ENOENT;
    if (*have_rollup)
        rc = ms_smaps_read(sm, pid, MS_SRC_SMAPS_ROLLUP, err, errlen);
    if (rc == -ENOENT && *have_rollup) {
        /* No rollup: either the process is gone or the kernel predates 4.14. */
        if (ms_proc_task_count(pid, err, errlen) < 0)
            return -ESRCH;
        *have_rollup = 0;
    }
    if (!*have_rollup)
        rc = ms_smaps_read(sm, pid, MS_SRC_SMAPS, err, errlen);
    if (rc == -ESRCH) {
        /* The kernel answers ESRCH for a task without memory of its own (kernel
         * threads) as well as for one that is exiting: tell them apart by stat. */
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        return access(path, F_OK) == 0 ? -ENODATA : -ESRCH;
    }
    if (rc)
        return rc;
    r->pid = pid;
    r->vss = 0;
    for (size_t i = 0; i < sm->n; i++)
        r->vss += (sm->v[i].end - sm->v[i].start) >> 10;
    r->rss = ms_smaps_sum(sm, MS_SM_RSS);
    r->pss = ms_smaps_sum(sm, MS_SM_PSS);
    r->uss = ms_smaps_sum(sm, MS_SM_PRIVATE_CLEAN) + ms_smaps_sum(sm, MS_SM_PRIVATE_DIRTY);
    r->swap = ms_smaps_sum(sm, MS_SM_SWAP);
    r->swap_pss = ms_smaps_sum(sm, MS_SM_SWAP_PSS);
    if (sm->n == 0)
        return -ENODATA; /* kernel thread or zombie: no memory of its own */
    if (*have_rollup) {
        /* The rollup's one header spans the whole address space: not a real VSS. */
        ms_proc_status st;
        r->vss = ms_status_read(&st, pid, err, errlen) == 0 ? st.v[MS_ST_VM_SIZE] : 0;
    }
    ms_proc_cmdline(pid, r->cmd, sizeof r->cmd, err, errlen);
    return 0;
}

int ms_cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {{"sort", required_argument, 0, 's'},
                                         {"limit", required_argument, 0, 'n'},
                                         {"format", required_argument, 0, 'f'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int key = MS_SORT_PSS, format = MS_FMT_TEXT, c;
    long limit = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "s:n:h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            key = ms_acct_parse_sort(optarg);
            if (key != MS_SORT_PSS && key != MS_SORT_RSS && key != MS_SORT_USS && key != MS_SORT_SWAP) {
                fprintf(stderr, "memsight top: unknown sort key '%s' (pss, uss, rss, swap)\n", optarg);
                return 2;
            }
            break;
        case 'n': {
            char *e;
            limit = strtol(optarg, &e, 10);
            if (*e || limit < 0) {
                fprintf(stderr, "memsight top: bad -n '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'f':
            if ((format = ms_acct_parse_format(optarg)) < 0) {
                fprintf(stderr, "memsight top: unknown format '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    DIR *d = opendir("/proc");
    if (!d) {
        fprintf(stderr, "memsight top: /proc: %s\n", strerror(errno));
        return 1;
    }
    top_row *rows = NULL;
    size_t n = 0, cap = 0, denied = 0, gone = 0;
    int have_rollup = 1;
    ms_smaps sm = {0};
    char err[512];
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *e;
        long pid = strtol(de->d_name, &e, 10);
        if (*e || pid <= 0 || pid > 0x3fffffff)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            top_row *nr = realloc(rows, ncap * sizeof *nr);
            if (!nr) {
                fprintf(stderr, "memsight top: out of memory\n");
                free(rows);
                closedir(d);
                ms_smaps_free(&sm);
                return 1;
            }
            rows = nr;
            cap = ncap;
        }
        int rc = read_one(&sm, (int)pid, &rows[n], &have_rollup, err, sizeof err);
        if (rc == 0)
            n++;
        else if (rc == -EACCES || rc == -EPERM)
            denied++;
        else if (rc != -ENODATA)
            gone++;
    }
    closedir(d);
    ms_smaps_free(&sm);
    g_key = key;
    qsort(rows, n, sizeof *rows, cmp_row);
    size_t shown = limit && (size_t)limit < n ? (size_t)limit : n;
    uint64_t tp = 0, tu = 0, tr = 0, ts = 0;
    for (size_t i = 0; i < n; i++) {
        tp += rows[i].pss;
        tu += rows[i].uss;
        tr += rows[i].rss;
        ts += rows[i].swap;
    }
    if (format == MS_FMT_JSON) {
        printf("{\"sort\":\"%s\",\"processes\":[", key == MS_SORT_RSS ? "rss" : key == MS_SORT_USS ? "uss"
                                                    : key == MS_SORT_SWAP ? "swap" : "pss");
        for (size_t i = 0; i < shown; i++) {
            const top_row *r = &rows[i];
            printf("%s{\"pid\":%d,\"vss_kb\":%llu,\"rss_kb\":%llu,\"pss_kb\":%llu,\"uss_kb\":%llu,"
                   "\"swap_kb\":%llu,\"swap_pss_kb\":%llu,\"cmdline\":",
                   i ? "," : "", r->pid, (unsigned long long)r->vss, (unsigned long long)r->rss,
                   (unsigned long long)r->pss, (unsigned long long)r->uss, (unsigned long long)r->swap,
                   (unsigned long long)r->swap_pss);
            ms_acct_json_string(stdout, r->cmd);
            putchar('}');
        }
        printf("],\"totals\":{\"rss_kb\":%llu,\"pss_kb\":%llu,\"uss_kb\":%llu,\"swap_kb\":%llu},"
               "\"read\":%zu,\"denied\":%zu,\"vanished\":%zu}\n",
               (unsigned long long)tr, (unsigned long long)tp, (unsigned long long)tu,
               (unsigned long long)ts, n, denied, gone);
    } else if (format == MS_FMT_CSV) {
        printf("pid,vss_kb,rss_kb,pss_kb,uss_kb,swap_kb,swap_pss_kb,cmdline\n");
        for (size_t i = 0; i < shown; i++) {
            const top_row *r = &rows[i];
            printf("%d,%llu,%llu,%llu,%llu,%llu,%llu,\"", r->pid, (unsigned long long)r->vss,
                   (unsigned long long)r->rss, (unsigned long long)r->pss, (unsigned long long)r->uss,
                   (unsigned long long)r->swap, (unsigned long long)r->swap_pss);
            for (const char *s = r->cmd; *s; s++) {
                if (*s == '"')
                    putchar('"');
                putchar((unsigned char)*s < 0x20 ? '?' : *s);
            }
            printf("\"\n");
        }
    } else {
        printf("%8s %10s %10s %10s %10s %10s  %s\n", "PID", "Vss", "Rss", "Pss", "Uss", "Swap", "cmdline");
        for (size_t i = 0; i < shown; i++) {
            const top_row *r = &rows[i];
            printf("%8d %9lluK %9lluK %9lluK %9lluK %9lluK  %s\n", r->pid, (unsigned long long)r->vss,
                   (unsigned long long)r->rss, (unsigned long long)r->pss, (unsigned long long)r->uss,
                   (unsigned long long)r->swap, r->cmd);
        }
        printf("%8s %10s %10s %10s %10s %10s\n", "", "", "------", "------", "------", "------");
        printf("%8s %10s %9lluK %9lluK %9lluK %9lluK  TOTAL (%zu processes)\n", "", "",
               (unsigned long long)tr, (unsigned long long)tp, (unsigned long long)tu,
               (unsigned long long)ts, n);
        if (denied || gone)
            printf("(%zu processes not readable, %zu exited while being read)\n", denied, gone);
    }
    free(rows);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "memsight top: write error on standard output: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
