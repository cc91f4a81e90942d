# The programs of bench/matrix.sh (sourced, bash). Each program NAME is registered with
#   prog NAME "DEBIAN PACKAGES" "FLAGS" [USER]
#                  FLAGS: exec (it starts other programs, so it also runs with
#                  --follow-exec), server (it also runs attach -> dump -> leaks -> detach);
#                  USER: the user it runs as (runuser -u USER before $M), who then owns
#                  its cell; its inputs are readable by all
# and defines
#   NAME_setup     once per matrix run, without the agent: inputs in $DATA (optional)
#   NAME_run       the workload, in $WORK: every command of the program is started as
#                  `$M cmd ...` ($M is empty without the agent, `memsight run ... --` in
#                  a mode); prints on stdout what must be the same in every mode,
#                  each command's exit status included (`st CMD...`)
#   NAME_check     reads $OUT_FILE (the workload's stdout) and says whether it is right,
#                  against ground truth computed here, not by the program under test;
#                  prints the reason and returns 1 when it is not
# Servers listen on 127.0.0.1:$PORT only (a port free when the cell starts), call
# `attach_point PID` once they serve (memsight attach in the attach mode, nothing
# otherwise) and `detach_point PID` before they are stopped (dump, leaks, detach), and
# name their processes' pids in $CELL/pids so that nothing is left running.

PROGS=""
prog() {
    PROGS="$PROGS $1"
    eval "PKGS_$1=\$2; FLAGS_$1=\$3; USER_$1=\${4:-}"
}

# st CMD...: runs CMD, then prints its exit status on a line of its own
st() {
    "$@"
    echo "[exit $?]"
}

# stq LOG CMD...: runs CMD with its output in LOG, then prints its exit status
stq() {
    local log=$1
    shift
    "$@" > "$log" 2>&1
    echo "[exit $?]"
}

# wait_port PORT: until something listens on 127.0.0.1:PORT (60 s at most)
wait_port() {
    local i=0
    until (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        i=$((i + 1))
        [ $i -ge 600 ] && { echo "nothing listens on port $1 after 60 s" >&2; return 1; }
        sleep 0.1
    done
}

# wait_file FILE: until FILE exists and is not empty (60 s at most)
wait_file() {
    local i=0
    until [ -s "$1" ]; do
        i=$((i + 1))
        [ $i -ge 600 ] && { echo "no $1 after 60 s" >&2; return 1; }
        sleep 0.1
    done
}

# "first A last B": the smallest and largest of (i * 7919) % 100003, i = 1..100000
sorted_ends() {
    awk 'BEGIN { lo = 1e9; hi = 0; for (i = 1; i <= 100000; i++) { v = (i * 7919) % 100003
        if (v < lo) lo = v; if (v > hi) hi = v } print "first " lo " last " hi }'
}

# attach_point PID, detach_point PID: in the attach mode, memsight attach to the server
# once it serves (with leak scans on request), and before it is stopped: a snapshot, a
# leak scan and the detach, each bounded in time; a step that fails is named in
# $CELL/attach.fail. Nothing in the other modes.
attach_point() {
    [ "$MODE" = attach ] || return 0
    timeout 120 "$MEMSIGHT" attach -o "$SNAPS" --leak-check signal "$1" >> "$CELL/attach.log" 2>&1 ||
        echo "memsight attach $1: exit $?" >> "$CELL/attach.fail"
}
detach_point() {
    [ "$MODE" = attach ] || return 0
    local step
    for step in dump leaks detach; do
        timeout 120 "$MEMSIGHT" "$step" "$1" >> "$CELL/attach.log" 2>&1 ||
            echo "memsight $step $1: exit $?" >> "$CELL/attach.fail"
    done
}

# the check's verdict: fail REASON
fail() {
    echo "$*"
    return 1
}

# expect_line LINE: the output has LINE exactly
expect_line() {
    grep -qxF -- "$1" "$OUT_FILE" || fail "no line '$1'"
}

# ---------------------------------------------------------------------------------------
# Programs with an allocator of their own

