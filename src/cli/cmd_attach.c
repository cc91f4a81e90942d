/* `memsight attach PID` and `memsight detach PID`: start the agent in a running process
 * (injected through ptrace, inject.c) and stop it again. Refuses, with the reason, and
 * without touching the process, whatever it cannot do safely. Only the CLI prints. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent_request.h"
#include "analysis/watch.h"
#include "cli_common.h"
#include "commands.h"
#include "core/agent_options.h"
#include "core/labels.h"
#include "inject.h"
#include "inject_arch.h"
#include "memsight/attach.h"
#include "remote_elf.h"

#define OPTS_MAX 2048
#define MS_REQ_DETACH 3 /* src/agent/services/control.h */

static void when_text(uint64_t ns, char *buf, size_t cap)
{
    time_t t = (time_t)(ns / 1000000000ull);
    struct tm tm;
    if (!ns || !gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, cap, "(unknown time)");
}

/* The process's one-letter state from /proc/PID/stat ('?' if unreadable). */
static char proc_state(int pid)
{
    char path[64], e2[128];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    char *s = ms_read_file(path, &len, e2, sizeof e2);
    if (!s)
        return '?';
    char *r = strrchr(s, ')');
    char c = r && r[1] == ' ' && r[2] ? r[2] : '?';
    free(s);
    return c;
}

static long proc_uid(int pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", pid);
    return stat(path, &st) == 0 ? (long)st.st_uid : -1;
}

