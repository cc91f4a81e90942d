/* `memsight run [options] -- CMD ARGS...`: starts a program with the agent preloaded,
 * leaves its stdin/stdout/stderr alone, exits with its status, then summarises the exit
 * snapshot on stderr. Never writes on the program's stdout; never hides its exit code. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/report_model.h"
#include "analysis/suppress.h"
#include "analysis/symbolize.h"
#include "analysis/watch.h"
#include "cli_common.h"
#include "commands.h"
#include "core/fileio.h"
#include "core/labels.h"
#include "core/agent_options.h"
#include "core/snapshot.h"

#define AGENT_NAME "libmemsight.so"
#define OPTS_MAX 4096

/* ===========================================================================
 * Options. One table: a row either maps to an agent option (agent_key, written into
 * MEMSIGHT_OPTIONS as key=value, or verbatim when the row takes no argument) or has a
 * handler for what the command itself does. New options are new rows.
 * ========================================================================= */
typedef struct run_ctx {
    char agent_opts[OPTS_MAX];
    size_t agent_opts_len;
    const char *out_dir;
    int quiet;
    int top;
    /* --watch: KOOM-style trackers evaluated on the child while it runs */
    ms_tracker trackers[16];
    size_t ntrackers;
    uint64_t watch_interval_ms;
    int leak_check;
    char labels[MS_LABELS_MAX]; /* --label, joined "k=v;k=v" */
    ms_suppressions *supp;      /* --suppress: known leaks left out of the summary */
    int orphan_signal;     /* what the program gets when memsight run dies (0 = nothing) */
    const char *cmd;            /* for messages: "attach" through ms_run_agent_apply, else run */
    char tally[PATH_MAX + 64];  /* the run's tally file ("" none): processes that could not
                                 * write their exit snapshot */
} run_ctx;

#define CTX_CMD(ctx) ((ctx)->cmd ? (ctx)->cmd : "run")

typedef struct run_opt {
    const char *name;      /* long name, without "--" */
    char short_name;       /* 0 = none */
    const char *arg;       /* argument placeholder for --help, NULL = a flag */
    const char *agent_key; /* agent option key (arg) or "key=value" text (flag) */
    int (*handler)(run_ctx *ctx, const char *arg);
    const char *help;
} run_opt;

/* Appends an agent option after checking it against the agent's own table, so that a
 * bad value is refused here, naming the option as typed (`what`), before the program
 * runs (the agent would only warn and run with the default). */
static int add_agent_opt(run_ctx *ctx, const char *key, const char *value, const char *what)
{
    char item[OPTS_MAX], why[MS_OPT_ERR_MAX];
    int n = snprintf(item, sizeof item, "%s%s%s", key, value ? "=" : "", value ? value : "");
    if (n < 0 || (size_t)n >= sizeof item) {
        fprintf(stderr, "memsight %s: %s: value too long\n", CTX_CMD(ctx), what);
        return -1;
    }
    if (strchr(value ? value : key, ',')) {
        fprintf(stderr, "memsight %s: %s '%s': must not contain a comma\n", CTX_CMD(ctx), what,
                value ? value : key);
        return -1;
    }
    if (ms_option_check(item, (size_t)n, why, sizeof why) != 0) {
        if (value)
            fprintf(stderr, "memsight %s: %s '%s': %s\n", CTX_CMD(ctx), what, value, why);
        else
            fprintf(stderr, "memsight %s: %s '%s': %s\n", CTX_CMD(ctx), what, key, why);
        return -1;
    }
    n = snprintf(ctx->agent_opts + ctx->agent_opts_len, OPTS_MAX - ctx->agent_opts_len, "%s%s",
                 ctx->agent_opts_len ? "," : "", item);
    if (n < 0 || (size_t)n >= OPTS_MAX - ctx->agent_opts_len) {
        fprintf(stderr, "memsight %s: agent options too long\n", CTX_CMD(ctx));
        return -1;
    }
    ctx->agent_opts_len += (size_t)n;
    return 0;
}

static int opt_output(run_ctx *ctx, const char *arg)
{
    ctx->out_dir = arg;
    return 0;
}

static int opt_quiet(run_ctx *ctx, const char *arg)
{
    (void)arg;
    ctx->quiet = 1;
    return 0;
}

static int opt_suppress(run_ctx *ctx, const char *arg)
{
    char err[1024];
    if (ctx->supp) {
        fprintf(stderr, "memsight run: --suppress: one suppression file\n");
        return -1;
    }
    ctx->supp = ms_supp_load(arg, err, sizeof err); /* read now: a bad file stops the run */
    if (!ctx->supp) {
        fprintf(stderr, "memsight run: --suppress: %s\n", err);
        return -1;
    }
    return 0;
}

static int opt_top(run_ctx *ctx, const char *arg)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*end || v < 0 || v > 1000) {
        fprintf(stderr, "memsight run: --top: '%s' is not a count\n", arg);
        return -1;
    }
    ctx->top = (int)v;
    return 0;
}

