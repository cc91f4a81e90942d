/* The platform layer's state and services: the per-thread state, the lifecycle state,
 * clocks, raw system calls for the agent's own memory (and the registry of its
 * mappings), the health counters, the options and the lines the agent says on stderr.
 * Runs inside the target: no malloc, no stdio, no lock; calls nothing above this layer. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/platform/platform.h"
#include "core/snapshot_write.h"

__thread ms_tls ms_self __attribute__((tls_model("initial-exec")));
int ms_state;
ms_real_fns ms_real;
ms_health_t ms_health;
uintptr_t ms_self_lo, ms_self_hi;

/* ===========================================================================
 * Raw system calls and time
 * ========================================================================= */
/* The agent's own mappings, so that a scan that roots anonymous memory it cannot
 * enumerate (after memsight attach) leaves the agent's tables out. A slot is claimed by
 * a CAS on lo; hi is stored after it (a reader skips a slot whose hi is still 0). */
static struct {
    uint64_t lo, hi;
} ms_own[MS_OWN_MAX];
static uint64_t ms_own_lost;

static void ms_own_add(uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < MS_OWN_MAX; i++) {
        uint64_t z = 0;
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&ms_own[i].lo, &z, lo, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_store_n(&ms_own[i].hi, hi, __ATOMIC_RELEASE);
            return;
        }
    }
    __atomic_fetch_add(&ms_own_lost, 1, __ATOMIC_RELAXED);
}

size_t ms_own_ranges(uint64_t *lo, uint64_t *hi, size_t cap, uint64_t *lost)
{
    size_t n = 0;
    for (size_t i = 0; i < MS_OWN_MAX && n < cap; i++) {
        uint64_t h = __atomic_load_n(&ms_own[i].hi, __ATOMIC_ACQUIRE);
        uint64_t l = __atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED);
        if (l && h > l) {
            lo[n] = l;
            hi[n++] = h;
        }
    }
    *lost = __atomic_load_n(&ms_own_lost, __ATOMIC_RELAXED);
    return n;
}

void *ms_sys_mmap(size_t len)
{
    long r = syscall(SYS_mmap, 0, len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r < 0 && r > -4096)
        return NULL;
    ms_own_add((uint64_t)r, (uint64_t)r + ((len + 4095) & ~(size_t)4095));
    return (void *)r;
}

void ms_sys_munmap(void *p, size_t len)
{
    if (!p)
        return;
    syscall(SYS_munmap, p, len);
    for (size_t i = 0; i < MS_OWN_MAX; i++)
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)p) {
            __atomic_store_n(&ms_own[i].hi, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].lo, 0, __ATOMIC_RELEASE);
            break;
        }
}

void *ms_sys_mremap(void *old, size_t old_len, size_t new_len)
{
    long r = syscall(SYS_mremap, old, old_len, new_len, MREMAP_MAYMOVE);
    if (r < 0 && r > -4096)
        return NULL;
    /* the table moved or grew: the registry follows, or a scan after memsight attach
     * would take the moved table for the program's memory and root what it points to */
    uint64_t lo = (uint64_t)r, hi = lo + ((new_len + 4095) & ~(size_t)4095);
    for (size_t i = 0; i < MS_OWN_MAX; i++)
        if (__atomic_load_n(&ms_own[i].lo, __ATOMIC_RELAXED) == (uint64_t)(uintptr_t)old) {
            __atomic_store_n(&ms_own[i].hi, 0, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].lo, lo, __ATOMIC_RELEASE);
            __atomic_store_n(&ms_own[i].hi, hi, __ATOMIC_RELEASE);
            return (void *)r;
        }
    ms_own_add(lo, hi);
    return (void *)r;
}

uint32_t ms_gettid_slow(void)
{
    ms_self.tid = (uint32_t)syscall(SYS_gettid);
    return ms_self.tid;
}

uint64_t ms_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Blocks are stamped with a cheap monotonic tick; snapshots convert to wall time with
 * the pair (ticks, realtime) taken at init and at snapshot time. */