/* 1 if both files hold the same bytes. */
static int same_file_content(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fa ? fopen(b, "rb") : NULL;
    int same = fa && fb;
    while (same) {
        char x[16384], y[16384];
        size_t na = fread(x, 1, sizeof x, fa), nb = fread(y, 1, sizeof y, fb);
        same = na == nb && !memcmp(x, y, na);
        if (na < sizeof x)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* The tracer of any of the process's threads (an attach in progress seizes one), 0 if
 * none. */
static long thread_tracer(int pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    long tracer = 0;
    struct dirent *de;
    while (!tracer && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[384], e2[128];
        size_t len;
        snprintf(path, sizeof path, "%s/%s/status", dir, de->d_name);
        char *s = ms_read_file(path, &len, e2, sizeof e2);
        const char *tp = s ? strstr(s, "\nTracerPid:") : NULL;
        if (tp)
            tracer = strtol(tp + 11, NULL, 10);
        free(s);
    }
    closedir(d);
    return tracer;
}

/* ===========================================================================
 * Checks before touching anything
 * ========================================================================= */
static int check_target(int pid, char *lib_in_target, size_t cap, const char *agent,
                        memsight_attach_state *st, int *have_st)
{
    char err[1024], path[64];
    snprintf(path, sizeof path, "/proc/%d", pid);
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "memsight attach: no process with pid %d\n", pid);
        return -1;
    }
    if (pid == getpid()) {
        fprintf(stderr, "memsight attach: %d is this memsight process itself\n", pid);
        return -1;
    }
    char state = proc_state(pid);
    if (state == 'Z' || state == 'X') {
        fprintf(stderr, "memsight attach: process %d has exited (a zombie)\n", pid);
        return -1;
    }
    if (state == 'T' || state == 't') {
        fprintf(stderr, "memsight attach: process %d is stopped (%s); it must run to load the "
                "agent: continue it first (kill -CONT %d)\n", pid,
                state == 'T' ? "by a signal" : "by a debugger", pid);
        return -1;
    }
    /* the architecture: of its executable, as the kernel runs it */
    int mach = 0, cls = 0;
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    if (ms_relf_ident(path, &mach, &cls, err, sizeof err) != 0) {
        char why[512];
        if (errno == EACCES || errno == EPERM)
            fprintf(stderr, "memsight attach: cannot trace process %d: %s\n", pid,
                    ms_inject_why_eperm(pid, why, sizeof why));
        else
            fprintf(stderr, "memsight attach: process %d: %s (a kernel thread?)\n", pid, err);
        return -1;
    }
    if (mach != ms_inj_arch_machine() || cls != ELFCLASS64) {
        fprintf(stderr, "memsight attach: architecture mismatch: process %d runs a %s ELF for "
                "machine %d; this memsight attaches to %s processes (machine %d)\n", pid,
                cls == ELFCLASS32 ? "32-bit" : "64-bit", mach, ms_inj_arch_name(),
                ms_inj_arch_machine());
        return -1;
    }
    ms_rmaps maps;
    if (ms_rmaps_read(pid, &maps, err, sizeof err) != 0) {
        fprintf(stderr, "memsight attach: %s\n", err);
        return -1;
    }
    int rc = 0;
    if (ms_rmaps_module(&maps, "ld-musl")) {
        fprintf(stderr, "memsight attach: process %d uses musl, not glibc: attaching needs "
                "glibc's dynamic loader\n", pid);
        rc = -1;
    } else if (!ms_rmaps_module(&maps, "ld-linux") && !ms_rmaps_module(&maps, "ld-2.")) {
        fprintf(stderr, "memsight attach: process %d is statically linked (no dynamic loader "
                "mapped): there is nothing to load the agent with\n", pid);
        rc = -1;
    }
    const ms_rmap *ld = ms_rmaps_module(&maps, "ld-linux");
    if (!ld)
        ld = ms_rmaps_module(&maps, "ld-2.");
    ms_relf le;
    if (rc == 0 && ld) { /* an emulated program (qemu-user) maps a loader of its own CPU */
        char ldpath[4096];
        snprintf(ldpath, sizeof ldpath, "%s", ld->path);
        if (ms_relf_open(pid, &maps, ldpath, &le, err, sizeof err) != 0) {
            fprintf(stderr, "memsight attach: %s\n", err);
            rc = -1;
        } else if (le.machine != ms_inj_arch_machine()) {
            fprintf(stderr, "memsight attach: architecture mismatch: the dynamic loader of "
                    "process %d (%s) is for machine %d, not %s (an emulated program?)\n", pid,
                    ldpath, le.machine, ms_inj_arch_name());
            rc = -1;
        }
    }
    const ms_rmap *mine = rc == 0 ? ms_rmaps_module(&maps, "libmemsight.so") : NULL;
    if (mine)
        snprintf(lib_in_target, cap, "%s", mine->path);
    ms_rmaps_free(&maps);
    if (rc != 0)
        return -1;
    *have_st = 0;
    if (mine) {
        int r = ms_rattach_state(pid, st, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "memsight attach: %s\n", err);
            return -1;
        }
        *have_st = r == 1;
        char when[64];
        if (r == 1 && st->state == MEMSIGHT_ATTACH_RECORDING) {
            when_text(st->attach_ns, when, sizeof when);
            fprintf(stderr, "memsight attach: process %d is already attached (recording since "
                    "%s into %s); 'memsight detach %d' first\n", pid, when, st->out, pid);
            return -1;
        }
        if (r != 1 || st->state != MEMSIGHT_ATTACH_DETACHED) {
            /* loaded, not recording: another attach may be loading it right now (it
             * traces one of the threads), else it was started another way */
            long tracer = thread_tracer(pid);
            if (tracer > 0)
                fprintf(stderr, "memsight attach: process %d is being attached by another "
                        "memsight (or traced by process %ld) right now: let that one finish, "
                        "then 'memsight dump %d' or 'memsight detach %d'\n", pid, tracer, pid,
                        pid);
            else if (r == 1 && st->sessions == 0 && st->out[0])
                fprintf(stderr, "memsight attach: the agent already runs in process %d, started "
                        "by the program itself (memsight_start): ask it with 'memsight dump "
                        "%d'\n", pid, pid);
            else
                fprintf(stderr, "memsight attach: the agent already runs in process %d (started "
                        "by 'memsight run', LD_PRELOAD or the program itself): ask it with "
                        "'memsight dump %d'\n", pid, pid);
            return -1;
        }
        return 0; /* attach again: the same library, already loaded */
    }
    /* the library must be reachable under the same path in the process's mount namespace */
    char there[PATH_MAX + 64];
    struct stat a, b;
    ms_rpath(pid, agent, there, sizeof there);
    if (stat(agent, &a) != 0) {
        fprintf(stderr, "memsight attach: %s: %s\n", agent, strerror(errno));
        return -1;
    }
    if (stat(there, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        snprintf(lib_in_target, cap, "%s", agent);
        return 0;
    }
    /* another mount namespace (a container): copy it into the process's /tmp */
    char name[128], dst[PATH_MAX + 160], tmp[PATH_MAX + 200];
    /* under its own name (the commands find the agent by it), in a directory of its own */
    snprintf(name, sizeof name, "/tmp/memsight-agent-%lx-%lx", (unsigned long)a.st_ino,
             (unsigned long)a.st_size);
    ms_rpath(pid, name, dst, sizeof dst);
    if (mkdir(dst, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "memsight attach: %s does not exist in the mount namespace of process "
                "%d, and %s cannot be made there: %s\n", agent, pid, name, strerror(errno));
        return -1;
    }
    strcat(name, "/libmemsight.so");
    ms_rpath(pid, name, dst, sizeof dst);
    if (same_file_content(agent, dst)) {
        snprintf(lib_in_target, cap, "%s", name);
        fprintf(stderr, "memsight attach: process %d is in another mount namespace: using the "
                "agent's copy at %s there\n", pid, name);
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s.%d", dst, (int)getpid());
    int in = open(agent, O_RDONLY | O_CLOEXEC);
    int outfd = in >= 0 ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755) : -1;
    int ok = in >= 0 && outfd >= 0;
    char buf[65536];
    ssize_t n;
    while (ok && (n = read(in, buf, sizeof buf)) > 0)
        ok = write(outfd, buf, (size_t)n) == n;
    if (in >= 0)
        close(in);
    if (outfd >= 0 && close(outfd) != 0)
        ok = 0;
    if (!ok || rename(tmp, dst) != 0) {
        int e = errno;
        unlink(tmp);
        fprintf(stderr, "memsight attach: %s does not exist in the mount namespace of process "
                "%d, and it could not be copied to %s there: %s\n", agent, pid, name, strerror(e));
        return -1;
    }
    snprintf(lib_in_target, cap, "%s", name);
    fprintf(stderr, "memsight attach: process %d is in another mount namespace: the agent was "
            "copied to %s there\n", pid, name);
    return 0;
}