static int opt_watch(run_ctx *ctx, const char *arg)
{
    char err[256];
    if (ctx->ntrackers >= sizeof ctx->trackers / sizeof ctx->trackers[0]) {
        fprintf(stderr, "memsight run: --watch: at most 16 trackers\n");
        return -1;
    }
    if (ms_tracker_parse(&ctx->trackers[ctx->ntrackers], arg, 3, 60000, err, sizeof err) != 0) {
        fprintf(stderr, "memsight run: --watch: %s\n", err);
        return -1;
    }
    ctx->ntrackers++;
    return 0;
}

static int opt_watch_interval(run_ctx *ctx, const char *arg)
{
    if (ms_watch_parse_duration(arg, &ctx->watch_interval_ms) != 0 || !ctx->watch_interval_ms) {
        fprintf(stderr, "memsight run: --watch-interval: '%s' is not a duration\n", arg);
        return -1;
    }
    return 0;
}

static int opt_leak_check(run_ctx *ctx, const char *arg)
{
    ctx->leak_check = strcmp(arg, "off") != 0;
    return add_agent_opt(ctx, "leak_check", arg, "--leak-check");
}

/* valgrind's spelling (a comma list) in the agent's (names joined by '+': a comma
 * separates agent options) */
static int opt_leak_heuristics(run_ctx *ctx, const char *arg)
{
    char v[256];
    if (strlen(arg) >= sizeof v) {
        fprintf(stderr, "memsight %s: --leak-check-heuristics: value too long\n", CTX_CMD(ctx));
        return -1;
    }
    size_t i = 0;
    for (; arg[i]; i++)
        v[i] = arg[i] == ',' ? '+' : arg[i];
    v[i] = 0;
    return add_agent_opt(ctx, "leak_heuristics", v, "--leak-check-heuristics");
}

static int opt_label(run_ctx *ctx, const char *arg)
{
    return ms_cli_add_label("run", ctx->labels, arg);
}

static int opt_orphan_signal(run_ctx *ctx, const char *arg)
{
    static const struct { const char *name; int sig; } names[] = {
        {"none", 0}, {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP},
        {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
    };
    const char *n = strncmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(n, names[i].name)) {
            ctx->orphan_signal = names[i].sig;
            return 0;
        }
    char *end;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || v < 1 || v > SIGRTMAX) {
        fprintf(stderr, "memsight run: --orphan-signal '%s': not a signal (TERM, KILL, INT, HUP, "
                        "QUIT, USR1, USR2, a number 1..%d, or none)\n", arg, SIGRTMAX);
        return -1;
    }
    ctx->orphan_signal = (int)v;
    return 0;
}

static int opt_agent(run_ctx *ctx, const char *arg)
{
    if (!strchr(arg, '=')) {
        fprintf(stderr, "memsight %s: --agent-option wants key=value, not '%s'\n", CTX_CMD(ctx),
                arg);
        return -1;
    }
    return add_agent_opt(ctx, arg, NULL, "--agent-option");
}

static const run_opt run_opts[] = {
    {"output", 'o', "DIR", NULL, opt_output,
     "directory for snapshots (created 0700 if missing; default: current directory)"},
    {"quiet", 'q', NULL, NULL, opt_quiet, "print no summary at exit"},
    {"top", 'n', "N", NULL, opt_top, "stacks shown in the exit summary (default 5)"},
    {"max-depth", 0, "N", "max_depth", NULL, "frames kept per call stack (default 64)"},
    {"unwind", 0, "MODE", "unwind", NULL, "auto (default), fp, dwarf or libunwind"},
    {"capacity", 0, "N", "capacity", NULL, "live heap blocks tracked (default 16M)"},
    {"no-blocks", 0, NULL, "blocks=0", NULL, "do not write every live block into snapshots"},
    {"follow-exec", 0, NULL, "follow_exec=1", NULL, "keep observing programs it execs"},
    {"no-follow-fork", 0, NULL, "follow_fork=0", NULL, "forked children stop recording (default: each writes its own series)"},
    {"suppress", 0, "FILE", NULL, opt_suppress,
     "known leaks (leak:FUNCTION_FILE_OR_MODULE per line) left out of the exit summary"},
    {"leak-check", 0, "WHEN", NULL, opt_leak_check,
     "reachability leak scan: exit (into the exit snapshot) or signal ('memsight leaks PID')"},
    {"leak-check-heuristics", 0, "SET", NULL, opt_leak_heuristics,
     "interior pointers the leak scan takes for start\n"
     "                           pointers, as valgrind's option: all (the default:\n"
     "                           stdstring, length64, newarray, multipleinheritance),\n"
     "                           none, or a comma list of those and interior (any\n"
     "                           interior pointer, LeakSanitizer's rule)"},
    /* production mode (docs/production.md) */
    {"sample", 0, "BYTES", "sample", NULL,
     "Poisson byte sampling, mean BYTES between samples (0 = every block)"},
    {"min-size", 0, "BYTES", "min_size", NULL, "record only blocks of at least BYTES"},
    {"seed", 0, "N", "seed", NULL, "sampler seed, for reproducible runs (0 = random)"},
    {"interval", 0, "MS", "interval", NULL, "also write a numbered snapshot every MS ms"},
    {"dump-at-peak", 0, NULL, "dump_at_peak=1", NULL,
     "keep each stack's live counters at the peak of total live bytes (the default)"},
    {"no-peak", 0, NULL, "dump_at_peak=0", NULL,
     "no peak, temporary allocations or size histogram (slightly cheaper)"},
    {"trigger-bytes", 0, "N", "trigger_bytes", NULL,
     "write a snapshot when tracked live bytes reach N (k/M/G suffix)"},
    {"trigger-rss", 0, "N", "trigger_rss", NULL,
     "write a snapshot when the process RSS reaches N (k/M/G suffix)"},
    /* the kernel's accounting, watched while the program runs (docs/accounting.md) */
    {"watch", 0, "SPEC", NULL, opt_watch,
     "watch the program's memory: rss+50M/10s, rss>1G, threads>500... (repeatable);\n"
     "                           a firing writes evidence and a snapshot (a leak scan too\n"
     "                           with --leak-check) into the output directory"},
    {"watch-interval", 0, "DUR", NULL, opt_watch_interval,
     "how often --watch samples /proc (default 1s)"},
    {"label", 0, "KEY=VALUE", NULL, opt_label,
     "a label for every snapshot (version, device model, page...; repeatable);\n"
     "                           exports carry it (docs/fleet.md)"},
    {"orphan-signal", 0, "SIG", NULL, opt_orphan_signal,
     "what the program gets if memsight run itself dies (default TERM; none)"},
    {"agent-option", 'O', "K=V", NULL, opt_agent, "any agent option (docs/agent.md); repeatable"},
};
#define NRUN_OPTS (sizeof run_opts / sizeof run_opts[0])

