#!/usr/bin/env bash
# Scenario 5, side by side with Redis and NATS: the same fan-out (one publisher -> N
# subscriber connections, 64-byte payloads, same client driver) against a broker node's
# WebSocket API, Debian's redis-server (SUBSCRIBE and PSUBSCRIBE) and nats-server
# (a `>` wildcard), each started fresh on a free 127.0.0.1 port for every run. Prints
# throughput, p99 latency and server RSS with the ratios broker/other, and draws
# $PLOT_DIR/baseline.png. See bench/README.md.
#
#   bench/baseline.sh                    # 3 runs of every point (~6.5 minutes)
#   REPS=1 SIZES="10 1000" bench/baseline.sh
#   bench/baseline.sh summarize LOG...   # the tables and plot again from earlier logs
#
# Environment: BUILD_DIR, REPS, SECS, LAT_SECS, PLOT_DIR as for bench/fanout.sh, and
#   SIZES     subscriber connections (default "1 10 100 1000 10000")
#   SYSTEMS   default "broker-ws broker-native redis-channel redis-pattern nats-wildcard"
#             (nats-exact is also available; broker-native is the node's peering port,
#             driven by broker-fanout-native)
# Within one repetition and N the systems run back to back, in an order that rotates
# with the repetition, so that a ratio compares runs under the same load.

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario=baseline
source "$repo/bench/fanout_lib.sh"
summarize_if_asked "$@"

read -r -a systems <<<"${SYSTEMS:-broker-ws broker-native redis-channel redis-pattern nats-wildcard}"

prepare_systems
machine_header
say "# $(redis-server --version | cut -d' ' -f1-3); nats-server $(nats-server --version | awk '{print $NF}')"

for ((rep = 1; rep <= reps; rep++)); do
  for n in $sizes; do
    count=${#systems[@]}
    for ((k = 0; k < count; k++)); do
      sys="${systems[$(((k + rep - 1) % count))]}"
      echo "# rep $rep N=$n $sys" >&2
      run_system "$sys" "$rep" "$n"
    done
  done
done

finish
