#!/bin/sh
# `make demo`: runs the bundled example under `memsight run`, then shows the full report
# of its exit snapshot. Usage: scripts/demo.sh BUILD_DIR. Writes only under BUILD_DIR.
set -eu
build=${1:-build}
memsight="$build/bin/memsight"
demo="$build/examples/demo"
for f in "$memsight" "$demo"; do
    [ -x "$f" ] || { echo "demo: $f is missing; build first (make build)" >&2; exit 1; }
done
out="$build/demo-snapshots"
rm -rf "$out"

echo "== memsight run --top 3 -O leak_check=exit -o $out -- $demo 20000"
"$memsight" run --top 3 -O leak_check=exit -o "$out" -- "$demo" 20000
snap=$(ls "$out"/memsight-*-exit.msnap 2>/dev/null | head -n 1)
[ -n "$snap" ] || { echo "demo: the agent wrote no exit snapshot in $out" >&2; exit 1; }

echo
echo "== memsight report --top 5 $snap"
"$memsight" report --top 5 "$snap"
echo
echo "The same as JSON (docs/json-report.md): $memsight report --format json $snap"
