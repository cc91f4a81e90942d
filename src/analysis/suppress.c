/* Suppression files and function filters (suppress.h). Tools only. */
#define _GNU_SOURCE
#include "analysis/suppress.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/report_model.h"

#define MAX_LINE 4096
#define MAX_RULES 100000

void ms_supp_free(ms_suppressions *sp)
{
    if (!sp)
        return;
    for (size_t i = 0; i < sp->nrules; i++) {
        free(sp->rules[i].text);
        free(sp->rules[i].glob);
    }
    free(sp->rules);
    free(sp->path);
    free(sp);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = 0;
    return s;
}

/* The colon ending a rule's "type:" (leak:, LeakSanitizer's race:...), or NULL when the
 * line is a bare pattern: the type is a plain word and one colon, so C++ names
 * ("std::vector<int>::push_back") and "file.c:12" are patterns, not unknown types. */
static char *rule_type(char *s)
{
    char *colon = strchr(s, ':');
    if (!colon || colon[1] == ':')
        return NULL;
    for (const char *c = s; c < colon; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != ' ' && *c != '\t')
            return NULL;
    return colon;
}

ms_suppressions *ms_supp_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    ms_suppressions *sp = ms_supp_parse(f, path, err, errlen);
    fclose(f);
    return sp;
}

