/* Rewriting a heap dump: strip (primitive array contents zeroed, every length kept: a
 * valid dump without the app's data, for upload, as KOOM and Shark strip) and convert
 * between Android's format (JAVA PROFILE 1.0.3) and the standard one (what hprof-conv
 * does, and back). Streams the input (plain or gzip) once; writes only into the FILE
 * given, which must be seekable (record lengths are patched after their bodies). */
#ifndef MS_HPROF_REWRITE_H
#define MS_HPROF_REWRITE_H

#include <stddef.h>
#include <stdio.h>

enum {
    MS_HREWRITE_STRIP = 0,       /* primitive array contents zeroed, nothing else changed */
    MS_HREWRITE_TO_STANDARD = 1, /* 1.0.3 -> 1.0.2 with hprof-conv's rules */
    MS_HREWRITE_TO_ANDROID = 2,  /* 1.0.1/1.0.2 with 4-byte ids -> 1.0.3 */
};

typedef struct ms_hrewrite_opts {
    int mode;     /* MS_HREWRITE_* */
    int app_only; /* Android input: drop the instances and arrays of the zygote and image
                     heaps (hprof-conv -z, KOOM's crop); classes and roots are kept */
} ms_hrewrite_opts;

/* Rewrites the dump at in into out. Returns 0, or -1 with a message naming the offset
 * and the record (the input is damaged, of the wrong kind, or a write failed). */
int ms_hprof_rewrite(const char *in, FILE *out, const ms_hrewrite_opts *o, char *err, size_t errlen);

#endif
