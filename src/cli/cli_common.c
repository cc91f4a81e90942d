/* Plumbing the `memsight` subcommands share (see cli_common.h): option values and the
 * output file. No analysis here, and nothing printed but "memsight <cmd>: ..." errors. */
#include "cli_common.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/labels.h"

int ms_cli_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int ms_cli_parse_timeout(const char *s, double *seconds)
{
    char *end;
    double v = strtod(s, &end);
    *seconds = v;
    if (end == s || *end || !(v > 0) || v > 86400)
        return -1;
    return 0;
}

int ms_cli_parse_pid_arg(const char *cmd, const char *arg, int *pid)
{
    long p;
    if (arg[0] == '-' || *pid || ms_cli_parse_long(arg, 1, INT_MAX, &p) != 0) {
        fprintf(stderr, "memsight %s: unexpected argument '%s'\n", cmd, arg);
        return -1;
    }
    *pid = (int)p;
    return 0;
}

int ms_cli_parse_top(const char *cmd, const char *arg, int *top)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "memsight %s: --top: '%s' is not a count\n", cmd, arg);
        return -1;
    }
    *top = (int)v;
    return 0;
}

int ms_cli_parse_agg_key(const char *cmd, const char *arg, ms_agg_key *by)
{
    if (!strcmp(arg, "lines"))
        *by = MS_AGG_BY_LINES;
    else if (!strcmp(arg, "symbols"))
        *by = MS_AGG_BY_SYMBOLS;
    else if (!strcmp(arg, "pcs"))
        *by = MS_AGG_BY_PCS;
    else {
        fprintf(stderr, "memsight %s: --by: 'lines', 'symbols' or 'pcs', not '%s'\n", cmd, arg);
        return -1;
    }
    return 0;
}

int ms_cli_output_open(ms_cli_output *o, const char *cmd, const char *path)
{
    memset(o, 0, sizeof *o);
    o->fp = stdout;
    if (!path)
        return 0;
    char err[1024];
    if (ms_outfile_open(&o->file, path, err, sizeof err) != 0) {
        fprintf(stderr, "memsight %s: %s\n", cmd, err);
        return -1;
    }
    o->fp = o->file.fp;
    o->to_file = 1;
    return 0;
}

int ms_cli_output_finish(ms_cli_output *o, const char *cmd)
{
    if (o->to_file) {
        char err[1024];
        o->to_file = 0;
        if (ms_outfile_commit(&o->file, err, sizeof err) != 0) {
            fprintf(stderr, "memsight %s: %s\n", cmd, err);
            return -1;
        }
        return 0;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "memsight %s: writing to stdout: %s\n", cmd, strerror(errno));
        return -1;
    }
    return 0;
}

void ms_cli_output_abort(ms_cli_output *o)
{
    if (o->to_file)
        ms_outfile_abort(&o->file);
    o->to_file = 0;
}

int ms_cli_add_label(const char *cmd, char *labels, const char *arg)
{
    const char *why;
    size_t at, have = strlen(labels), n = strlen(arg);
    if (ms_label_check(arg, n, &why) != 0) {
        fprintf(stderr, "memsight %s: --label '%s': %s\n", cmd, arg, why);
        return -1;
    }
    if (have + (have ? 1 : 0) + n >= MS_LABELS_MAX) {
        fprintf(stderr, "memsight %s: --label '%s': the labels are longer than %d bytes together\n",
                cmd, arg, MS_LABELS_MAX - 1);
        return -1;
    }
    char joined[MS_LABELS_MAX];
    snprintf(joined, sizeof joined, "%s%s%s", labels, have ? ";" : "", arg);
    if (ms_labels_check(joined, &why, &at) < 0) {
        fprintf(stderr, "memsight %s: --label '%s': %s\n", cmd, arg, why);
        return -1;
    }
    memcpy(labels, joined, strlen(joined) + 1);
    return 0;
}

void ms_cli_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
