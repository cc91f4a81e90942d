/* Fleet profiles in ClickHouse (docs/fleet.md): the schema, pushing snapshots into it,
 * loading symbols once per build id, and the fleet queries (top, trend, leaks) that run
 * inside ClickHouse. Tools only. */
#ifndef MS_FLEET_FLEET_H
#define MS_FLEET_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fleet/clickhouse.h"

/* Creates the tables when they are missing (CREATE TABLE IF NOT EXISTS). */
int ms_fleet_schema(ms_ch *ch, char *err, size_t errlen);

/* Pushes one snapshot file: its stacks (one row each, atomically: one INSERT of one
 * block) and then its row in memsight_snapshots, which marks it complete. A snapshot
 * already complete in ClickHouse is not sent again (*already = 1); one whose stacks
 * arrived but whose marker did not gets the marker only. Returns 0 or -1 with err. */
int ms_fleet_push(ms_ch *ch, const char *path, int *already, size_t *rows, char *err,
                  size_t errlen);

/* Loads function/file/line of every (build id, offset) pushed frames hold, for the
 * build ids whose ELF or debug file is found: among `files` (any number of ELF files,
 * matched by their build id), else at the module path the frames recorded when the file
 * there has the same build id, else under /usr/lib/debug/.build-id. Only offsets not in
 * memsight_symbols yet. Reports per build id through `note`. Returns 0 or -1 with err. */
int ms_fleet_symbolize(ms_ch *ch, const char *const *files, size_t nfiles,
                       void (*note)(void *ctx, const char *msg), void *ctx, char *err,
                       size_t errlen);

enum ms_fleet_query { MS_FLEET_TOP, MS_FLEET_TREND, MS_FLEET_LEAKS };

typedef struct ms_fleet_opts {
    int query;                  /* enum ms_fleet_query */
    const char *group_by[8];    /* label keys, or host, program */
    size_t ngroup;
    const char *where[16];      /* KEY=VALUE (a label, host, program, reason) */
    size_t nwhere;
    int top;                    /* rows per group (default 10) */
    int json;                   /* JSON instead of text */
} ms_fleet_opts;

/* Runs the query inside ClickHouse and writes the result to out. Returns 0 or -1 with err. */
int ms_fleet_query(ms_ch *ch, const ms_fleet_opts *o, FILE *out, char *err, size_t errlen);

/* Checks a --group-by key or the KEY of a --where (a label key, or one of host, program,
 * reason). Returns 0, or -1 with err. */
int ms_fleet_check_key(const char *key, char *err, size_t errlen);

#endif