prog redis "redis-server redis-tools" "server"
redis_run() {
    local cli="redis-cli -h 127.0.0.1 -p $PORT"
    $M redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --pidfile "$CELL/redis.pid" --dir "$WORK" --logfile "$WORK/redis.log" \
        --enable-debug-command local &
    local srv=$!
    echo "$srv" >> "$CELL/pids"
    wait_port "$PORT" && wait_file "$CELL/redis.pid" || return 1
    cat "$CELL/redis.pid" >> "$CELL/pids"
    attach_point "$(cat "$CELL/redis.pid")"
    st $M $cli DEBUG POPULATE 50000 key 64
    st $M $cli DBSIZE
    st $M $cli SET greeting hello
    st $M $cli APPEND greeting ", world"
    st $M $cli GET greeting
    seq 1 2000 | sed 's/^/RPUSH list /' | $M $cli > /dev/null
    st $M $cli LLEN list
    st $M $cli SORT list DESC LIMIT 0 3
    st $M $cli HSET h a 1 b 2 c 3
    st $M $cli HGETALL h
    st $M $cli EVAL "local s = 0 for i = 1, 1000 do s = s + i end return s" 0
    stq "$WORK/benchmark.log" $M redis-benchmark -h 127.0.0.1 -p "$PORT" --dbnum 1 -n 20000 -c 4 -q \
        -t set,get,lpush,lpop
    detach_point "$(cat "$CELL/redis.pid")"
    st $M $cli DEL list
    st $M $cli DBSIZE
    st $M $cli SHUTDOWN NOSAVE
    wait "$srv"
    echo "redis-server: exit $?"
}
redis_check() {
    expect_line "50000" && expect_line "hello, world" && expect_line "2000" &&
        expect_line "1998" && expect_line "500500" && expect_line "50002" &&
        expect_line "redis-server: exit 0" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 14 ] || fail "a redis command failed"
}

# alloc_build NAME CFLAGS LIBS: the allocator program, and the libc build whose output is
# the ground truth (the checksum does not depend on the allocator)
alloc_build() {
    gcc -O2 -g -pthread $2 -o "$DATA/$1" "$HERE/matrix/alloc.c" $3 &&
        gcc -O2 -g -pthread -o "$DATA/alloc-libc" "$HERE/matrix/alloc.c" &&
        "$DATA/alloc-libc" | sed 's/^libc //' > "$DATA/expected"
}
alloc_check() { # NAME
    local want
    want=$(cat "$DATA/expected")
    expect_line "$1 $want" && expect_line "[exit 0]"
}

prog jemalloc "gcc libjemalloc-dev" ""
jemalloc_setup() { alloc_build jemalloc -DALLOC_JE -ljemalloc; }
jemalloc_run() { st $M "$DATA/jemalloc"; }
jemalloc_check() { alloc_check jemalloc; }

prog tcmalloc "gcc libgoogle-perftools-dev" ""
tcmalloc_setup() { alloc_build tcmalloc -DALLOC_TC -ltcmalloc; }
tcmalloc_run() { st $M "$DATA/tcmalloc"; }
tcmalloc_check() { alloc_check tcmalloc; }

prog mimalloc "gcc libmimalloc-dev" ""
mimalloc_setup() { alloc_build mimalloc -DALLOC_MI -lmimalloc; }
mimalloc_run() { st $M "$DATA/mimalloc"; }
mimalloc_check() { alloc_check mimalloc; }

# ---------------------------------------------------------------------------------------
# Runtimes with their own signals, threads and memory

prog java "openjdk-17-jdk-headless python3" ""
java_setup() {
    cp "$HERE/matrix/Churn.java" "$DATA/" &&
        /usr/bin/python3 - > "$DATA/expected" <<'EOF'
# Churn.java's total, computed here: the keys' lengths, the ints, the direct buffers'
# bytes (signed) and the text's length, per worker and round
total = 0
for wid in range(4):
    for rnd in range(40):
        for i in range(2000):
            total += i * 31 + wid + len("k%d-%d-%d" % (wid, rnd, i))
        cap = 64 * 1024 + rnd
        for i in range(0, cap, 4096):
            b = (i + rnd) & 0xff
            total += b - 256 if b > 127 else b
        total += len(("round %d of worker %d " % (rnd, wid)) * 200)
print("churn total %d" % total)
EOF
}
java_run() {
    st $M javac -d "$WORK" "$DATA/Churn.java"
    st $M java -Xmx256m -cp "$WORK" Churn
}
java_check() { expect_line "$(cat "$DATA/expected")" && [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 2 ] || fail "a java command failed"; }

prog node "nodejs" ""
node_run() {
    st $M node -e '
const zlib = require("zlib");
const { Worker, isMainThread } = require("worker_threads");
const m = new Map();
for (let i = 0; i < 200000; i++) m.set("k" + i, { i, s: "v".repeat(i % 50) });
let sum = 0;
for (const [k, v] of m) sum += v.i + v.s.length;
const text = Buffer.from(JSON.stringify([...m.keys()].slice(0, 20000)));
const back = zlib.gunzipSync(zlib.gzipSync(text));
console.log("map", m.size, "sum", sum, "json", text.length, "gzip round trip", back.equals(text));
const big = [];
for (let i = 0; i < 64; i++) big.push(Buffer.alloc(1 << 20, i));
console.log("buffers", big.reduce((a, b) => a + b[b.length - 1], 0));
const w = new Worker("let s = 0; for (let i = 0; i < 1e6; i++) s += i % 7; require(\"worker_threads\").parentPort.postMessage(s);", { eval: true });
w.on("message", (s) => console.log("worker", s));
'
}
node_check() {
    # sum of i (0..199999) plus sum of i%50 over the same range
    local want=$((199999 * 200000 / 2 + 4000 * 1225)) json
    json=$(awk 'BEGIN { n = 2 + 19999; for (i = 0; i < 20000; i++) n += length("k" i) + 2; print n }')
    expect_line "map 200000 sum $want json $json gzip round trip true" &&
        expect_line "buffers 2016" && expect_line "worker 2999997" && expect_line "[exit 0]"
}