ms_suppressions *ms_supp_parse(FILE *f, const char *path, char *err, size_t errlen)
{
    ms_suppressions *sp = calloc(1, sizeof *sp);
    char *buf = NULL;
    size_t bufcap = 0, cap = 0;
    int lineno = 0;
    ssize_t got;
    if (!sp || !(sp->path = strdup(path)))
        goto oom;
    while ((got = getline(&buf, &bufcap, f)) >= 0) {
        lineno++;
        size_t len = (size_t)got;
        if (len > MAX_LINE) {
            snprintf(err, errlen, "%s:%d: line longer than %d bytes", path, lineno, MAX_LINE);
            goto fail;
        }
        if (memchr(buf, 0, len) != NULL) {
            snprintf(err, errlen, "%s:%d: a NUL byte: not a text file", path, lineno);
            goto fail;
        }
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = 0;
        char *s = trim(buf);
        if (!*s)
            continue;
        char *colon = rule_type(s);
        if (colon) {
            *colon = 0;
            if (strcmp(trim(s), "leak") != 0) {
                snprintf(err, errlen, "%s:%d: unknown suppression type '%.40s' (memsight reads "
                         "leak:PATTERN)", path, lineno, trim(s));
                goto fail;
            }
            s = trim(colon + 1);
        }
        for (const char *c = s; *c; c++)
            if ((unsigned char)*c < 0x20) {
                snprintf(err, errlen, "%s:%d: a control character in the pattern", path, lineno);
                goto fail;
            }
        if (!*s || !strcmp(s, "^") || !strcmp(s, "$") || !strcmp(s, "^$")) {
            snprintf(err, errlen, "%s:%d: an empty pattern would suppress every leak", path, lineno);
            goto fail;
        }
        if (sp->nrules == MAX_RULES) {
            snprintf(err, errlen, "%s:%d: more than %d rules", path, lineno, MAX_RULES);
            goto fail;
        }
        if (sp->nrules == cap) {
            size_t nc = cap ? 2 * cap : 16;
            ms_supp_rule *r = realloc(sp->rules, nc * sizeof *r);
            if (!r)
                goto oom;
            sp->rules = r;
            cap = nc;
        }
        ms_supp_rule *r = &sp->rules[sp->nrules];
        memset(r, 0, sizeof *r);
        r->line = lineno;
        int start = s[0] == '^', end = s[strlen(s) - 1] == '$';
        size_t body = strlen(s) - (size_t)start - (size_t)end;
        r->text = strdup(s);
        if (r->text)
            sp->nrules++;
        if (!r->text || asprintf(&r->glob, "%s%.*s%s", start ? "" : "*", (int)body, s + start,
                                 end ? "" : "*") < 0) {
            r->glob = NULL;
            goto oom;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        goto fail;
    }
    if (!sp->nrules) {
        snprintf(err, errlen, "%s: no suppression in the file", path);
        goto fail;
    }
    free(buf);
    return sp;
oom:
    snprintf(err, errlen, "%s: out of memory", path);
fail:
    free(buf);
    ms_supp_free(sp);
    return NULL;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int frame_matches(const ms_frame *f, const char *glob)
{
    const char *names[5] = {f->function, f->file, f->file ? base_name(f->file) : NULL, f->module,
                            f->module ? base_name(f->module) : NULL};
    for (int i = 0; i < 5; i++)
        if (names[i] && fnmatch(glob, names[i], 0) == 0)
            return 1;
    return 0;
}

/* Index of the first rule a frame of the stack matches, -1 for none, -2 out of memory. */
static long stack_rule(const ms_snapshot *s, ms_symbolizer *sym, const ms_stack *st,
                       const ms_suppressions *sp)
{
    size_t n = 0;
    ms_frame *f = ms_report_frames(s, sym, st, &n);
    if (!f)
        return -2;
    long hit = -1;
    for (size_t r = 0; r < sp->nrules && hit < 0; r++)
        for (size_t i = 0; i < n && hit < 0; i++)
            if (frame_matches(&f[i], sp->rules[r].glob))
                hit = (long)r;
    free(f);
    return hit;
}

/* A record left out of the report leaves its class totals too (a record's blocks include
 * what its root holds indirectly, so a total is kept from going below zero). */
static void leak_uncount(ms_snapshot *s, const ms_snap_leak_rec *r)
{
    if (r->leak_class >= MS_LEAK_CLASS_COUNT)
        return;
    uint64_t *b = &s->leak_summary.blocks[r->leak_class];
    uint64_t *y = &s->leak_summary.bytes[r->leak_class];
    *b = *b > r->blocks ? *b - r->blocks : 0;
    *y = *y > r->bytes ? *y - r->bytes : 0;
}

long ms_supp_apply(ms_snapshot *s, ms_symbolizer *sym, ms_suppressions *sp)
{
    size_t kept = 0;
    long dropped = 0;
    for (size_t i = 0; i < s->nleaks; i++) {
        ms_snap_leak_rec *r = &s->leaks[i];
        const ms_stack *st = ms_snapshot_stack(s, r->stack_id);
        /* reachable blocks are no leak: nothing to suppress */
        long rule = st && r->leak_class != MS_LEAK_REACHABLE ? stack_rule(s, sym, st, sp) : -1;
        if (rule == -2)
            return -1;
        if (rule < 0) {
            s->leaks[kept++] = *r;
            continue;
        }
        ms_supp_rule *ru = &sp->rules[rule];
        ru->hits_records++;
        ru->hits_blocks += r->blocks;
        ru->hits_bytes += r->bytes;
        leak_uncount(s, r);
        dropped++;
    }
    s->nleaks = kept;
    return dropped;
}

void ms_supp_write(const ms_suppressions *sp, const char *prefix, FILE *out)
{
    for (size_t i = 0; i < sp->nrules; i++) {
        const ms_supp_rule *r = &sp->rules[i];
        if (!r->hits_records)
            continue;
        fprintf(out, "%ssuppressed: %llu blocks (%llu bytes) in %llu record(s) by leak:", prefix,
                (unsigned long long)r->hits_blocks, (unsigned long long)r->hits_bytes,
                (unsigned long long)r->hits_records);
        for (const char *c = r->text; *c; c++)
            fputc((unsigned char)*c < 0x20 ? '?' : *c, out);
        fprintf(out, " (%s:%d)\n", base_name(sp->path), r->line);
    }
}

long ms_filter_function(ms_snapshot *s, ms_symbolizer *sym, const char *name)
{
    /* keep[i]: stack i (index in s->stacks) has a frame through `name` */
    unsigned char *keep = calloc(s->nstacks ? s->nstacks : 1, 1);
    if (!keep)
        return -1;
    for (size_t i = 0; i < s->nstacks; i++) {
        size_t n = 0;
        ms_frame *f = ms_report_frames(s, sym, &s->stacks[i], &n);
        if (!f) {
            free(keep);
            return -1;
        }
        for (size_t k = 0; k < n && !keep[i]; k++)
            keep[i] = f[k].function && strstr(f[k].function, name) != NULL;
        free(f);
    }
    /* leak records and blocks of dropped stacks go too (ids are looked up before the
     * stack array is compacted) */
    size_t kl = 0;
    for (size_t i = 0; i < s->nleaks; i++) {
        const ms_snap_leak_rec *r = &s->leaks[i];
        const ms_stack *st = ms_snapshot_stack(s, r->stack_id);
        if (st && keep[st - s->stacks]) {
            s->leaks[kl++] = *r;
        } else {
            leak_uncount(s, r);
        }
    }
    s->nleaks = kl;
    size_t kb = 0;
    for (size_t i = 0; i < s->nblocks; i++) {
        const ms_stack *st = ms_snapshot_stack(s, s->blocks[i].stack_id);
        if (st && keep[st - s->stacks])
            s->blocks[kb++] = s->blocks[i];
    }
    s->nblocks = kb;
    size_t ks = 0;
    for (size_t i = 0; i < s->nstacks; i++) {
        if (keep[i])
            s->stacks[ks++] = s->stacks[i];
        else
            free(s->stacks[i].pcs);
    }
    s->nstacks = ks;
    free(keep);
    /* the peak of the kept stacks together (their values at the process peak); the size
     * histogram is of the whole process, not attributable per stack: left out */
    if (s->has_peak) {
        uint64_t p = 0;
        for (size_t i = 0; i < s->nstacks; i++)
            p += s->stacks[i].peak_live_bytes;
        s->peak_live_bytes_total = p;
    }
    free(s->hist);
    s->hist = NULL;
    s->nhist = 0;
    return (long)ks;
}
