#!/bin/sh
# What a block's timestamp costs through the C library's clock_gettime and through the
# vDSO's own function called directly (the agent's way, vdso.c): bench-clock.c, both in
# one run, interleaved. Not countable under valgrind, which gives programs no vDSO.
# usage: bench/bench-clock.sh [READS] [ROUNDS]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msclock.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -o "$WORK/bench-clock" "$SRC/bench/bench-clock.c" -ldl
"$WORK/bench-clock" "$@"
