/* A small ClickHouse client over its HTTP interface (libcurl): one statement per
 * request, the data of an INSERT as the request body, results as TabSeparated text.
 * Tools only. Every answer is untrusted: sizes are capped, errors carry the server's
 * own message. */
#ifndef MS_FLEET_CLICKHOUSE_H
#define MS_FLEET_CLICKHOUSE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ms_ch ms_ch;

/* url: http[s]://[user[:password]@]host:port[/][?database=DB...]. Checks its form only
 * (nothing is sent). Returns NULL with err. */
ms_ch *ms_ch_open(const char *url, char *err, size_t errlen);
void ms_ch_close(ms_ch *ch);

/* Limits of every later request: connect_s to establish the connection, total_s for the
 * whole request (sending the statement and its data, ClickHouse's work, the answer).
 * A server that accepts and never answers fails the request after total_s seconds.
 * Defaults: 10 s and 300 s. */
void ms_ch_set_timeouts(ms_ch *ch, long connect_s, long total_s);

/* Runs `sql` (one try: the caller decides whether a statement may be sent again); when body is not NULL it is sent as the statement's data (INSERT ...
 * FORMAT X). On success returns 0 and, when out is not NULL, the response (malloc'ed,
 * NUL-terminated, *outlen bytes). On failure -1 with err: the transport's reason, or the
 * server's status and first line of its message. */
int ms_ch_exec(ms_ch *ch, const char *sql, const char *body, size_t bodylen, char **out,
               size_t *outlen, char *err, size_t errlen);
/* As ms_ch_exec for a statement that changes nothing (SELECT, CREATE ... IF NOT EXISTS),
 * tried up to `tries` times, waiting 1, 2, 4... s between tries when the transport failed
 * (no connection, a timeout, a reset) or ClickHouse answered 5xx. */
int ms_ch_exec_retry(ms_ch *ch, int tries, const char *sql, char **out, size_t *outlen, char *err,
                     size_t errlen);
/* Whether the last failure of ms_ch_exec was the transport's or a 5xx (worth another
 * try), not a statement ClickHouse refused. */
int ms_ch_last_transient(const ms_ch *ch);

/* A string as a ClickHouse single-quoted literal, appended to a malloc'ed buffer that
 * grows (*buf, *len, *cap). Returns 0 or -1 when out of memory. */
int ms_ch_quote(char **buf, size_t *len, size_t *cap, const char *s);

/* Splits TabSeparated text into rows and fields in place (unescaping \t \n \\ \' and
 * the rest): calls row(ctx, fields, n) for every line. Returns 0, or what row returned
 * when it was not 0. */
int ms_ch_tsv(char *text, int (*row)(void *ctx, char **fields, size_t n), void *ctx);

#endif
