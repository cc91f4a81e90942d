/* Text that came from elsewhere (hostnames, label values, paths, symbols from ClickHouse)
 * written for a terminal or a log: control characters and backslashes escaped, so that a
 * forged value cannot start a line of its own or move the cursor. Tools only. */
#include "fleet/fleet.h"

#include <stdio.h>
#include <string.h>

const char *ms_fleet_esc(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (!len)
        return "";
    for (; s && *s && o + 1 < len; s++) {
        unsigned char c = (unsigned char)*s;
        char e[8];
        size_t k;
        if (c < 0x20 || c == 0x7f)
            k = (size_t)snprintf(e, sizeof e, "\\x%02x", c);
        else if (c == '\\')
            k = (size_t)snprintf(e, sizeof e, "\\\\");
        else
            e[0] = (char)c, k = 1;
        if (o + k >= len)
            break;
        memcpy(buf + o, e, k);
        o += k;
    }
    buf[o] = 0;
    return buf;
}

void ms_fleet_put(FILE *f, const char *s)
{
    char buf[512];
    /* in pieces, so that a long value is written whole */
    while (s && *s) {
        size_t n = strnlen(s, 100);
        char piece[101];
        memcpy(piece, s, n);
        piece[n] = 0;
        fputs(ms_fleet_esc(piece, buf, sizeof buf), f);
        s += n;
    }
}
