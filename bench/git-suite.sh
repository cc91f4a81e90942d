#!/bin/sh
# git's own test suite under the agent, against the same scripts without it: the source
# of the git Debian ships, built once (without curl, expat, Tcl/Tk, gettext, Perl and
# Python: the scripts that need them skip themselves), then each test script run without
# the agent and once per agent mode, every git process it starts recorded
# (--follow-exec). Prints per mode the tests run, the failures, the tests that failed only
# with the agent and the wall time. Not part of `make test` (minutes).
#   [MODES="full sampled ..."] [SRC_DIR=DIR] bench/git-suite.sh [BUILD_DIR] [SCRIPT...]
# SCRIPT: names of t/*.sh without .sh (default below: init, config, plumbing, add, commit,
# branch, checkout, diff, log, merge, rebase, pack and local fetch, gc, worktree).
# MODES (default: full sampled leak-exit guard): as bench/real-suites.sh.
# The source comes from Debian's archive (deb-src) through a private apt state under
# SRC_DIR (default ~/.cache/memsight-git-suite): the machine's apt configuration is not
# touched.
set -u
BUILD=${1:-build}
[ $# -gt 0 ] && shift
TESTS=${*:-t0001-init t1300-config t1006-cat-file t2200-add-update t3200-branch t3903-stash t4001-diff-rename t4013-diff-various t4202-log t5300-pack-object t5510-fetch t6000-rev-list-misc t6400-merge-df t7004-tag t7102-reset t7201-co t7400-submodule-basic t7501-commit-basic-functionality t2400-worktree-add t6437-submodule-merge t3404-rebase-interactive t5304-prune t6500-gc}
MODES=${MODES:-full sampled leak-exit guard}
SRC_DIR=${SRC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memsight-git-suite}
MEMSIGHT=$(cd "$BUILD" && pwd)/bin/memsight
[ -x "$MEMSIGHT" ] || { echo "no $MEMSIGHT (build first)" >&2; exit 2; }
. "$(dirname "$0")/suite-common.sh"

suite_fetch git git
if [ ! -x "$TREE/git" ]; then
    echo "building git (several minutes)"
    (cd "$TREE" && make -j2 NO_CURL=1 NO_EXPAT=1 NO_TCLTK=1 NO_GETTEXT=1 NO_PERL=1 \
        NO_PYTHON=1 all > make.log 2>&1) || { echo "could not build git (see $TREE/make.log)" >&2; exit 2; }
fi

test_one() {
    t=$1 log=$2; shift 2
    (cd "$TREE/t" && env --default-signal=INT "$@" sh "./$t.sh") > "$log" 2>&1
}
# TAP: "1..N" and one "not ok" per failed test; git marks its known breakages "# TODO"
test_failed() { grep '^not ok ' "$1" | grep -v '# TODO' | sed 's/^not ok \([0-9]*\) - \(.*\)/\1 \2/'; }
test_counts() {
    n=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$1" | tail -1)
    [ -z "$n" ] || echo "$n $(test_failed "$1" | wc -l)"
}

OUT=$(mktemp -d "${TMPDIR:-/tmp}/memsight-git-XXXXXX")
suite_modes
