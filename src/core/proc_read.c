/* Reading /proc files into a reusable buffer and bounded number parsing for the /proc
 * parsers. Tools only (allocates); never reads beyond the buffer it was given. */
#include "core/proc_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS_PROC_DEFAULT_LIMIT ((size_t)256 << 20)

int ms_procbuf_read(ms_procbuf *b, const char *path, size_t limit, char *err, size_t errlen)
{
    if (!limit)
        limit = MS_PROC_DEFAULT_LIMIT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    b->len = 0;
    for (;;) {
        if (b->cap - b->len < 4096 + 1) {
            if (b->cap >= limit + 1) {
                close(fd);
                snprintf(err, errlen, "%s: larger than %zu bytes", path, limit);
                return -EFBIG;
            }
            size_t ncap = b->cap ? b->cap * 2 : 65536;
            if (ncap > limit + 1)
                ncap = limit + 1;
            char *nd = realloc(b->data, ncap);
            if (!nd) {
                close(fd);
                snprintf(err, errlen, "%s: out of memory", path);
                return -ENOMEM;
            }
            b->data = nd;
            b->cap = ncap;
        }
        ssize_t r = read(fd, b->data + b->len, b->cap - b->len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            return -e;
        }
        if (r == 0)
            break;
        b->len += (size_t)r;
    }
    close(fd);
    b->data[b->len] = '\0';
    return 0;
}

void ms_procbuf_free(ms_procbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int ms_parse_u64(const char **pp, const char *end, uint64_t *out)
{
    const char *p = *pp;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    uint64_t v = 0;
    int any = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            v = UINT64_MAX;
        else if (v != UINT64_MAX)
            v = v * 10 + d;
        any = 1;
        p++;
    }
    *pp = p;
    *out = v;
    return any;
}

static inline int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ms_parse_hex(const char **pp, const char *end, uint64_t *out, int allow_0x)
{
    const char *p = *pp;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (allow_0x && end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t v = 0;
    int any = 0, d;
    while (p < end && (d = hexval(*p)) >= 0) {
        if (v >> 60)
            v = UINT64_MAX;
        else if (v != UINT64_MAX)
            v = (v << 4) | (uint64_t)d;
        any = 1;
        p++;
    }
    *pp = p;
    *out = v;
    return any;
}
