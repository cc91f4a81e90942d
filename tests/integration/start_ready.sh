# Sourced by shell tests: start_ready NAME RUN-OPTIONS... -- PROGRAM ARGS...
# Starts `memsight run RUN-OPTIONS -- PROGRAM` in the background with its stdout in
# $dir/ready, waits up to 10 s for the program to print READY, and sets $run_pid and
# $pid (the program's process, memsight run's own child NAME: other processes of that
# name may run on the machine). Needs $dir, $MEMSIGHT and fail() from the test.
start_ready() {
  name=$1
  shift
  rm -f "$dir/ready"
  "$MEMSIGHT" run "$@" > "$dir/ready" &
  run_pid=$!
  for i in $(seq 1 200); do
    grep -q READY "$dir/ready" 2>/dev/null && break
    sleep 0.05
  done
  grep -q READY "$dir/ready" || fail "$name did not start"
  pid=$(pgrep -P "$run_pid" -x "$name") || fail "no $name process under memsight run"
}
