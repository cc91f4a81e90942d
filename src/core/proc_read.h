/* Reading /proc text files into a reusable buffer, and the small number parsers the
 * /proc parsers share. Never trusts the text: every parser is bounded by a length,
 * saturates instead of overflowing, and never reads past the end. */
#ifndef MS_CORE_PROC_READ_H
#define MS_CORE_PROC_READ_H

#include <stddef.h>
#include <stdint.h>

/* A growable buffer kept between reads so that a sampling loop does not allocate. */
typedef struct ms_procbuf {
    char *data; /* NUL-terminated after a successful read */
    size_t len;
    size_t cap;
} ms_procbuf;

/* Reads the whole file at `path` into b (reusing its memory). Returns 0, or -errno
 * with a message naming the file in err (ENOENT/ESRCH: the process is gone; EACCES or
 * EPERM: not allowed). At most `limit` bytes are read (0 means 256 MiB). */
int ms_procbuf_read(ms_procbuf *b, const char *path, size_t limit, char *err, size_t errlen);
void ms_procbuf_free(ms_procbuf *b);

/* Parses an unsigned decimal at *p (after optional blanks), advancing *p; saturates at
 * UINT64_MAX. Returns 1 if at least one digit was read. Never passes `end`. */
int ms_parse_u64(const char **p, const char *end, uint64_t *out);
/* The same for hexadecimal (no 0x prefix unless allow_0x). */
int ms_parse_hex(const char **p, const char *end, uint64_t *out, int allow_0x);

/* Saturating addition, for totals over many mappings. */
static inline uint64_t ms_sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

#endif
