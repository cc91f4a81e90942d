#!/bin/sh
# `make install` installs what a program needs to call the agent: the public header
# (memsight/memsight.h) and a pkg-config file. A program built with `pkg-config --cflags
# memsight` from the installed tree finds memsight_dump() with dlsym, and under
# `memsight run` writes an api snapshot with it.
set -eu
: "${MS_BUILD_DIR:?}" "${MEMSIGHT:?}"
T=$(mktemp -d "${TMPDIR:-/tmp}/ms-install.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$MS_BUILD_DIR" --prefix "$T/prefix" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail -5 "$T/install.log")"
H=$(find "$T/prefix" -path '*/include/memsight/memsight.h' | head -1)
[ -n "$H" ] || fail "no include/memsight/memsight.h installed"
PC=$(find "$T/prefix" -name memsight.pc | head -1)
[ -n "$PC" ] || fail "no memsight.pc installed"
export PKG_CONFIG_PATH="$(dirname "$PC")"
CFLAGS=$(pkg-config --cflags memsight) || fail "pkg-config cannot read $PC"
[ "$(pkg-config --modversion memsight)" != "" ] || fail "no version in memsight.pc"
LIBDIR=$(pkg-config --variable=libdir memsight)
[ -f "$LIBDIR/libmemsight.so" ] || fail "memsight.pc's libdir $LIBDIR holds no libmemsight.so"
cat > "$T/app.c" <<'CEOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <memsight/memsight.h>
int main(void)
{
    __typeof__(memsight_dump) *dump = (__typeof__(memsight_dump) *)dlsym(RTLD_DEFAULT, "memsight_dump");
    char path[4096] = "";
    int rc = dump ? dump(path, sizeof path) : -1;
    printf("%d %s\n", rc, path);
    return 0;
}
CEOF
# shellcheck disable=SC2086
cc $CFLAGS -o "$T/app" "$T/app.c" -ldl || fail "cannot build against the installed header"
"$T/app" | grep -q '^-1 $' || fail "without the agent memsight_dump must be absent"
mkdir "$T/out"
"$MEMSIGHT" run -q -o "$T/out" -- "$T/app" > "$T/app.out"
grep -q '^0 .*-api\.msnap$' "$T/app.out" || fail "memsight_dump under the agent: $(cat "$T/app.out")"
echo "ok: header and pkg-config file installed and usable"