/* For `memsight attach`, which takes the same agent options as run: the row of an option
 * that only sets agent options (not run's own -o, -q, -n, --watch...), by long name or
 * short letter; NULL if none. */
const run_opt *ms_run_agent_row(const char *name, char short_name, int *takes_value)
{
    for (size_t k = 0; k < NRUN_OPTS; k++) {
        const run_opt *o = &run_opts[k];
        if (!o->agent_key && o->handler != opt_agent && o->handler != opt_leak_check &&
            o->handler != opt_leak_heuristics)
            continue;
        if ((name && !strcmp(o->name, name)) || (short_name && o->short_name == short_name)) {
            *takes_value = o->arg != NULL;
            return o;
        }
    }
    return NULL;
}

/* Applies such a row to an agent option string (comma-separated, at most cap bytes). */
int ms_run_agent_apply(const run_opt *o, const char *val, char *opts, size_t cap)
{
    run_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -1;
    ctx->cmd = "attach";
    snprintf(ctx->agent_opts, sizeof ctx->agent_opts, "%s", opts);
    ctx->agent_opts_len = strlen(ctx->agent_opts);
    /* checked against the agent's table as for run: a bad value is refused before the
     * agent is loaded into the process */
    char what[64];
    snprintf(what, sizeof what, "--%s", o->name);
    int rc = o->handler ? o->handler(ctx, val)
                        : add_agent_opt(ctx, o->agent_key, o->arg ? val : NULL, what);
    if (rc == 0 && ctx->agent_opts_len < cap)
        memcpy(opts, ctx->agent_opts, ctx->agent_opts_len + 1);
    else if (rc == 0)
        rc = -1;
    free(ctx);
    return rc;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: memsight run [options] [--] PROGRAM [ARGS...]\n\n"
                 "Runs PROGRAM with the memsight agent preloaded. Its input, output and exit\n"
                 "status are its own; at exit a summary of the memory still live (totals and\n"
                 "top call stacks) goes to stderr, and the snapshot file is named.\n\noptions:\n");
    for (size_t i = 0; i < NRUN_OPTS; i++) {
        char left[64], shortname[8] = "    ";
        if (run_opts[i].short_name)
            snprintf(shortname, sizeof shortname, "-%c, ", run_opts[i].short_name);
        snprintf(left, sizeof left, "%s--%s%s%s", shortname, run_opts[i].name,
                 run_opts[i].arg ? " " : "", run_opts[i].arg ? run_opts[i].arg : "");
        fprintf(out, "  %-24s %s\n", left, run_opts[i].help);
    }
    fprintf(out, "  %-24s %s\n", "-h, --help", "this help");
    fprintf(out, "\nenvironment: MEMSIGHT_AGENT (path of %s), MEMSIGHT_OPTIONS (agent options,\n"
                 "comma-separated key=value, applied before the ones above)\n",
            AGENT_NAME);
}

/* Parses options up to "--" or the first non-option; returns the index of the program
 * or -1 (message printed) / -2 (help printed). */
