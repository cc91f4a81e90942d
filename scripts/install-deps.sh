#!/bin/sh
# Installs the Debian packages memsight needs to build and test, only those missing.
# Runs as root (or through sudo when available); does nothing when all are present.
set -eu
# One line per area, so that work on one area does not touch another's.
PKGS_BUILD="build-essential cmake pkg-config clang libunwind-dev libdw-dev libelf-dev zlib1g-dev libzstd-dev"
PKGS_TEST="libcmocka-dev libclang-rt-dev python3 python3-networkx valgrind sqlite3 libsqlite3-dev xz-utils git procps"
PKGS_PEERS="openjdk-17-jdk-headless golang-go chromium heaptrack liblsan0 linux-perf hprof-conv"
PKGS_SUITES="libpython3.11-testsuite tcl-dev"
# Programs with other allocators and loaders (tests/alloc.cmake)
PKGS_ALLOC="libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev redis-server php-cli php-sqlite3"
PKGS_CROSS="qemu-user-static gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross musl-tools"
# From Debian's arm64 multiarch archive (the arm64 architecture is added when missing),
# for the AArch64 tree run under qemu-user (tests/platforms.cmake): CPython, libunwind
# (unwind=libunwind), and what the memsight command links (libdw, zlib, zstd, the C++
# runtime for demangling). libmicrohttpd and libcurl for arm64 are left out (fleet
# commands; they would pull ~40 more packages and upgrade their amd64 twins in step).
PKGS_CROSS_ARM64="libpython3.11:arm64 libunwind-dev:arm64 libdw-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libzstd-dev:arm64 libstdc++6:arm64"
PKGS_FLEET="prometheus clickhouse-server clickhouse-client libmicrohttpd-dev libcurl4-openssl-dev debuginfod libdebuginfod1 binutils"
PKGS="$PKGS_BUILD $PKGS_TEST $PKGS_PEERS $PKGS_SUITES $PKGS_ALLOC $PKGS_CROSS $PKGS_CROSS_ARM64 $PKGS_FLEET"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "memsight: installing missing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
case "$missing" in
*:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64 ;;
esac
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
