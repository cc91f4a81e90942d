#!/bin/sh
# The agent's own memory, beside heaptrack's, in one run:
#  1. a program keeping BLOCKS small blocks live (bench-memory.c): the agent's tables per
#     live block from its exit snapshot (HLTH live_table_bytes over live_table_blocks, and
#     the stack table), and what each tool adds to the resident set per live block: the
#     program's own VmRSS growth over the allocations, and the peak of the whole process
#     tree (heaptrack's interpreter process and memsight run included);
#  2. bench-full's python3 churn (PYTHONMALLOC=malloc): peak resident set of the process
#     tree without a tool, under memsight run (full mode) and under heaptrack.
# Peaks of the tree are sampled every 10 ms (a summed peak may miss a short spike); the
# program's own figures are exact. Asserts nothing.
# usage: bench/bench-memory.sh [BUILD_DIR] [BLOCKS]   (env: AGENT_OPTIONS extra agent options)
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$SRC/build}}
case $BUILD in /*) ;; *) BUILD=$SRC/$BUILD ;; esac
N=${2:-1000000}
MEMSIGHT=$BUILD/bin/memsight
PY=/usr/bin/python3
[ -x "$MEMSIGHT" ] || { echo "build first: $MEMSIGHT is missing" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/msmembench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
cc -O2 -g -o "$WORK/prog" "$SRC/bench/bench-memory.c"
# peak RSS of a command's whole process tree: "peak_kb=K procs=NAME:KB,..." on stdout
cat > "$WORK/treerss.py" <<'PYEOF'
import os, subprocess, sys, time
def kids():
    out = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                s = open('/proc/%s/stat' % d).read()
                out.setdefault(int(s[s.rindex(')') + 2:].split()[1]), []).append(int(d))
            except OSError:
                pass
    return out
def rss(pid):
    try:
        for line in open('/proc/%d/status' % pid):
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    except OSError:
        pass
    return 0
def name(pid):
    try:
        return open('/proc/%d/comm' % pid).read().strip()
    except OSError:
        return '?'
out = open(sys.argv[1], 'w')
p = subprocess.Popen(sys.argv[2:], stdout=out)
peak, per = 0, {}
while p.poll() is None:
    k, pending, tree = kids(), [p.pid], []
    while pending:
        q = pending.pop()
        tree.append(q)
        pending.extend(k.get(q, []))
    sizes = [(name(q), rss(q)) for q in tree]
    tot = sum(s for _, s in sizes)
    if tot > peak:
        peak = tot
    for n, s in sizes:
        per[n] = max(per.get(n, 0), s)
    time.sleep(0.01)
if p.returncode:
    sys.exit('%s failed (%d)' % (sys.argv[2], p.returncode))
print('peak_kb=%d procs=%s' % (peak, ','.join('%s:%d' % kv for kv in sorted(per.items()) if kv[1])))
PYEOF

if [ -n "${AGENT_OPTIONS:-}" ]; then OPT="-O $AGENT_OPTIONS"; else OPT=""; fi
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2" | head -1; }
tree() { # OUT TOOL...: runs the rest, its stdout to OUT.out, the tree's peak to OUT.rss
    o=$1; shift
    $PY "$WORK/treerss.py" "$o.out" "$@" > "$o.rss"
}
have_ht=0; command -v heaptrack >/dev/null 2>&1 && have_ht=1

echo "== $N live blocks (bench-memory.c)"
tree "$WORK/base" "$WORK/prog" "$N"
mkdir -p "$WORK/snaps" "$WORK/ht"
tree "$WORK/ms" "$MEMSIGHT" run -q -o "$WORK/snaps" $OPT -- "$WORK/prog" "$N"
[ $have_ht = 1 ] && tree "$WORK/ht" heaptrack -o "$WORK/ht/prog" "$WORK/prog" "$N" 2>/dev/null
$PY - "$WORK" "$N" "$SRC/tests/integration" $have_ht <<'PYEOF'
import glob, os, re, sys
work, n, have_ht = sys.argv[1], int(sys.argv[2]), sys.argv[4] == '1'
sys.path.insert(0, sys.argv[3])
import agent_snap
def prog(tag):
    t = open(os.path.join(work, tag + '.out')).read()
    m = re.search(r'rss_before_kb=(\d+) rss_after_kb=(\d+)', t)
    return (int(m.group(2)) - int(m.group(1))) * 1024
def tree(tag):
    return int(re.search(r'peak_kb=(\d+)', open(os.path.join(work, tag + '.rss')).read()).group(1)) * 1024
snap = agent_snap.read(sorted(glob.glob(os.path.join(work, 'snaps', '*-exit.msnap')))[-1])
h = snap['health']
live = h.get('live_table_blocks', 0)
print('memsight tables: live table %d bytes for %d live blocks = %.1f B/block; header 16 B/block '
      'in the program\'s heap; %d stacks' % (h.get('live_table_bytes', 0), live,
                                              h.get('live_table_bytes', 0) / max(live, 1),
                                              h.get('stack_table_used', 0)))
b = prog('base')
print('%-10s %14s %14s %16s %16s' % ('', 'program +RSS', 'B/block', 'tree peak', 'tree +B/block'))
rows = [('base', b, tree('base')), ('memsight', prog('ms'), tree('ms'))]
if have_ht:
    rows.append(('heaptrack', prog('ht'), tree('ht')))
for name, p, t in rows:
    print('%-10s %11.1f MB %14.1f %13.1f MB %16.1f' % (name, p / 1e6, (p - b) / n, t / 1e6,
                                                       (t - rows[0][2]) / n))
PYEOF

echo "== python3 churn (bench-full), peak resident set of the process tree"
tree "$WORK/pyb" env PYTHONMALLOC=malloc $PY "$SRC/bench/churn.py"
tree "$WORK/pym" env PYTHONMALLOC=malloc "$MEMSIGHT" run -q -o "$WORK/snaps" $OPT -- $PY "$SRC/bench/churn.py"
[ $have_ht = 1 ] && tree "$WORK/pyh" env PYTHONMALLOC=malloc heaptrack -o "$WORK/ht/py" $PY "$SRC/bench/churn.py" 2>/dev/null
for t in pyb pym pyh; do
    [ -f "$WORK/$t.rss" ] || continue
    case $t in pyb) n=base ;; pym) n=memsight ;; pyh) n=heaptrack ;; esac
    k=$(field peak_kb "$WORK/$t.rss"); b=$(field peak_kb "$WORK/pyb.rss")
    printf '%-10s %8.1f MB  x%5.2f  (%s)\n' "$n" "$(echo "$k / 1000" | bc -l)" "$(echo "$k / $b" | bc -l)" \
        "$(field procs "$WORK/$t.rss")"
done