static uint64_t ms_tick0, ms_ns0;

uint64_t ms_start_ns(void)
{
    return ms_ns0;
}

uint64_t ms_ticks_to_ns(uint64_t t)
{
    return ms_ns0 + (t - ms_tick0);
}

void ms_clock_start(void)
{
    ms_tick0 = ms_ticks();
    ms_ns0 = ms_now_ns();
}

/* 1 when the real malloc is the C library's (services/init.c finds out). */
int ms_real_malloc_is_libc;

/* ===========================================================================
 * Options
 * ========================================================================= */
ms_options ms_opt;
char ms_opt_errors[MS_OPT_ERR_MAX + 256];

/* Where the options came from, for the warnings: the environment, or the argument of
 * memsight_start() or memsight_attach() (a user grepping MEMSIGHT_OPTIONS for a typo
 * would look in the wrong place). */
static const char *ms_opt_source = "MEMSIGHT_OPTIONS";

/* "memsight: <source>: <what><more>; ignored" on stderr, without stdio. */
static void ms_say_option(const char *what, const char *more)
{
    char line[sizeof ms_opt_errors + 128];
    size_t o = 0;
    const char *parts[] = {"memsight: ", ms_opt_source, ": ", what, more, "; ignored\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (const char *p = parts[i]; *p && o < sizeof line - 1; p++)
            line[o++] = *p;
    if (write(2, line, o) < 0) {
        /* no stderr: the snapshot still says it */
    }
}

/* Bad options are said once per process: on stderr (the program's, before it runs) and
 * in every snapshot (META option_errors, HLTH bad_options). */
void ms_options_read(const char *s, const char *source)
{
    static int warned;
    ms_opt_source = source;
    unsigned bad = ms_options_parse(&ms_opt, s, ms_opt_errors, sizeof ms_opt_errors);
    __atomic_store_n(&ms_health.bad_options, bad, __ATOMIC_RELAXED);
    if (!bad || warned)
        return;
    warned = 1;
    char more[48] = "", num[12];
    size_t k = 0;
    if (bad > 1) { /* " (and N more)" without stdio */
        unsigned v = bad - 1;
        do {
            num[k++] = (char)('0' + v % 10);
            v /= 10;
        } while (v && k < sizeof num);
        size_t m = 0;
        for (const char *p = " (and "; *p; p++)
            more[m++] = *p;
        while (k)
            more[m++] = num[--k];
        for (const char *p = " more)"; *p; p++)
            more[m++] = *p;
        more[m] = 0;
    }
    ms_say_option(ms_opt_errors, more);
}

/* An option this build or platform cannot honour (unwind=libunwind without libunwind):
 * counted and said like a bad one, once, and the agent goes on without it. */
void ms_option_unavailable(const char *what)
{
    static int said;
    MS_HEALTH_INC(bad_options);
    size_t n = strnlen(ms_opt_errors, sizeof ms_opt_errors - 1);
    if (n && n + 2 < sizeof ms_opt_errors - 1) {
        ms_opt_errors[n++] = ';';
        ms_opt_errors[n++] = ' ';
    }
    for (const char *p = what; *p && n < sizeof ms_opt_errors - 1; p++)
        ms_opt_errors[n++] = *p;
    ms_opt_errors[n] = 0;
    if (!said) {
        said = 1;
        ms_say_option(what, "");
    }
}

/* One line "memsight: pid N: " + the parts on stderr, in one write(). */
void ms_say(const char *const *parts, size_t nparts)
{
    char line[3 * MS_SW_PATH_MAX], pid[24];
    ms_fmt_u64(pid, (uint64_t)getpid());
    const char *head[] = {"memsight: pid ", pid, ": "};
    size_t n = 0;
    for (size_t i = 0; i < 3 + nparts; i++)
        for (const char *s = i < 3 ? head[i] : parts[i - 3]; s && *s && n < sizeof line - 1; s++)
            line[n++] = *s;
    line[n++] = '\n';
    (void)!write(2, line, n);
}