static int parse_options(run_ctx *ctx, int argc, char **argv)
{
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            return i + 1;
        if (a[0] != '-' || a[1] == 0)
            return i;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -2;
        }
        const run_opt *o = NULL;
        const char *val = NULL;
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t nl = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
            for (size_t k = 0; k < NRUN_OPTS && !o; k++)
                if (strlen(run_opts[k].name) == nl && !strncmp(run_opts[k].name, a + 2, nl))
                    o = &run_opts[k];
            if (o && eq)
                val = eq + 1;
            if (o && eq && !o->arg) {
                fprintf(stderr, "memsight run: --%s takes no value\n", o->name);
                return -1;
            }
        } else {
            for (size_t k = 0; k < NRUN_OPTS && !o; k++)
                if (run_opts[k].short_name && run_opts[k].short_name == a[1])
                    o = &run_opts[k];
            if (o && a[2]) {
                if (!o->arg) {
                    fprintf(stderr, "memsight run: unknown option '%s'\n", a);
                    return -1;
                }
                val = a + 2;
            }
        }
        if (!o) {
            fprintf(stderr, "memsight run: unknown option '%s' (see memsight run --help)\n", a);
            return -1;
        }
        i++;
        if (o->arg && !val) {
            if (i >= argc) {
                fprintf(stderr, "memsight run: %s needs a value (%s)\n", a, o->arg);
                return -1;
            }
            val = argv[i++];
        }
        char what[64];
        snprintf(what, sizeof what, "--%s", o->name);
        int rc = o->handler ? o->handler(ctx, val)
                            : add_agent_opt(ctx, o->agent_key, o->arg ? val : NULL, what);
        if (rc != 0)
            return -1;
    }
    return i;
}

/* ===========================================================================
 * Finding the agent and the program.
 * ========================================================================= */
static int usable_file(const char *p)
{
    return p && access(p, R_OK) == 0;
}

static int agent_in_dir(const char *dir, char *out, size_t len)
{
    if (!dir || !*dir)
        return 0;
    int w = snprintf(out, len, "%s/%s", dir, AGENT_NAME);
    return w > 0 && (size_t)w < len && usable_file(out);
}

/* Also used by `memsight attach` (commands.h). */
int ms_run_find_agent(char *out, size_t len)
{
    const char *env = getenv("MEMSIGHT_AGENT");
    if (env && *env) {
        if (!usable_file(env)) {
            fprintf(stderr, "memsight run: MEMSIGHT_AGENT=%s: %s\n", env, strerror(errno));
            return -1;
        }
        if (!realpath(env, out))
            snprintf(out, len, "%s", env);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            int w = snprintf(out, len, "%s/../lib/%s", exe, AGENT_NAME);
            char real[PATH_MAX];
            if (w > 0 && (size_t)w < len && usable_file(out) && realpath(out, real)) {
                snprintf(out, len, "%s", real);
                return 0;
            }
        }
    }
    if (agent_in_dir(getenv("MEMSIGHT_LIBDIR"), out, len) || agent_in_dir(MEMSIGHT_LIBDIR, out, len))
        return 0;
    fprintf(stderr,
            "memsight run: cannot find %s (looked beside the memsight executable in ../lib and "
            "in %s); set MEMSIGHT_AGENT to its path\n",
            AGENT_NAME, MEMSIGHT_LIBDIR);
    return -1;
}

/* Resolves a command the way execvp does. */
static int find_program(const char *cmd, char *out, size_t len)
{
    if (strchr(cmd, '/')) {
        snprintf(out, len, "%s", cmd);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t dl = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(out, len, "%.*s/%s", (int)dl, dl ? path : ".", cmd);
        struct stat st;
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
            return 0;
        if (!colon)
            break;
        path = colon + 1;
    }
    return -1;
}

/* Why preloading cannot observe this file, or NULL when it can (as far as we can tell).
 * Follows one level of "#!" to the interpreter. */
static const char *why_unobservable(const char *file, int depth, char *why, size_t len)
{
    struct stat st;
    if (stat(file, &st) != 0)
        return NULL; /* execvp reports it */
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) {
        snprintf(why, len, "%s is setuid: the dynamic loader ignores LD_PRELOAD for it", file);
        return why;
    }
    if ((st.st_mode & S_ISGID) && st.st_gid != getegid()) {
        snprintf(why, len, "%s is setgid: the dynamic loader ignores LD_PRELOAD for it", file);
        return why;
    }
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    unsigned char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n >= 2 && buf[0] == '#' && buf[1] == '!' && depth == 0) {
        char interp[PATH_MAX];
        size_t i = 2, k = 0;
        while (i < (size_t)n && (buf[i] == ' ' || buf[i] == '\t'))
            i++;
        while (i < (size_t)n && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n' &&
               k < sizeof interp - 1)
            interp[k++] = (char)buf[i++];
        interp[k] = 0;
        return k ? why_unobservable(interp, 1, why, len) : NULL;
    }
    if (n < (ssize_t)sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
        buf[EI_CLASS] != ELFCLASS64)
        return NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > (uint64_t)n ||
        eh->e_phnum > ((uint64_t)n - eh->e_phoff) / sizeof(Elf64_Phdr))
        return NULL; /* headers beyond the first page: do not guess */
    int has_interp = 0;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, buf + eh->e_phoff + i * sizeof ph, sizeof ph);
        if (ph.p_type == PT_INTERP)
            has_interp = 1;
    }
    if (!has_interp) {
        snprintf(why, len,
                 "%s is statically linked (no dynamic loader): LD_PRELOAD cannot load the agent "
                 "into it",
                 file);
        return why;
    }
    return NULL;
}

/* Creates the output directory (0700) if needed and returns its absolute path (also for
 * `memsight attach`). */
