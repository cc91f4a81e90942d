#!/bin/sh
# Reads the sample dumps (plain and gzipped) and the fuzzer's seed corpus on two threads under
# ThreadSanitizer (clang -fsanitize=thread): any data race in the reader's threaded
# passes fails the test. Usage: hprof_tsan.sh CLANG
set -eu
CLANG=${1:-clang}
SRC=$MS_SOURCE_DIR
OUT=$MS_BUILD_DIR/tests/tsan
mkdir -p "$OUT"
cat > "$OUT/read_two_threads.c" <<'C'
#include <stdio.h>
#include "hprof/reader.h"
int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        ms_hgraph *g = NULL;
        char err[512];
        ms_hprof_read_opts o = {.threads = 2};
        if (ms_hprof_read(argv[i], &o, &g, err, sizeof err)) {
            printf("refused %s\n", err);
            continue;
        }
        printf("%s: %u objects, %llu references\n", argv[i], g->nobj, (unsigned long long)g->nedge);
        bad |= g->nobj == 0 && g->nedge != 0;
        ms_hgraph_free(g);
    }
    return bad;
}
C
"$CLANG" -g -O1 -std=gnu11 -fsanitize=thread -I"$SRC/src" -I"$SRC/include" "$OUT/read_two_threads.c" \
    "$SRC/src/hprof/reader.c" "$SRC/src/hprof/graph.c" "$SRC/src/hprof/bigmem.c" "$SRC/src/hprof/names.c" "$SRC/src/hprof/sizes.c" \
    "$SRC/src/hprof/input.c" -lz -o "$OUT/read_two_threads"
# gzipped too: the two threads share the access points of one index
for f in "$SRC"/tests/data/hprof/*.hprof "$SRC"/tests/data/hprof/*android-hprof; do
    gzip -1 -c "$f" > "$OUT/$(basename "$f").gz"
done
TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$OUT/read_two_threads" \
    "$SRC"/tests/data/hprof/*.hprof "$SRC"/tests/data/hprof/*.bin "$SRC"/tests/data/hprof/*android-hprof \
    "$SRC"/tests/fuzz/corpus/hprof/* "$OUT"/*.gz
