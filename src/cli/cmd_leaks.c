/* `memsight leaks PID`: asks the agent in a running process for a reachability leak
 * scan (through its control signal), waits for the "leakcheck" snapshot and prints the
 * leaks per allocation stack. Only reads /proc and the snapshot; never touches the
 * target's memory itself. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_request.h"
#include "analysis/report_model.h"
#include "analysis/symbolize.h"
#include "cli_common.h"
#include "commands.h"
#include "core/agent_options.h"
#include "core/fileio.h"
#include "core/snapshot.h"

#pragma weak ms_symbolizer_new
#pragma weak ms_symbolize
#pragma weak ms_symbolizer_free

static const char *const class_names[MS_LEAK_CLASS_COUNT] = {
    "definitely lost", "indirectly lost", "possibly lost", "still reachable"};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: memsight leaks [--timeout SEC] [--signal N] [--top N] [--frames N]\n"
            "                      [--leak-check-heuristics SET] PID\n"
            "\n"
            "Asks the memsight agent inside process PID (started with 'memsight run') for a\n"
            "reachability leak scan: its threads stop for the time of a fork, a copy-on-write\n"
            "child marks every tracked block reachable from registers, stacks, TLS, globals\n"
            "and the program's own mmap regions, and classifies the rest as valgrind does.\n"
            "Prints the snapshot path and the leaks per allocation stack.\n"
            "\n"
            "  --timeout SEC  how long to wait for the scan (default 120)\n"
            "  --signal N     the agent's request signal, if it was started with\n"
            "                 dump_signal=N and its environment cannot be read\n"
            "  --top N        allocation stacks shown (default 20)\n"
            "  --frames N     frames shown per stack (default 8)\n"
            "  --leak-check-heuristics SET\n"
            "                 interior pointers this scan takes for start pointers, as\n"
            "                 valgrind's option: all (stdstring, length64, newarray,\n"
            "                 multipleinheritance), none, or a comma list of those and\n"
            "                 interior (any interior pointer, LeakSanitizer's rule);\n"
            "                 default: the agent's option leak_heuristics (all)\n"
            "\n"
            "The full result (JSON 'leaks' and 'leak_records') is in the snapshot:\n"
            "  memsight report --format json <snapshot>\n"
            "A scan needs every live block: an agent in sampled mode (sample=N) refuses.\n");
}

/* The agent records only a sample when its options say sample=N (N > 0). */
static int sampled_mode(int pid, char *value, size_t cap)
{
    char path[64], err[256];
    size_t len;
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    char *env = ms_read_file(path, &len, err, sizeof err);
    if (!env)
        return 0;
    int sampled = 0;
    for (size_t i = 0; i < len;) {
        const char *var = env + i;
        size_t n = strnlen(var, len - i);
        if (n > 17 && !strncmp(var, "MEMSIGHT_OPTIONS=", 17)) {
            const char *s = var + 17, *end = var + n;
            while (s < end) {
                const char *item = s;
                while (s < end && *s != ',')
                    s++;
                size_t k = (size_t)(s - item);
                size_t kl = 0;
                if (k > 7 && !strncmp(item, "sample=", 7))
                    kl = 7;
                else if (k > 9 && !strncmp(item, "min_size=", 9))
                    kl = 9;
                if (kl) {
                    /* any value but 0 leaves blocks out */
                    char v[64];
                    size_t vl = k < sizeof v - 1 ? k : sizeof v - 1;
                    memcpy(v, item, vl);
                    v[vl] = 0;
                    if (strtoull(v + kl, NULL, 10) > 0 || (v[kl] && v[kl] != '0')) {
                        sampled = 1;
                        snprintf(value, cap, "%s", v);
                    }
                }
                if (s < end)
                    s++;
            }
        }
        i += n + 1;
    }
    free(env);
    return sampled;
}

static void human(char *buf, size_t cap, uint64_t b)
{
    if (b < 10240)
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
    else if (b < 10ull << 20)
        snprintf(buf, cap, "%.1f KiB", b / 1024.0);
    else if (b < 10ull << 30)
        snprintf(buf, cap, "%.1f MiB", b / 1048576.0);
    else
        snprintf(buf, cap, "%.1f GiB", b / 1073741824.0);
}