prog perl "perl" ""
perl_run() {
    st $M perl -e '
use strict; use warnings;
my %h; $h{"k$_"} = "v" x ($_ % 40) for 1 .. 200000;
my $sum = 0; $sum += length($h{$_}) for keys %h;
my @s = sort { $a <=> $b } map { ($_ * 7919) % 100003 } 1 .. 100000;
my $text = join(" ", map { "word$_" } 1 .. 50000);
my $n = () = $text =~ /word\d*7\b/g;
my $packed = pack("N*", 1 .. 10000); my @back = unpack("N*", $packed);
print "keys ", scalar(keys %h), " len $sum first $s[0] last $s[-1] matches $n unpack $back[-1]\n";
'
}
perl_check() {
    # length: 200000 values of ($_ % 40) for 1..200000 = 5000 full cycles of 0..39
    expect_line "keys 200000 len $((5000 * 780)) $(sorted_ends) matches 5000 unpack 10000" &&
        expect_line "[exit 0]"
}

prog ruby "ruby" ""
ruby_run() {
    st $M ruby -e '
h = {}
200_000.times { |i| h["k#{i}"] = "v" * (i % 40) }
sum = h.values.sum(&:size)
threads = 4.times.map { |t| Thread.new { (1..200_000).select { |i| i % (t + 2) == 0 }.size } }
counts = threads.map(&:value)
GC.start
s = (1..100_000).map { |i| (i * 7919) % 100_003 }.sort
puts "keys #{h.size} len #{sum} threads #{counts.join(",")} first #{s.first} last #{s.last}"
'
}
ruby_check() {
    expect_line "keys 200000 len $((5000 * 780)) threads 100000,66666,50000,40000 $(sorted_ends)" &&
        expect_line "[exit 0]"
}

prog php "php-cli" ""
php_run() {
    # php with the extensions Debian enables (loaded with RTLD_DEEPBIND)
    st $M php -r '
$h = [];
for ($i = 0; $i < 200000; $i++) { $h["k$i"] = str_repeat("v", $i % 40); }
$sum = 0; foreach ($h as $v) { $sum += strlen($v); }
$j = json_encode(array_slice($h, 0, 1000)); $back = json_decode($j, true);
preg_match_all("/k\\d*7\\b/", implode(" ", array_keys($h)), $m);
$s = []; for ($i = 1; $i <= 100000; $i++) { $s[] = ($i * 7919) % 100003; } sort($s);
echo "keys ", count($h), " len $sum json ", count($back), " matches ", count($m[0]), " first ", $s[0], " last ", end($s), "\n";
'
}
php_check() {
    expect_line "keys 200000 len $((5000 * 780)) json 1000 matches 20000 $(sorted_ends)" &&
        expect_line "[exit 0]"
}

prog python3 "python3" "exec"
python3_run() {
    st $M /usr/bin/python3 -c '
import json, re, zlib, hashlib, sqlite3, threading, subprocess
d = {"k%d" % i: "v" * (i % 40) for i in range(200000)}
total = sum(len(v) for v in d.values())
text = json.dumps(d)
back = json.loads(zlib.decompress(zlib.compress(text.encode())).decode())
n = len(re.findall(r"k\d*7\b", " ".join(d)))
res = [0] * 4
def work(t):
    res[t] = sum(1 for i in range(1, 200001) if i % (t + 2) == 0)
ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
db = sqlite3.connect(":memory:")
db.execute("create table t(x)")
db.executemany("insert into t values (?)", ((i,) for i in range(100000)))
(s,) = db.execute("select sum(x) from t").fetchone()
out = subprocess.run(["/bin/echo", "child"], capture_output=True, text=True).stdout.strip()
print("keys", len(back), "len", total, "matches", n, "threads", res, "sum", s, out)
'
}
python3_check() {
    expect_line "keys 200000 len $((5000 * 780)) matches 20000 threads [100000, 66666, 50000, 40000] sum 4999950000 child" &&
        expect_line "[exit 0]"
}

prog tclsh "tcl" ""
tclsh_run() {
    st $M tclsh <<'EOF'
set total 0
for {set i 0} {$i < 200000} {incr i} { dict set d k$i [string repeat v [expr {$i % 40}]] }
dict for {k v} $d { incr total [string length $v] }
set l {}
for {set i 1} {$i <= 100000} {incr i} { lappend l [expr {($i * 7919) % 100003}] }
set l [lsort -integer $l]
puts "keys [dict size $d] len $total first [lindex $l 0] last [lindex $l end]"
EOF
}
tclsh_check() { expect_line "keys 200000 len $((5000 * 780)) $(sorted_ends)" && expect_line "[exit 0]"; }

