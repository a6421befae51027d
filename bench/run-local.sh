#!/usr/bin/env bash
# Builds the benchmarks if needed, runs the local scenarios and prints the tables that
# doc/performance.md records. See bench/README.md.
#
#   bench/run-local.sh                 # everything, 3 runs per point
#   REPS=5 SECS=3 bench/run-local.sh index throughput
#   bench/run-local.sh summarize LOG...   # one throughput table from earlier runs' logs
#
# Sections (default: all): index, callgrind, throughput, broker14, memory.
# Environment:
#   BUILD_DIR   build directory (default: <repo>/build-bench, Release)
#   REPS        runs per data point; tables show the median (default 3)
#   SECS        seconds of publishing per throughput run (default 3)
#   DELIVERIES  per run, publish at most DELIVERIES / N messages (default 60000000)
#   SIZES       subscriber counts (default "1 10 100 1000 10000")
#   NO_BROKER14 set to 1 to skip fetching and running Debian's Broker 1.4
#   SOURCE_REV  revision to print when $repo is not a git checkout (e.g. a git archive)
#
# Broker 1.4 (Debian's libbroker-dev 1.4.0) is not installed system-wide: its headers
# would sit at /usr/include/broker/, where a missing header of ours would silently resolve
# to theirs. The script downloads the two .debs with `apt-get download` and unpacks them
# below $BUILD_DIR/broker14 instead, then compiles broker14_throughput.cc with a plain g++
# line that sees only that tree (never our libbroker/ include path).

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build-bench}"
reps="${REPS:-3}"
secs="${SECS:-3}"
deliveries="${DELIVERIES:-60000000}"
sizes="${SIZES:-1 10 100 1000 10000}"
sections="${*:-index callgrind throughput broker14 memory}"
results="$build/bench-results"
mkdir -p "$results"
stamp="$(date +%Y%m%d-%H%M%S)"
log="$results/$stamp.log"

want() { [[ " $sections " == *" $1 "* ]]; }
say() { echo "$@" | tee -a "$log"; }

# Prints the throughput table (medians, and the range of delivered/s) from RESULT lines.
summarize() {
  python3 - "$@" <<'EOF'
import statistics, sys
rows, failed = {}, []
for path in sys.argv[1:]:
    for line in open(path):
        if line.startswith("FAILED"):
            failed.append(line.strip())
        if not line.startswith("RESULT "):
            continue
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        key = (kv["impl"], int(kv["N"]), kv["mode"], kv["policy"])
        rows.setdefault(key, []).append(kv)
print()
print("%-10s %6s %-6s %-11s %4s %13s %15s %13s %11s %9s %8s" % ("impl", "N", "mode",
      "policy", "runs", "delivered/s", "(min-max M/s)", "published/s", "dropped",
      "cpu_ns/d", "peakMiB"))
def med(xs, k): return statistics.median(float(x[k]) for x in xs)
for key in sorted(rows, key=lambda k: (k[1], k[2], k[3], k[0] != "ours")):
    xs = rows[key]
    ok = [x for x in xs if x["complete"] == "1"] or xs
    d = [float(x["deliv_rate"]) / 1e6 for x in ok]
    print("%-10s %6d %-6s %-11s %4d %13.0f %15s %13.0f %11.0f %9.1f %8.1f" % (key + (len(ok),
          med(ok, "deliv_rate"), "%.1f-%.1f" % (min(d), max(d)), med(ok, "pub_rate"),
          med(ok, "dropped"), med(ok, "cpu_ns_per_delivery"), med(ok, "peak_rss_mb"))))
for f in failed:
    print(f)
EOF
}

if [[ "${1:-}" == summarize ]]; then # bench/run-local.sh summarize LOG...
  shift
  summarize "$@"
  exit 0
fi

# -- build --------------------------------------------------------------------------

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBROKER_BUILD_TESTS=OFF -DBROKER_BUILD_BENCHMARKS=ON
fi
ninja -C "$build" broker-index-bench broker-local-bench >/dev/null
index_bench="$build/bench/broker-index-bench"
local_bench="$build/bench/broker-local-bench"