/* Per allocation stack: the records of every class. */
typedef struct stack_sum {
    uint32_t stack_id;
    uint64_t lost_bytes; /* definite (folded) + possible: the sort key */
    const ms_snap_leak_rec *rec[MS_LEAK_CLASS_COUNT];
} stack_sum;

static int cmp_sum(const void *a, const void *b)
{
    const stack_sum *x = a, *y = b;
    if (x->lost_bytes != y->lost_bytes)
        return x->lost_bytes < y->lost_bytes ? 1 : -1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int cmp_rec_stack(const void *a, const void *b)
{
    const ms_snap_leak_rec *x = *(const ms_snap_leak_rec *const *)a;
    const ms_snap_leak_rec *y = *(const ms_snap_leak_rec *const *)b;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static void print_sample(const ms_snap_leak_rec *r)
{
    printf("      first %u bytes of one block at 0x%llx (%llu bytes):\n        ", r->sample_len,
           (unsigned long long)r->example_address, (unsigned long long)r->example_size);
    for (unsigned i = 0; i < r->sample_len; i++)
        printf("%02x%s", r->sample[i], i % 4 == 3 ? " " : "");
    printf(" |");
    for (unsigned i = 0; i < r->sample_len; i++)
        putchar(isprint(r->sample[i]) ? r->sample[i] : '.');
    printf("|\n");
}

static void print_frames(const ms_snapshot *s, ms_symbolizer *sym, uint32_t stack_id,
                         int max_frames)
{
    const ms_stack *st = ms_snapshot_stack(s, stack_id);
    if (!st || !st->depth) {
        printf("      (no allocation stack recorded)\n");
        return;
    }
    int shown = 0;
    for (uint32_t i = 0; i < st->depth && shown < max_frames; i++) {
        int is_ret = !(i == 0 && (st->flags & MS_STACKF_FIRST_IS_PC));
        ms_frame fr[8];
        int n = 0;
        if (sym && ms_symbolize)
            n = ms_symbolize(sym, st->pcs[i], is_ret, fr, 8);
        if (n <= 0) {
            printf("      #%-2d 0x%llx\n", shown++, (unsigned long long)st->pcs[i]);
            continue;
        }
        for (int k = 0; k < n && shown < max_frames; k++) {
            const char *mod = fr[k].module ? strrchr(fr[k].module, '/') : NULL;
            mod = mod ? mod + 1 : fr[k].module;
            printf("      #%-2d %s", shown++, fr[k].function ? fr[k].function : "??");
            if (fr[k].file)
                printf("  %s:%d", fr[k].file, fr[k].line);
            else if (mod)
                printf("  (%s+0x%llx)", mod, (unsigned long long)fr[k].module_offset);
            printf("%s\n", fr[k].inlined ? "  [inlined]" : "");
        }
    }
}

/* Why a snapshot asked for holds no scan, from its health (the agent's leak_scan.c). */
static void scan_failure(const ms_snapshot *s, char *why, size_t len)
{
    uint64_t failures = 0, sig = 0, code = 0;
    if (ms_snapshot_health(s, "leak_scan_failures", &failures) != 0 || !failures) {
        snprintf(why, len, "the agent could not run it");
        return;
    }
    ms_snapshot_health(s, "leak_scan_child_signal", &sig);
    ms_snapshot_health(s, "leak_scan_child_exit", &code);
    const char *what = code == 2   ? ": no memory for the scan"
                       : code == 3 || code == 6 ? ": a read of the program's memory it could not answer"
                       : code == 4 ? ": its result pipe failed"
                       : code == 5 ? ": too many mappings"
                                   : "";
    if (sig)
        snprintf(why, len,
                 "the scan runs in a copy of the process, and that copy was killed by signal "
                 "%llu (%s) before it sent its result",
                 (unsigned long long)sig, strsignal((int)sig));
    else if (code)
        snprintf(why, len,
                 "the scan runs in a copy of the process, and that copy exited with status "
                 "%llu%s before it sent its result",
                 (unsigned long long)code, what);
    else
        snprintf(why, len,
                 "the scan runs in a copy of the process, and that copy ended before it sent "
                 "its result (the program reaped it)");
}

static int print_leaks(const char *path, uid_t owner, int top, int max_frames)
{
    char err[1024];
    ms_snapshot *s = ms_snapshot_read_awaited(path, owner, err, sizeof err);
    if (!s) {
        fprintf(stderr, "memsight leaks: %s\n", err);
        return 1;
    }
    if (!s->has_leaks) {
        char why[256];
        scan_failure(s, why, sizeof why);
        fprintf(stderr, "memsight leaks: %s holds no leak scan (%s)\n", path, why);
        ms_snapshot_free(s);
        return 1;
    }
    const ms_snap_leak_summary *sum = &s->leak_summary;
    printf("snapshot: %s\n", path);
    printf("pause %.2f ms (threads stopped, fork), scan %.1f ms in the child\n",
           sum->pause_ns / 1e6, sum->scan_ns / 1e6);
    for (int c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
        char hb[32];
        human(hb, sizeof hb, sum->bytes[c]);
        printf("  %-16s %12s in %llu blocks\n", class_names[c], hb,
               (unsigned long long)sum->blocks[c]);
    }
    ms_report_text_heuristics(stdout, s, "  ");
    if (sum->flags & MS_LEAK_F_UNSTOPPED)
        printf("  note: some threads did not stop (they block the stop signal); their stacks "
               "were scanned whole, without registers\n");
    if (sum->flags & MS_LEAK_F_TRUNCATED)
        printf("  note: more leak records than the agent keeps; the smallest were dropped\n");
    if (ms_leak_attach_note(s))
        printf("  note: %s\n", ms_leak_attach_note(s));

    stack_sum *sums = calloc(s->nleaks ? s->nleaks : 1, sizeof *sums);
    if (!sums) {
        ms_snapshot_free(s);
        fprintf(stderr, "memsight leaks: out of memory\n");
        return 1;
    }
    /* group the records by stack: visit them in stack order */
    const ms_snap_leak_rec **order = calloc(s->nleaks ? s->nleaks : 1, sizeof *order);
    if (!order) {
        free(sums);
        ms_snapshot_free(s);
        fprintf(stderr, "memsight leaks: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < s->nleaks; i++)
        order[i] = &s->leaks[i];
    qsort(order, s->nleaks, sizeof *order, cmp_rec_stack);
    size_t n = 0;
    for (size_t i = 0; i < s->nleaks; i++) {
        const ms_snap_leak_rec *r = order[i];
        size_t j = n ? n - 1 : 0;
        if (n == 0 || sums[j].stack_id != r->stack_id) {
            j = n;
            sums[n].stack_id = r->stack_id;
            n++;
        }
        if (!sums[j].rec[r->leak_class])
            sums[j].rec[r->leak_class] = r;
        if (r->leak_class == MS_LEAK_DEFINITE || r->leak_class == MS_LEAK_POSSIBLE)
            sums[j].lost_bytes += r->bytes;
    }
    free(order);
    qsort(sums, n, sizeof *sums, cmp_sum);
    ms_symbolizer *sym = ms_symbolizer_new ? ms_symbolizer_new(s) : NULL;
    int shown = 0;
    for (size_t j = 0; j < n && shown < top; j++) {
        if (!sums[j].lost_bytes)
            continue;
        shown++;
        printf("\n#%d  allocation stack %u\n", shown, sums[j].stack_id);
        for (int c = 0; c < MS_LEAK_CLASS_COUNT; c++) {
            const ms_snap_leak_rec *r = sums[j].rec[c];
            if (!r)
                continue;
            char hb[32];
            human(hb, sizeof hb, r->bytes);
            char via[160] = "";
            if (c == MS_LEAK_REACHABLE && r->heuristics) {
                char list[128];
                ms_leak_heuristic_list(r->heuristics, list, sizeof list);
                snprintf(via, sizeof via, " (reachable via heuristic: %s)", list);
            }
            printf("    %-16s %10s in %llu blocks%s%s\n", class_names[c], hb,
                   (unsigned long long)r->blocks,
                   c == MS_LEAK_DEFINITE ? " (folded: with what they hold)" : "", via);
        }
        const ms_snap_leak_rec *ex = sums[j].rec[MS_LEAK_DEFINITE] ? sums[j].rec[MS_LEAK_DEFINITE]
                                                                   : sums[j].rec[MS_LEAK_POSSIBLE];
        print_frames(s, sym, sums[j].stack_id, max_frames);
        if (ex && ex->sample_len)
            print_sample(ex);
    }
    uint64_t tracked = 0;
    for (int c = 0; c < MS_LEAK_CLASS_COUNT; c++)
        tracked += s->leak_summary.blocks[c];
    if (!shown && !tracked) /* nothing recorded is not "nothing leaked" */
        printf("\nno verdict: the scan had no live block to judge (the agent recorded none: "
               "nothing was allocated since it started or attached, or every recorded block "
               "was freed)\n");
    else if (!shown)
        printf("\nno leaks: every tracked block is reachable\n");
    if (sym && ms_symbolizer_free)
        ms_symbolizer_free(sym);
    free(sums);
    ms_snapshot_free(s);
    return 0;
}

int ms_cmd_leaks(int argc, char **argv)
{
    double timeout = 120;
    long signo = 0, top = 20, frames = 8;
    unsigned tag = 0;
    int pid = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        static const char *const valued[] = {"--timeout", "--signal", "--top", "--frames",
                                             "--leak-check-heuristics"};
        int opt = -1;
        for (int k = 0; k < 5; k++) {
            size_t l = strlen(valued[k]);
            if (!strncmp(a, valued[k], l) && (a[l] == 0 || a[l] == '='))
                opt = k;
        }
        if (opt >= 0) {
            const char *eq = strchr(a, '=');
            const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val) {
                fprintf(stderr, "memsight leaks: %s needs a value\n", a);
                return 2;
            }
            int bad = 0;
            if (opt == 0) {
                bad = ms_cli_parse_timeout(val, &timeout) != 0;
            } else if (opt == 1) {
                bad = ms_cli_parse_long(val, 1, SIGRTMAX, &signo) != 0;
            } else if (opt == 2) {
                bad = ms_cli_parse_long(val, 1, 100000, &top) != 0;
            } else if (opt == 4) {
                uint64_t set = 0;
                const ms_option_def *d = ms_option_find("leak_heuristics");
                bad = !d || ms_option_parse_set(d, val, strlen(val), &set) != 0;
                tag = MS_REQ_SEQ_HEUR_FLAG | (unsigned)set;
            } else {
                bad = ms_cli_parse_long(val, 1, 256, &frames) != 0;
            }
            if (bad && opt == 4) {
                fprintf(stderr,
                        "memsight leaks: bad value '%s' for %s: all, none, or a comma list of "
                        "stdstring, length64, newarray, multipleinheritance, interior\n",
                        val, valued[opt]);
                return 2;
            }
            if (bad) {
                fprintf(stderr, "memsight leaks: bad value '%s' for %s\n", val, valued[opt]);
                return 2;
            }
            continue;
        }
        if (ms_cli_parse_pid_arg("leaks", a, &pid) != 0) {
            usage(stderr);
            return 2;
        }
    }
    if (!pid) {
        usage(stderr);
        return 2;
    }
    char sample[64] = "";
    if (sampled_mode(pid, sample, sizeof sample)) {
        fprintf(stderr,
                "memsight leaks: process %d runs the agent in sampled mode (%s): it "
                "records only part of the allocations, and a reachability scan needs "
                "every live block; run it in full mode to scan it\n",
                pid, sample);
        return 1;
    }
    char path[PATH_MAX * 2], err[1024];
    uid_t owner;
    ms_cli_agent_request_tag(tag);
    if (ms_cli_agent_request(pid, (int)signo, MS_REQ_LEAKS, "leakcheck", timeout, path,
                             sizeof path, &owner, err, sizeof err) != 0) {
        fprintf(stderr, "memsight leaks: %s\n", err);
        return 1;
    }
    return print_leaks(path, owner, (int)top, (int)frames);
}