/* ===========================================================================
 * memsight attach
 * ========================================================================= */
static void attach_usage(FILE *out)
{
    fprintf(out,
            "usage: memsight attach [options] PID\n\n"
            "Loads the memsight agent into the running process PID (ptrace; it needs the same\n"
            "user, or CAP_SYS_PTRACE) and starts recording every allocation from now on, as\n"
            "'memsight run' would; memsight dump, leaks and detach then work on PID. The\n"
            "process is not stopped: one of its threads makes the loader call and goes on.\n\n"
            "options:\n"
            "  -o, --output DIR          directory for snapshots (created 0700; default: current)\n"
            "  --duration DUR            detach by itself after DUR (500ms, 30s, 10m, 1h)\n"
            "  --timeout SECONDS         wait at most this long for the loader (default 30)\n"
            "  --label KEY=VALUE         a label for every snapshot, as with 'memsight run'\n"
            "                            (repeatable; docs/fleet.md)\n"
            "  --sample BYTES, --min-size BYTES, --interval MS, --leak-check signal,\n"
            "  -O K=V and the other agent options of 'memsight run' (memsight run --help)\n"
            "  -h, --help                this help\n");
}

int ms_cmd_attach(int argc, char **argv)
{
    char opts[OPTS_MAX] = "";
    char labels[MS_LABELS_MAX] = ""; /* --label, joined "k=v;k=v" as run joins them */
    const char *out_dir = ".";
    uint64_t duration_ms = 0;
    double timeout = 30;
    int pid = 0, ended = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!ended && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            attach_usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--") && !ended && i + 1 < argc) { /* the PID follows */
            ended = 1;
            continue;
        }
        if (ended || a[0] != '-' || !a[1]) {
            long p;
            if (pid || ms_cli_parse_long(a, 1, INT_MAX, &p) != 0) {
                fprintf(stderr, "memsight attach: '%s' is not a process id%s\n", a,
                        pid ? " (one PID only)" : "");
                return 2;
            }
            pid = (int)p;
            continue;
        }
        /* NAME=VALUE, -XVALUE, or the value in the next argument */
        char name[64] = "";
        char shortc = 0;
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (nl >= sizeof name)
                nl = sizeof name - 1;
            memcpy(name, a + 2, nl);
            name[nl] = 0;
            val = eq ? eq + 1 : NULL;
        } else {
            shortc = a[1];
            val = a[2] ? a + 2 : NULL;
        }
        int own = !strcmp(name, "output") || shortc == 'o' || !strcmp(name, "duration") ||
                  !strcmp(name, "timeout") || !strcmp(name, "label");
        int takes = 1;
        const struct run_opt *row = own ? NULL : ms_run_agent_row(name[0] ? name : NULL, shortc, &takes);
        if (!own && !row) {
            fprintf(stderr, "memsight attach: unknown option '%s' (see memsight attach --help)\n", a);
            return 2;
        }
        if (takes && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "memsight attach: %s needs a value\n", a);
                return 2;
            }
            val = argv[++i];
        }
        if (!strcmp(name, "output") || shortc == 'o') {
            out_dir = val;
        } else if (!strcmp(name, "duration")) {
            if (ms_watch_parse_duration(val, &duration_ms) != 0 || !duration_ms) {
                fprintf(stderr, "memsight attach: --duration: '%s' is not a duration (500ms, 30s, 10m)\n", val);
                return 2;
            }
        } else if (!strcmp(name, "timeout")) {
            if (ms_cli_parse_timeout(val, &timeout) != 0) {
                fprintf(stderr, "memsight attach: --timeout: '%s' is not a number of seconds\n", val);
                return 2;
            }
        } else if (!strcmp(name, "label")) {
            if (ms_cli_add_label("attach", labels, val) != 0)
                return 2;
        } else if (ms_run_agent_apply(row, val, opts, sizeof opts) != 0) {
            return 2;
        }
    }
    /* the labels become the agent's labels= option, through run's -O path (after any
     * -O labels=, so that --label wins as it does for run) */
    if (labels[0]) {
        char item[MS_LABELS_MAX + 8];
        int takes;
        snprintf(item, sizeof item, "labels=%s", labels);
        if (ms_run_agent_apply(ms_run_agent_row(NULL, 'O', &takes), item, opts, sizeof opts) != 0)
            return 2;
    }
    if (!pid) {
        attach_usage(stderr);
        return 2;
    }
    /* options that contradict each other are refused as by run, before the process is
     * touched (the agent would only warn, in the process's own stderr) */
    ms_options chk;
    char oerr[MS_OPT_ERR_MAX];
    if (ms_options_parse(&chk, opts, oerr, sizeof oerr)) {
        fprintf(stderr, "memsight attach: %s\n", oerr);
        return 2;
    }
    char agent[PATH_MAX], lib[PATH_MAX + 64], dir[PATH_MAX];
    memsight_attach_state st;
    int have_st = 0;
    if (ms_run_find_agent(agent, sizeof agent) != 0)
        return 1;
    if (check_target(pid, lib, sizeof lib, agent, &st, &have_st) != 0)
        return 1;
    /* attach again: the agent keeps the mode and tables of its first session. Options
     * not given now are the first session's (its options come first, the ones given now
     * after them, and the last of a key wins); one given now that differs is refused
     * here, before the process is touched (the agent refuses it too). */
    if (have_st && st.state == MEMSIGHT_ATTACH_DETACHED && st.version >= 2) {
        ms_options first;
        ms_options_parse(&first, st.options, oerr, sizeof oerr);
        char kept[OPTS_MAX] = "";
        size_t kn = 0;
        for (const char *q = st.options; *q;) {
            const char *item = q;
            while (*q && *q != ',')
                q++;
            size_t il = (size_t)(q - item);
            if (*q == ',')
                q++;
            const char *eq = memchr(item, '=', il);
            char key[64];
            size_t kl = eq ? (size_t)(eq - item) : il;
            if (!il || kl >= sizeof key)
                continue;
            memcpy(key, item, kl);
            key[kl] = 0;
            if (ms_option_taken_again(key) || kn + il + 2 >= sizeof kept)
                continue;
            kn += (size_t)snprintf(kept + kn, sizeof kept - kn, "%s%.*s", kn ? "," : "",
                                   (int)il, item);
        }
        if (kn) {
            char joined[OPTS_MAX];
            if ((size_t)snprintf(joined, sizeof joined, "%s%s%s", kept, opts[0] ? "," : "",
                                 opts) >= sizeof joined) {
                fprintf(stderr, "memsight attach: agent options too long\n");
                return 2;
            }
            snprintf(opts, sizeof opts, "%s", joined);
            ms_options_parse(&chk, opts, oerr, sizeof oerr);
        }
        const ms_option_def *d = ms_options_fixed_diff(&chk, &first);
        if (d) {
            char want[128], have[128];
            ms_option_value_text(&chk, d, want, sizeof want);
            ms_option_value_text(&first, d, have, sizeof have);
            fprintf(stderr, "memsight attach: process %d was attached before with %s=%s, and "
                    "its agent keeps the mode and tables of that first session (%s=%s asked "
                    "now): attach with the same options, e.g. -O %s=%s, or restart the "
                    "program to record another way\n", pid, d->name, have, d->name, want,
                    d->name, have);
            return 2;
        }
    }
    /* -o names a directory as the process will use it: /proc/self there is the process,
     * not this command */
    char seen[PATH_MAX];
    const char *self_rest = NULL;
    if (!strncmp(out_dir, "/proc/self", 10) && (out_dir[10] == '/' || !out_dir[10]))
        self_rest = out_dir + 10;
    else if (!strncmp(out_dir, "/proc/thread-self", 17) && (out_dir[17] == '/' || !out_dir[17]))
        self_rest = out_dir + 17;
    if (self_rest) {
        snprintf(seen, sizeof seen, "/proc/%d%s", pid, self_rest);
        fprintf(stderr, "memsight attach: -o %s: as process %d sees it, %s\n", out_dir, pid,
                seen);
        out_dir = seen;
    }
    if (ms_run_prepare_out_dir("attach", out_dir, dir, sizeof dir) != 0)
        return 1;
    long uid = proc_uid(pid);
    if (uid >= 0 && (uid_t)uid != geteuid() && geteuid() == 0 && chown(dir, (uid_t)uid, (gid_t)-1) != 0)
        fprintf(stderr, "memsight attach: cannot give %s to uid %ld: %s\n", dir, uid, strerror(errno));
    char full[OPTS_MAX + PATH_MAX + 64];
    int n = snprintf(full, sizeof full, "out=%s%s%s", dir, opts[0] ? "," : "", opts);
    if (duration_ms)
        n += snprintf(full + n, sizeof full - (size_t)n, ",detach_after=%" PRIu64, duration_ms);
    if ((size_t)n >= MS_INJ_OPTS_MAX) {
        fprintf(stderr, "memsight attach: agent options too long\n");
        return 2;
    }

    ms_inject_req q = {.pid = pid, .lib = lib, .entry = MEMSIGHT_ATTACH_ENTRY, .arg = full,
                       .timeout = timeout};
    ms_inject_result res;
    char err[1024];
    if (ms_inject(&q, &res, err, sizeof err) != 0) {
        char now = proc_state(pid);
        /* a thread that is exiting answers ptrace with ESRCH before /proc shows it dead */
        for (int k = 0; k < 100 && strstr(err, "No such process") && now != '?' &&
                        now != 'Z' && now != 'X';
             k++) {
            struct timespec nap = {0, 2 * 1000 * 1000};
            nanosleep(&nap, NULL);
            now = proc_state(pid);
        }
        if (now == '?' || now == 'Z' || now == 'X') /* killed meanwhile: say that first */
            fprintf(stderr, "memsight attach: process %d exited during the attach (%s)\n", pid,
                    err);
        else
            fprintf(stderr, "memsight attach: %s\n", err);
        return 1;
    }
    if (res.rc != 0) {
        char note[sizeof st.note + 8] = "";
        if (res.rc == -EINVAL && ms_rattach_state(pid, &st, err, sizeof err) == 1 && st.note[0])
            snprintf(note, sizeof note, "%s", st.note);
        const char *why = note[0]              ? note
                          : res.rc == -EALREADY ? "it is already attached"
                          : res.rc == -EEXIST ? "the agent was started another way in it"
                          : res.rc == -ENOMEM ? "the agent could not map its tables"
                                              : strerror((int)-res.rc);
        fprintf(stderr, "memsight attach: the agent loaded in process %d but did not start: %s "
                "(%ld); its hooks are not in place, the process runs as before\n", pid, why, res.rc);
        return 1;
    }
    if (ms_rattach_state(pid, &st, err, sizeof err) != 1 || st.state != MEMSIGHT_ATTACH_RECORDING) {
        fprintf(stderr, "memsight attach: the agent started in process %d but shows no attached "
                "state: %s\n", pid, err);
        return 1;
    }
    char when[64];
    when_text(st.attach_ns, when, sizeof when);
    fprintf(stderr, "memsight: attached to process %d: recording since %s (session %u), "
            "snapshots in %s\n", pid, when, st.sessions, st.out);
    fprintf(stderr, "memsight: thread %d (%s) made the loader call: stopped %.1f ms, of which "
            "dlopen and start %.1f ms; no other thread was stopped\n", res.tid, res.where,
            res.stop_ms, res.call_ms);
    if (duration_ms)
        fprintf(stderr, "memsight: it detaches by itself in %.1f s\n", (double)duration_ms / 1000.0);
    fprintf(stderr, "memsight: memsight dump %d | memsight leaks %d | memsight detach %d\n", pid,
            pid, pid);
    printf("%d %.3f %.3f\n", pid, res.stop_ms, res.call_ms);
    return 0;
}