prog bash "bash" "exec"
bash_run() {
    st $M bash -c '
declare -A h
for ((i = 0; i < 20000; i++)); do h[k$i]=$((i * i % 1009)); done
sum=0; for k in "${!h[@]}"; do sum=$((sum + h[$k])); done
s=""; for ((i = 0; i < 2000; i++)); do s+="x$i"; done
lines=$(seq 1 5000 | while read -r n; do echo $((n % 13)); done | sort -n | uniq -c | wc -l)
echo "keys ${#h[@]} sum $sum len ${#s} groups $lines"
'
}
bash_check() {
    local want
    want=$(awk 'BEGIN { s = 0; for (i = 0; i < 20000; i++) s += (i * i) % 1009; print s }')
    expect_line "keys 20000 sum $want len 8890 groups 13" && expect_line "[exit 0]"
}

# ---------------------------------------------------------------------------------------
# A browser engine: chromium headless (PartitionAlloc, its malloc shim, sandboxed and
# zygote processes it execs from its own binary)

# as an unprivileged user: its sandbox on (as root it runs only with --no-sandbox)
prog chromium "chromium" "exec" nobody
chromium_setup() {
    cat > "$DATA/page.html" <<'EOF'
<!DOCTYPE html>
<html><head><title>matrix</title></head><body><pre id="out"></pre>
<script>
const sieve = new Uint8Array(100000);
let count = 0, sum = 0;
for (let i = 2; i < 100000; i++) {
  if (sieve[i]) continue;
  count++; sum += i;
  for (let j = i * i; j < 100000; j += i) sieve[j] = 1;
}
const rows = [];
for (let i = 0; i < 2000; i++) rows.push({ id: i, name: "row" + i });
const back = JSON.parse(JSON.stringify(rows));
const list = document.createElement("ul");
for (const r of back) { const li = document.createElement("li"); li.textContent = r.name; list.appendChild(li); }
document.body.appendChild(list);
document.getElementById("out").textContent =
  "primes " + count + " sum " + sum + " items " + document.querySelectorAll("li").length;
</script></body></html>
EOF
}
chromium_run() {
    # the binary itself, not Debian's wrapper script (which would be the observed program)
    st runuser -u nobody -- $M /usr/lib/chromium/chromium --headless --disable-gpu --no-first-run \
        --no-default-browser-check --user-data-dir="$WORK/profile" \
        --dump-dom "file://$DATA/page.html" 2> "$WORK/chromium.log"
}
chromium_check() {
    expect_line '<html><head><title>matrix</title></head><body><pre id="out">primes 9592 sum 454396537 items 2000</pre>' &&
        [ "$(grep -o '<li>row[0-9]*</li>' "$OUT_FILE" | sort -u | wc -l)" = 2000 ] || fail "not 2000 list items"
    expect_line "[exit 0]"
}

# ---------------------------------------------------------------------------------------
# Multi-process servers

# as the user postgres (it refuses to run as root)
prog postgres "postgresql" "exec server" postgres
PG_AS="runuser -u postgres --"
postgres_run() {
    local bin=/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin
    local psql="$bin/psql -X -q -A -t -h 127.0.0.1 -p $PORT -U postgres -v ON_ERROR_STOP=1"
    stq "$WORK/initdb.log" $PG_AS $M "$bin/initdb" -D "$WORK/pg" -A trust -U postgres -E UTF8 \
        --locale=C --no-sync
    $PG_AS $M "$bin/postgres" -D "$WORK/pg" -p "$PORT" -k "$WORK" -c listen_addresses=127.0.0.1 \
        -c fsync=off -c max_parallel_workers_per_gather=2 > "$WORK/postgres.log" 2>&1 &
    local srv=$!
    echo "$srv" >> "$CELL/pids"
    wait_port "$PORT" && wait_file "$WORK/pg/postmaster.pid" || return 1
    local pm
    pm=$(head -1 "$WORK/pg/postmaster.pid")
    echo "$pm" >> "$CELL/pids"
    local i=0
    until "$bin/pg_isready" -q -h 127.0.0.1 -p "$PORT" || [ $i -ge 300 ]; do sleep 0.2; i=$((i + 1)); done
    attach_point "$pm"
    st $PG_AS $M $psql <<'EOF'
create table t (id int primary key, k text, v int);
insert into t select i, 'key' || (i % 1000), (i * 7919) % 100003 from generate_series(1, 200000) i;
create index on t (k);
analyze t;
select count(*), sum(v) from t;
select k, count(*) from t where k in ('key1', 'key999') group by k order by k;
set work_mem = '64kB';
select v from t order by v desc, id limit 3;
set parallel_setup_cost = 0; set parallel_tuple_cost = 0; set min_parallel_table_scan_size = 0;
select count(distinct k) from t;
select string_agg(k, ',' order by id) from (select * from t order by id limit 5) s;
with recursive f(n, a) as (select 1, 1::numeric union all select n + 1, a * (n + 1) from f where n < 30)
select a from f where n = 30;
EOF
    detach_point "$pm"
    st $PG_AS $M $psql -c 'select count(*) from t where v < 1000'
    stq "$WORK/pg_ctl.log" $PG_AS "$bin/pg_ctl" -D "$WORK/pg" -m fast -w -t 60 stop
    wait "$srv"
    echo "postgres: exit $?"
}
postgres_check() {
    local sum
    sum=$(awk 'BEGIN { s = 0; for (i = 1; i <= 200000; i++) s += (i * 7919) % 100003; printf "%.0f\n", s }')
    expect_line "200000|$sum" && expect_line "key1|200" && expect_line "key999|200" &&
        expect_line "1000" && expect_line "key1,key2,key3,key4,key5" &&
        expect_line "265252859812191058636308480000000" && expect_line "postgres: exit 0" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 4 ] || fail "a postgres command failed"
}

