/* The agent's option table and the MEMSIGHT_OPTIONS parser ("key=value,key=value").
 * Runs inside the target, possibly before libc is fully set up: no malloc, no stdio,
 * no locale. Bad items are skipped and described, never fatal here: the agent warns,
 * `memsight run` refuses them before the program starts. */
#include "core/agent_options.h"

#include <string.h>

#include "core/labels.h"
#include "core/listen_addr.h"

#define OFF(f) offsetof(ms_options, f)
#define NOLIM 0
const ms_option_def ms_option_table[] = {
    {"out", MS_OPT_STR, OFF(out), sizeof(((ms_options *)0)->out), ".", NULL,
     "directory for snapshot files", 1, 0},
    {"max_depth", MS_OPT_U64, OFF(max_depth), 8, "64", NULL,
     "maximum frames per call stack (1..256)", 1, MS_MAX_DEPTH_LIMIT},
    {"unwind", MS_OPT_ENUM, OFF(unwind), 8, "auto", "auto|fp|dwarf|libunwind",
     "unwinder: auto (cached DWARF CFI), fp (frame pointers), dwarf (= auto), libunwind", 0, 0},
    {"capacity", MS_OPT_SIZE, OFF(capacity), 8, "16M", NULL,
     "live heap blocks tracked; more are counted as dropped", 1, 0xfffffff0ull},
    {"stack_capacity", MS_OPT_SIZE, OFF(stack_capacity), 8, "1M", NULL,
     "distinct call stacks; more are recorded under stack 0", 1, 1ull << 30},
    {"region_capacity", MS_OPT_SIZE, OFF(region_capacity), 8, "256K", NULL,
     "live mmap regions and thread stacks tracked", 1, 1ull << 30},
    {"thread_capacity", MS_OPT_SIZE, OFF(thread_capacity), 8, "16K", NULL,
     "threads in the registry", 1, 1ull << 24},
    {"pc_cache", MS_OPT_SIZE, OFF(pc_cache), 8, "64K", NULL,
     "entries in the cache of per-pc unwind rules", 1, 1ull << 30},
    {"blocks", MS_OPT_BOOL, OFF(blocks), 8, "1", NULL, "write every live block (BLKS)", 0, 0},
    {"follow_exec", MS_OPT_BOOL, OFF(follow_exec), 8, "0", NULL,
     "keep the agent in programs started by exec", 0, 0},
    {"follow_fork", MS_OPT_BOOL, OFF(follow_fork), 8, "1", NULL,
     "forked children keep recording with a series of their own (0: they stop recording)", 0, 0},
    {"sync", MS_OPT_BOOL, OFF(sync), 8, "1", NULL,
     "fsync each snapshot file before it takes its name (0: left to the kernel's writeback; "
     "a crash of the machine may then leave a file truncated)", 0, 0},
    {"exit_snapshot", MS_OPT_BOOL, OFF(exit_snapshot), 8, "1", NULL,
     "write a snapshot when the process exits", 0, 0},
    {"leak_check", MS_OPT_ENUM, OFF(leak_check), 8, "off", "off|exit|signal",
     "reachability leak scan: at exit, or on each request (control thread, request 2)", 0, 0},
    {"leak_stop_signal", MS_OPT_SIGNAL, OFF(leak_stop_signal), 8, "0", NULL,
     "signal that stops the threads during a leak scan (0 = SIGRTMAX-3)", 0, 64},
    {"leak_heuristics", MS_OPT_SET, OFF(leak_heuristics), 8, "all",
     "stdstring|length64|newarray|multipleinheritance/interior",
     "interior pointers taken for start pointers by the leak scan: all (valgrind's four, its "
     "default), none, or some of stdstring, length64, newarray, multipleinheritance and "
     "interior (any interior pointer, LeakSanitizer's rule) joined by '+'", 0, 0},
    {"fatal_snapshot", MS_OPT_BOOL, OFF(fatal_snapshot), 8, "0", NULL,
     "a last snapshot when a fatal signal kills the process (with the leak scan when "
     "leak_check=exit), then the signal's default action", 0, 0},
    /* production mode: docs/production.md */
    {"sample", MS_OPT_SIZE, OFF(sample_interval), 8, "0", NULL,
     "Poisson byte sampling: mean bytes between samples (0 = record every block)", 0, 1ull << 40},
    {"min_size", MS_OPT_SIZE, OFF(min_size), 8, "0", NULL,
     "record only blocks of at least this many bytes", 0, NOLIM},
    {"seed", MS_OPT_U64, OFF(seed), 8, "0", NULL,
     "sampler seed, for reproducible runs (0 = random)", 0, NOLIM},
    {"interval", MS_OPT_U64, OFF(interval_ms), 8, "0", NULL,
     "write a numbered snapshot every this many milliseconds (0 = off)", 0, 1ull << 40},
    {"dump_at_peak", MS_OPT_BOOL, OFF(dump_at_peak), 8, "1", NULL,
     "keep every stack's live counters at the peak of total live bytes (PEAK chunk), "
     "temporary allocations and the size histogram", 0, 0},
    {"trigger_bytes", MS_OPT_SIZE, OFF(trigger_bytes), 8, "0", NULL,
     "write a snapshot when tracked live bytes reach this (0 = off)", 0, NOLIM},
    {"trigger_rss", MS_OPT_SIZE, OFF(trigger_rss), 8, "0", NULL,
     "write a snapshot when the process RSS reaches this (0 = off)", 0, NOLIM},
    {"dump_signal", MS_OPT_SIGNAL, OFF(dump_signal), 8, "0", NULL,
     "signal asking for a snapshot (0 = 47, glibc's SIGRTMIN+13)", 0, 64},
    {"control", MS_OPT_BOOL, OFF(control), 8, "1", NULL,
     "answer snapshot requests and run the control thread", 0, 0},
    {"labels", MS_OPT_STR, OFF(labels), sizeof(((ms_options *)0)->labels), "", NULL,
     "user labels written into every snapshot: key=value;key=value (docs/fleet.md)", 0, 0},
    {"detach_after", MS_OPT_U64, OFF(detach_after_ms), 8, "0", NULL,
     "attached (memsight attach): detach by itself after this many milliseconds (0 = never)",
     0, 1ull << 40},
    /* sampled guard pages: docs/guard-pages.md */
    {"guard", MS_OPT_U64, OFF(guard), 8, "0", NULL,
     "put one allocation in RATE on a page of its own between guard pages, to catch "
     "overflows, underflows, use after free, double and invalid frees (0 = off)", 0, 1ull << 30},
    {"guard_pool", MS_OPT_SIZE, OFF(guard_pool), 8, "64", NULL,
     "guarded blocks that can be live at once (one page each, reserved at the first)", 1, 16384},
    {"guard_side", MS_OPT_ENUM, OFF(guard_side), 8, "alternate", "alternate|right|left",
     "where a guarded block sits in its page: against the next guard page (right: "
     "overflows), the previous one (left: underflows), or each in turn", 0, 0},
    {"guard_recover", MS_OPT_BOOL, OFF(guard_recover), 8, "0", NULL,
     "report the first error of each guarded slot and let the program run on (the bad "
     "access is let through, a bad free ignored) instead of ending it", 0, 0},
    {"guard_budget", MS_OPT_TENTHS, OFF(guard_budget), 8, "0.5", NULL,
     "cost budget: when the guarded blocks' page-table calls take more than this percent of "
     "the process's CPU time (one decimal at most), guard fewer (the rate doubles, back when "
     "under; 0 = exact rate)", 0, 1000},
    {"metrics_listen", MS_OPT_LISTEN, OFF(metrics_listen), sizeof(((ms_options *)0)->metrics_listen),
     "", NULL, "serve the process's memory on http://ADDR:PORT/metrics for Prometheus, from a "
     "thread of the agent's (docs/fleet.md); empty = off", 0, 0},
};
const size_t ms_option_count = sizeof ms_option_table / sizeof ms_option_table[0];

