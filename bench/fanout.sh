#!/usr/bin/env bash
# Scenario 3, fan-out: one publisher -> N receivers as local subscribers, as peered nodes
# and as WebSocket clients. Prints a table (delivered messages/s summed over receivers,
# latency, the node's peak RSS) and draws $PLOT_DIR/fanout.png. See bench/README.md.
#
#   bench/fanout.sh                     # everything, 3 runs per point (~7 minutes)
#   REPS=1 SIZES="1 100" bench/fanout.sh local ws
#   bench/fanout.sh summarize LOG...    # the table and plot again from earlier logs
#
# Sections (default: all): local, peer, ws.
# Environment:
#   BUILD_DIR    build directory (default <repo>/build-fanout, Release; built if needed)
#   REPS         runs per point; the table shows medians (default 3)
#   SECS         seconds of the throughput phase (default 2)
#   LAT_SECS     seconds of the latency phase (default 2)
#   SIZES        receivers for local and ws (default "1 10 100 1000 10000")
#   PEER_SIZES   receiving processes for peer (default "1 10 20")
#   PLOT_DIR     where fanout.png goes (default <repo>/doc/img)

set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario=fanout
source "$repo/bench/fanout_lib.sh"
summarize_if_asked "$@"

peer_sizes="${PEER_SIZES:-1 10 20}"
sections="${*:-local peer ws}"
want() { [[ " $sections " == *" $1 "* ]]; }

build_targets broker-node broker-fanout-local broker-fanout-peer broker-fanout-ws
raise_fd_limit
machine_header

# The in-process "node" is the benchmark process itself: its RSS is in its RESULT line.
run_local() {
  extra="rep=$1 node_rss_mb=in-process"
  run_client "$bin/broker-fanout-local" --subscribers "$2"
}

# A broker-node hub; N receiving processes and one publisher peer with it.
run_peer() {
  local n="$2" port="" pids=() i hub_log="$results/hub.$stamp.$1.$2.log"
  rm -f "$hub_log"
  start_server "$hub_log" "$build/broker-node/broker-node" \
    --listen-address=127.0.0.1 -p 0 --broker.disable-ssl --broker.log-level=warning
  for ((i = 0; i < 100; i++)); do
    port="$(sed -n 's/^listening on \([0-9][0-9]*\)$/\1/p' "$hub_log" 2>/dev/null || true)" # no file yet: no port yet
    [[ -n "$port" ]] && break
    sleep 0.1
  done
  if [[ -z "$port" ]]; then
    echo "FAILED rep=$1 command=broker-node N=$n reason=the hub printed no port" | tee -a "$log" >&2
    stop_server
    return
  fi
  for ((i = 0; i < n; i++)); do
    "$bin/broker-fanout-peer" --receive --hub "127.0.0.1:$port" --id "$i" --timeout 120 &
    pids+=($!)
    started+=($!)
  done
  local hub_pid="$server_pid"
  extra="rep=$1 node_rss_mb=pending"
  run_client "$bin/broker-fanout-peer" --publish --hub "127.0.0.1:$port" --receivers "$n"
  # Receivers exit after sending their summary; after a failed run they are ended here.
  local t
  for i in "${pids[@]}"; do
    for ((t = 0; t < 50; t++)); do
      alive "$i" || break
      sleep 0.1
    done
    kill "$i" 2>/dev/null || true # Not yet reaped, so the pid is still ours.
    wait "$i" 2>/dev/null || true
    forget "$i"
  done
  server_pid="$hub_pid"
  stop_server_into_log
}

run_ws() {
  start_broker_ws
  extra="rep=$1 node_rss_mb=pending"
  run_client "$bin/broker-fanout-ws" --port "$port" --subscribers "$2"
  stop_server_into_log
}

for ((rep = 1; rep <= reps; rep++)); do
  if want local; then
    for n in $sizes; do echo "# rep $rep local N=$n" >&2; run_local "$rep" "$n"; done
  fi
  if want peer; then
    for n in $peer_sizes; do echo "# rep $rep peer N=$n" >&2; run_peer "$rep" "$n"; done
  fi
  if want ws; then
    for n in $sizes; do echo "# rep $rep ws N=$n" >&2; run_ws "$rep" "$n"; done
  fi
done

finish
