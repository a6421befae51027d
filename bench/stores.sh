#!/usr/bin/env bash
# Data-store throughput and latency (doc/performance.md, "Data stores"): builds
# broker-store-bench (Release, build-bench/) and runs every scenario REPS times (default 3),
# printing the median ops/s per row. Takes 2-5 minutes.
#
#   bench/stores.sh            # all rows
#   REPS=5 N=20000 bench/stores.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
REPS=${REPS:-3}
N=${N:-20000}
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C "$BUILD" broker-store-bench >/dev/null
BIN="$BUILD/bench/broker-store-bench"
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), load:$(uptime | sed 's/.*load average://'), nproc $(nproc), n=$N, median of $REPS"
printf '%-18s %-7s %-15s %12s %s\n' scenario via backend ops/s extra
run_row() { # scenario via backend [synchronous] [n]
  local scenario=$1 via=$2 backend=$3 sync=${4:-NORMAL} n=${5:-$N} results=() extra=""
  for ((i = 0; i < REPS; ++i)); do
    line=$("$BIN" --scenario "$scenario" --via "$via" --backend "$backend" \
             --synchronous "$sync" --dir "$DIR" -n "$n" | grep '^RESULT')
    results+=("$(sed 's/.*ops_per_s=\([0-9]*\).*/\1/' <<<"$line")")
    extra=$(grep -o 'p50_us=[^ ]* p99_us=[^ ]*' <<<"$line" || true)
  done
  local median
  median=$(printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (REPS + 1) / 2 ))p")
  local label=$backend
  [[ $backend == sqlite ]] && label="sqlite/$sync"
  printf '%-18s %-7s %-15s %12s %s\n' "$scenario" "$via" "$label" "$median" "$extra"
}
for backend in memory "sqlite FULL"; do
  set -- $backend
  for via in master clone; do
    run_row writes "$via" "$1" "${2:-NORMAL}"
    run_row unique "$via" "$1" "${2:-NORMAL}" $((N / 4))
    run_row unique-pipelined "$via" "$1" "${2:-NORMAL}"
    run_row get "$via" "$1" "${2:-NORMAL}"
  done
done
# Broker users' reference point: 1 000 SQLite inserts with fsync on.
run_row writes master sqlite FULL 1000
