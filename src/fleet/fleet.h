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

/* One file to push, and what became of it. */
enum { MS_PUSH_PENDING, MS_PUSH_DONE, MS_PUSH_ALREADY, MS_PUSH_FAILED };
typedef struct ms_push_item {
    const char *path;
    int status;          /* MS_PUSH_* */
    size_t rows;         /* stack rows sent */
    char err[512];       /* why, when failed */
} ms_push_item;

/* Pushes snapshot files in batches (a few statements per batch of up to 500,000 rows):
 * the stacks of each snapshot not in ClickHouse yet (one row each, in one INSERT that
 * lands whole), then a row per snapshot in memsight_snapshots, which marks it complete.
 * A snapshot already complete is not sent again (MS_PUSH_ALREADY); one whose stacks
 * arrived but whose mark did not gets the mark only. A failure marks the files of its
 * batch failed with the reason; nothing is removed, so pushing again finishes the job.
 * progress (may be NULL) is called for every item once decided. */
void ms_fleet_push(ms_ch *ch, ms_push_item *items, size_t n,
                   void (*progress)(void *ctx, const ms_push_item *item), void *ctx);

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