/* ===========================================================================
 * memsight detach
 * ========================================================================= */
static void detach_usage(FILE *out)
{
    fprintf(out,
            "usage: memsight detach [--children] [--timeout SECONDS] PID\n\n"
            "Stops the recording that 'memsight attach' started in PID: a last snapshot is\n"
            "written, every hook of a function that hands out memory is given back, the\n"
            "agent's thread ends. The library stays mapped; 'memsight attach' may start again.\n"
            "Processes PID forked while attached keep the agent and record on: they are\n"
            "listed; --children detaches them too (each with its own last snapshot).\n");
}

/* Detaches one process (the request, then the wait for its control thread); 0 or 1. */
static int detach_one(int pid, double timeout)
{
    memsight_attach_state st;
    char err[1024], when[64];
    char state = proc_state(pid);
    if (state == '?' && kill(pid, 0) != 0 && errno == ESRCH) {
        fprintf(stderr, "memsight detach: no process with pid %d (it has exited: nothing to "
                "detach from)\n", pid);
        return 1;
    }
    if (state == 'Z' || state == 'X') {
        fprintf(stderr, "memsight detach: process %d has exited (a zombie): nothing to detach "
                "from; its exit snapshot, if any, is in its snapshot directory\n", pid);
        return 1;
    }
    int r = ms_rattach_state(pid, &st, err, sizeof err);
    if (r < 0) {
        fprintf(stderr, "memsight detach: %s\n", err);
        return 1;
    }
    if (r == 0) {
        fprintf(stderr, "memsight detach: process %d has no memsight agent\n", pid);
        return 1;
    }
    if (st.state == MEMSIGHT_ATTACH_DETACHED) {
        when_text(st.detach_ns, when, sizeof when);
        fprintf(stderr, "memsight detach: process %d is already detached (since %s)\n", pid, when);
        return 1;
    }
    if (st.state != MEMSIGHT_ATTACH_RECORDING) {
        fprintf(stderr, "memsight detach: process %d was not attached: its agent was started by "
                "'memsight run' or by the program, and stays until it exits\n", pid);
        return 1;
    }
    if (!st.signo) {
        fprintf(stderr, "memsight detach: process %d runs the agent with control=0: it takes no "
                "requests (attach with --duration to have it detach by itself)\n", pid);
        return 1;
    }
    /* a number, so that the agent's answer (a final snapshot it could not write) is
     * known to be this request's */
    unsigned number = (((unsigned)getpid() * 2654435761u) ^ (unsigned)time(NULL)) & MS_REQ_SEQ_MAX;
    if (!number)
        number = 1;
    union sigval v = {.sival_int = (int)(MS_REQ_DETACH | number << MS_REQ_SEQ_SHIFT)};
    if (sigqueue(pid, st.signo, v) != 0) {
        fprintf(stderr, "memsight detach: cannot signal process %d: %s\n", pid, strerror(errno));
        return 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        r = ms_rattach_state(pid, &st, err, sizeof err);
        if (r == 1 && st.state == MEMSIGHT_ATTACH_DETACHED)
            break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
        if (r != 1 || el > timeout) {
            fprintf(stderr, "memsight detach: process %d %s\n", pid,
                    r != 1 ? "went away" : "did not detach in time (its control thread is busy?)");
            return 1;
        }
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    /* and until its control thread has ended (it returns right after the request) */
    while (ms_cli_control_tid(pid) > 0) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > timeout) {
            fprintf(stderr, "memsight detach: process %d: the agent's control thread did not "
                    "end in time\n", pid);
            return 1;
        }
        struct timespec nap = {0, 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (st.last_snapshot[0])
        fprintf(stderr, "memsight: detached from process %d: final snapshot %s\n", pid,
                st.last_snapshot);
    else if (st.reply_request == MS_REQ_DETACH && st.reply_seq == number && st.reply_errno)
        fprintf(stderr, "memsight: detached from process %d; its final snapshot could not be "
                "written into %s: %s\n", pid, st.out, strerror(st.reply_errno));
    else
        fprintf(stderr, "memsight: detached from process %d; its final snapshot could not be "
                "written (the process's stderr says why)\n", pid);
    fprintf(stderr, "memsight: %" PRIu64 " GOT slots given back to the C library", st.restored_slots);
    if (st.live_at_detach)
        fprintf(stderr, "; %" PRIu64 " blocks recorded while attached are still live: free, "
                "realloc and malloc_usable_size stay routed through the agent for them (every "
                "other pointer goes straight on)", st.live_at_detach);
    fprintf(stderr, "\n");
    printf("%s\n", st.last_snapshot);
    return 0;
}

/* Whether process pid has a handler for signal signo (SigCgt). */
static int catches(int pid, int signo)
{
    char path[64], e2[128];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    char *st = ms_read_file(path, &len, e2, sizeof e2);
    const char *c = st ? strstr(st, "\nSigCgt:") : NULL;
    unsigned long long mask = c ? strtoull(c + 8, NULL, 16) : 0;
    free(st);
    return signo >= 1 && signo <= 64 && (mask >> (signo - 1) & 1);
}

/* Processes descended from pid (through /proc's PPid) whose agent records in the
 * attached state: forked while an ancestor was attached. At most cap. */
static size_t recording_descendants(int pid, int *out, size_t cap)
{
    int front[1024];
    size_t nf = 0, n = 0;
    front[nf++] = pid;
    for (size_t at = 0; at < nf; at++) {
        DIR *d = opendir("/proc");
        if (!d)
            break;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] < '1' || de->d_name[0] > '9')
                continue;
            int q = atoi(de->d_name);
            char path[64], e2[128];
            size_t len;
            snprintf(path, sizeof path, "/proc/%d/stat", q);
            char *st = ms_read_file(path, &len, e2, sizeof e2);
            const char *r = st ? strrchr(st, ')') : NULL;
            char state = 0;
            int ppid = 0;
            if (r)
                sscanf(r + 1, " %c %d", &state, &ppid);
            free(st);
            if (ppid != front[at] || state == 'Z' || state == 'X')
                continue;
            if (nf < sizeof front / sizeof front[0])
                front[nf++] = q;
            memsight_attach_state ast;
            char err[256];
            /* with follow_fork=0 a child records nothing and ignores requests */
            if (n < cap && ms_rattach_state(q, &ast, err, sizeof err) == 1 &&
                ast.state == MEMSIGHT_ATTACH_RECORDING && ast.signo > 0 &&
                catches(q, ast.signo))
                out[n++] = q;
        }
        closedir(d);
    }
    return n;
}

