/* The threads section of `memsight report` (text, JSON, HTML): what the THRL chunk says
 * about thread lives. Leaked threads (ended, never joined nor detached: their stack and
 * descriptor stay) and alive threads are grouped by the call stack that created them,
 * the way KOOM reports a thread leak. Tools only; computes and writes, never reads. */
#include "analysis/threads_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report_model.h"
#include "analysis/stack_agg.h"

const char *ms_thread_end_name(uint32_t flags)
{
    if (!(flags & MS_THRL_F_EXITED))
        return NULL;
    if (flags & MS_THRL_F_RETURNED)
        return "returned";
    if (flags & MS_THRL_F_PTHREAD_EXIT)
        return "pthread_exit";
    if (flags & MS_THRL_F_CANCELLED)
        return "cancelled";
    return "ended";
}

/* ---- the model: threads of one kind grouped by creation stack ---- */

static int cmp_thr(const void *a, const void *b)
{
    const ms_thread_life *x = *(const ms_thread_life *const *)a, *y = *(const ms_thread_life *const *)b;
    if (x->r.stack_id != y->r.stack_id)
        return x->r.stack_id < y->r.stack_id ? -1 : 1;
    uint64_t tx = x->r.exit_ns ? x->r.exit_ns : x->r.create_ns;
    uint64_t ty = y->r.exit_ns ? y->r.exit_ns : y->r.create_ns;
    return tx < ty ? -1 : tx > ty;
}

static int cmp_group(const void *a, const void *b)
{
    const ms_thr_group *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

void ms_thr_list_free(ms_thr_list *l)
{
    free(l->t);
    free(l->g);
    memset(l, 0, sizeof *l);
}

int ms_thr_list_make(const ms_snapshot *s, int leaked, ms_thr_list *l)
{
    memset(l, 0, sizeof *l);
    l->t = calloc(s->nthread_lives ? s->nthread_lives : 1, sizeof *l->t);
    l->g = calloc(s->nthread_lives ? s->nthread_lives : 1, sizeof *l->g);
    if (!l->t || !l->g) {
        ms_thr_list_free(l);
        return -1;
    }
    for (size_t i = 0; i < s->nthread_lives; i++)
        if (ms_thread_life_leaked(&s->thread_lives[i]) == leaked)
            l->t[l->n++] = &s->thread_lives[i];
    qsort(l->t, l->n, sizeof *l->t, cmp_thr);
    for (size_t i = 0; i < l->n; i++) {
        const ms_thread_life *t = l->t[i];
        if (!l->ng || l->g[l->ng - 1].stack_id != t->r.stack_id)
            l->g[l->ng++] = (ms_thr_group){t->r.stack_id, i, 0, 0};
        ms_thr_group *g = &l->g[l->ng - 1];
        g->n++;
        g->stack_bytes += t->r.stack_size + t->r.guard_size;
        l->stack_bytes += t->r.stack_size + t->r.guard_size;
    }
    qsort(l->g, l->ng, sizeof *l->g, cmp_group);
    return 0;
}

uint64_t ms_thr_snapshot_ns(const ms_snapshot *s)
{
    const char *v = ms_snapshot_meta(s, "snapshot_ns");
    return v ? strtoull(v, NULL, 10) : 0;
}

double ms_thr_secs(uint64_t from, uint64_t to)
{
    return from && to >= from ? (double)(to - from) / 1e9 : -1;
}

/* A duration for people: milliseconds below 10 s, seconds above. */
static const char *age(double sec, char *buf, size_t len)
{
    if (sec < 10)
        snprintf(buf, len, "%.0f ms", sec * 1000);
    else
        snprintf(buf, len, "%.1f s", sec);
    return buf;
}

char *ms_thr_start_name(const ms_snapshot *s, ms_symbolizer *sym, uint64_t pc)
{
    if (!pc)
        return NULL;
    ms_stack st = {.depth = 1, .pcs = &pc, .flags = MS_STACKF_FIRST_IS_PC};
    size_t n = 0;
    ms_frame *f = ms_report_frames(s, sym, &st, &n);
    char *r = NULL;
    if (f && n && f[n - 1].function)
        r = strdup(f[n - 1].function);
    else if (f && n && f[n - 1].module) {
        const char *b = strrchr(f[n - 1].module, '/');
        char buf[600];
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, b ? b + 1 : f[n - 1].module,
                 f[n - 1].module_offset);
        r = strdup(buf);
    }
    free(f);
    return r;
}

uint64_t ms_thr_counter(const ms_snapshot *s, const char *name)
{
    uint64_t v = 0;
    ms_snapshot_thread_counter(s, name, &v);
    return v;
}

/* Untrusted text (thread names come from the program): control characters as '?'. */
static void clean(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < cap; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    dst[i] = 0;
}

/* ---- text ---- */

