/* Plumbing the `memsight` subcommands share: number options, --by, and the output that
 * is stdout or the file of -o (ms_outfile: a new file renamed into place, or written
 * through into a device, FIFO or /dev/stdout). Only the CLI prints:
 * these helpers write their messages as "memsight <cmd>: ..." on stderr. */
#ifndef MS_CLI_CLI_COMMON_H
#define MS_CLI_CLI_COMMON_H

#include <stdio.h>

#include "analysis/stack_agg.h"
#include "core/fileio.h"

/* Formats a message into err (at most errlen bytes), for helpers that return -1 and let
 * the command print. */
void ms_cli_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A decimal integer in [lo, hi], the whole string. Returns 0, or -1 (nothing printed). */
int ms_cli_parse_long(const char *s, long lo, long hi, long *out);

/* A wait in seconds: more than 0, at most a day. Returns 0, or -1 (nothing printed). */
int ms_cli_parse_timeout(const char *s, double *seconds);

/* The PID operand of commands that talk to a running process: the first and only one,
 * 1..INT_MAX. Returns 0, or -1 with "unexpected argument" printed. */
int ms_cli_parse_pid_arg(const char *cmd, const char *arg, int *pid);

/* --top N of the snapshot commands: 0..1000000. Returns 0, or -1 with the message printed. */
int ms_cli_parse_top(const char *cmd, const char *arg, int *top);

/* --by symbols|pcs. Returns 0, or -1 with the message printed. */
int ms_cli_parse_agg_key(const char *cmd, const char *arg, ms_agg_key *by);

/* --label KEY=VALUE (repeatable): checks it (core/labels.h) and appends it to `labels`
 * ("k=v;k=v", a buffer of MS_LABELS_MAX bytes). Returns 0, or -1 with the message printed. */
int ms_cli_add_label(const char *cmd, char *labels, const char *arg);

/* Where a command writes its result: the file given with -o, or stdout. */
typedef struct ms_cli_output {
    FILE *fp;
    int to_file;
    ms_outfile file;
} ms_cli_output;

/* Opens `path` (NULL: stdout). Returns 0, or -1 with the message printed. */
int ms_cli_output_open(ms_cli_output *o, const char *cmd, const char *path);
/* Renames the file into place, or flushes stdout. Returns 0, or -1 with the message printed. */
int ms_cli_output_finish(ms_cli_output *o, const char *cmd);
/* After a failed write: removes the temporary file (nothing to do for stdout). */
void ms_cli_output_abort(ms_cli_output *o);

#endif
