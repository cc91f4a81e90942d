/* Fleet profiles in ClickHouse (docs/fleet.md): the schema, pushing snapshots into it,
 * loading symbols once per build id, and the fleet queries (top, trend, leaks) that run
 * inside ClickHouse. Tools only. */
#ifndef MS_FLEET_FLEET_H
#define MS_FLEET_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fleet/clickhouse.h"

/* Creates the tables when they are missing (CREATE TABLE IF NOT EXISTS), and adds the
 * columns a table made by an older memsight lacks. Each statement is tried up to `tries`
 * times while the transport fails. */
int ms_fleet_schema(ms_ch *ch, int tries, char *err, size_t errlen);

/* What a snapshot may say, and ClickHouse store as it is: DateTime's range (in seconds)
 * and the most bytes an address space holds (57-bit virtual addresses). */
#define MS_FLEET_TIME_MIN 1ull
#define MS_FLEET_TIME_MAX 4291747199ull /* 2105-12-31T23:59:59Z */
#define MS_FLEET_BYTES_MAX (1ull << 57)

/* One file to push, and what became of it. */
enum { MS_PUSH_PENDING, MS_PUSH_DONE, MS_PUSH_ALREADY, MS_PUSH_FAILED };
typedef struct ms_push_item {
    const char *path;
    int status;          /* MS_PUSH_* */
    size_t rows;         /* stack rows sent */
    char err[512];       /* why, when failed */
    int transient;       /* failed on the way (transport, 5xx): worth another try */
} ms_push_item;

/* Pushes snapshot files in batches (a few statements per batch of up to 500,000 rows):
 * the stacks of each snapshot not in ClickHouse yet (one row each, in one INSERT that
 * lands whole), then a row per snapshot in memsight_snapshots, which marks it complete.
 * A snapshot already complete is not sent again (MS_PUSH_ALREADY); one whose stacks
 * arrived but whose mark did not gets the mark only. A failure marks the files of its
 * batch failed with the reason; nothing is removed, so pushing again finishes the job.
 * A batch whose failure is the transport's is tried again, up to `tries` times in all,
 * waiting 1, 2, 4... s; it asks again what ClickHouse holds before sending anything.
 * progress (may be NULL) is called for every item once decided. */
void ms_fleet_push(ms_ch *ch, ms_push_item *items, size_t n, int tries,
                   void (*progress)(void *ctx, const ms_push_item *item), void *ctx);

/* Loads function/file/line of every (build id, offset) pushed frames hold, for the
 * build ids whose ELF or debug file is found: among `files` (any number of ELF files,
 * matched by their build id; relative paths too), else at the module path the frames
 * recorded when the file there has the same build id, else under
 * /usr/lib/debug/.build-id; when what is found has no DWARF (stripped) or nothing is,
 * from the debuginfod servers of DEBUGINFOD_URLS. Only offsets without a source line in
 * memsight_symbols yet (all with force); stores only results better than what is there
 * (a line over a bare function; never "nothing found"). Reports per build id, and how
 * many offsets stayed unresolved and why, through `note`. Returns 0 or -1 with err. */
int ms_fleet_symbolize(ms_ch *ch, const char *const *files, size_t nfiles, int force,
                       void (*note)(void *ctx, const char *msg), void *ctx, char *err,
                       size_t errlen);

enum ms_fleet_query { MS_FLEET_TOP, MS_FLEET_TREND, MS_FLEET_LEAKS, MS_FLEET_DIFF };
enum ms_fleet_format { MS_FLEET_TEXT, MS_FLEET_JSON, MS_FLEET_PPROF };

/* A snapshot's id as a number: the FNV-1a 64 its id starts with (push.c content_id).
 * The key the queries join by (8 bytes a row, not the id's 40); the DEFAULT of
 * memsight_stacks.sid, so that ClickHouse computes it for rows pushed before it existed. */
#define MS_FLEET_SID_EXPR "reinterpretAsUInt64(reverse(unhex(substring(snapshot_id, 1, 16))))"

typedef struct ms_fleet_opts {
    int query;                  /* enum ms_fleet_query */
    const char *group_by[8];    /* label keys, or host, program (diff: exactly one) */
    size_t ngroup;
    const char *where[16];      /* KEY=VALUE (a label, host, program, reason) */
    size_t nwhere;
    int top;                    /* rows per group (default 10) */
    int format;                 /* enum ms_fleet_format */
    uint64_t since_ns, until_ns; /* only snapshots taken in [since, until]; 0: open */
    const char *diff_a, *diff_b; /* diff: the group_by key's two values, base and target */
} ms_fleet_opts;

/* A --since/--until argument: ISO 8601 UTC ("2026-12-05T15:00:00Z", "2026-12-05T15:00Z",
 * "2026-12-05") or a duration before now ("2h", "90m", "1d12h", "30s", "2w"), as ns
 * since the epoch. Returns 0, or -1 with err. */
int ms_fleet_parse_time(const char *text, uint64_t now_ns, uint64_t *out, char *err, size_t errlen);

/* Runs the query inside ClickHouse and writes the result to out. Returns 0 or -1 with err. */
int ms_fleet_query(ms_ch *ch, const ms_fleet_opts *o, FILE *out, char *err, size_t errlen);

/* Checks a --group-by key or the KEY of a --where (a label key, or one of host, program,
 * reason). Returns 0, or -1 with err. */
int ms_fleet_check_key(const char *key, char *err, size_t errlen);

/* s for a terminal: control characters as \xNN, a backslash as \\ (cut to fit len).
 * Returns buf. */
const char *ms_fleet_esc(const char *s, char *buf, size_t len);
/* Writes s escaped so, whole. */
void ms_fleet_put(FILE *f, const char *s);

#endif
