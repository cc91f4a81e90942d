#!/bin/sh
# `memsight run`: the program's stdin, stdout, stderr and exit status pass through
# unchanged (a signal death becomes 128+signal), signals sent to memsight reach the
# program, the exit summary names the allocating function, static and setuid programs
# get a clear message and still run. Needs MEMSIGHT and MS_AGENT (set by CTest).
set -u
fail=0
ok() { printf 'ok   %s\n' "$1"; }
bad() { printf 'FAIL %s\n' "$1"; fail=1; }
expect_eq() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got [$2], expected [$3]"; fi; }

T=$(mktemp -d /tmp/ms-run-XXXXXX)
trap 'rm -rf "$T"' EXIT
CC=${CC:-cc}

# A program with a known ground truth: echoes stdin, writes to both streams, keeps
# 7 blocks of 1000 bytes from one named function, exits 7.
cat > "$T/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static void *volatile keep[7];
__attribute__((noinline)) void ms_run_keeper(int i) { keep[i] = malloc(1000); memset(keep[i], i, 1000); }
int main(int argc, char **argv) {
    char line[256];
    for (int i = 0; i < 7; i++) ms_run_keeper(i);
    while (fgets(line, sizeof line, stdin)) printf("in: %s", line);
    fprintf(stderr, "to stderr %d\n", argc);
    return argc > 1 ? atoi(argv[1]) : 7;
}
EOF
$CC -O2 -g -o "$T/prog" "$T/prog.c" || { echo "cannot compile the test program"; exit 1; }

# 1. Streams and status, compared with a run without memsight.
printf 'one\ntwo\n' | "$T/prog" >"$T/ref.out" 2>"$T/ref.err"; ref=$?
printf 'one\ntwo\n' | "$MEMSIGHT" run -o "$T/snaps" -- "$T/prog" >"$T/run.out" 2>"$T/run.err"; got=$?
expect_eq "exit status passes through" "$got" "$ref"
if cmp -s "$T/ref.out" "$T/run.out"; then ok "stdout unchanged"; else bad "stdout differs"; fi
if head -n 1 "$T/run.err" | cmp -s "$T/ref.err" -; then ok "program's stderr comes first, unchanged"
else bad "stderr: $(head -n 2 "$T/run.err")"; fi
"$MEMSIGHT" run -q -o "$T/snaps" -- "$T/prog" 42 </dev/null >/dev/null 2>"$T/q.err"; got=$?
expect_eq "other exit status" "$got" 42
expect_eq "--quiet prints nothing of its own" "$(cat "$T/q.err")" "to stderr 2"
expect_eq "snapshot directory is 0700" "$(stat -c %a "$T/snaps")" 700

# 2. The summary (needs a working agent): the keeper's 7 blocks, its name, the snapshot.
if grep -q "snapshot $T/snaps/memsight-[0-9]*-[0-9]*-exit.msnap" "$T/run.err"; then
    ok "summary names the exit snapshot"
    if grep -q "6.8 KiB in 7 blocks" "$T/run.err" && grep -q "ms_run_keeper" "$T/run.err"; then
        ok "summary shows the keeper's 7 blocks, symbolized"
    else bad "summary lacks the keeper: $(cat "$T/run.err")"; fi
    snap=$(ls "$T"/snaps/memsight-*-exit.msnap | head -n 1)
    expect_eq "snapshot file is 0600" "$(stat -c %a "$snap")" 600
else
    bad "no exit snapshot in the summary: $(cat "$T/run.err")"
fi

# 2b. A program that forks: each child writes its own snapshot, the summary counts them.
cat > "$T/fork.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
static void *volatile keep;
int main(void) {
    for (int i = 0; i < 2; i++)
        if (fork() == 0) { keep = malloc(50); exit(0); }
    while (wait(NULL) > 0) {}
    return 0;
}
EOF
$CC -O2 -g -o "$T/fork" "$T/fork.c" || exit 1
"$MEMSIGHT" run -o "$T/fsnaps" -- "$T/fork" 2>"$T/fork.err"; got=$?
expect_eq "forking program: status" "$got" 0
expect_eq "forking program: exit snapshots" "$(ls "$T"/fsnaps/memsight-*-exit.msnap | wc -l)" 3
grep -q "2 more exit snapshot(s) from child processes" "$T/fork.err" && ok "children's snapshots counted" \
    || bad "children not counted: $(cat "$T/fork.err")"
# another program run into the same directory in the same second is not one of its children
"$MEMSIGHT" run -q -o "$T/fsnaps" -- "$T/fork" 2>/dev/null
"$MEMSIGHT" run -o "$T/fsnaps" -- "$T/fork" 2>"$T/fork2.err"
expect_eq "three runs: exit snapshots" "$(ls "$T"/fsnaps/memsight-*-exit.msnap | wc -l)" 9
grep -q "2 more exit snapshot(s) from child processes" "$T/fork2.err" && ok "unrelated runs not counted" \
    || bad "unrelated runs counted: $(cat "$T/fork2.err")"

# 2c. C++: operator new from a method in a namespace, inlined helper; names demangled.
if command -v "${CXX:-c++}" >/dev/null 2>&1; then
    cat > "$T/cxx.cc" <<'EOF'
