/* `memsight smaps PID`: a process's memory per mapping and per category (showmap and
 * dumpsys meminfo in one), from /proc/PID/smaps or a saved smaps text. Thin: parsing and
 * accounting live in src/core/proc_* and src/analysis/accounting. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/accounting.h"
#include "analysis/symbolize.h"
#include "agent_request.h"
#include "commands.h"
#include "core/snapshot.h"
#include "core/proc_read.h"
#include "core/proc_smaps.h"
#include "core/proc_task.h"

static int explain_main(int pid, const char *snapshot, int format);

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight smaps [options] PID\n"
            "       memsight smaps [options] --file SMAPS_TEXT\n"
            "       memsight smaps --explain [--snapshot FILE] PID\n"
            "\n"
            "A process's memory per mapping (size, RSS, PSS, shared/private clean/dirty,\n"
            "swap, swap-PSS) and per category (native_heap, stack, code, file, anon, shmem,\n"
            "guard, other), with totals RSS, PSS, USS, swap. See docs/accounting.md.\n"
            "\n"
            "  --format text|json|csv   output format (default text)\n"
            "  --sort pss|rss|uss|swap|size|addr   order of mappings and categories (pss)\n"
            "  -n, --limit N            show at most N mappings (text default 30, 0: all)\n"
            "  -c, --categories         categories and totals only\n"
            "  --by-name                one row per name and category (showmap's default)\n"
            "  --file PATH              read a saved smaps text instead of a live process\n"
            "  --explain                split RSS into tracked heap, allocator overhead,\n"
            "                           tracked mmap by call stack, stacks, code, unexplained\n"
            "                           (needs the agent in the process, or --snapshot)\n"
            "  --snapshot FILE          snapshot taken at the same moment, for --explain\n");
}

int ms_cmd_smaps(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, 0, 'f'}, {"sort", required_argument, 0, 's'},
        {"limit", required_argument, 0, 'n'},  {"categories", no_argument, 0, 'c'},
        {"file", required_argument, 0, 'F'},   {"explain", no_argument, 0, 'E'},
        {"snapshot", required_argument, 0, 'S'}, {"help", no_argument, 0, 'h'},
        {"by-name", no_argument, 0, 'b'},
        {0, 0, 0, 0}};
    ms_acct_write_opts wo = {.format = MS_FMT_TEXT, .sort = MS_SORT_PSS, .with_mappings = 1};
    long limit = -1;
    const char *file = NULL, *snapshot = NULL;
    int explain = 0, by_name = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "n:ch", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if ((wo.format = ms_acct_parse_format(optarg)) < 0) {
                fprintf(stderr, "memsight smaps: unknown format '%s' (text, json, csv)\n", optarg);
                return 2;
            }
            break;
        case 's':
            if ((wo.sort = ms_acct_parse_sort(optarg)) < 0) {
                fprintf(stderr, "memsight smaps: unknown sort key '%s'\n", optarg);
                return 2;
            }
            break;
        case 'n': {
            char *e;
            limit = strtol(optarg, &e, 10);
            if (*e || limit < 0) {
                fprintf(stderr, "memsight smaps: bad --limit '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'c': wo.with_mappings = 0; break;
        case 'F': file = optarg; break;
        case 'E': explain = 1; break;
        case 'b': by_name = 1; break;
        case 'S': snapshot = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    int pid = 0;
    if (optind < argc) {
        char *e;
        long p = strtol(argv[optind], &e, 10);
        if (*e || p <= 0 || p > 0x3fffffff) {
            fprintf(stderr, "memsight smaps: bad pid '%s'\n", argv[optind]);
            return 2;
        }
        pid = (int)p;
        optind++;
    }
    if (optind < argc || (!pid && !file) || (pid && file)) {
        usage(stderr);
        return 2;
    }
    if (explain) {
        if (!pid) {
            fprintf(stderr, "memsight smaps: --explain needs a live PID\n");
            return 2;
        }
        return explain_main(pid, snapshot, wo.format);
    }
    wo.pid = pid;
    wo.limit = limit >= 0 ? (size_t)limit : (wo.format == MS_FMT_TEXT ? 30 : 0);

    char err[512];
    ms_smaps sm = {0};
    ms_acct_hints hints = {0};
    char exe[4096] = "";
    ms_thread_sp *thr = NULL;
    int rc;
    if (file) {
        rc = ms_procbuf_read(&sm.buf, file, 0, err, sizeof err);
        if (rc == 0 && ms_smaps_parse(&sm, sm.buf.data, sm.buf.len, err, sizeof err) != 0)
            rc = -ENOMEM;
    } else {
        rc = ms_smaps_read(&sm, pid, MS_SRC_SMAPS, err, sizeof err);
        if (rc == 0) {
            if (ms_proc_exe(pid, exe, sizeof exe, err, sizeof err) == 0) {
                size_t l = strlen(exe);
                if (l > 10 && !strcmp(exe + l - 10, " (deleted)"))
                    exe[l - 10] = '\0';
                hints.exe = exe;
            }
            long nt = ms_proc_thread_sps(pid, &thr, err, sizeof err);
            if (nt > 0) {
                hints.threads = thr;
                hints.nthreads = (size_t)nt;
            }
        }
    }
    if (rc != 0) {
        fprintf(stderr, "memsight smaps: %s%s\n", err,
                !file && (rc == -ENOENT || rc == -ESRCH) ? " (no such process)" : "");
        ms_smaps_free(&sm);
        return 1;
    }
    if (sm.n == 0) { /* an all-zero table would read as "uses no memory" */
        if (file)
            fprintf(stderr, "memsight smaps: %s: no mapping records: not an smaps or maps text\n",
                    file);
        else
            fprintf(stderr, "memsight smaps: pid %d has no user-space mappings (a kernel thread, "
                            "or a process that is exiting)\n",
                    pid);
        free(thr);
        ms_smaps_free(&sm);
        return 1;
    }
    if (sm.n && !(sm.present_any & (1u << MS_SM_RSS)))
        fprintf(stderr, "memsight smaps: warning: no Rss fields (a maps file, or not allowed to "
                        "read the counters)\n");
    ms_acct a;
    if (ms_acct_build(&a, &sm, &hints, err, sizeof err) != 0) {
        fprintf(stderr, "memsight smaps: %s\n", err);
        free(thr);
        ms_smaps_free(&sm);
        return 1;
    }
    if (by_name) {
        ms_smaps msm;
        ms_acct ma;
        if (ms_acct_merge_by_name(&sm, &a, &msm, &ma) != 0) {
            fprintf(stderr, "memsight smaps: out of memory\n");
            rc = -1;
        } else {
            rc = ms_acct_write(stdout, &msm, &ma, &wo);
            ms_acct_free(&ma);
            ms_smaps_free(&msm);
        }
    } else {
        rc = ms_acct_write(stdout, &sm, &a, &wo);
    }
    if (fflush(stdout) != 0)
        rc = -1;
    if (rc != 0)
        fprintf(stderr, "memsight smaps: write error on standard output: %s\n", strerror(errno));
    ms_acct_free(&a);
    free(thr);
    ms_smaps_free(&sm);
    return rc ? 1 : 0;
}

