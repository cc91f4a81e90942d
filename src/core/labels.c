/* User labels: validation and iteration of "k=v;k=v" (labels.h). Compiled into the agent
 * too: no allocation, no stdio, no locale. */
#include "core/labels.h"

#include <string.h>

static const char *const reserved[] = {"pid", "program", "host", "thread", "thread_id",
                                       "kind", "job", "instance"};

static int key_char(char c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

int ms_label_check(const char *s, size_t n, const char **why)
{
    const char *eq = memchr(s, '=', n);
    if (!eq) {
        *why = "a label is KEY=VALUE";
        return -1;
    }
    size_t kn = (size_t)(eq - s), vn = n - kn - 1;
    if (kn == 0) {
        *why = "the key is empty";
        return -1;
    }
    if (kn > MS_LABEL_KEY_MAX) {
        *why = "the key is longer than 64 bytes";
        return -1;
    }
    for (size_t i = 0; i < kn; i++)
        if (!key_char(s[i], i == 0)) {
            *why = "a key is letters, digits and '_', not starting with a digit";
            return -1;
        }
    if (kn >= 2 && s[0] == '_' && s[1] == '_') {
        *why = "keys starting with \"__\" are reserved (Prometheus)";
        return -1;
    }
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strlen(reserved[i]) == kn && !memcmp(reserved[i], s, kn)) {
            *why = "the key is one memsight sets itself (pid, program, host, thread, "
                   "thread_id, kind, job, instance)";
            return -1;
        }
    if (vn == 0) {
        *why = "the value is empty";
        return -1;
    }
    if (vn > MS_LABEL_VALUE_MAX) {
        *why = "the value is longer than 128 bytes";
        return -1;
    }
    for (size_t i = 0; i < vn; i++) {
        unsigned char c = (unsigned char)eq[1 + i];
        if (c < 0x20 || c == 0x7f || c == ';' || c == ',') {
            *why = "a value holds no control characters, ';' or ','";
            return -1;
        }
    }
    return 0;
}

int ms_labels_check(const char *s, const char **why, size_t *at)
{
    size_t len = strlen(s), pos = 0;
    int count = 0;
    *at = 0;
    if (len >= MS_LABELS_MAX) {
        *why = "the labels are longer than 511 bytes together";
        return -1;
    }
    while (pos < len) {
        const char *item = s + pos;
        const char *semi = memchr(item, ';', len - pos);
        size_t n = semi ? (size_t)(semi - item) : len - pos;
        *at = pos;
        if (ms_label_check(item, n, why) != 0)
            return -1;
        size_t kn = (size_t)((const char *)memchr(item, '=', n) - item);
        /* no key twice: a later one would silently win in one reader and not another */
        size_t p2 = 0;
        ms_label l;
        while (p2 < pos && ms_labels_next(s, &p2, &l))
            if (l.key < item && l.key_len == kn && !memcmp(l.key, item, kn)) {
                *why = "a key is given twice";
                return -1;
            }
        if (++count > MS_LABELS_COUNT_MAX) {
            *why = "more than 32 labels";
            return -1;
        }
        pos += n + (semi ? 1 : 0);
        if (semi && pos == len) {
            *why = "a label is KEY=VALUE";
            *at = pos;
            return -1;
        }
    }
    return count;
}

int ms_labels_next(const char *s, size_t *pos, ms_label *l)
{
    while (s[*pos]) {
        const char *item = s + *pos;
        size_t n = strcspn(item, ";");
        *pos += n + (item[n] == ';');
        const char *eq = memchr(item, '=', n);
        if (!eq || eq == item)
            continue;
        l->key = item;
        l->key_len = (size_t)(eq - item);
        l->value = eq + 1;
        l->value_len = n - l->key_len - 1;
        return 1;
    }
    return 0;
}