#include <cstdio>
#include <string>
#include <vector>
namespace shop {
struct Basket {
    std::vector<std::string *> items;
    __attribute__((noinline)) void add(int i) { items.push_back(new std::string(64 + i, 'x')); }
};
}
int main() {
    static shop::Basket b;
    for (int i = 0; i < 9; i++) b.add(i);
    std::printf("%zu\n", b.items.size());
    return 0;
}
EOF
    if "${CXX:-c++}" -O2 -g -o "$T/cxx" "$T/cxx.cc"; then
        "$MEMSIGHT" run -q -o "$T/cxsnaps" -- "$T/cxx" >/dev/null
        "$MEMSIGHT" report --format json "$T"/cxsnaps/memsight-*-exit.msnap | python3 -c '
import json, sys
d = json.load(sys.stdin)
hits = [s for s in d["stacks"] if any(f["function"] == "shop::Basket::add(int)" for f in s["frames"])]
# 9 std::string objects of 32 bytes from operator new in add()
assert any(s["live_blocks"] == 9 and s["live_bytes"] == 9 * 32 for s in hits), hits
' && ok "C++: shop::Basket::add(int) demangled, 9 objects" || bad "C++ stacks"
    fi
else
    echo "skip C++ program: no C++ compiler"
fi

# 3. Death by a signal: 128+signal, as a shell reports it.
"$MEMSIGHT" run -q -o "$T/snaps" -- sh -c 'kill -TERM $$' 2>/dev/null; got=$?
expect_eq "killed by SIGTERM gives 143" "$got" 143
"$MEMSIGHT" run -q -o "$T/snaps" -- sh -c 'kill -SEGV $$' 2>/dev/null; got=$?
expect_eq "killed by SIGSEGV gives 139" "$got" 139

# 4. A signal sent to memsight reaches the program (which reports it and exits 3).
"$MEMSIGHT" run -q -o "$T/snaps" -- sh -c 'trap "echo got-hup; exit 3" HUP; echo ready; while :; do sleep 0.1; done' >"$T/sig.out" 2>&1 &
mpid=$!
i=0
while [ "$i" -lt 100 ] && ! grep -q ready "$T/sig.out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
kill -HUP "$mpid"
wait "$mpid"; got=$?
expect_eq "SIGHUP forwarded: the program's own exit status" "$got" 3
if grep -q got-hup "$T/sig.out"; then ok "the program saw the SIGHUP"; else bad "no SIGHUP in the program"; fi

# 5. The preload is prepended to an existing LD_PRELOAD, not replacing it.
libm=$(ldconfig -p 2>/dev/null | awk '/libm\.so\.6 .*x86-64/ {print $NF; exit}')
if [ -n "$libm" ]; then
    maps=$(LD_PRELOAD="$libm" "$MEMSIGHT" run -q -o "$T/snaps" -- cat /proc/self/maps)
    if echo "$maps" | grep -q libmemsight.so && echo "$maps" | grep -q "$(basename "$libm")"; then
        ok "agent preloaded alongside an existing LD_PRELOAD"
    else bad "LD_PRELOAD not combined"; fi
fi

# 6. A missing program: the shell's 127 and a message naming it.
"$MEMSIGHT" run -q -o "$T/snaps" -- "$T/no-such-program" 2>"$T/nf.err"; got=$?
expect_eq "missing program gives 127" "$got" 127
grep -q "cannot run '$T/no-such-program'" "$T/nf.err" && ok "missing program named" || bad "message: $(cat "$T/nf.err")"

# 7. A static program: a clear message, and it still runs with its own status and output.
if $CC -static -O2 -o "$T/static" "$T/prog.c" 2>/dev/null; then
    out=$(echo hi | "$MEMSIGHT" run -o "$T/snaps" -- "$T/static" 5 2>"$T/st.err"); got=$?
    expect_eq "static program: status" "$got" 5
    expect_eq "static program: output" "$out" "in: hi"
    grep -q "statically linked.*runs unobserved" "$T/st.err" && ok "static program: message" \
        || bad "static message: $(cat "$T/st.err")"
else
    echo "skip static program: no static C library (libc.a) to link one"
fi

# 8. A setuid program (as root: owned by another user, so the loader runs it securely).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -m 755 "$T/suid" && cp "$T/prog" "$T/suid/prog" && chown nobody "$T/suid/prog" &&
        chmod 4755 "$T/suid/prog" && chmod 755 "$T"
    "$MEMSIGHT" run -o "$T/snaps" -- "$T/suid/prog" 9 </dev/null >/dev/null 2>"$T/su.err"; got=$?
    expect_eq "setuid program: status" "$got" 9
    grep -q "is setuid.*runs unobserved" "$T/su.err" && ok "setuid program: message" \
        || bad "setuid message: $(cat "$T/su.err")"
else
    echo "skip setuid program: needs root to make one owned by another user"
fi

# 9. Usage errors.
"$MEMSIGHT" run 2>/dev/null; expect_eq "no program: status 2" "$?" 2
"$MEMSIGHT" run --bogus -- true 2>/dev/null; expect_eq "unknown option: status 2" "$?" 2
"$MEMSIGHT" run --help | grep -q "usage: memsight run" && ok "--help" || bad "--help"
exit $fail