prog nginx "nginx-light curl" "server"
nginx_setup() {
    mkdir -p "$DATA/www" &&
        seq 1 200000 | awk '{ print $1, $1 * $1 % 9973, "lorem ipsum dolor sit amet" }' > "$DATA/www/big.txt" &&
        for i in $(seq 1 50); do echo "page $i" > "$DATA/www/p$i.html"; done
}
nginx_run() {
    mkdir -p "$WORK/tmp"
    cat > "$WORK/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 2;
pid $CELL/nginx.pid;
error_log $WORK/error.log notice;
env MSM_CELL;
events { worker_connections 64; }
http {
    access_log off;
    default_type text/plain;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 100;
    server {
        listen 127.0.0.1:$PORT;
        root $DATA/www;
    }
}
EOF
    $M nginx -e "$WORK/error.log" -c "$WORK/nginx.conf" &
    local srv=$!
    echo "$srv" >> "$CELL/pids"
    wait_port "$PORT" && wait_file "$CELL/nginx.pid" || return 1
    local master
    master=$(cat "$CELL/nginx.pid")
    echo "$master" >> "$CELL/pids"
    attach_point "$master"
    local url="http://127.0.0.1:$PORT"
    $M curl -sS "$url/big.txt" | sha256sum | sed 's/ .*/ plain/'
    $M curl -sS --compressed "$url/big.txt" | sha256sum | sed 's/ .*/ gzip/'
    $M curl -sS -o /dev/null -w '%{http_code}\n' $(for i in $(seq 1 50); do echo "$url/p$i.html"; done) | sort | uniq -c
    st $M curl -sS -o /dev/null -w '%{http_code}\n' "$url/missing"
    detach_point "$master"
    $M curl -sS "$url/p7.html"
    kill -QUIT "$master"
    wait "$srv"
    echo "nginx: exit $?"
}
nginx_check() {
    local sum
    sum=$(sha256sum < "$DATA/www/big.txt" | sed 's/ .*//')
    expect_line "$sum plain" && expect_line "$sum gzip" && expect_line "     50 200" &&
        expect_line "404" && expect_line "page 7" && expect_line "nginx: exit 0"
}

# ---------------------------------------------------------------------------------------
# Compilers

prog gcc "gcc" "exec"
gen_c() { # a C file of many functions, for the compilers
    awk 'BEGIN {
        print "#include <stdio.h>";
        for (i = 0; i < 400; i++) {
            printf "static unsigned f%d(unsigned x) { unsigned s = x; for (int i = 0; i < %d; i++) s = s * 2654435761u + %d; return s; }\n", i, i % 17 + 1, i;
        }
        print "int main(void) { unsigned s = 1;";
        for (i = 0; i < 400; i++) printf "  s ^= f%d(s);\n", i;
        print "  printf(\"gen %u\\n\", s); return 0; }";
    }'
}
gcc_setup() {
    gen_c > "$DATA/gen.c" && gcc -O0 -o "$DATA/gen-ref" "$DATA/gen.c" && "$DATA/gen-ref" > "$DATA/expected" &&
        gcc -O0 -pthread -o "$DATA/alloc-ref" "$HERE/matrix/alloc.c" && "$DATA/alloc-ref" >> "$DATA/expected"
}
gcc_run() {
    st $M gcc -O2 -g -Wall -o "$WORK/gen" "$DATA/gen.c"
    st $M gcc -O2 -g -pthread -o "$WORK/alloc" "$HERE/matrix/alloc.c"
    st "$WORK/gen"
    st "$WORK/alloc"
}
gcc_check() {
    expect_line "$(sed -n 1p "$DATA/expected")" && expect_line "$(sed -n 2p "$DATA/expected")" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 4 ] || fail "a command failed"
}

