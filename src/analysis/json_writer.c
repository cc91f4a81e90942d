/* Streaming JSON writer (see json_writer.h). Output only; never allocates. The CLI writes
 * one stream from one thread: stdio's unlocked calls halve the time of large reports. */
#define _GNU_SOURCE
#include "analysis/json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void ms_json_init(ms_json *j, FILE *out, int pretty)
{
    *j = (ms_json){.out = out, .pretty = pretty};
}

static void put_u64(FILE *out, uint64_t v)
{
    char buf[20];
    int n = 0;
    do {
        buf[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        putc_unlocked(buf[--n], out);
}

static void newline_indent(ms_json *j)
{
    if (!j->pretty)
        return;
    putc_unlocked('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs_unlocked("  ", j->out);
}

/* Called before every value or key: separator and indentation. */
static void before_item(ms_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth > 0) {
        if (j->need_comma[j->depth])
            putc_unlocked(',', j->out);
        j->need_comma[j->depth] = 1;
        newline_indent(j);
    }
}

static void open_(ms_json *j, char c)
{
    before_item(j);
    putc_unlocked(c, j->out);
    if (j->depth + 1 >= MS_JSON_MAX_DEPTH) {
        j->error = 1;
        return;
    }
    j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close_(ms_json *j, char c)
{
    if (j->depth <= 0) {
        j->error = 1;
        return;
    }
    int had_items = j->need_comma[j->depth];
    j->depth--;
    if (had_items)
        newline_indent(j);
    putc_unlocked(c, j->out);
}

void ms_json_object_begin(ms_json *j) { open_(j, '{'); }
void ms_json_object_end(ms_json *j) { close_(j, '}'); }
void ms_json_array_begin(ms_json *j) { open_(j, '['); }
void ms_json_array_end(ms_json *j) { close_(j, ']'); }

/* Length of a valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

static void raw_string(ms_json *j, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    putc_unlocked('"', j->out);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            putc_unlocked('\\', j->out);
            putc_unlocked((int)c, j->out);
            i++;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs_unlocked("\\n", j->out); break;
            case '\t': fputs_unlocked("\\t", j->out); break;
            case '\r': fputs_unlocked("\\r", j->out); break;
            default: fprintf(j->out, "\\u%04x", c); break;
            }
            i++;
        } else if (c < 0x80) {
            putc_unlocked((int)c, j->out);
            i++;
        } else {
            size_t l = utf8_len(s + i, n - i);
            if (l == 0) {
                fputs_unlocked("\\ufffd", j->out);
                i++;
            } else {
                fwrite_unlocked(s + i, 1, l, j->out);
                i += l;
            }
        }
    }
    putc_unlocked('"', j->out);
}

void ms_json_key(ms_json *j, const char *key)
{
    before_item(j);
    raw_string(j, key, strlen(key));
    fputs_unlocked(j->pretty ? ": " : ":", j->out);
    j->after_key = 1;
}

void ms_json_str_n(ms_json *j, const char *s, size_t n)
{
    before_item(j);
    raw_string(j, s, n);
}

void ms_json_str(ms_json *j, const char *s)
{
    if (!s) {
        ms_json_null(j);
        return;
    }
    ms_json_str_n(j, s, strlen(s));
}

void ms_json_u64(ms_json *j, uint64_t v)
{
    before_item(j);
    put_u64(j->out, v);
}

void ms_json_i64(ms_json *j, int64_t v)
{
    before_item(j);
    if (v < 0) {
        putc_unlocked('-', j->out);
        put_u64(j->out, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(j->out, (uint64_t)v);
    }
}

void ms_json_double(ms_json *j, double v)
{
    if (!isfinite(v)) {
        ms_json_null(j);
        return;
    }
    before_item(j);
    fprintf(j->out, "%.17g", v);
}

void ms_json_bool(ms_json *j, int v)
{
    before_item(j);
    fputs_unlocked(v ? "true" : "false", j->out);
}

void ms_json_null(ms_json *j)
{
    before_item(j);
    fputs_unlocked("null", j->out);
}

void ms_json_hex(ms_json *j, uint64_t v)
{
    before_item(j);
    fprintf(j->out, "\"0x%" PRIx64 "\"", v);
}

int ms_json_finish(ms_json *j)
{
    putc_unlocked('\n', j->out);
    return (j->error || j->depth != 0 || ferror(j->out)) ? -1 : 0;
}

void ms_json_kv_str(ms_json *j, const char *key, const char *s)
{
    ms_json_key(j, key);
    ms_json_str(j, s);
}

void ms_json_kv_u64(ms_json *j, const char *key, uint64_t v)
{
    ms_json_key(j, key);
    ms_json_u64(j, v);
}

void ms_json_kv_i64(ms_json *j, const char *key, int64_t v)
{
    ms_json_key(j, key);
    ms_json_i64(j, v);
}