/* ---- RSS explained: join /proc accounting with an agent snapshot ---- */

/* Runs `memsight dump PID` (this same executable) and reads the snapshot path it prints.
 * Its error messages go straight to our stderr. Returns 0 or -1. */
static int take_snapshot(int pid, char *path, size_t cap)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t c = fork();
    if (c < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (c == 0) {
        char pidbuf[16];
        snprintf(pidbuf, sizeof pidbuf, "%d", pid);
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/proc/self/exe", "memsight", "dump", pidbuf, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fds[0], path + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (n += (size_t)r) >= cap - 1)
            break;
    }
    close(fds[0]);
    path[n] = '\0';
    char *nl = strchr(path, '\n');
    if (nl)
        *nl = '\0';
    int status;
    while (waitpid(c, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 && path[0] ? 0 : -1;
}

static int explain_main(int pid, const char *snapshot, int format)
{
    char path[4096], err[1024];
    if (format == MS_FMT_CSV) {
        fprintf(stderr, "memsight smaps: --explain writes text or json\n");
        return 2;
    }
    /* a process that cannot be read is not one whose agent failed: say which it is */
    char smaps_path[64];
    snprintf(smaps_path, sizeof smaps_path, "/proc/%d/smaps", pid);
    int probe = open(smaps_path, O_RDONLY | O_CLOEXEC);
    if (probe < 0) {
        int e = errno;
        fprintf(stderr, "memsight smaps: %s: %s%s\n", smaps_path, strerror(e),
                e == ENOENT || e == ESRCH ? " (no such process)"
                : e == EACCES || e == EPERM ? " (a process of another user: run as its user or as root)"
                                            : "");
        return 1;
    }
    close(probe);
    if (snapshot) {
        snprintf(path, sizeof path, "%s", snapshot);
    } else if (take_snapshot(pid, path, sizeof path) != 0) {
        fprintf(stderr, "memsight smaps: --explain: no snapshot from pid %d (is it running under "
                        "'memsight run'? otherwise pass --snapshot FILE taken at the same moment)\n",
                pid);
        return 1;
    }
    ms_smaps sm = {0};
    int rc = ms_smaps_read(&sm, pid, MS_SRC_SMAPS, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "memsight smaps: %s\n", err);
        ms_smaps_free(&sm);
        return 1;
    }
    char exe[4096] = "";
    if (ms_proc_exe(pid, exe, sizeof exe, err, sizeof err) == 0) {
        size_t l = strlen(exe);
        if (l > 10 && !strcmp(exe + l - 10, " (deleted)"))
            exe[l - 10] = '\0';
    }
    ms_thread_sp *thr = NULL;
    long nt = ms_proc_thread_sps(pid, &thr, err, sizeof err);
    /* The snapshot just asked for is read only as a regular file of the process's uid. */
    uid_t owner;
    ms_snapshot *s = snapshot ? ms_snapshot_read(path, err, sizeof err)
                     : ms_cli_agent_owner(pid, &owner, err, sizeof err) == 0
                         ? ms_snapshot_read_awaited(path, owner, err, sizeof err)
                         : NULL;
    if (!s) {
        fprintf(stderr, "memsight smaps: %s\n", err);
        free(thr);
        ms_smaps_free(&sm);
        return 1;
    }
    const char *spid = ms_snapshot_meta(s, "pid");
    if (spid && atoi(spid) != pid)
        fprintf(stderr, "memsight smaps: warning: %s is a snapshot of pid %s, not %d\n", path, spid,
                pid);
    ms_explain ex;
    int ret = 1;
    if (ms_explain_build(&ex, &sm, s, exe[0] ? exe : NULL, thr, nt > 0 ? (size_t)nt : 0, err,
                         sizeof err) != 0) {
        fprintf(stderr, "memsight smaps: %s\n", err);
    } else {
        ms_symbolizer *sym = ms_symbolizer_new(s);
        if (ms_explain_write(stdout, &ex, s, sym, format, pid, path) == 0 && fflush(stdout) == 0)
            ret = 0;
        else
            fprintf(stderr, "memsight smaps: write error on standard output\n");
        if (sym)
            ms_symbolizer_free(sym);
        ms_explain_free(&ex);
    }
    ms_snapshot_free(s);
    free(thr);
    ms_smaps_free(&sm);
    return ret;
}
