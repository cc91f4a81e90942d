/* Class-name normalisation (see names.h). Bounds-checked on every write; never
 * allocates. */
#include "hprof/names.h"

#include <string.h>

#include "hprof/graph.h"

static const char *desc_prim(char c)
{
    switch (c) {
    case 'Z': return "boolean";
    case 'C': return "char";
    case 'F': return "float";
    case 'D': return "double";
    case 'B': return "byte";
    case 'S': return "short";
    case 'I': return "int";
    case 'J': return "long";
    case 'V': return "void";
    default: return NULL;
    }
}

/* Appends s[0..n) to out at *pos, turning '/' into '.' and control bytes into '?'. */
static void put(char *out, size_t outlen, size_t *pos, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (*pos + 1 >= outlen)
            return;
        unsigned char c = (unsigned char)s[i];
        out[(*pos)++] = c == '/' ? '.' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
}

size_t ms_hprof_class_name_normalize(const char *in, size_t len, char *out, size_t outlen)
{
    size_t pos = 0;
    if (!outlen)
        return 0;
    size_t dims = 0;
    while (dims < len && in[dims] == '[')
        dims++;
    if (dims > 0 && dims < len) {
        const char *elem = in + dims;
        size_t elen = len - dims;
        const char *prim = elen == 1 ? desc_prim(elem[0]) : NULL;
        if (prim) {
            put(out, outlen, &pos, prim, strlen(prim));
        } else if (elem[0] == 'L' && elen >= 2 && elem[elen - 1] == ';') {
            put(out, outlen, &pos, elem + 1, elen - 2);
        } else {
            put(out, outlen, &pos, in, len); /* not a descriptor: keep as written */
            dims = 0;
        }
        for (size_t d = 0; d < dims; d++)
            put(out, outlen, &pos, "[]", 2);
    } else {
        put(out, outlen, &pos, in, len);
    }
    out[pos] = '\0';
    ms_hprof_utf8_sanitize(out, pos);
    return pos;
}

void ms_hprof_utf8_sanitize(char *str, size_t len)
{
    unsigned char *s = (unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        int ok = n != 0 && i + n <= len;
        for (size_t k = 1; ok && k < n; k++)
            ok = (s[i + k] & 0xC0) == 0x80;
        if (ok && n == 3) {
            /* no overlong forms, no UTF-16 surrogates */
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] >= 0xA0))
                ok = 0;
        } else if (ok && n == 4) {
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))
                ok = 0;
        }
        if (ok && n == 1 && (c < 0x20 || c == 0x7F))
            ok = 0;
        if (!ok) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
}

const char *ms_hprof_prim_array_name(int type)
{
    switch (type) {
    case MS_HT_BOOLEAN: return "boolean[]";
    case MS_HT_CHAR: return "char[]";
    case MS_HT_FLOAT: return "float[]";
    case MS_HT_DOUBLE: return "double[]";
    case MS_HT_BYTE: return "byte[]";
    case MS_HT_SHORT: return "short[]";
    case MS_HT_INT: return "int[]";
    case MS_HT_LONG: return "long[]";
    default: return NULL;
    }
}

int ms_hprof_prim_array_type(const char *name)
{
    for (int t = MS_HT_BOOLEAN; t <= MS_HT_LONG; t++) {
        const char *n = ms_hprof_prim_array_name(t);
        if (n && !strcmp(n, name))
            return t;
    }
    return 0;
}