prog clang "clang" "exec"
clang_setup() {
    gen_c > "$DATA/gen.c" && gcc -O0 -o "$DATA/gen-ref" "$DATA/gen.c" && "$DATA/gen-ref" > "$DATA/expected" &&
        cat > "$DATA/prog.cc" <<'EOF'
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main() {
    std::map<std::string, std::vector<int>> m;
    for (int i = 0; i < 100000; i++) m["k" + std::to_string(i % 997)].push_back(i);
    long s = 0;
    for (auto &e : m) s += e.second.size() * e.first.size();
    std::regex re("k(\\d+)7");
    int n = 0;
    for (auto &e : m) n += std::regex_match(e.first, re);
    std::cout << "keys " << m.size() << " weight " << s << " matches " << n << "\n";
}
EOF
}
clang_run() {
    st $M clang -O2 -g -o "$WORK/gen" "$DATA/gen.c"
    st $M clang++ -O1 -g -o "$WORK/prog" "$DATA/prog.cc"
    st "$WORK/gen"
    st "$WORK/prog"
}
clang_check() {
    # keys k0..k996; k0-k9 hold 101 or 100 values...: computed by awk the same way
    local want
    want=$(awk 'BEGIN { for (i = 0; i < 100000; i++) c[i % 997]++; s = 0; n = 0;
        for (k in c) { s += c[k] * length("k" k); if (("k" k) ~ /^k[0-9]+7$/) n++ }
        print "keys 997 weight " s " matches " n }')
    expect_line "$(cat "$DATA/expected")" && expect_line "$want" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 4 ] || fail "a command failed"
}

prog make "make gcc" "exec"
make_setup() {
    mkdir -p "$DATA/proj" && for i in $(seq 1 30); do
        printf 'int part%d(int x) { return x * %d + %d; }\n' "$i" "$i" "$i" > "$DATA/proj/part$i.c"
    done &&
        {
            echo '#include <stdio.h>'
            for i in $(seq 1 30); do echo "int part$i(int);"; done
            echo 'int main(void) { int s = 0;'
            for i in $(seq 1 30); do echo "  s = part$i(s) % 1000003;"; done
            echo '  printf("parts %d\n", s); return 0; }'
        } > "$DATA/proj/main.c" &&
        printf 'SRCS := $(wildcard $(SRC)/*.c)\nOBJS := $(notdir $(SRCS:.c=.o))\nprog: $(OBJS)\n\t$(CC) -o $@ $^\n%%.o: $(SRC)/%%.c\n\t$(CC) -O1 -c -o $@ $<\n' > "$DATA/proj/Makefile"
}
make_run() {
    st $M make -s -j2 -f "$DATA/proj/Makefile" SRC="$DATA/proj"
    st ./prog
}
make_check() {
    local want
    want=$(awk 'BEGIN { s = 0; for (i = 1; i <= 30; i++) s = (s * i + i) % 1000003; print s }')
    expect_line "parts $want" && [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 2 ] || fail "a command failed"
}

# ---------------------------------------------------------------------------------------
# The usual tools

text_setup() { # DATA/text: 200,000 lines, 7.6 MB
    seq 1 200000 | awk '{ print $1, ($1 * $1) % 9973, "lorem ipsum dolor sit amet", $1 % 7 }' > "$DATA/text"
}

prog git "git" "exec"
git_setup() {
    mkdir -p "$DATA/src" && for i in $(seq 1 200); do
        seq "$i" $((i + 300)) > "$DATA/src/f$i.txt"
    done
}
git_run() {
    export HOME="$WORK" GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@example.org \
        GIT_COMMITTER_NAME=m GIT_COMMITTER_EMAIL=m@example.org \
        GIT_AUTHOR_DATE="2020-01-01T00:00:00Z" GIT_COMMITTER_DATE="2020-01-01T00:00:00Z"
    st $M git init -q -b main repo
    cp -r "$DATA/src/." repo/
    st $M git -C repo add -A
    st $M git -C repo commit -q -m first
    st $M git -C repo checkout -q -b topic
    for i in $(seq 1 20); do echo change >> "repo/f$i.txt"; done
    st $M git -C repo commit -q -am second
    st $M git -C repo checkout -q main
    echo new > repo/new.txt
    st $M git -C repo add new.txt
    st $M git -C repo commit -q -m third
    st $M git -C repo merge -q --no-ff -m merge topic
    st $M git -C repo log --format='%H %s'
    st $M git -C repo diff --stat HEAD~2 HEAD
    st $M git -C repo gc -q
    st $M git -C repo fsck --strict --no-progress
    st $M git clone -q repo copy
    st $M git -C copy rev-parse HEAD
    $M git -C copy ls-files | wc -l
    echo "[exit ${PIPESTATUS[0]}]"
    $M git -C copy show HEAD:f150.txt | sha256sum
    echo "[exit ${PIPESTATUS[0]}]"
}
git_check() {
    expect_line "$(sha256sum < "$DATA/src/f150.txt")" && expect_line "201" &&
        expect_line " 21 files changed, 21 insertions(+)" || return 1
    [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 17 ] || fail "a git command failed"
}

