#!/bin/sh
# Builds the HPROF reader's libFuzzer target with clang (ASan + UBSan) and runs it for a
# bounded time over the committed seed corpus; any crash, leak or trap fails the test.
# Usage: hprof_fuzz.sh CLANG [SECONDS]
set -eu
CLANG=${1:-clang}
SECS=${2:-${MS_HPROF_FUZZ_SECONDS:-20}}
SRC=$MS_SOURCE_DIR
OUT=$MS_BUILD_DIR/tests/fuzz
mkdir -p "$OUT"
BIN=$OUT/fuzz_hprof
"$CLANG" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$SRC/src" -I"$SRC/include" "$SRC/tests/fuzz/fuzz_hprof.c" "$SRC"/src/hprof/*.c \
    -lz -lm -o "$BIN"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# new inputs go to a scratch corpus; the committed seeds are read only
"$BIN" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$OUT/" "$WORK" "$SRC/tests/fuzz/corpus/hprof"
