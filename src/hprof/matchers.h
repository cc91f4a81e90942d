/* Reference matchers after Shark's (LeakCanary): references that never cause a leak
 * (ignored: the path search does not follow them) and references known to leak in
 * Android or vendor code (library leaks: followed only when nothing else reaches an
 * object, and a leak whose path needs one is reported apart, as not the application's
 * bug). Matched on instance fields, static fields and GC roots (a JNI global holding a
 * class's instance; a thread's Java locals), filtered by the dump's Android API level and
 * manufacturer. A table of data and pure lookups: never reads the file, never prints. */
#ifndef MS_HPROF_MATCHERS_H
#define MS_HPROF_MATCHERS_H

#include <stddef.h>
#include <stdint.h>

#include "hprof/graph.h"

enum ms_hmatch_kind {
    MS_HMATCH_INSTANCE = 0, /* instance field cls#field (cls or a subclass declares it) */
    MS_HMATCH_STATIC = 1,   /* static field cls#field */
    MS_HMATCH_NATIVE = 2,   /* a JNI global root holding an instance of cls */
    MS_HMATCH_LOCAL = 3,    /* Java locals of the thread named field */
};

typedef struct ms_hmatcher {
    uint8_t kind;           /* ms_hmatch_kind */
    uint8_t ignored;        /* 1: never a leak (not followed); 0: a library leak */
    uint8_t subclasses;     /* NATIVE: instances of subclasses of cls match too */
    int16_t sdk_min, sdk_max; /* API levels it applies to (inclusive) */
    const char *cls, *field;
    const char *manufacturer; /* Build.MANUFACTURER it applies to, NULL: any */
    const char *build_id;     /* Build.ID it applies to, NULL: any */
    const char *description;
} ms_hmatcher;

/* The built-in table (Shark's AndroidReferenceMatchers and JDK ignored references, plus
 * memsight's binder-stub rule); *n receives its size. */
const ms_hmatcher *ms_hmatchers_table(size_t *n);

/* What the dump says about the device: android.os.Build$VERSION.SDK_INT,
 * Build.MANUFACTURER, Build.ID. sdk is -1 and the strings "" when the dump has none. */
typedef struct ms_hbuild {
    int sdk;
    char manufacturer[64];
    char id[64];
} ms_hbuild;

/* Does matcher m apply to this device? A matcher limited to API levels does not apply
 * when the level is unknown (a JVM dump). */
int ms_hmatcher_applies(const ms_hmatcher *m, const ms_hbuild *b);

/* Shark's text of a matcher's pattern: "instance field C#f", "static field C#f",
 * "native global variable referencing C", "local variable on thread T". */
void ms_hmatcher_pattern(const ms_hmatcher *m, char *buf, size_t len);

/* The matchers that apply to one graph, resolved against its classes. */
typedef struct ms_hmatch {
    const ms_hgraph *g;
    const ms_hmatcher *table;
    size_t ntable;
    uint8_t *applies;     /* ntable: 1 when the matcher applies to this dump */
    uint32_t *cls_first;  /* nclass + 1: instance-field matchers of class c (and its
                             superclasses) are cls_list[cls_first[c] .. cls_first[c+1]) */
    uint16_t *cls_list;
} ms_hmatch;

/* Resolves the table against g for device b. Returns 0, or -1 with a message. */
int ms_hmatch_init(ms_hmatch *m, const ms_hgraph *g, const ms_hbuild *b, char *err, size_t errlen);
void ms_hmatch_free(ms_hmatch *m);

/* The matcher (table index) that applies to edge e leaving object src, or -1. */
int ms_hmatch_edge(const ms_hmatch *m, ms_hidx src, uint64_t e);

/* The matcher (table index) that applies to GC root r (an index into g->roots), or -1.
 * thread_name gives the name of a thread by its serial (NULL when unknown). */
int ms_hmatch_root(const ms_hmatch *m, uint32_t r, const char *(*thread_name)(void *, uint32_t),
                   void *arg);

#endif
