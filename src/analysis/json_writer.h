/* A small streaming JSON writer for the tools' outputs (reports, exports): it tracks
 * nesting and commas, escapes strings and turns invalid UTF-8 into U+FFFD, so callers
 * only say what to write. Never builds the document in memory. Tools only. */
#ifndef MS_ANALYSIS_JSON_WRITER_H
#define MS_ANALYSIS_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MS_JSON_MAX_DEPTH 64

typedef struct ms_json {
    FILE *out;
    int pretty;              /* indent with two spaces per level */
    int depth;
    int need_comma[MS_JSON_MAX_DEPTH];
    int after_key;           /* a key was just written: the value follows on its line */
    int error;               /* nesting misuse (too deep, unbalanced) */
} ms_json;

void ms_json_init(ms_json *j, FILE *out, int pretty);
void ms_json_object_begin(ms_json *j);
void ms_json_object_end(ms_json *j);
void ms_json_array_begin(ms_json *j);
void ms_json_array_end(ms_json *j);
/* Inside an object: the key of the next value. */
void ms_json_key(ms_json *j, const char *key);
void ms_json_str(ms_json *j, const char *s); /* NULL writes null */
void ms_json_str_n(ms_json *j, const char *s, size_t n);
void ms_json_u64(ms_json *j, uint64_t v);
void ms_json_i64(ms_json *j, int64_t v);
void ms_json_double(ms_json *j, double v); /* non-finite values write null */
void ms_json_bool(ms_json *j, int v);
void ms_json_null(ms_json *j);
/* "0x..." string, the way addresses are written. */
void ms_json_hex(ms_json *j, uint64_t v);
/* Finishes the document with a newline; returns 0, or -1 if the nesting was misused or
 * the stream has an error. */
int ms_json_finish(ms_json *j);

/* key + value shorthands for objects. */
void ms_json_kv_str(ms_json *j, const char *key, const char *s);
void ms_json_kv_u64(ms_json *j, const char *key, uint64_t v);
void ms_json_kv_i64(ms_json *j, const char *key, int64_t v);

#endif