int ms_run_prepare_out_dir(const char *cmd, const char *dir, char *out, size_t len)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "memsight %s: cannot create %s: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    /* Snapshots hold the program's data: never into a directory another user's symlink
     * in a shared directory leads to (-o /tmp/snaps planted as a link). */
    char err[PATH_MAX + 256];
    int dfd = ms_open_dir_safe(dir, err, sizeof err);
    if (dfd < 0) {
        fprintf(stderr, "memsight %s: %s\n", cmd, err);
        return -1;
    }
    /* the agent writes there only when it is asked, or at the program's exit: a
     * directory it cannot write to is told now, before the program starts */
    char probe[64];
    snprintf(probe, sizeof probe, ".memsight-probe-%d", (int)getpid());
    int pfd = openat(dfd, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (pfd < 0) {
        fprintf(stderr, "memsight %s: cannot write snapshots into %s: %s\n", cmd, dir,
                strerror(errno));
        close(dfd);
        return -1;
    }
    close(pfd);
    unlinkat(dfd, probe, 0);
    close(dfd);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "memsight %s: %s is not a directory\n", cmd, dir);
        return -1;
    }
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        fprintf(stderr, "memsight %s: %s: %s\n", cmd, dir, strerror(errno));
        return -1;
    }
    if (strchr(real, ',')) {
        fprintf(stderr, "memsight %s: the snapshot directory %s must not contain a comma\n",
                cmd, real);
        return -1;
    }
    snprintf(out, len, "%s", real);
    return 0;
}

/* ===========================================================================
 * Running: fork, exec, forward signals, wait.
 * ========================================================================= */
static volatile sig_atomic_t child_pid;
static int child_killed_by; /* the signal that ended the child, 0 if it exited */

static void forward_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    /* A signal from the terminal reaches the whole process group, the child included;
     * only one sent to memsight alone (kill, timeout, a supervisor) is passed on. */
    if (child_pid > 0 && si && (si->si_code == SI_USER || si->si_code == SI_QUEUE) &&
        si->si_pid != child_pid)
        kill(child_pid, sig);
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFWD (sizeof forwarded / sizeof forwarded[0])

static int set_env(const char *agent, const char *opts)
{
    if (agent) {
        const char *old = getenv("LD_PRELOAD");
        size_t n = strlen(agent) + (old ? strlen(old) : 0) + 2;
        char *v = malloc(n);
        if (!v)
            return -1;
        snprintf(v, n, "%s%s%s", agent, old && *old ? ":" : "", old && *old ? old : "");
        int rc = setenv("LD_PRELOAD", v, 1);
        free(v);
        if (rc != 0)
            return -1;
    }
    const char *old = getenv("MEMSIGHT_OPTIONS");
    size_t n = strlen(opts) + (old ? strlen(old) : 0) + 2;
    char *v = malloc(n);
    if (!v)
        return -1;
    snprintf(v, n, "%s%s%s", old && *old ? old : "", old && *old && *opts ? "," : "", opts);
    int rc = setenv("MEMSIGHT_OPTIONS", v, 1);
    free(v);
    return rc;
}

static void watch_message(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "memsight: watch: %s\n", msg);
}

/* Samples the running child with the trackers of --watch until it exits (the loop
 * returns when the child is a zombie and leaves the reaping to run_child). */
static void watch_child(run_ctx *ctx, pid_t pid, const char *dir, int observed)
{
    char series[PATH_MAX + 64], err[512];
    snprintf(series, sizeof series, "%s/memsight-%d-watch.csv", dir, (int)pid);
    ms_watch_opts o;
    memset(&o, 0, sizeof o);
    o.pid = (int)pid;
    o.interval_ms = ctx->watch_interval_ms ? ctx->watch_interval_ms : 1000;
    o.trackers = ctx->trackers;
    o.ntrackers = ctx->ntrackers;
    o.series_path = series;
    o.series_format = MS_SERIES_CSV;
    o.evidence_dir = dir;
    o.act_dump = observed;
    o.act_leaks = observed && ctx->leak_check;
    o.agent_dir = observed ? dir : NULL; /* leaked_threads: the agent's interval snapshots */
    o.on_message = watch_message;
    ms_watch_result res;
    if (ms_watch_run(&o, &res, err, sizeof err) != 0)
        fprintf(stderr, "memsight run: watch: %s\n", err);
    else if (!ctx->quiet)
        fprintf(stderr, "memsight: watch: %zu samples in %s, %d trigger(s)%s\n", res.samples,
                series, res.triggers, res.actions_failed ? ", some actions failed" : "");
}

/* Until the program runs (end of file on the ready pipe), at most 10 s: a program
 * whose libraries' constructors take longer is watched from then on. */
static void wait_ready(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = 10000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0)
            return;
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        char c;
        ssize_t n = read(fd, &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
            return;
    }
}