prog sqlite3 "sqlite3" ""
sqlite3_run() {
    st $M sqlite3 "$WORK/db" <<'EOF'
create table t(id integer primary key, k text, v int);
with recursive c(i) as (select 1 union all select i + 1 from c where i < 200000)
insert into t select i, 'key' || (i % 1000), (i * 7919) % 100003 from c;
create index tk on t(k);
select count(*), sum(v) from t;
select k, count(*) from t where k in ('key1', 'key999') group by k order by k;
select v, row_number() over (order by v desc, id) from t order by v desc, id limit 3;
select json_group_array(id) from (select id from t order by id limit 5);
vacuum;
pragma integrity_check;
EOF
}
sqlite3_check() {
    local sum
    sum=$(awk 'BEGIN { s = 0; for (i = 1; i <= 200000; i++) s += (i * 7919) % 100003; printf "%.0f\n", s }')
    expect_line "200000|$sum" && expect_line "key1|200" && expect_line "[1,2,3,4,5]" &&
        expect_line "ok" && expect_line "[exit 0]"
}

# compressor NAME COMPRESS DECOMPRESS: the text compressed and back, both hashed
compressor_run() {
    local c=$1 d=$2
    $M $c < "$DATA/text" > "$WORK/z"
    echo "compress: $?"
    $M $d < "$WORK/z" | sha256sum
}
compressor_check() {
    expect_line "compress: 0" && expect_line "$(sha256sum < "$DATA/text")"
}

# compressor NAME PACKAGE COMPRESS DECOMPRESS: a compressor program of the matrix
compressor() {
    prog "$1" "$2" ""
    eval "$1_setup() { text_setup; }
        $1_run() { compressor_run '$3' '$4'; }
        $1_check() { compressor_check; }"
}
compressor xz xz-utils "xz -6 -T2 -c" "xz -d -T2 -c"
compressor gzip gzip "gzip -9 -c" "gzip -d -c"
compressor bzip2 bzip2 "bzip2 -9 -c" "bzip2 -d -c"
compressor zstd zstd "zstd -q -12 -T2 -c" "zstd -q -d -c"

prog tar "tar xz-utils" "exec"
tar_setup() { text_setup && git_setup; }
tar_run() {
    st $M tar -C "$DATA" -cJf "$WORK/a.tar.xz" src text
    $M tar -tJf "$WORK/a.tar.xz" | sort | sha256sum
    echo "[exit ${PIPESTATUS[0]}]"
    mkdir x
    st $M tar -C x -xJf "$WORK/a.tar.xz"
    st diff -r "$DATA/src" x/src
    st cmp "$DATA/text" x/text
}
tar_check() {
    local want
    want=$(cd "$DATA" && { echo src/; for i in $(seq 1 200); do echo "src/f$i.txt"; done; echo text; } | sort | sha256sum)
    expect_line "$want" && [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 5 ] || fail "a command failed or differed"
}

prog sort "coreutils" ""
sort_setup() { text_setup; }
sort_run() {
    # a small buffer: sort writes and merges temporary files, with two threads
    $M sort -S 1M --parallel=2 -T "$WORK" -k2,2n -k1,1n "$DATA/text" | sha256sum
    echo "sort: ${PIPESTATUS[0]}"
}
sort_check() {
    local want
    want=$(/usr/bin/python3 -c '
import hashlib, sys
rows = [l.split(" ") for l in open(sys.argv[1]).read().splitlines()]
rows.sort(key=lambda r: (int(r[1]), int(r[0])))
print(hashlib.sha256("".join(" ".join(r) + "\n" for r in rows).encode()).hexdigest() + "  -")' "$DATA/text")
    expect_line "$want" && expect_line "sort: 0"
}

prog awk "mawk" ""
awk_setup() { text_setup; }
awk_run() {
    st $M awk '{ c[$8]++; s += $2; w[$3 $1 % 100] = 1 } END { for (k in c) n++; for (k in w) m++; print "groups", n, "sum", s, "keys", m }' "$DATA/text"
}
awk_check() {
    local sum
    sum=$(/usr/bin/python3 -c 'print(sum(i * i % 9973 for i in range(1, 200001)))')
    expect_line "groups 7 sum $sum keys 100" && expect_line "[exit 0]"
}

prog sed "sed" ""
sed_setup() { text_setup; }
sed_run() {
    $M sed -E 's/([0-9]+) ([0-9]+) lorem/\2:\1 LOREM/; /:1[0-9]* /d; s/ipsum/I/g' "$DATA/text" | sha256sum
    echo "sed: ${PIPESTATUS[0]}"
}
sed_check() {
    local want
    want=$(awk '{ if ($1 ~ /^1/) next; print $2 ":" $1, "LOREM", "I", $5, $6, $7, $8 }' "$DATA/text" | sha256sum)
    expect_line "$want" && expect_line "sed: 0"
}

prog grep "grep" ""
grep_setup() { text_setup; }
grep_run() {
    st $M grep -cE '^[0-9]*7 [0-9]+ lorem' "$DATA/text"
    $M grep -oE '\b1[0-9]{4}\b' "$DATA/text" | sort -u | wc -l
    echo "[exit ${PIPESTATUS[0]}]"
    st $M grep -cP '(?<=^12)\d{3} ' "$DATA/text"
}
grep_check() {
    expect_line "20000" && expect_line "10000" && expect_line "1000" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 3 ] || fail "a grep failed"
}

