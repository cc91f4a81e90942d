/* Asking the memsight agent in a running process for a snapshot (`memsight dump`,
 * `memsight leaks`): checks /proc that the agent and its signal handler are there before
 * sending anything (a real-time signal's default action would kill the process). */
#define _GNU_SOURCE
#include "agent_request.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "core/agent_options.h"
#include "core/fileio.h"
#include "memsight/attach.h"
#include "remote_elf.h"

/* What we learn about the target before asking it. */
typedef struct agent_target {
    int pid;
    int signo;
    int control; /* 0 when control=0 in its options */
    char out[PATH_MAX];
    uid_t owner; /* its file-system uid: whose files its snapshots are */
    int attached; /* by memsight attach, recording: a detach may come while we wait */
    uint64_t st_addr; /* its memsight_attach_info (0: not readable), for its answers */
    memsight_attach_state st; /* as read before the request */
} agent_target;

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The file-system uid (the 4th on the Uid: line) of a /proc/PID/status text. */
static int status_owner(const char *status, uid_t *owner)
{
    const char *u = strstr(status, "\nUid:");
    unsigned long r, e, s, fs;
    if (!u || sscanf(u + 5, "%lu %lu %lu %lu", &r, &e, &s, &fs) != 4)
        return -1;
    *owner = (uid_t)fs;
    return 0;
}

int ms_cli_agent_owner(int pid, uid_t *owner, char *err, size_t errlen)
{
    char path[64], e2[256];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    char *status = ms_read_file(path, &len, e2, sizeof e2);
    if (!status) {
        set_err(err, errlen, "cannot read %s: %s", path, e2);
        return -1;
    }
    int rc = status_owner(status, owner);
    free(status);
    if (rc != 0)
        set_err(err, errlen, "%s: no Uid line", path);
    return rc;
}

/* A permission error reading another process's /proc files says whose it is likely to be. */
static const char *perm_hint(const char *e)
{
    if (!strstr(e, "Permission denied") && !strstr(e, "Operation not permitted"))
        return "";
    return geteuid() == 0
               ? " (denied to root too: a process of another user namespace, or one a "
                 "security module protects)"
               : " (a process of another user, or not dumpable: run as its user or as root)";
}

/* The rest of the checks, once options are known: the handler, the directory. */
static int finish_target(agent_target *t, char *err, size_t errlen)
{
    char path[64], e2[256];
    size_t len;
    if (!t->control) {
        set_err(err, errlen, "process %d runs the agent with control=0: it does not take requests",
                t->pid);
        return -1;
    }
    if (t->signo == 0)
        t->signo = MS_DEFAULT_REQUEST_SIGNAL;

    /* The agent installs its handler at start-up; without it the signal would kill. */
    snprintf(path, sizeof path, "/proc/%d/status", t->pid);
    char *status = ms_read_file(path, &len, e2, sizeof e2);
    if (!status) {
        set_err(err, errlen, "pid %d: %s%s", t->pid, e2, perm_hint(e2));
        return -1;
    }
    const char *cgt = strstr(status, "\nSigCgt:");
    unsigned long long mask = 0;
    if (cgt)
        mask = strtoull(cgt + 8, NULL, 16);
    int have_owner = status_owner(status, &t->owner) == 0;
    free(status);
    if (!have_owner) {
        set_err(err, errlen, "%s: no Uid line", path);
        return -1;
    }
    if (!cgt || !(mask & (1ull << (t->signo - 1)))) {
        set_err(err, errlen,
                "process %d has the agent but no handler for signal %d (the agent is disabled, "
                "still starting, or the program installed its own handler); not sending it",
                t->pid, t->signo);
        return -1;
    }

    /* A relative out directory is relative to the process's working directory. */
    if (t->out[0] != '/') {
        char cwdlink[64], cwd[PATH_MAX];
        snprintf(cwdlink, sizeof cwdlink, "/proc/%d/cwd", t->pid);
        ssize_t k = readlink(cwdlink, cwd, sizeof cwd - 1);
        if (k <= 0) {
            set_err(err, errlen, "cannot find where process %d writes snapshots: %s: %s",
                    t->pid, cwdlink, strerror(errno));
            return -1;
        }
        cwd[k] = 0;
        char joined[PATH_MAX * 2];
        const char *rel = t->out;
        while (rel[0] == '.' && rel[1] == '/')
            rel += 2;
        if (!strcmp(rel, ".") || !rel[0])
            snprintf(joined, sizeof joined, "%s", cwd);
        else
            snprintf(joined, sizeof joined, "%s/%s", cwd, rel);
        if (strlen(joined) >= sizeof t->out) {
            set_err(err, errlen, "snapshot directory path too long");
            return -1;
        }
        snprintf(t->out, sizeof t->out, "%s", joined);
    }
    return 0;
}

