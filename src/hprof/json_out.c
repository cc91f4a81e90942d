/* JSON strings for every hprof output: class and field names come from the dump, so
 * bytes that are not UTF-8 become U+FFFD and control characters are escaped; the
 * output is always valid JSON whatever the producer wrote. */
#include "hprof/json_out.h"

#include <stdint.h>

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if the bytes there are not one. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0; /* also stops at the terminating NUL */
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return n;
}

void ms_hprof_json_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char ch = *p;
        size_t n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", fp); /* not UTF-8: the replacement character */
            p++;
            continue;
        }
        if (n > 1) {
            fwrite(p, 1, n, fp);
            p += n;
            continue;
        }
        if (ch == '"' || ch == '\\')
            fprintf(fp, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", fp);
        else if (ch == '\t')
            fputs("\\t", fp);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(fp, "\\u%04x", ch);
        else
            fputc(ch, fp);
        p++;
    }
    fputc('"', fp);
}