prog openssl "openssl" ""
openssl_setup() { text_setup; }
openssl_run() {
    $M openssl dgst -sha256 -r "$DATA/text"
    st $M openssl enc -aes-256-cbc -pbkdf2 -pass pass:matrix -in "$DATA/text" -out "$WORK/enc"
    $M openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:matrix -in "$WORK/enc" | sha256sum
    st $M openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/key.pem"
    st $M openssl dgst -sha256 -sign "$WORK/key.pem" -out "$WORK/sig" "$DATA/text"
    st $M openssl pkey -in "$WORK/key.pem" -pubout -out "$WORK/pub.pem"
    st $M openssl dgst -sha256 -verify "$WORK/pub.pem" -signature "$WORK/sig" "$DATA/text"
}
openssl_check() {
    local h
    h=$(sha256sum < "$DATA/text" | sed 's/ .*//')
    expect_line "$h *$DATA/text" && expect_line "$h  -" && expect_line "Verified OK" &&
        [ "$(grep -c '^\[exit 0\]$' "$OUT_FILE")" = 5 ] || fail "an openssl command failed"
}

prog curl "curl" ""
curl_setup() { text_setup; }
curl_run() {
    $M curl -sS "file://$DATA/text" | sha256sum
    st $M curl -sS -o /dev/null "file://$DATA/missing"
}
curl_check() { expect_line "$(sha256sum < "$DATA/text")" && expect_line "[exit 37]"; }

prog jq "jq" ""
jq_setup() {
    seq 1 50000 | awk 'BEGIN { printf "[" } { printf "%s{\"id\":%d,\"k\":\"key%d\",\"v\":%d}", (NR > 1 ? "," : ""), $1, $1 % 100, ($1 * 7) % 1000 } END { print "]" }' > "$DATA/in.json"
}
jq_run() {
    st $M jq -c 'group_by(.k) | map({k: .[0].k, n: length, s: (map(.v) | add)}) | sort_by(.s) | .[-1], length' "$DATA/in.json"
}
jq_check() {
    local want
    want=$(awk 'BEGIN { for (i = 1; i <= 50000; i++) { k = i % 100; s[k] += (i * 7) % 1000 }
        m = -1; for (k in s) if (s[k] > m || (s[k] == m && ("key" k) > mk)) { m = s[k]; mk = "key" k }
        printf "{\"k\":\"%s\",\"n\":500,\"s\":%d}\n", mk, m }')
    expect_line "$want" && expect_line "100" && expect_line "[exit 0]"
}

prog cmake "cmake" ""
cmake_run() {
    cat > script.cmake <<'EOF'
set(l "")
foreach(i RANGE 1 3000)
  math(EXPR v "(${i} * 7919) % 100003")
  list(APPEND l ${v})
endforeach()
list(SORT l COMPARE NATURAL)
list(LENGTH l n)
list(GET l 0 first)
list(GET l -1 last)
string(REPEAT "ab" 10000 s)
string(LENGTH "${s}" len)
string(SHA256 h "${s}")
message(STATUS "n ${n} first ${first} last ${last} len ${len}")
file(WRITE out.txt "${h}\n")
EOF
    st $M cmake -P script.cmake
    cat out.txt
}
cmake_check() {
    local first last
    first=$(awk 'BEGIN { m = 1e9; for (i = 1; i <= 3000; i++) { v = (i * 7919) % 100003; if (v < m) m = v } print m }')
    last=$(awk 'BEGIN { m = 0; for (i = 1; i <= 3000; i++) { v = (i * 7919) % 100003; if (v > m) m = v } print m }')
    expect_line "-- n 3000 first $first last $last len 20000" &&
        expect_line "$(printf 'ab%.0s' $(seq 1 10000) | sha256sum | sed 's/ .*//')" && expect_line "[exit 0]"
}

prog diff "diffutils" ""
diff_setup() {
    text_setup && awk 'NR % 1000 == 0 { print "changed", $0; next } { print }' "$DATA/text" > "$DATA/text2"
}
diff_run() {
    $M diff -u "$DATA/text" "$DATA/text2" | grep -c '^+changed'
    echo "diff: ${PIPESTATUS[0]}"
}
diff_check() { expect_line "200" && expect_line "diff: 1"; }