/* ====================================================================================
 * Messages without stdio
 * ================================================================================== */
typedef struct msg {
    char *b;
    size_t len, o;
} msg;

static void put(msg *m, const char *s, size_t n)
{
    for (size_t i = 0; i < n && m->o + 1 < m->len; i++)
        m->b[m->o++] = s[i];
    if (m->len)
        m->b[m->o] = 0;
}

static void puts_(msg *m, const char *s)
{
    put(m, s, strlen(s));
}

static void putu(msg *m, uint64_t v)
{
    char d[24];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        put(m, &d[--n], 1);
}

/* ====================================================================================
 * Values
 * ================================================================================== */
/* 0, -1 (not a number), -2 (too large for 64 bits) */
/* A percentage with at most one decimal ("0.5", "2", "12.5") in tenths: 0, -1 when it
 * is not one, -2 when too large. */
static int opt_parse_tenths(const char *s, size_t n, uint64_t *out)
{
    size_t dot = 0;
    while (dot < n && s[dot] != '.')
        dot++;
    uint64_t whole = 0, tenth = 0;
    if (dot == 0)
        return -1;
    for (size_t i = 0; i < dot; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (whole < 100000000)
            whole = whole * 10 + (uint64_t)(s[i] - '0');
    }
    if (dot < n) {
        if (n != dot + 2 || s[dot + 1] < '0' || s[dot + 1] > '9')
            return -1;
        tenth = (uint64_t)(s[dot + 1] - '0');
    }
    if (whole >= 100000000)
        return -2;
    *out = whole * 10 + tenth;
    return 0;
}