b14_root="$build/broker14/root/usr"
b14_bench="$build/bench/broker14-bench"
build_broker14() {
  if [[ ! -f "$b14_root/include/broker/endpoint.hh" ]]; then
    mkdir -p "$build/broker14"
    (cd "$build/broker14" && apt-get download libbroker-dev libbroker2 >/dev/null 2>&1 &&
     for deb in libbroker-dev_*.deb libbroker2_*.deb; do dpkg -x "$deb" root || exit 1; done) ||
      return 1
  fi
  if [[ ! -x "$b14_bench" || "$repo/bench/broker14_throughput.cc" -nt "$b14_bench" \
        || "$repo/bench/bench_util.hh" -nt "$b14_bench" ]]; then
    local lib="$b14_root/lib/x86_64-linux-gnu"
    g++ -std=c++17 -O2 -DNDEBUG -pthread -I"$b14_root/include" \
        "$repo/bench/broker14_throughput.cc" -o "$b14_bench" \
        -L"$lib" -Wl,-rpath,"$lib" -lbroker -lcaf_core -lcaf_io -lcaf_openssl || return 1
  fi
}
have_broker14=0
if want broker14 && [[ "${NO_BROKER14:-0}" != 1 ]]; then
  if build_broker14; then
    have_broker14=1
  else
    say "# Broker 1.4 unavailable (apt-get download or compile failed): skipping it"
  fi
fi

# -- machine ------------------------------------------------------------------------

rev="${SOURCE_REV:-$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)}"
say "# $(date -Is)  kernel $(uname -r)  source $rev"
say "# nproc $(nproc); CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
say "# load at start: $(uptime | sed 's/.*load average/load average/')"
say "# raw results: $log"

# -- index --------------------------------------------------------------------------

if want index; then
  say ""
  say "## topic index: ns per lookup (wall clock)"
  "$index_bench" --reps 7 --lookups 2000000 | tee -a "$log"
fi

if want callgrind && command -v valgrind >/dev/null; then
  say ""
  say "## topic index: instructions per lookup (callgrind, run_lookups() only, 200000 lookups)"
  say "$(printf '%-8s %-6s %-5s %12s' N cache probe Ir_per_lookup)"
  for cache in 0 1024; do
    for n in 10 1000 100000; do
      for probe in hit miss churn; do
        out="$results/callgrind.$stamp.$n.$cache.$probe"
        valgrind --tool=callgrind --toggle-collect='*run_lookups*' --callgrind-out-file="$out" \
                 "$index_bench" --fixed "$n" "$cache" "$probe" 200000 >/dev/null 2>&1
        ir=$(grep -m1 '^summary:' "$out" | awk '{print $2}')
        say "$(awk -v n="$n" -v c="$cache" -v p="$probe" -v ir="$ir" \
                   'BEGIN { printf "%-8s %-6s %-5s %12.1f", n, c, p, ir / 200000 }')"
      done
    done
  done
fi

# -- throughput ---------------------------------------------------------------------

run_point() { # impl binary args...
  local impl="$1"; shift
  local bin="$1"; shift
  for ((r = 1; r <= reps; r++)); do
    if ! "$bin" "$@" --timeout 300 >>"$log" 2>&1; then
      echo "FAILED impl=$impl $*" >>"$log"
    fi
  done
}

if want throughput || want broker14; then
  say ""
  say "## throughput runs (${reps} per point, ${secs}s or ${deliveries}/N messages each)"
  for n in $sizes; do
    msgs=$((deliveries / n)); ((msgs < 1000)) && msgs=1000
    for mode in batch single; do
      if want throughput; then
        for policy in block drop_oldest; do
          echo "# ours N=$n $mode $policy" >&2
          run_point ours "$local_bench" --subscribers "$n" --mode "$mode" --policy "$policy" \
                    --seconds "$secs" --messages "$msgs"
        done
      fi
      if ((have_broker14)); then
        # A 1.4 subscriber holds two descriptors (a flare pipe); above ~9 900 subscribers
        # the usual 20 000 hard limit runs out, so the largest size runs at 9 000.
        n14=$n; ((n14 > 9000)) && n14=9000
        echo "# broker-1.4 N=$n14 $mode" >&2
        run_point broker-1.4 "$b14_bench" --subscribers "$n14" --mode "$mode" \
                  --seconds "$secs" --messages "$((deliveries / n14))"
      fi
    done
  done
  summarize "$log" | tee -a "$log"
fi

# -- memory -------------------------------------------------------------------------

if want memory; then
  for q in 1024 100000; do
    say ""
    say "## memory: one subscriber that never reads, drop_oldest, capacity $q, 15 s"
    "$local_bench" --slow --capacity "$q" --seconds 15 | tee -a "$log"
  done
fi

say ""
say "# load at end: $(uptime | sed 's/.*load average/load average/')"
