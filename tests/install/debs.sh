#!/usr/bin/env bash
# Checks the Debian packages that scripts/build-debs built.
#   debs.sh <dir with the .debs> <install: 0 or 1>
# Always: each package holds what it must (and the -dev package no internal headers), the
# unpacked packages run, and a program builds against the unpacked libbroker-dev with CMake
# and pkg-config. With install=1 (root): apt installs them, the service's user, unit and
# conffile are in place, the installed unit's ExecStart serves peers under the notify
# harness, a program builds against /usr; then everything is purged again.
set -euo pipefail
debs="$(cd "$1" && pwd)"
install="$2"
here="$(cd "$(dirname "$0")" && pwd)"
tests="$(dirname "$here")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
deb() { ls "$debs"/"$1"_*.deb; }

contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\./|/|'; }
has() {
  local package="$1"; shift
  local listing; listing="$(contents "$package")"
  for pattern in "$@"; do
    grep -qE "^$pattern\$" <<<"$listing" || fail "$package lacks $pattern"
  done
}
has libbroker '/usr/lib/[^/]+/libbroker\.so\.[0-9.]+'
has libbroker-dev '/usr/include/broker/endpoint\.hh' '/usr/include/broker/version\.hh' \
  '/usr/lib/[^/]+/libbroker\.so' '/usr/lib/[^/]+/cmake/Broker/BrokerConfig\.cmake' \
  '/usr/lib/[^/]+/cmake/Broker/BrokerConfigVersion\.cmake' '/usr/lib/[^/]+/pkgconfig/broker\.pc'
if contents libbroker-dev | grep -qE 'broker/internal/|\.test\.hh$'; then
  fail "libbroker-dev holds internal or test headers"
fi
has broker-node /usr/bin/broker-node /usr/share/man/man1/broker-node\.1\.gz \
  /lib/systemd/system/broker-node\.service /etc/broker/broker\.conf
has broker-tools /usr/bin/broker-store /usr/bin/broker-throughput \
  '/usr/share/man/man1/broker-(store|throughput)\.1\.gz'
dpkg-deb -f "$(deb broker-node)" Depends | grep -q 'libbroker (= ' \
  || fail "broker-node does not depend on its libbroker"
dpkg-deb --ctrl-tarfile "$(deb broker-node)" | tar -xO ./conffiles | grep -qx /etc/broker/broker.conf \
  || fail "/etc/broker/broker.conf is no conffile"
echo "ok   package contents"

# Unpacked: the programs run, and a program builds against libbroker-dev.
root="$tmp/root"
for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$root"; done
libdir="$(dirname "$(find "$root/usr/lib" -name 'libbroker.so.*' | head -1)")"
version="$(LD_LIBRARY_PATH="$libdir" "$root/usr/bin/broker-node" --version)"
grep -q '^broker-node [0-9]' <<<"$version" || fail "the unpacked broker-node: $version"
"$here/consumer.sh" --prefix "$root/usr" "$root" cmake c++ || fail "consumer of the unpacked packages"
echo "ok   unpacked: $version"

[ "$install" = "1" ] || exit 0
[ "$(id -u)" -eq 0 ] || fail "--install needs root"
packages=(libbroker libbroker-dev broker-node broker-tools)
purge() { DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" >/dev/null 2>&1 || true; }
trap 'purge; rm -rf "$tmp"' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$debs"/*.deb >"$tmp/apt.log" 2>&1 \
  || { cat "$tmp/apt.log"; fail "apt-get install"; }
getent passwd broker >/dev/null || fail "the postinst did not create the user broker"
[ -e /etc/systemd/system/multi-user.target.wants/broker-node.service ] \
  || fail "broker-node.service is not enabled"
/usr/bin/broker-node --check-config --config-file=/etc/broker/broker.conf
/usr/bin/python3 -B "$tests/node/systemd.py" /usr/bin/broker-node \
  /lib/systemd/system/broker-node.service /etc/broker/broker.conf
"$here/consumer.sh" --prefix /usr cmake c++ || fail "consumer of the installed packages"
purge
trap 'rm -rf "$tmp"' EXIT
if getent passwd broker >/dev/null; then fail "purging did not remove the user broker"; fi
[ ! -e /usr/bin/broker-node ] || fail "purging left /usr/bin/broker-node"
echo "ok   installed, served, built against and purged"