int ms_cmd_detach(int argc, char **argv)
{
    int pid = 0, children = 0;
    double timeout = 30;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            detach_usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--children")) {
            children = 1;
            continue;
        }
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (ms_cli_parse_timeout(argv[++i], &timeout) != 0) {
                fprintf(stderr, "memsight detach: --timeout: '%s' is not a number of seconds\n", argv[i]);
                return 2;
            }
            continue;
        }
        if (argv[i][0] == '-' || ms_cli_parse_pid_arg("detach", argv[i], &pid) != 0 || !pid) {
            fprintf(stderr, "memsight detach: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!pid) {
        detach_usage(stderr);
        return 2;
    }
    /* with --children, a parent detached before (its children listed then) is no error */
    memsight_attach_state pst;
    char perr[256];
    int rc = children && ms_rattach_state(pid, &pst, perr, sizeof perr) == 1 &&
                     pst.state == MEMSIGHT_ATTACH_DETACHED
                 ? 0
                 : detach_one(pid, timeout);
    /* processes forked while the parent was attached inherited the agent, hooks and
     * recording included: the parent's detach does not reach them */
    int kids[256];
    size_t nk = recording_descendants(pid, kids, sizeof kids / sizeof kids[0]);
    if (!nk)
        return rc;
    if (children) {
        for (size_t k = 0; k < nk; k++)
            if (detach_one(kids[k], timeout) != 0)
                rc = 1;
        return rc;
    }
    fprintf(stderr, "memsight: %zu process(es) forked by %d while it was attached still record "
            "with the agent:", nk, pid);
    for (size_t k = 0; k < nk; k++)
        fprintf(stderr, " %d", kids[k]);
    fprintf(stderr, "\nmemsight: detach them too with 'memsight detach --children %d', or one "
            "by one ('memsight detach %d')\n", pid, kids[0]);
    return rc;
}
