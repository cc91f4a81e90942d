#!/bin/sh
# Installs the Debian packages memsight needs to build and test, only those missing.
# Runs as root (or through sudo when available); does nothing when all are present.
set -eu
PKGS="build-essential cmake pkg-config clang libunwind-dev libdw-dev libelf-dev zlib1g-dev
libzstd-dev libcmocka-dev libclang-rt-dev python3 python3-networkx valgrind sqlite3 xz-utils git
openjdk-17-jdk-headless golang-go chromium heaptrack liblsan0 linux-perf procps"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "memsight: installing missing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
