/* ClickHouse over HTTP with libcurl (clickhouse.h). Tools only. */
#define _GNU_SOURCE
#include "fleet/clickhouse.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_RESPONSE (512u << 20) /* an answer larger than this is refused, not held */

struct ms_ch {
    char *url;  /* as given, without a trailing '/' before the query */
    int has_query;
    long connect_s, total_s;
    int transient; /* the last failure may pass when tried again */
};

ms_ch *ms_ch_open(const char *url, char *err, size_t errlen)
{
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
            snprintf(err, errlen, "libcurl cannot initialise");
            return NULL;
        }
        curl_ready = 1;
    }
    if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
        snprintf(err, errlen, "'%s' is not a ClickHouse HTTP URL (http://host:8123 or https://...)",
                 url);
        return NULL;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '#') {
            snprintf(err, errlen, "'%s': a URL holds no spaces, control characters or '#'", url);
            return NULL;
        }
    CURLU *u = curl_url();
    if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(err, errlen, "'%s' is not a URL libcurl understands", url);
        curl_url_cleanup(u);
        return NULL;
    }
    curl_url_cleanup(u);
    ms_ch *ch = calloc(1, sizeof *ch);
    if (!ch || !(ch->url = strdup(url))) {
        free(ch);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ch->has_query = strchr(url, '?') != NULL;
    ch->connect_s = 10;
    ch->total_s = 300;
    return ch;
}

void ms_ch_set_timeouts(ms_ch *ch, long connect_s, long total_s)
{
    ch->connect_s = connect_s > 0 ? connect_s : 10;
    ch->total_s = total_s > 0 ? total_s : 300;
}

int ms_ch_last_transient(const ms_ch *ch)
{
    return ch->transient;
}

int ms_ch_exec_retry(ms_ch *ch, int tries, const char *sql, char **out, size_t *outlen, char *err,
                     size_t errlen)
{
    unsigned wait = 1;
    for (int t = 1;; t++) {
        if (ms_ch_exec(ch, sql, NULL, 0, out, outlen, err, errlen) == 0)
            return 0;
        if (t >= tries || !ch->transient)
            return -1;
        sleep(wait);
        wait = wait < 32 ? wait * 2 : 64;
    }
}

void ms_ch_close(ms_ch *ch)
{
    if (!ch)
        return;
    free(ch->url);
    free(ch);
}

typedef struct growbuf {
    char *p;
    size_t n, cap;
    int too_big;
} growbuf;

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    growbuf *b = arg;
    size_t n = size * nmemb;
    if (b->n + n + 1 > MAX_RESPONSE) {
        b->too_big = 1;
        return 0;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

int ms_ch_exec(ms_ch *ch, const char *sql, const char *body, size_t bodylen, char **out,
               size_t *outlen, char *err, size_t errlen)
{
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "libcurl: cannot make a request");
        return -1;
    }
    char *esc = curl_easy_escape(c, sql, 0);
    char *url = NULL;
    growbuf b = {0};
    struct curl_slist *hdr = NULL;
    int rc = -1;
    /* With data the statement goes in the URL and the data in the body; without, the
     * statement is the body (no URL length limit for long IN lists). */
    if (!esc || asprintf(&url, "%s%s%s%s", ch->url, ch->has_query ? "&" : "?",
                         body ? "query=" : "", body ? esc : "") < 0) {
        url = NULL;
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : sql);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? bodylen : strlen(sql)));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, ch->connect_s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, ch->total_s);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* no "Expect: 100-continue": ClickHouse does not answer it, and libcurl would wait a
     * second before every body larger than 1 KiB */
    hdr = curl_slist_append(NULL, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    char cerr[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    /* MEMSIGHT_CLICKHOUSE_TRACE=1: every statement and its time on stderr (docs/fleet.md) */
    static int trace = -1;
    if (trace < 0)
        trace = getenv("MEMSIGHT_CLICKHOUSE_TRACE") != NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CURLcode cc = curl_easy_perform(c);
    if (trace) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        fprintf(stderr, "memsight: clickhouse: %.3f s, %zu bytes of data: %.*s\n",
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                body ? bodylen : 0, 4000, sql);
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    ch->transient = 0;
    if (cc != CURLE_OK) {
        ch->transient = !b.too_big;
        if (cc == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, errlen, "timed out (connect %ld s, whole request %ld s): %s", ch->connect_s,
                     ch->total_s, cerr[0] ? cerr : curl_easy_strerror(cc));
        else if (b.too_big)
            snprintf(err, errlen, "ClickHouse answered more than %u MiB: refused", MAX_RESPONSE >> 20);
        else
            snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(cc));
        goto done;
    }
    if (status != 200) {
        ch->transient = status >= 500 && status != 500; /* 500: the statement's own error */
        /* ClickHouse puts its exception in the body: its first line says why */
        const char *m = b.p ? b.p : "";
        size_t l = strcspn(m, "\n");
        if (l > 400)
            l = 400;
        snprintf(err, errlen, "ClickHouse said %ld: %.*s", status, (int)l, m);
        goto done;
    }
    rc = 0;
    ch->transient = 0;
    if (out) {
        *out = b.p ? b.p : strdup("");
        if (outlen)
            *outlen = b.n;
        b.p = NULL;
        if (!*out) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
done:
    curl_slist_free_all(hdr);
    free(b.p);
    free(url);
    curl_free(esc);
    curl_easy_cleanup(c);
    return rc;
}

static int put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n + 1)
            c *= 2;
        char *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

int ms_ch_quote(char **buf, size_t *len, size_t *cap, const char *s)
{
    if (put(buf, len, cap, "'", 1))
        return -1;
    for (; *s; s++) {
        char e[5];
        unsigned char c = (unsigned char)*s;
        if (c == '\'' || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            if (put(buf, len, cap, e, 2))
                return -1;
        } else if (c < 0x20) {
            snprintf(e, sizeof e, "\\x%02x", c);
            if (put(buf, len, cap, e, 4))
                return -1;
        } else if (put(buf, len, cap, (const char *)s, 1)) {
            return -1;
        }
    }
    return put(buf, len, cap, "'", 1);
}

int ms_ch_tsv(char *text, int (*row)(void *ctx, char **fields, size_t n), void *ctx)
{
    char *fields[64];
    char *p = text;
    while (*p) {
        char *line = p;
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        p = nl ? nl + 1 : p + strlen(p);
        size_t n = 0;
        char *w = line, *f = line;
        fields[n++] = w;
        for (char *r = line; *r; r++) {
            if (*r == '\t') {
                *w++ = 0;
                if (n == sizeof fields / sizeof fields[0])
                    break;
                fields[n++] = w;
                continue;
            }
            if (*r == '\\' && r[1]) {
                r++;
                switch (*r) {
                case 't': *w++ = '\t'; break;
                case 'n': *w++ = '\n'; break;
                case 'r': *w++ = '\r'; break;
                case '0': *w++ = '\0'; break;
                case 'b': *w++ = '\b'; break;
                case 'f': *w++ = '\f'; break;
                default: *w++ = *r; break;
                }
                continue;
            }
            *w++ = *r;
        }
        *w = 0;
        (void)f;
        int rc = row(ctx, fields, n);
        if (rc)
            return rc;
    }
    return 0;
}
