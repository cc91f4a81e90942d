/* The agent's option table and the MEMSIGHT_OPTIONS parser ("key=value,key=value").
 * Runs inside the target, possibly before libc is fully set up: no malloc, no stdio,
 * no locale; unknown keys and bad values are counted, never fatal. */
#include <stddef.h>
#include <string.h>

#include "agent/agent.h"
#include "core/labels.h"

ms_options ms_opt;

#define OFF(f) offsetof(ms_options, f)
const ms_option_def ms_option_table[] = {
    {"out", MS_OPT_STR, OFF(out), sizeof(((ms_options *)0)->out), ".", NULL,
     "directory for snapshot files"},
    {"max_depth", MS_OPT_U64, OFF(max_depth), 8, "64", NULL,
     "maximum frames per call stack (1..256)"},
    {"unwind", MS_OPT_ENUM, OFF(unwind), 8, "auto", "auto|fp|dwarf|libunwind",
     "unwinder: auto (cached DWARF CFI), fp (frame pointers), dwarf (= auto), libunwind"},
    {"capacity", MS_OPT_SIZE, OFF(capacity), 8, "16M", NULL,
     "live heap blocks tracked; more are counted as dropped"},
    {"stack_capacity", MS_OPT_SIZE, OFF(stack_capacity), 8, "1M", NULL,
     "distinct call stacks; more are recorded under stack 0"},
    {"region_capacity", MS_OPT_SIZE, OFF(region_capacity), 8, "256K", NULL,
     "live mmap regions and thread stacks tracked"},
    {"thread_capacity", MS_OPT_SIZE, OFF(thread_capacity), 8, "16K", NULL,
     "threads in the registry"},
    {"pc_cache", MS_OPT_SIZE, OFF(pc_cache), 8, "64K", NULL,
     "entries in the cache of per-pc unwind rules"},
    {"blocks", MS_OPT_BOOL, OFF(blocks), 8, "1", NULL, "write every live block (BLKS)"},
    {"follow_exec", MS_OPT_BOOL, OFF(follow_exec), 8, "0", NULL,
     "keep the agent in programs started by exec"},
    {"follow_fork", MS_OPT_BOOL, OFF(follow_fork), 8, "1", NULL,
     "forked children keep recording with a series of their own (0: they stop recording)"},
    {"exit_snapshot", MS_OPT_BOOL, OFF(exit_snapshot), 8, "1", NULL,
     "write a snapshot when the process exits"},
    {"leak_check", MS_OPT_ENUM, OFF(leak_check), 8, "off", "off|exit|signal",
     "reachability leak scan: at exit, or on each request (control thread, request 2)"},
    {"leak_stop_signal", MS_OPT_U64, OFF(leak_stop_signal), 8, "0", NULL,
     "signal that stops the threads during a leak scan (0 = SIGRTMAX-3)"},
    {"fatal_snapshot", MS_OPT_BOOL, OFF(fatal_snapshot), 8, "0", NULL,
     "a last snapshot when a fatal signal kills the process (with the leak scan when "
     "leak_check=exit), then the signal's default action"},
    /* production mode: docs/production.md */
    {"sample", MS_OPT_SIZE, OFF(sample_interval), 8, "0", NULL,
     "Poisson byte sampling: mean bytes between samples (0 = record every block)"},
    {"min_size", MS_OPT_SIZE, OFF(min_size), 8, "0", NULL,
     "record only blocks of at least this many bytes"},
    {"seed", MS_OPT_U64, OFF(seed), 8, "0", NULL,
     "sampler seed, for reproducible runs (0 = random)"},
    {"interval", MS_OPT_U64, OFF(interval_ms), 8, "0", NULL,
     "write a numbered snapshot every this many milliseconds (0 = off)"},
    {"dump_at_peak", MS_OPT_BOOL, OFF(dump_at_peak), 8, "1", NULL,
     "keep every stack's live counters at the peak of total live bytes (PEAK chunk), "
     "temporary allocations and the size histogram"},
    {"trigger_bytes", MS_OPT_SIZE, OFF(trigger_bytes), 8, "0", NULL,
     "write a snapshot when tracked live bytes reach this (0 = off)"},
    {"trigger_rss", MS_OPT_SIZE, OFF(trigger_rss), 8, "0", NULL,
     "write a snapshot when the process RSS reaches this (0 = off)"},
    {"dump_signal", MS_OPT_U64, OFF(dump_signal), 8, "0", NULL,
     "signal asking for a snapshot (0 = SIGRTMIN+13)"},
    {"control", MS_OPT_BOOL, OFF(control), 8, "1", NULL,
     "answer snapshot requests and run the control thread"},
    {"labels", MS_OPT_STR, OFF(labels), sizeof(((ms_options *)0)->labels), "", NULL,
     "user labels written into every snapshot: key=value;key=value (docs/fleet.md)"},
    {"detach_after", MS_OPT_U64, OFF(detach_after_ms), 8, "0", NULL,
     "attached (memsight attach): detach by itself after this many milliseconds (0 = never)"},
};
const size_t ms_option_count = sizeof ms_option_table / sizeof ms_option_table[0];