/* Fills t from /proc/PID: the agent must be mapped; options come from the environment
 * the process started with (MEMSIGHT_OPTIONS), or from an attached agent's memory. */
static int inspect_target(agent_target *t, char *err, size_t errlen)
{
    char path[64], e2[256];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/maps", t->pid);
    char *maps = ms_read_file(path, &len, e2, sizeof e2);
    if (!maps) {
        if (kill(t->pid, 0) != 0 && errno == ESRCH)
            set_err(err, errlen, "no process with pid %d", t->pid);
        else
            set_err(err, errlen, "pid %d: %s%s", t->pid, e2, perm_hint(e2));
        return -1;
    }
    int has_agent = strstr(maps, "/libmemsight.so") != NULL;
    free(maps);
    /* a zombie has no mappings left: it has exited, whatever ran in it */
    snprintf(path, sizeof path, "/proc/%d/stat", t->pid);
    char *stat = ms_read_file(path, &len, e2, sizeof e2);
    const char *rp = stat ? strrchr(stat, ')') : NULL;
    char state = rp && rp[1] == ' ' ? rp[2] : '?';
    free(stat);
    if (state == 'Z' || state == 'X') {
        set_err(err, errlen, "process %d has exited (a zombie, not yet reaped by its parent): "
                "it takes no requests; its exit snapshot, if it wrote one, is in its snapshot "
                "directory", t->pid);
        return -1;
    }
    if (!has_agent) {
        set_err(err, errlen,
                "process %d has no memsight agent (libmemsight.so is not loaded); "
                "start it with 'memsight run -- CMD', or 'memsight attach %d', to be able to "
                "ask it for snapshots",
                t->pid, t->pid);
        return -1;
    }
    /* attached (memsight attach): its options are in its memory, not its environment */
    memsight_attach_state ast;
    int ar = ms_rattach_state_at(t->pid, &ast, &t->st_addr, e2, sizeof e2);
    if (ar == 1)
        t->st = ast;
    else
        t->st_addr = 0; /* no answers to read: the snapshot's arrival alone tells */
    if (ar == 1 && ast.state == MEMSIGHT_ATTACH_DETACHED) {
        set_err(err, errlen, "memsight was detached from process %d: it records nothing now; "
                "'memsight attach %d' to start again", t->pid, t->pid);
        return -1;
    }
    if (ar == 1 && ast.state == MEMSIGHT_ATTACH_RECORDING) {
        t->attached = 1;
        snprintf(t->out, sizeof t->out, "%s", ast.out[0] ? ast.out : ".");
        t->control = ast.signo != 0;
        if (t->signo == 0)
            t->signo = ast.signo;
        return finish_target(t, err, errlen);
    }
    /* started by the program (memsight_start): the directory and signal it uses, which
     * its options string may have set without the environment */
    if (ar == 1 && ast.state == MEMSIGHT_ATTACH_NEVER && ast.out[0]) {
        snprintf(t->out, sizeof t->out, "%s", ast.out);
        t->control = ast.signo != 0;
        if (t->signo == 0)
            t->signo = ast.signo;
        return finish_target(t, err, errlen);
    }

    snprintf(t->out, sizeof t->out, ".");
    t->control = 1;
    snprintf(path, sizeof path, "/proc/%d/environ", t->pid);
    char *env = ms_read_file(path, &len, e2, sizeof e2);
    if (env) {
        for (size_t i = 0; i < len;) {
            const char *var = env + i;
            size_t n = strnlen(var, len - i);
            if (n > 17 && !strncmp(var, "MEMSIGHT_OPTIONS=", 17)) {
                /* read as the agent reads it: the last of repeated keys wins */
                char *opts = strndup(var + 17, n - 17);
                ms_options o;
                char oerr[256];
                if (opts) {
                    ms_options_parse(&o, opts, oerr, sizeof oerr);
                    snprintf(t->out, sizeof t->out, "%s", o.out);
                    if (t->signo == 0)
                        t->signo = (int)o.dump_signal;
                    t->control = o.control != 0;
                }
                free(opts);
            }
            i += n + 1;
        }
        free(env);
    }
    return finish_target(t, err, errlen);
}