/* Runs argv; returns the exit status in shell form, or -1 when fork failed. */
static int run_child(run_ctx *ctx, const char *dir, const char *agent, const char *opts,
                     char **argv, pid_t *pid_out)
{
    int observed = agent != NULL;
    struct sigaction sa, old[NFWD];
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    /* Held back from before the fork until child_pid is set: a signal that came while
     * the parent had not yet run past fork() would find no child to pass it on to and
     * be lost, the child running on (seen under load: the program printed that it was
     * ready before memsight had stored its pid). */
    sigset_t fwd, oldmask;
    sigemptyset(&fwd);
    for (size_t i = 0; i < NFWD; i++) {
        sigaction(forwarded[i], &sa, &old[i]);
        sigaddset(&fwd, forwarded[i]);
    }
    sigprocmask(SIG_BLOCK, &fwd, &oldmask);

    /* --watch starts sampling once the program runs: the agent closes the write end when
     * it starts in the program (its libraries loaded); without the agent, exec closes it.
     * A sample taken before would be memsight's own copy, or a program half loaded, and
     * a growth tracker would fire on start-up. */
    int ready[2] = {-1, -1};
    if (ctx->ntrackers && pipe2(ready, O_CLOEXEC) != 0)
        ready[0] = ready[1] = -1;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        if (ready[0] >= 0) {
            close(ready[0]);
            close(ready[1]);
        }
        fprintf(stderr, "memsight run: fork: %s\n", strerror(errno));
        for (size_t i = 0; i < NFWD; i++)
            sigaction(forwarded[i], &old[i], NULL);
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        return -1;
    }
    if (pid == 0) {
        for (size_t i = 0; i < NFWD; i++)
            sigaction(forwarded[i], &old[i], NULL);
        sigprocmask(SIG_SETMASK, &oldmask, NULL);
        /* The preload goes into the child's environment only: memsight's own helpers
         * (the --watch actions) must not run under the agent. */
        if (agent && set_env(agent, opts) != 0) {
            fprintf(stderr, "memsight run: cannot set the environment: %s\n", strerror(errno));
            _exit(126);
        }
        /* memsight run killed (even with SIGKILL) must not leave the program running
         * orphaned: it gets --orphan-signal, TERM by default, as under valgrind. */
        if (ctx->orphan_signal && (prctl(PR_SET_PDEATHSIG, ctx->orphan_signal) != 0 ||
                                   getppid() != parent))
            _exit(126); /* memsight run is already gone */
        if (ctx->tally[0]) {
            char root[24];
            snprintf(root, sizeof root, "%ld", (long)getpid());
            if (setenv("MEMSIGHT_TALLY", ctx->tally, 1) != 0 ||
                setenv("MEMSIGHT_RUN_ROOT", root, 1) != 0)
                _exit(126);
        }
        if (ready[1] >= 0) {
            close(ready[0]);
            char num[16];
            snprintf(num, sizeof num, "%d", ready[1]);
            if (agent && fcntl(ready[1], F_SETFD, 0) == 0)
                setenv("MEMSIGHT_READY_FD", num, 1);
        }
        execvp(argv[0], argv);
        int e = errno;
        fprintf(stderr, "memsight run: cannot run '%s': %s\n", argv[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    *pid_out = pid;
    if (ready[0] >= 0) {
        close(ready[1]);
        wait_ready(ready[0]);
        close(ready[0]);
    }
    if (ctx->ntrackers)
        watch_child(ctx, pid, dir, observed);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "memsight run: waitpid: %s\n", strerror(errno));
            return 1;
        }
    }
    child_pid = 0;
    for (size_t i = 0; i < NFWD; i++)
        sigaction(forwarded[i], &old[i], NULL);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        child_killed_by = WTERMSIG(status);
        return 128 + WTERMSIG(status);
    }
    return 1;
}

/* ===========================================================================
 * The summary.
 * ========================================================================= */
/* The exit snapshots, written since `since`, of the processes descended from pid (its
 * forked children and theirs): each names its parent (META ppid), so a run of another
 * program into the same directory in the same second is not counted. */
static int count_descendants(const char *dir, pid_t pid, time_t since)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    enum { MAX_CAND = 4096 };
    static long cpid[MAX_CAND], cppid[MAX_CAND];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_CAND) {
        const char *nm = e->d_name;
        size_t nl = strlen(nm);
        struct stat st;
        if (strncmp(nm, "memsight-", 9) || nl <= 11 || strcmp(nm + nl - 11, "-exit.msnap") ||
            fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_mtime < since ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue; /* a name planted by another user is neither counted nor opened */
        long p = strtol(nm + 9, NULL, 10);
        if (p == (long)pid)
            continue;
        char path[PATH_MAX + 64], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        ms_snapshot *s = ms_snapshot_read_awaited(path, geteuid(), err, sizeof err);
        if (!s)
            continue;
        const char *pp = ms_snapshot_meta(s, "ppid");
        cpid[n] = p;
        cppid[n] = pp ? strtol(pp, NULL, 10) : -1;
        n++;
        ms_snapshot_free(s);
    }
    closedir(d);
    /* the closure of "parent is pid or a counted descendant" */
    static unsigned char in[MAX_CAND];
    memset(in, 0, n);
    int count = 0, grew = 1;
    while (grew) {
        grew = 0;
        for (size_t i = 0; i < n; i++) {
            if (in[i])
                continue;
            int parent = cppid[i] == (long)pid;
            for (size_t j = 0; j < n && !parent; j++)
                parent = in[j] && cpid[j] == cppid[i];
            if (parent) {
                in[i] = 1;
                count++;
                grew = 1;
            }
        }
    }
    return count;
}

