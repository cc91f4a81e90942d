/* The agent's options (MEMSIGHT_OPTIONS, "key=value,key=value"): one table with each
 * option's default and valid range, and the parser. Shared by the agent, which reads the
 * variable when it starts, and by `memsight run`, which refuses bad values before the
 * program starts. Runs inside the target too: no malloc, no stdio, no locale. */
#ifndef MS_CORE_AGENT_OPTIONS_H
#define MS_CORE_AGENT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#define MS_MAX_DEPTH_LIMIT 256
/* The control thread's request signal when dump_signal=0: one number for the agent and
 * the command, whatever C library each is built with. It is glibc's SIGRTMIN+13; with
 * musl (SIGRTMIN 35) SIGRTMIN+13 would be 48, and a glibc memsight would send the agent
 * a signal it has no handler for (docs/production.md says why this one). */
#define MS_DEFAULT_REQUEST_SIGNAL 47

enum ms_unwind_mode { MS_UNWIND_AUTO = 0, MS_UNWIND_FP = 1, MS_UNWIND_DWARF = 2, MS_UNWIND_LIBUNWIND = 3 };

/* To add an option: add a field here and a row to ms_option_table (agent_options.c). */
typedef struct ms_options {
    char out[512];           /* out=DIR: where snapshots go (default ".") */
    uint64_t max_depth;      /* max_depth=N: frames kept per stack (default 64) */
    uint64_t unwind;         /* unwind=auto|fp|dwarf|libunwind */
    uint64_t capacity;       /* capacity=N: live heap blocks tracked (default 16M) */
    uint64_t stack_capacity; /* stack_capacity=N: distinct stacks (default 1M) */
    uint64_t region_capacity;/* region_capacity=N: live mmap regions + thread stacks */
    uint64_t blocks;         /* blocks=0|1: write every live block (BLKS) */
    uint64_t follow_exec;    /* follow_exec=0|1: keep the agent in exec'ed programs */
    uint64_t follow_fork;    /* follow_fork=0|1: forked children keep recording */
    uint64_t sync;           /* sync=0|1: fsync each snapshot file before naming it */
    uint64_t exit_snapshot;  /* exit_snapshot=0|1: write a snapshot at exit */
    uint64_t thread_capacity;/* thread_capacity=N: threads in the registry */
    uint64_t pc_cache;       /* pc_cache=N: entries of the unwind-rule cache */
    uint64_t leak_check;     /* leak_check=off|exit|signal: reachability scan (leak_*.c) */
    uint64_t leak_stop_signal; /* leak_stop_signal=N: stops threads during a scan */
    uint64_t leak_heuristics;  /* leak_heuristics=all|none|A+B: MS_LEAK_H_* bits */
    uint64_t fatal_snapshot; /* fatal_snapshot=0|1: a snapshot when a fatal signal kills */
    /* production mode (sampler.c, control.c) */
    uint64_t sample_interval;/* sample=BYTES: Poisson byte sampling, mean interval (0 = all) */
    uint64_t min_size;       /* min_size=BYTES: record only blocks at least this large */
    uint64_t seed;           /* seed=N: sampler seed for reproducible runs (0 = random) */
    uint64_t interval_ms;    /* interval=MS: numbered snapshot series (0 = off) */
    uint64_t dump_at_peak;   /* dump_at_peak=0|1: per-stack counters at the peak (PEAK) */
    uint64_t trigger_bytes;  /* trigger_bytes=N: snapshot when tracked live bytes reach N */
    uint64_t trigger_rss;    /* trigger_rss=N: snapshot when the RSS reaches N */
    uint64_t dump_signal;    /* dump_signal=N: request signal (0 = MS_DEFAULT_REQUEST_SIGNAL) */
    uint64_t control;        /* control=0|1: request handler and control thread */
    char labels[512];        /* labels=k=v;k=v: user labels for META (core/labels.h) */
    uint64_t detach_after_ms;/* detach_after=MS: an attached agent detaches by itself */
    /* sampled guard pages (guard.c, docs/guard-pages.md) */
    uint64_t guard;          /* guard=RATE: one allocation in RATE on a guarded page (0 = off) */
    uint64_t guard_pool;     /* guard_pool=N: guarded slots (pages) in the pool */
    uint64_t guard_side;     /* guard_side=alternate|right|left: where a block sits in its page */
    uint64_t guard_recover;  /* guard_recover=0|1: report and run on (guard_fault.c) */
    uint64_t guard_budget;   /* guard_budget=PERCENT, in tenths of a percent: the pool's
                              * page-table calls' share of the process's CPU time above which
                              * the rate stretches (0 = none) */
    char metrics_listen[64]; /* metrics_listen=ADDR:PORT: serve /metrics (metrics_serve.c) */
    char raw[1024];          /* the option string as given (goes into META) */
} ms_options;