static int opt_parse_u64(const char *s, size_t n, int allow_suffix, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (n == 0)
        return -1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -2;
        v = v * 10 + d;
    }
    if (i == 0)
        return -1;
    if (i < n) {
        if (!allow_suffix || i + 1 != n)
            return -1;
        unsigned shift;
        switch (s[i]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        if (v > (UINT64_MAX >> shift))
            return -2;
        v <<= shift;
    }
    *out = v;
    return 0;
}

/* Checks and stores one value; on error describes it in m and returns -1. */
static int opt_set(ms_options *o, const ms_option_def *d, const char *v, size_t n, msg *m)
{
    char *field = o ? (char *)o + d->offset : NULL;
    uint64_t u;
    switch (d->type) {
    case MS_OPT_LISTEN:
        if (n && ms_listen_addr_parse(v, n, NULL, NULL) != 0) {
            puts_(m, "not ADDR:PORT (" MS_LISTEN_ADDR_FORMS ")");
            return -1;
        }
        __attribute__((fallthrough)); /* stored as a string */
    case MS_OPT_STR:
        if (n < d->min) { /* min 1: must not be empty */
            puts_(m, "must not be empty");
            return -1;
        }
        if (n + 1 > d->size) {
            puts_(m, "longer than ");
            putu(m, d->size - 1);
            puts_(m, " bytes");
            return -1;
        }
        if (field) {
            memcpy(field, v, n);
            field[n] = 0;
        }
        return 0;
    case MS_OPT_BOOL:
        if (n == 1 && (v[0] == '0' || v[0] == '1'))
            u = (uint64_t)(v[0] - '0');
        else if ((n == 4 && !memcmp(v, "true", 4)) || (n == 3 && !memcmp(v, "yes", 3)))
            u = 1;
        else if ((n == 5 && !memcmp(v, "false", 5)) || (n == 2 && !memcmp(v, "no", 2)))
            u = 0;
        else {
            puts_(m, "not a boolean (0, 1, yes, no, true, false)");
            return -1;
        }
        break;
    case MS_OPT_U64:
    case MS_OPT_SIZE:
    case MS_OPT_SIGNAL: {
        int rc = opt_parse_u64(v, n, d->type == MS_OPT_SIZE, &u);
        if (rc == -1) {
            puts_(m, d->type == MS_OPT_SIZE ? "not a size (digits, optionally followed by k, M or G)"
                                            : "not a whole number (digits only)");
            return -1;
        }
        if (rc == -2 || (d->max && u > d->max) || u < d->min) {
            if (d->type == MS_OPT_SIGNAL) {
                puts_(m, "not a signal number (1..64, or 0 for the default)");
                return -1;
            }
            puts_(m, "out of range (");
            putu(m, d->min);
            puts_(m, "..");
            if (d->max)
                putu(m, d->max);
            else
                puts_(m, "18446744073709551615");
            puts_(m, ")");
            return -1;
        }
        if (d->type == MS_OPT_SIGNAL && (u == 9 || u == 19)) {
            puts_(m, u == 9 ? "SIGKILL" : "SIGSTOP");
            puts_(m, " cannot be caught: the agent needs a handler for this signal");
            return -1;
        }
        if (d->type == MS_OPT_SIGNAL && (u == 32 || u == 33)) {
            puts_(m, "signal reserved by the C library for its threads");
            return -1;
        }
        break;
    }
    case MS_OPT_TENTHS: {
        int rc = opt_parse_tenths(v, n, &u);
        if (rc == -1) {
            puts_(m, "not a percentage (digits, with at most one decimal: 0.5, 2, 12.5)");
            return -1;
        }
        if (rc == -2 || u > d->max || u < d->min) {
            puts_(m, "out of range (");
            putu(m, d->min / 10);
            puts_(m, "..");
            putu(m, d->max / 10);
            puts_(m, ")");
            return -1;
        }
        break;
    }
    case MS_OPT_SET:
        if (ms_option_parse_set(d, v, n, &u) != 0) {
            puts_(m, "not all, none, or names among ");
            for (const char *c = d->choices; *c; c++)
                puts_(m, *c == '|' || *c == '/' ? ", " : (char[2]){*c, 0});
            puts_(m, " (joined by '+', or by ',' on memsight's command line)");
            return -1;
        }
        break;
    case MS_OPT_ENUM: {
        const char *c = d->choices;
        for (u = 0; *c; u++) {
            size_t k = 0;
            while (c[k] && c[k] != '|')
                k++;
            if (k == n && !memcmp(c, v, n))
                goto store;
            c += k;
            if (*c == '|')
                c++;
        }
        puts_(m, "not one of ");
        puts_(m, d->choices);
        return -1;
    }
    default:
        return -1;
    }
store:
    if (field)
        memcpy(field, &u, 8);
    return 0;
}

