/* User labels ("version=2.1;model=pixel7"): what a key and a value may hold, shared by
 * the agent and the tools so that both accept exactly the same text. No allocation, no
 * stdio: the agent validates its `labels=` option with this before main(). */
#ifndef MS_CORE_LABELS_H
#define MS_CORE_LABELS_H

#include <stddef.h>

#define MS_LABELS_MAX 512      /* bytes of the joined "k=v;k=v" text, terminator included */
#define MS_LABEL_KEY_MAX 64
#define MS_LABEL_VALUE_MAX 128
#define MS_LABELS_COUNT_MAX 32

typedef struct ms_label {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} ms_label;

/* Checks one KEY=VALUE (n bytes, no terminator needed). A key is a Prometheus label
 * name: [A-Za-z_][A-Za-z0-9_]*, at most 64 bytes, not starting with "__" and not one
 * of the names memsight's exports set themselves (pid, program, host, thread,
 * thread_id, kind, job, instance). A value is 1..128 bytes of printable ASCII or UTF-8,
 * without ';' or ','. Returns 0, or -1 with *why (a static string). */
int ms_label_check(const char *s, size_t n, const char **why);

/* Checks a whole "k=v;k=v" text (empty is valid: no labels): every label, no key twice,
 * at most 32 labels and MS_LABELS_MAX - 1 bytes. Returns the number of labels, or -1
 * with *why and *at (the byte offset of the offending label). */
int ms_labels_check(const char *s, const char **why, size_t *at);

/* Iterates over a text ms_labels_check accepted: starts with *pos = 0, returns 1 and
 * fills *l for every label, 0 at the end. Malformed items are skipped. */
int ms_labels_next(const char *s, size_t *pos, ms_label *l);

#endif