static void text_group(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_thr_list *l,
                       const ms_thr_group *g, int leaked, uint64_t now)
{
    char b[32], nm[64];
    const ms_thread_life *first = l->t[g->first], *last = l->t[g->first + g->n - 1];
    fprintf(out, "  %zu thread%s, %s of stacks", g->n, g->n == 1 ? "" : "s",
            ms_fmt_bytes(g->stack_bytes, b, sizeof b));
    if (leaked) {
        double a = ms_thr_secs(first->r.exit_ns, now), z = ms_thr_secs(last->r.exit_ns, now);
        char x[32], y[32];
        if (a >= 0 && g->n > 1)
            fprintf(out, ", ended %s to %s ago", age(z, x, sizeof x), age(a, y, sizeof y));
        else if (a >= 0)
            fprintf(out, ", ended %s ago", age(a, x, sizeof x));
    }
    fputc('\n', out);
    size_t shown = g->n < 8 ? g->n : 8;
    for (size_t i = 0; i < shown; i++) {
        const ms_thread_life *t = l->t[g->first + i];
        char *fn = ms_thr_start_name(s, sym, t->r.start_routine);
        clean(nm, sizeof nm, t->name);
        fprintf(out, "    tid %" PRIu32 " \"%s\"", t->r.tid, nm);
        if (t->r.flags & MS_THRL_F_MAIN)
            fputs(" (main)", out);
        if (fn) {
            char c[256];
            clean(c, sizeof c, fn);
            fprintf(out, " start %s", c);
        }
        free(fn);
        if (t->r.stack_size)
            fprintf(out, ", stack %s", ms_fmt_bytes(t->r.stack_size, b, sizeof b));
        if (t->r.guard_size)
            fprintf(out, " + %s guard", ms_fmt_bytes(t->r.guard_size, b, sizeof b));
        const char *end = ms_thread_end_name(t->r.flags);
        if (end) {
            fprintf(out, ", %s", end);
            double ago = ms_thr_secs(t->r.exit_ns, now), lived = ms_thr_secs(t->r.create_ns, t->r.exit_ns);
            char x[32];
            if (ago >= 0)
                fprintf(out, " %s ago", age(ago, x, sizeof x));
            if (lived >= 0)
                fprintf(out, " after %s", age(lived, x, sizeof x));
        } else if (ms_thr_secs(t->r.create_ns, now) >= 0) {
            char x[32];
            fprintf(out, ", running for %s", age(ms_thr_secs(t->r.create_ns, now), x, sizeof x));
        }
        fputc('\n', out);
    }
    if (g->n > shown)
        fprintf(out, "    ... %zu more\n", g->n - shown);
    const ms_stack *st = g->stack_id ? ms_snapshot_stack(s, g->stack_id) : NULL;
    if (st) {
        fprintf(out, "    created at:\n");
        ms_report_text_frames(out, s, sym, st);
    } else {
        fprintf(out, "    (%s)\n", first->r.flags & MS_THRL_F_MAIN
                                       ? "not created by pthread_create"
                                       : "creation stack not recorded");
    }
}

static void text_list(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, const ms_thr_list *l,
                      int leaked, int top, uint64_t now)
{
    size_t shown = (size_t)top < l->ng ? (size_t)top : l->ng;
    for (size_t i = 0; i < shown; i++)
        text_group(out, s, sym, l, &l->g[i], leaked, now);
    if (l->ng > shown)
        fprintf(out, "  ... %zu more creation stacks (--top)\n", l->ng - shown);
}

void ms_threads_text(FILE *out, const ms_snapshot *s, ms_symbolizer *sym, int top)
{
    if (!s->has_thread_life)
        return;
    uint64_t created, joined, detached, exited, untracked, alive, leaked;
    created = ms_thr_counter(s, "created");
    joined = ms_thr_counter(s, "joined");
    detached = ms_thr_counter(s, "detached");
    exited = ms_thr_counter(s, "exited");
    untracked = ms_thr_counter(s, "untracked");
    alive = ms_thr_counter(s, "alive");
    leaked = ms_thr_counter(s, "leaked");
    uint64_t process = ms_thr_counter(s, "process_threads");
    fprintf(out, "\nThreads: %" PRIu64 " created, %" PRIu64 " joined, %" PRIu64 " detached, %" PRIu64
                 " ended; now %" PRIu64 " alive, %" PRIu64 " leaked",
            created, joined, detached, exited, alive, leaked);
    /* after an attach the threads started before it are in none of these counts */
    if (process > alive)
        fprintf(out, "; the process runs %" PRIu64 " threads (%" PRIu64 " started before "
                     "memsight was there, not followed)", process, process - alive);
    fprintf(out, "\n");
    if (untracked)
        fprintf(out, "warning: %" PRIu64 " threads were created while the thread registry was full "
                     "(thread_capacity): they are in no list below\n", untracked);
    ms_thr_list l;
    uint64_t now = ms_thr_snapshot_ns(s);
    char b[32];
    if (ms_thr_list_make(s, 1, &l) != 0) {
        fprintf(out, "  (out of memory)\n");
        return;
    }
    if (l.n) {
        fprintf(out, "Leaked threads: %zu ended without being joined or detached; their stacks "
                     "(%s) and descriptors stay until a join. By creation stack:\n",
                l.n, ms_fmt_bytes(l.stack_bytes, b, sizeof b));
        text_list(out, s, sym, &l, 1, top, now);
    }
    ms_thr_list_free(&l);
    if (ms_thr_list_make(s, 0, &l) != 0)
        return;
    if (l.n) {
        fprintf(out, "Alive threads: %zu. By creation stack:\n", l.n);
        text_list(out, s, sym, &l, 0, top, now);
    }
    ms_thr_list_free(&l);
}