/* Highest sequence number of memsight-<pid>-<NNNN>-<reason>.msnap in dir (-1 if none);
 * with `found` set, copies the name of that file. Only regular files of `owner` count:
 * in a shared directory another user may plant a FIFO or a file at the next name (the
 * agent then writes under a later number). *planted counts the names passed over. */
static long latest_snapshot(const char *dir, int pid, const char *reason, uid_t owner,
                            char *found, size_t cap, int *planted)
{
    DIR *d = opendir(dir);
    if (!d)
        return -2;
    char prefix[64], suffix[64];
    snprintf(prefix, sizeof prefix, "memsight-%d-", pid);
    snprintf(suffix, sizeof suffix, "-%s.msnap", reason);
    size_t pl = strlen(prefix), sl = strlen(suffix);
    long best = -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        if (len <= pl + sl || strncmp(n, prefix, pl) || strcmp(n + len - sl, suffix))
            continue;
        long seq = 0;
        size_t i = pl;
        for (; i < len - sl && n[i] >= '0' && n[i] <= '9' && seq < 100000000; i++)
            seq = seq * 10 + (n[i] - '0');
        if (i != len - sl || i == pl)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != owner) {
            if (planted)
                (*planted)++;
            continue;
        }
        if (seq > best) {
            best = seq;
            if (found)
                snprintf(found, cap, "%s", n);
        }
    }
    closedir(d);
    return best;
}

int ms_cli_control_tid(int pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[384], comm[32] = "";
        snprintf(path, sizeof path, "%s/%s/comm", dir, de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f) && !strcmp(comm, "memsight-ctl\n"))
            found = atoi(de->d_name);
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Sends the request to the agent's control thread alone when it runs (tgsigqueueinfo):
 * a signal sent to the process lands on whichever program thread the kernel picks and
 * interrupts what it was doing. Without a control thread (a single-threaded program: the
 * agent starts none until something needs it), to the process: the agent serves it on
 * the thread it finds waiting in a blocking call, or at the thread's next allocation.
 * *to_thread says which. `seq` marks copies of one request (MS_REQ_SEQ_SHIFT). */
static int send_request(int pid, int signo, int request, unsigned seq, int *to_thread)
{
    int value = (int)((unsigned)request | seq << MS_REQ_SEQ_SHIFT);
    int tid = ms_cli_control_tid(pid);
    *to_thread = 0;
    if (tid > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = signo;
        si.si_code = SI_QUEUE;
        si.si_pid = getpid();
        si.si_uid = getuid();
        si.si_value.sival_int = value;
        if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, signo, &si) == 0) {
            *to_thread = 1;
            return 0;
        }
        if (errno != ESRCH) /* the thread is gone: the process may still be there */
            return -1;
    }
    union sigval v;
    v.sival_int = value;
    return sigqueue(pid, signo, v);
}

/* How often a request goes again while no control thread answers it. */
#define RESEND_S 0.25

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned g_tag;

void ms_cli_agent_request_tag(unsigned tag)
{
    g_tag = tag & (2 * MS_REQ_SEQ_HEUR_FLAG - 1);
}

int ms_cli_sampled_text(uint64_t sample, uint64_t min_size, char *buf, size_t cap)
{
    if (sample)
        snprintf(buf, cap, "sample=%" PRIu64, sample);
    else if (min_size)
        snprintf(buf, cap, "min_size=%" PRIu64, min_size);
    else
        return 0;
    return 1;
}

/* The agent's "no" to a request, in words. */
static void refused_text(const agent_target *t, int request, int e, char *err, size_t errlen)
{
    char mode[64];
    if (e == ENOTSUP && request == MS_REQ_LEAKS &&
        ms_cli_sampled_text(t->st.sample_interval, t->st.min_size, mode, sizeof mode)) {
        set_err(err, errlen, "process %d runs the agent in sampled mode (%s): it records only "
                "part of the allocations, and a reachability scan needs every live block; "
                "run it in full mode to scan it", t->pid, mode);
    } else if (e == ENOTSUP && request == MS_REQ_LEAKS) {
        set_err(err, errlen, "the agent in process %d refused the leak scan: it runs in "
                "sampled mode (a reachability scan needs every live block)", t->pid);
    } else if (e == ESHUTDOWN) {
        set_err(err, errlen, "process %d is exiting: its agent takes no more requests", t->pid);
    } else {
        set_err(err, errlen, "the agent in process %d could not write the %s snapshot into "
                "%s: %s", t->pid, request == MS_REQ_LEAKS ? "leakcheck" : "requested",
                t->out, strerror(e));
    }
}