/* The exit snapshot of pid: memsight-<pid>-<NNNN>-exit.msnap with the largest NNNN, among
 * regular files of ours (in a shared directory another user may plant a FIFO or a file at
 * the name; the agent then writes under a later number). *others counts the exit
 * snapshots of pid's descendants written since `since`. */
static int find_exit_snapshot(const char *dir, pid_t pid, time_t since, char *out, size_t len,
                              int *others)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char prefix[64];
    int pl = snprintf(prefix, sizeof prefix, "memsight-%ld-", (long)pid);
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        if (strncmp(n, prefix, (size_t)pl) != 0)
            continue;
        char *end;
        long seq = strtol(n + pl, &end, 10);
        struct stat st;
        if (end == n + pl || strcmp(end, "-exit.msnap") != 0 ||
            fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (seq > best) {
            int w = snprintf(out, len, "%s/%s", dir, n);
            if (w > 0 && (size_t)w < len)
                best = seq;
        }
    }
    closedir(d);
    *others = best >= 0 ? count_descendants(dir, pid, since) : 0;
    return best >= 0 ? 0 : -1;
}

/* Why the exit snapshot is missing, as far as can be seen from outside: the signal that
 * killed the program, else what stops a write into dir (full, or a file size limit).
 * The agent itself says on stderr which write failed and why. */
static void missing_snapshot_cause(const char *dir, char *why, size_t len)
{
    if (child_killed_by) {
        snprintf(why, len, "the program was killed by signal %d (%s) before it could write one",
                 child_killed_by, strsignal(child_killed_by));
        return;
    }
    struct statvfs vf;
    struct rlimit rl;
    if (statvfs(dir, &vf) == 0 && (unsigned long long)vf.f_bavail * vf.f_frsize < (1u << 20))
        snprintf(why, len,
                 "the file system is full (%llu bytes free): the agent could not write it "
                 "(its message above says which write failed)",
                 (unsigned long long)vf.f_bavail * vf.f_frsize);
    else if (statvfs(dir, &vf) == 0 && vf.f_favail == 0 && vf.f_files > 0)
        snprintf(why, len, "the file system has no free inodes: the agent could not write it");
    else if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(why, len,
                 "the file size limit (ulimit -f) is %llu bytes: the agent could not write it "
                 "(its message above says which write failed)",
                 (unsigned long long)rl.rlim_cur);
    else if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(why, len,
                 "the address space limit (ulimit -v) is %llu bytes: the agent may have run out "
                 "of memory for the writer (its message above says which write failed)",
                 (unsigned long long)rl.rlim_cur);
    else
        snprintf(why, len,
                 "the program exited without one (if the agent failed to write it, its message "
                 "above says why; otherwise the program left by a raw exit system call or "
                 "exec'ed another program: --follow-exec follows it)");
}

/* The errors guard pages caught in the program (or a child it forked) during the run,
 * symbolized on stderr as `memsight report` prints them: the agent's own lines, written
 * from its fault handler, have raw addresses only. Even with -q: an error is no summary. */
static void print_guard_errors(const char *dir, pid_t pid, time_t since)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    int shown = 0;
    struct dirent *e;
    while ((e = readdir(d)) && shown < 16) {
        const char *nm = e->d_name;
        size_t nl = strlen(nm);
        struct stat st;
        if (strncmp(nm, "memsight-", 9) || nl <= 12 || strcmp(nm + nl - 12, "-guard.msnap") ||
            fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_mtime < since ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue; /* a name planted by another user is not opened */
        char path[PATH_MAX + 64], err[512];
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        ms_snapshot *s = ms_snapshot_read_awaited(path, geteuid(), err, sizeof err);
        if (!s) {
            fprintf(stderr, "memsight: %s\n", err);
            continue;
        }
        const char *sp = ms_snapshot_meta(s, "pid"), *pp = ms_snapshot_meta(s, "ppid");
        long p = sp ? strtol(sp, NULL, 10) : -1;
        if (s->guard && (p == (long)pid || (pp && strtol(pp, NULL, 10) == (long)pid))) {
            ms_symbolizer *sym = ms_symbolizer_new(s);
            fprintf(stderr, "memsight: process %ld: ", p);
            ms_report_text_guard(stderr, s, sym);
            fprintf(stderr, "memsight: report %s\n", path);
            ms_symbolizer_free(sym);
            shown++;
        }
        ms_snapshot_free(s);
    }
    closedir(d);
}

/* The tally file (docs/files.md): one page, made here before the program starts; each
 * process of the run other than the program itself maps it at start (a sandbox may
 * later keep it from opening files) and counts itself there when it cannot write its
 * exit snapshot, instead of saying so on the program's stderr. Word 0: how many, word 1:
 * the first one's errno. */
#define TALLY_SIZE 4096
static void tally_make(run_ctx *ctx, const char *dir)
{
    snprintf(ctx->tally, sizeof ctx->tally, "%s/memsight-run-%ld.tally", dir, (long)getpid());
    int fd = open(ctx->tally, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, TALLY_SIZE) != 0) {
        if (fd >= 0) {
            close(fd);
            unlink(ctx->tally);
        }
        ctx->tally[0] = 0; /* every process then says it on stderr, as without memsight run */
        return;
    }
    close(fd);
}

