#!/usr/bin/env bash
# Ingest, side by side: one connection publishing as fast as the server reads it, with no
# subscriber (N = 0: the server only takes messages in) and with one (N = 1, flow-controlled
# as in the fan-out), for a broker node's WebSocket API and native peering port, Redis and
# NATS, with the same client (bench/fanout_client.cc). See bench/README.md.
#
#   bench/ingest.sh                       # 3 runs of every point (~2 minutes)
#   REPS=1 SECS=5 bench/ingest.sh
#   bench/ingest.sh summarize LOG...      # the tables again from earlier logs
#
# Environment: BUILD_DIR, REPS, SECS (default 2), SYSTEMS (default "broker-ws
#   broker-native redis-channel nats-wildcard").

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario=ingest
source "$repo/bench/fanout_lib.sh"
summarize_if_asked "$@"

read -r -a systems <<<"${SYSTEMS:-broker-ws broker-native redis-channel nats-wildcard}"

prepare_systems
machine_header
say "# $(redis-server --version | cut -d' ' -f1-3); nats-server $(nats-server --version | awk '{print $NF}')"

for ((rep = 1; rep <= reps; rep++)); do
  for n in 0 1; do
    count=${#systems[@]}
    for ((k = 0; k < count; k++)); do
      sys="${systems[$(((k + rep - 1) % count))]}"
      echo "# rep $rep N=$n $sys" >&2
      run_system "$sys" "$rep" "$n"
    done
  done
done

finish