/* ---- JSON ---- */

static void json_thread(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym,
                        const ms_thread_life *t, uint64_t now)
{
    int pretty = j->pretty;
    ms_json_object_begin(j);
    j->pretty = 0;
    ms_json_kv_u64(j, "tid", t->r.tid);
    ms_json_kv_str(j, "name", t->name);
    ms_json_kv_u64(j, "creation_stack_id", t->r.stack_id);
    char *fn = ms_thr_start_name(s, sym, t->r.start_routine);
    ms_json_key(j, "start_routine");
    if (t->r.start_routine)
        ms_json_hex(j, t->r.start_routine);
    else
        ms_json_null(j);
    ms_json_kv_str(j, "start_function", fn);
    free(fn);
    ms_json_kv_u64(j, "creator_tid", t->r.creator_tid);
    ms_json_key(j, "main");
    ms_json_bool(j, (t->r.flags & MS_THRL_F_MAIN) != 0);
    ms_json_key(j, "created_detached");
    ms_json_bool(j, (t->r.flags & MS_THRL_F_ATTR_DETACHED) != 0);
    ms_json_kv_u64(j, "stack_size", t->r.stack_size);
    ms_json_kv_u64(j, "guard_size", t->r.guard_size);
    ms_json_kv_u64(j, "created_ns", t->r.create_ns);
    ms_json_kv_str(j, "ended_by", ms_thread_end_name(t->r.flags));
    if (t->r.flags & MS_THRL_F_EXITED) {
        ms_json_kv_u64(j, "exited_ns", t->r.exit_ns);
        ms_json_key(j, "exited_ago_s");
        double ago = ms_thr_secs(t->r.exit_ns, now);
        if (ago >= 0)
            ms_json_double(j, ago);
        else
            ms_json_null(j);
    }
    ms_json_object_end(j);
    j->pretty = pretty;
}

static void json_threads(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym, const ms_thr_list *l,
                         uint64_t now)
{
    ms_json_array_begin(j);
    for (size_t i = 0; i < l->n; i++)
        json_thread(j, s, sym, l->t[i], now);
    ms_json_array_end(j);
}

int ms_threads_json(ms_json *j, const ms_snapshot *s, ms_symbolizer *sym)
{
    if (!s->has_thread_life)
        return 0;
    ms_json_key(j, "threads");
    ms_json_object_begin(j);
    for (size_t i = 0; i < s->nthread_counters; i++)
        ms_json_kv_u64(j, s->thread_counters[i].name, s->thread_counters[i].value);
    uint64_t now = ms_thr_snapshot_ns(s);
    ms_thr_list lk, al;
    if (ms_thr_list_make(s, 1, &lk) != 0)
        return -1;
    if (ms_thr_list_make(s, 0, &al) != 0) {
        ms_thr_list_free(&lk);
        return -1;
    }
    ms_json_kv_u64(j, "leaked_stack_bytes", lk.stack_bytes);
    ms_json_key(j, "leaked_threads");
    json_threads(j, s, sym, &lk, now);
    ms_json_key(j, "alive_threads");
    json_threads(j, s, sym, &al, now);
    /* each creation stack once, with its frames */
    ms_json_key(j, "creation_stacks");
    ms_json_array_begin(j);
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        const ms_thr_list *l = pass ? &al : &lk;
        for (size_t g = 0; g < l->ng && rc == 0; g++) {
            uint32_t id = l->g[g].stack_id;
            int seen = 0;
            for (size_t k = 0; pass && k < lk.ng && !seen; k++)
                seen = lk.g[k].stack_id == id;
            const ms_stack *st = id ? ms_snapshot_stack(s, id) : NULL;
            if (seen || !st)
                continue;
            ms_json_object_begin(j);
            ms_json_kv_u64(j, "id", id);
            rc = ms_report_json_frames(j, s, sym, st);
            ms_json_object_end(j);
        }
    }
    ms_json_array_end(j);
    ms_json_object_end(j);
    ms_thr_list_free(&lk);
    ms_thr_list_free(&al);
    return rc;
}