/* Says once what the run's processes counted in the tally, and removes it. */
static void tally_say(run_ctx *ctx, const char *dir)
{
    if (!ctx->tally[0])
        return;
    uint64_t w[2] = {0, 0};
    int fd = open(ctx->tally, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        if (pread(fd, w, sizeof w, 0) != (ssize_t)sizeof w)
            w[0] = 0;
        close(fd);
    }
    unlink(ctx->tally);
    if (w[0] && !ctx->quiet)
        fprintf(stderr,
                "memsight: %llu process(es) of this run could not write their exit snapshot into "
                "%s (%s: a sandbox keeps them from writing); their allocations are in no "
                "snapshot\n",
                (unsigned long long)w[0], dir, strerror((int)w[1]));
}

static void summarise(const char *dir, pid_t pid, time_t since, int top, int status,
                      ms_suppressions *supp)
{
    char path[PATH_MAX + 64];
    int others = 0;
    int found = find_exit_snapshot(dir, pid, since, path, sizeof path, &others) == 0;
    if (!found) {
        if (status == 126 || status == 127)
            return; /* the program did not start; the reason is already printed */
        char why[512];
        missing_snapshot_cause(dir, why, sizeof why);
        fprintf(stderr, "memsight: no exit snapshot from pid %ld in %s: %s\n", (long)pid, dir, why);
        return;
    }
    char err[1024];
    ms_snapshot *s = ms_snapshot_read_awaited(path, geteuid(), err, sizeof err);
    if (!s) {
        fprintf(stderr, "memsight: %s\n", err);
        return;
    }
    ms_symbolizer *sym = ms_symbolizer_new(s);
    if (supp && s->has_leaks && ms_supp_apply(s, sym, supp) < 0)
        fprintf(stderr, "memsight: out of memory while applying the suppressions\n");
    ms_report_summary(s, sym, top, stderr);
    if (supp && s->has_leaks)
        ms_supp_write(supp, "memsight: ", stderr);
    fprintf(stderr, "memsight: snapshot %s\nmemsight: full report: memsight report %s\n", path,
            path);
    if (others)
        fprintf(stderr, "memsight: %d more exit snapshot(s) from child processes in %s\n", others,
                dir);
    ms_symbolizer_free(sym);
    ms_snapshot_free(s);
}

int ms_cmd_run(int argc, char **argv)
{
    run_ctx ctx = {.top = 5};
    ctx.orphan_signal = SIGTERM;
    int first = parse_options(&ctx, argc, argv);
    if (first == -2)
        return 0;
    if (first < 0)
        return 2;
    if (ctx.labels[0] && add_agent_opt(&ctx, "labels", ctx.labels, "--label") != 0)
        return 2;
    if (first >= argc) {
        fprintf(stderr, "memsight run: no program given\n");
        usage(stderr);
        return 2;
    }
    char **cmd = argv + first;
    /* Options may also contradict each other. Those already in the environment's
     * MEMSIGHT_OPTIONS are the agent's to judge: it warns and keeps its defaults. */
    ms_options chk;
    char oerr[MS_OPT_ERR_MAX];
    if (ms_options_parse(&chk, ctx.agent_opts, oerr, sizeof oerr)) {
        fprintf(stderr, "memsight run: %s\n", oerr);
        return 2;
    }

    char dir[PATH_MAX];
    if (ms_run_prepare_out_dir("run", ctx.out_dir ? ctx.out_dir : ".", dir, sizeof dir) != 0)
        return 2;
    int stale = ms_remove_stale_snapshot_tmps(dir, geteuid());
    if (stale && !ctx.quiet)
        fprintf(stderr, "memsight: removed %d partial snapshot(s) in %s left by processes killed "
                        "while writing them\n",
                stale, dir);
    char agent[PATH_MAX];
    if (ms_run_find_agent(agent, sizeof agent) != 0)
        return 2;
    if (strpbrk(agent, ": ")) {
        fprintf(stderr, "memsight run: the agent path %s contains ':' or ' ', which LD_PRELOAD "
                        "cannot carry\n",
                agent);
        return 2;
    }

    char prog[PATH_MAX], why[PATH_MAX + 128];
    const char *unobservable = NULL;
    if (find_program(cmd[0], prog, sizeof prog) == 0)
        unobservable = why_unobservable(prog, 0, why, sizeof why);
    if (unobservable)
        fprintf(stderr, "memsight: %s; it runs unobserved.\n", unobservable);

    char opts[OPTS_MAX + PATH_MAX + 8];
    snprintf(opts, sizeof opts, "out=%s%s%s", dir, ctx.agent_opts_len ? "," : "", ctx.agent_opts);
    pid_t pid = 0;
    time_t start = time(NULL);
    if (!unobservable)
        tally_make(&ctx, dir);
    int status = run_child(&ctx, dir, unobservable ? NULL : agent, opts, cmd, &pid);
    if (status < 0) {
        if (ctx.tally[0])
            unlink(ctx.tally);
        return 2;
    }
    if (!unobservable)
        print_guard_errors(dir, pid, start);
    if (!ctx.quiet && !unobservable)
        summarise(dir, pid, start, ctx.top, status, ctx.supp);
    tally_say(&ctx, dir);
    return status;
}