static int opt_parse_u64(const char *s, size_t n, int allow_suffix, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    if (n == 0)
        return -1;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
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
            return -1;
        v <<= shift;
    }
    *out = v;
    return 0;
}

static int opt_set(ms_options *o, const ms_option_def *d, const char *v, size_t n)
{
    char *field = (char *)o + d->offset;
    uint64_t u;
    switch (d->type) {
    case MS_OPT_STR:
        if (n + 1 > d->size)
            return -1;
        memcpy(field, v, n);
        field[n] = 0;
        return 0;
    case MS_OPT_BOOL:
        if (n == 1 && (v[0] == '0' || v[0] == '1'))
            u = (uint64_t)(v[0] - '0');
        else if ((n == 4 && !memcmp(v, "true", 4)) || (n == 3 && !memcmp(v, "yes", 3)))
            u = 1;
        else if ((n == 5 && !memcmp(v, "false", 5)) || (n == 2 && !memcmp(v, "no", 2)))
            u = 0;
        else
            return -1;
        memcpy(field, &u, 8);
        return 0;
    case MS_OPT_U64:
    case MS_OPT_SIZE:
        if (opt_parse_u64(v, n, d->type == MS_OPT_SIZE, &u) != 0)
            return -1;
        memcpy(field, &u, 8);
        return 0;
    case MS_OPT_ENUM: {
        const char *c = d->choices;
        for (u = 0; *c; u++) {
            size_t k = 0;
            while (c[k] && c[k] != '|')
                k++;
            if (k == n && !memcmp(c, v, n)) {
                memcpy(field, &u, 8);
                return 0;
            }
            c += k;
            if (*c == '|')
                c++;
        }
        return -1;
    }
    }
    return -1;
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

void ms_options_parse(ms_options *o, const char *s)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < ms_option_count; i++) {
        const ms_option_def *d = &ms_option_table[i];
        opt_set(o, d, d->dflt, strlen(d->dflt));
    }
    if (!s)
        return;
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
        const char *eq = memchr(item, '=', n);
        const ms_option_def *d = opt_find(item, eq ? (size_t)(eq - item) : n);
        int bad = 1;
        if (d && eq)
            bad = opt_set(o, d, eq + 1, n - (size_t)(eq + 1 - item)) != 0;
        else if (d && d->type == MS_OPT_BOOL) /* bare "key" means key=1 */
            bad = opt_set(o, d, "1", 1) != 0;
        if (bad)
            MS_HEALTH_INC(bad_options);
    }
    if (o->max_depth < 1)
        o->max_depth = 1;
    if (o->max_depth > MS_MAX_DEPTH_LIMIT)
        o->max_depth = MS_MAX_DEPTH_LIMIT;
    if (o->out[0] == 0)
        memcpy(o->out, ".", 2);
    /* Labels that a reader would refuse or split differently are dropped whole: a
     * snapshot is better without labels than with wrong ones. */
    const char *why;
    size_t at;
    if (ms_labels_check(o->labels, &why, &at) < 0) {
        o->labels[0] = 0;
        MS_HEALTH_INC(bad_options);
    }
}
