#!/usr/bin/env bash
# 1 -> 1 through one server, side by side: one publishing connection -> server -> one
# subscribing connection, for a broker node's WebSocket API, its native peering port, Redis
# PUBLISH/SUBSCRIBE and NATS PUB/SUB, all driven by the same client (bench/fanout_client.cc
# with N = 1). Each run has a latency phase at a fixed rate, then a throughput phase as
# fast as flow control allows. Prints the maximum rate, p50/p99 at each fixed rate, and the
# per-run ratios ours/other. See bench/README.md.
#
#   bench/one_to_one.sh                      # 3 runs of every point (~4 minutes)
#   REPS=1 RATES="10000" bench/one_to_one.sh
#   bench/one_to_one.sh summarize LOG...     # the tables again from earlier logs
#
# Environment: BUILD_DIR, REPS, SECS (throughput phase, default 2), LAT_SECS (latency
#   phase, default 2), RATES (fixed rates, default "10000 100000"), SYSTEMS (default
#   "broker-ws broker-native redis-channel nats-wildcard").
# Within one repetition and rate the systems run back to back, in an order that rotates with
# the repetition, so that a ratio compares runs under the same load.

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario=one_to_one
source "$repo/bench/fanout_lib.sh"
summarize_if_asked "$@"

read -r -a systems <<<"${SYSTEMS:-broker-ws broker-native redis-channel nats-wildcard}"
rates="${RATES:-10000 100000}"

prepare_systems
machine_header
say "# $(redis-server --version | cut -d' ' -f1-3); nats-server $(nats-server --version | awk '{print $NF}')"

for ((rep = 1; rep <= reps; rep++)); do
  for rate in $rates; do
    count=${#systems[@]}
    for ((k = 0; k < count; k++)); do
      sys="${systems[$(((k + rep - 1) % count))]}"
      echo "# rep $rep rate=$rate $sys" >&2
      run_system "$sys" "$rep" 1 --latency-rate "$rate"
    done
  done
done

finish