int ms_cli_agent_request(int pid, int signo, int request, const char *reason, double timeout,
                         char *path, size_t pathlen, uid_t *owner, char *err, size_t errlen)
{
    agent_target t;
    memset(&t, 0, sizeof t);
    t.pid = pid;
    t.signo = signo;
    if (inspect_target(&t, err, errlen) != 0)
        return -1;
    long before = latest_snapshot(t.out, pid, reason, t.owner, NULL, 0, NULL);
    if (before == -2) {
        set_err(err, errlen, "cannot read snapshot directory %s of process %d: %s", t.out, pid,
                strerror(errno));
        return -1;
    }
    /* copies of this request share a number: the agent serves one of them */
    unsigned number = ((unsigned)getpid() * 2654435761u ^ (unsigned)(now_s() * 1e6)) &
                      MS_REQ_SEQ_MAX;
    /* the low bits carry the tag (0: none; never random bits the agent would read as
     * one), the number above them */
    number = (number & ~(2 * MS_REQ_SEQ_HEUR_FLAG - 1)) | g_tag;
    if (!number)
        number = 2 * MS_REQ_SEQ_HEUR_FLAG;
    int to_thread = 0;
    if (send_request(pid, t.signo, request, number, &to_thread) != 0) {
        set_err(err, errlen, "cannot signal process %d: %s", pid, strerror(errno));
        return -1;
    }
    double deadline = now_s() + timeout, resend = now_s() + RESEND_S;
    char name[NAME_MAX + 1], e2[256];
    int planted = 0;
    unsigned polls = 0;
    for (;;) {
        planted = 0;
        long seq = latest_snapshot(t.out, pid, reason, t.owner, name, sizeof name, &planted);
        if (seq > before) {
            if (owner)
                *owner = t.owner;
            int n = snprintf(path, pathlen, "%s/%s", t.out, name);
            if (n < 0 || (size_t)n >= pathlen) {
                set_err(err, errlen, "snapshot path too long");
                return -1;
            }
            return 0;
        }
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            set_err(err, errlen, "process %d exited before writing the snapshot", pid);
            return -1;
        }
        /* the agent's answer: a "no" (a full disk, sampled mode) comes at once */
        memsight_attach_state now;
        if (t.st_addr && t.st.version >= 2 &&
            ms_rattach_read(pid, t.st_addr, &now, e2, sizeof e2) == 0 &&
            now.reply_count != t.st.reply_count && now.reply_seq == number &&
            now.reply_request == (uint32_t)request && now.reply_errno != 0) {
            /* a scan whose copy died still writes its snapshot, before it answers */
            if (latest_snapshot(t.out, pid, reason, t.owner, name, sizeof name, NULL) > before)
                continue;
            refused_text(&t, request, now.reply_errno, err, errlen);
            return -1;
        }
        /* detached (a timed detach) after our checks: the request is ignored now (the
         * agent leaves a handler that ignores it), no snapshot will come */
        memsight_attach_state ast;
        if (t.attached && ++polls % 20 == 0 &&
            ms_rattach_state(pid, &ast, e2, sizeof e2) == 1 &&
            ast.state == MEMSIGHT_ATTACH_DETACHED) {
            set_err(err, errlen, "memsight was detached from process %d before it answered "
                    "(it records nothing now); 'memsight attach %d' to start again", pid, pid);
            return -1;
        }
        if (now_s() >= deadline)
            break;
        /* no control thread: the signal may have found the program busy, and it may not
         * allocate again soon; a copy may find it waiting */
        if (!to_thread && now_s() >= resend) {
            resend = now_s() + RESEND_S;
            if (send_request(pid, t.signo, request, number, &to_thread) != 0 &&
                errno != ESRCH) {
                set_err(err, errlen, "cannot signal process %d: %s", pid, strerror(errno));
                return -1;
            }
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char also[160] = "";
    if (planted)
        snprintf(also, sizeof also,
                 "; %d name(s) of its snapshots there are not regular files of uid %u and "
                 "were passed over",
                 planted, (unsigned)t.owner);
    set_err(err, errlen,
            "no new snapshot in %s within %.1f s (process %d may be stopped, or its agent "
            "could not start its control thread or write there; it says why on its stderr "
            "and in the HLTH counters of its next snapshot)%s",
            t.out, timeout, pid, also);
    return -1;
}