typedef enum ms_opt_type {
    MS_OPT_U64, MS_OPT_BOOL, MS_OPT_STR, MS_OPT_ENUM, MS_OPT_SIZE,
    MS_OPT_SIGNAL, /* 0 (the default) or a signal a handler can be installed for */
    MS_OPT_LISTEN, /* empty, or ADDR:PORT (core/listen_addr.h) */
    MS_OPT_SET,    /* names of `choices` joined by '+' (bit i = choice i), all, none */
    MS_OPT_TENTHS  /* a percentage with at most one decimal (0.5), kept in tenths (5) */
} ms_opt_type;

typedef struct ms_option_def {
    const char *name;
    ms_opt_type type;
    size_t offset;       /* in ms_options */
    size_t size;         /* for strings: buffer size */
    const char *dflt;    /* default, as text */
    const char *choices; /* for enums: "a|b|c", index = value */
    const char *help;
    uint64_t min, max;   /* numbers: valid range (max 0 = no limit) */
} ms_option_def;

extern const ms_option_def ms_option_table[];
extern const size_t ms_option_count;

/* Room for the longest message of ms_options_parse and ms_option_check with its NUL: the
 * item (at most 64 of its bytes) and the longest reason any row of the table gives (a
 * set's accepted names, two signals, leak_check against sampling); the unit test
 * agent_unit_options checks every row's messages against it. */
#define MS_OPT_ERR_MAX 400

/* Sets the defaults, then applies "k=v,k=v". Bad items (unknown key, value out of range
 * or unreadable, options that contradict each other) are skipped: returns how many, and
 * describes the first in err ("key=value: reason", an item longer than 64 bytes cut
 * there and followed by "..."; whole with MS_OPT_ERR_MAX bytes). */
unsigned ms_options_parse(ms_options *o, const char *s, char *err, size_t errlen);

/* Parses a MS_OPT_SET value of n bytes against d's choices: names joined by '+' (or by
 * ','), "all" (every choice before the first '/' in `choices`, or all of them) and
 * "none". Returns 0 and the bits in *out, or -1. */
int ms_option_parse_set(const ms_option_def *d, const char *v, size_t n, uint64_t *out);
/* The row of option `name`, or NULL. */
const ms_option_def *ms_option_find(const char *name);

/* Checks one item "key=value" (or a bare boolean key) of n bytes: 0, or -1 and the
 * reason in err. */
int ms_option_check(const char *item, size_t n, char *err, size_t errlen);

/* A later attach of a detached agent takes out, labels, metrics_listen, exit_snapshot,
 * detach_after and interval anew; every other option stays the first session's. The
 * first of those whose value differs between a and b (its table row), or NULL. */
const ms_option_def *ms_options_fixed_diff(const ms_options *a, const ms_options *b);
/* 1 for the options named above that a later attach takes anew. */
int ms_option_taken_again(const char *name);
/* An option's value as text ("65536", "signal", a string), for messages; its length. */
size_t ms_option_value_text(const ms_options *o, const ms_option_def *d, char *buf, size_t cap);

#endif
