#!/usr/bin/env bash
# System test: install the build into a temporary prefix, then build and run a program
# outside the tree against it, once with CMake (find_package(Broker 0.1 REQUIRED)) and once
# with pkg-config. Checks what the installation holds and what it must not hold.
#   consumer.sh <build dir> <cmake> <c++ compiler>
#   consumer.sh --prefix <dir> [<sysroot>] <cmake> <c++ compiler>
#       the same against an existing installation (the Debian packages, unpacked into
#       <sysroot> or installed: tests/install/debs.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sysroot=""
if [ "$1" = "--prefix" ]; then
  prefix="$2"
  if [ $# -eq 5 ]; then sysroot="$3"; shift; fi
  cmake="$3"
  cxx="$4"
else
  build="$1"
  cmake="$2"
  cxx="$3"
  # DESTDIR also catches what a build configured for /usr installs to absolute paths
  # (/etc/broker/broker.conf): nothing may land outside the scratch directory.
  dest="$tmp/dest"
  prefix="$dest/opt/broker"
  DESTDIR="$dest" "$cmake" --install "$build" --prefix /opt/broker >"$tmp/install.log" \
    || { cat "$tmp/install.log"; fail "cmake --install"; }
fi

# What the installation holds.
[ -f "$prefix/include/broker/endpoint.hh" ] || fail "no public headers"
[ -f "$prefix/include/broker/version.hh" ] || fail "no generated broker/version.hh"
[ ! -e "$prefix/include/broker/internal" ] || fail "internal headers are installed"
if find "$prefix/include" -name '*.test.hh' | grep -q .; then fail "test headers are installed"; fi
config="$(find "$prefix" -name BrokerConfig.cmake -path '*/cmake/Broker/*')"
[ -n "$config" ] || fail "no BrokerConfig.cmake"
[ -f "$(dirname "$config")/BrokerConfigVersion.cmake" ] || fail "no BrokerConfigVersion.cmake"
pc="$(find "$prefix" -name broker.pc -path '*/pkgconfig/*')"
[ -n "$pc" ] || fail "no broker.pc"
if [ -n "${build:-}" ]; then  # What only the build installs (the packages split it).
  for page in broker-node broker-throughput broker-store; do
    [ -f "$prefix/share/man/man1/$page.1" ] || fail "no man page $page.1"
  done
  [ -f "$prefix/lib/systemd/system/broker-node.service" ] || fail "no systemd unit"
  [ -f "$prefix/etc/broker/broker.conf" ] || [ -f "$dest/etc/broker/broker.conf" ] \
    || fail "no default etc/broker/broker.conf"
fi
soname="$(find "$prefix" -name 'libbroker.so.*' -type f | head -1)"
[ -n "$soname" ] || fail "no versioned libbroker.so.*"
libdir="$(dirname "$soname")"

# 1. CMake.
"$cmake" -S "$here/consumer" -B "$tmp/cmake-build" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; fail "find_package(Broker 0.1 REQUIRED)"; }
"$cmake" --build "$tmp/cmake-build" >"$tmp/build.log" 2>&1 \
  || { cat "$tmp/build.log"; fail "building against Broker::broker"; }
out="$("$tmp/cmake-build/consumer")" || fail "the CMake-built consumer: $out"
grep -q '^consumer .*: /consumer/test {"@data-type":"count","data":42}$' <<<"$out" \
  || fail "unexpected output: $out"
echo "ok   cmake: $out"

# The version file refuses an incompatible request.
if "$cmake" -S "$here/consumer" -B "$tmp/cmake-wrong" -DCMAKE_CXX_COMPILER="$cxx" \
     -DCMAKE_PREFIX_PATH="$prefix" -DBROKER_WANTED_VERSION=99.0 >"$tmp/wrong.log" 2>&1; then
  fail "find_package(Broker 99.0) succeeded"
fi
grep -q 'considered but not accepted' "$tmp/wrong.log" || { cat "$tmp/wrong.log"; fail "no version check"; }
echo "ok   find_package(Broker 99.0) is refused"

# 2. pkg-config.
export PKG_CONFIG_PATH="$(dirname "$pc")"
# An unpacked package names /usr in broker.pc; the sysroot moves it to where it is.
[ -n "$sysroot" ] && export PKG_CONFIG_SYSROOT_DIR="$sysroot"
[ "$(pkg-config --modversion broker)" = "$(sed -n 's/^Version: //p' "$pc")" ] \
  || fail "pkg-config --modversion"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -o "$tmp/consumer-pc" "$here/consumer/main.cc" \
  $(pkg-config --cflags --libs broker) -Wl,-rpath,"$libdir" \
  || fail "building with pkg-config"
out="$("$tmp/consumer-pc")" || fail "the pkg-config-built consumer: $out"
grep -q '/consumer/test' <<<"$out" || fail "unexpected output: $out"
echo "ok   pkg-config: $out"
echo "PASS"