int ms_option_parse_set(const ms_option_def *d, const char *v, size_t n, uint64_t *out)
{
    uint64_t set = 0, all = 0;
    unsigned idx = 0;
    int in_all = 1;
    for (const char *c = d->choices; *c; idx++) {
        size_t k = 0;
        while (c[k] && c[k] != '|' && c[k] != '/')
            k++;
        if (in_all)
            all |= 1ull << idx;
        c += k;
        if (*c == '/')
            in_all = 0;
        if (*c)
            c++;
    }
    if (n == 4 && !memcmp(v, "none", 4)) {
        *out = 0;
        return 0;
    }
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && v[j] != '+' && v[j] != ',')
            j++;
        size_t len = j - i;
        if (len == 0)
            return -1;
        if (len == 3 && !memcmp(v + i, "all", 3)) {
            set |= all;
        } else {
            const char *c = d->choices;
            unsigned b = 0;
            int found = 0;
            while (*c) {
                size_t k = 0;
                while (c[k] && c[k] != '|' && c[k] != '/')
                    k++;
                if (k == len && !memcmp(c, v + i, len)) {
                    set |= 1ull << b;
                    found = 1;
                    break;
                }
                c += k;
                if (*c)
                    c++;
                b++;
            }
            if (!found)
                return -1;
        }
        i = j + 1;
    }
    *out = set;
    return 0;
}

const ms_option_def *ms_option_find(const char *name)
{
    for (size_t i = 0; i < ms_option_count; i++)
        if (!strcmp(ms_option_table[i].name, name))
            return &ms_option_table[i];
    return NULL;
}

static const ms_option_def *opt_find(const char *k, size_t n)
{
    for (size_t i = 0; i < ms_option_count; i++) {
        const char *name = ms_option_table[i].name;
        if (strlen(name) == n && !memcmp(name, k, n))
            return &ms_option_table[i];
    }
    return NULL;
}

/* Applies one item to o (NULL: only checks it). */
static int opt_item(ms_options *o, const char *item, size_t n, msg *m)
{
    const char *eq = memchr(item, '=', n);
    size_t kl = eq ? (size_t)(eq - item) : n;
    const ms_option_def *d = opt_find(item, kl);
    if (!d) {
        puts_(m, "unknown option '");
        put(m, item, kl);
        puts_(m, "'");
        return -1;
    }
    if (!eq) {
        if (d->type == MS_OPT_BOOL) /* bare "key" means key=1 */
            return opt_set(o, d, "1", 1, m);
        puts_(m, "'");
        put(m, item, kl);
        puts_(m, "' needs a value");
        return -1;
    }
    return opt_set(o, d, eq + 1, n - kl - 1, m);
}

int ms_option_check(const char *item, size_t n, char *err, size_t errlen)
{
    msg m = {err, errlen, 0};
    if (errlen)
        err[0] = 0;
    return opt_item(NULL, item, n, &m);
}

unsigned ms_options_parse(ms_options *o, const char *s, char *err, size_t errlen)
{
    unsigned bad = 0;
    memset(o, 0, sizeof *o);
    if (errlen)
        err[0] = 0;
    msg none = {NULL, 0, 0};
    for (size_t i = 0; i < ms_option_count; i++) {
        const ms_option_def *d = &ms_option_table[i];
        opt_set(o, d, d->dflt, strlen(d->dflt), &none);
    }
    if (s) {
        size_t len = strlen(s);
        if (len + 1 <= sizeof o->raw)
            memcpy(o->raw, s, len + 1);
        while (*s) {
            const char *item = s;
            while (*s && *s != ',')
                s++;
            size_t n = (size_t)(s - item);
            if (*s == ',')
                s++;
            while (n && (*item == ' ' || *item == '\t')) {
                item++;
                n--;
            }
            if (n == 0)
                continue;
            char one[MS_OPT_ERR_MAX];
            msg m = {one, sizeof one, 0};
            one[0] = 0;
            if (opt_item(o, item, n, &m) != 0) {
                if (bad++ == 0) {
                    msg e = {err, errlen, 0};
                    put(&e, item, n > 64 ? 64 : n); /* a long value is cut, visibly */
                    puts_(&e, n > 64 ? "...: " : ": ");
                    puts_(&e, one);
                }
            }
        }
    }
    if (o->dump_signal && o->dump_signal == o->leak_stop_signal) {
        if (bad++ == 0) {
            msg e = {err, errlen, 0};
            puts_(&e, "dump_signal and leak_stop_signal are the same signal (");
            putu(&e, o->dump_signal);
            puts_(&e, "): leak_stop_signal ignored");
        }
        o->leak_stop_signal = 0;
    }
    /* A reachability scan needs every live block: in sampled mode it would call lost
     * whatever only an unrecorded block points to, so the agent refuses every scan */
    if (o->leak_check && (o->sample_interval || o->min_size)) {
        if (bad++ == 0) {
            msg e = {err, errlen, 0};
            puts_(&e, "leak_check=");
            puts_(&e, o->leak_check == 1 ? "exit" : "signal");
            puts_(&e, o->sample_interval ? " with sample=" : " with min_size=");
            putu(&e, o->sample_interval ? o->sample_interval : o->min_size);
            puts_(&e, ": a leak scan needs every live block (full mode: no sample=, no "
                      "min_size=); leak_check ignored");
        }
        o->leak_check = 0;
    }
    /* Labels that a reader would refuse or split differently are dropped whole: a
     * snapshot is better without labels than with wrong ones. */
    const char *why;
    size_t at;
    if (ms_labels_check(o->labels, &why, &at) < 0) {
        if (bad++ == 0) {
            msg e = {err, errlen, 0};
            puts_(&e, "labels: ");
            puts_(&e, why);
        }
        o->labels[0] = 0;
    }
    if (o->max_depth < 1)
        o->max_depth = 1;
    if (o->max_depth > MS_MAX_DEPTH_LIMIT)
        o->max_depth = MS_MAX_DEPTH_LIMIT;
    if (o->out[0] == 0)
        memcpy(o->out, ".", 2);
    return bad;
}

/* ====================================================================================
 * A later attach (src/agent/services/attach.c): which options it takes anew
 * ================================================================================== */
int ms_option_taken_again(const char *name)
{
    static const char *const again[] = {"out", "labels", "metrics_listen", "exit_snapshot",
                                        "detach_after", "interval"};
    for (size_t i = 0; i < sizeof again / sizeof again[0]; i++)
        if (!strcmp(name, again[i]))
            return 1;
    return 0;
}

const ms_option_def *ms_options_fixed_diff(const ms_options *a, const ms_options *b)
{
    for (size_t i = 0; i < ms_option_count; i++) {
        const ms_option_def *d = &ms_option_table[i];
        if (ms_option_taken_again(d->name))
            continue;
        const char *x = (const char *)a + d->offset, *y = (const char *)b + d->offset;
        int differ = d->type == MS_OPT_STR || d->type == MS_OPT_LISTEN
                         ? strncmp(x, y, d->size) != 0
                         : memcmp(x, y, sizeof(uint64_t)) != 0;
        if (differ)
            return d;
    }
    return NULL;
}

size_t ms_option_value_text(const ms_options *o, const ms_option_def *d, char *buf, size_t cap)
{
    msg m = {buf, cap, 0};
    if (cap)
        buf[0] = 0;
    const char *field = (const char *)o + d->offset;
    if (d->type == MS_OPT_STR || d->type == MS_OPT_LISTEN) {
        put(&m, field, strnlen(field, d->size));
        return m.o;
    }
    uint64_t v;
    memcpy(&v, field, sizeof v);
    if (d->type == MS_OPT_ENUM && d->choices) { /* the v-th of "a|b|c" */
        const char *c = d->choices;
        for (uint64_t k = 0; k < v && c; k++) {
            c = strchr(c, '|');
            if (c)
                c++;
        }
        if (c) {
            const char *end = strchr(c, '|');
            put(&m, c, end ? (size_t)(end - c) : strlen(c));
            return m.o;
        }
    }
    putu(&m, d->type == MS_OPT_TENTHS ? v / 10 : v);
    if (d->type == MS_OPT_TENTHS && v % 10) {
        put(&m, ".", 1);
        putu(&m, v % 10);
    }
    return m.o;
}
