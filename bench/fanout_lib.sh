# Shared by bench/fanout.sh and bench/baseline.sh (sourced, not run): building, servers on
# free 127.0.0.1 ports, cleanup, the machine header, the log and its tables. Expects $repo
# to be set. Usage, with $scenario the name of the table kind (fanout or baseline):
#   source "$repo/bench/fanout_lib.sh"
#   summarize_if_asked "$@"      # `SCRIPT summarize LOG...`: the tables again, then exit
#   build_targets ...; machine_header; ...runs...; finish

build="${BUILD_DIR:-$repo/build-fanout}"
bin="$build/bench"
reps="${REPS:-3}"
secs="${SECS:-2}"
lat_secs="${LAT_SECS:-2}"
sizes="${SIZES:-1 10 100 1000 10000}"
results="$build/fanout-results"
plot_dir="${PLOT_DIR:-$repo/doc/img}"
mkdir -p "$results"
stamp="$(date +%Y%m%d-%H%M%S)"
log="$results/$scenario-$stamp.log"

# Every process a script starts is recorded here and ended on exit, whatever the exit.
started=()
cleanup() {
  local pid
  for pid in "${started[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${started[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  started=()
}
trap cleanup EXIT

# Drops a pid that has been waited for from $started, so that cleanup never signals a
# recycled pid.
forget() {
  local pid kept=()
  for pid in "${started[@]}"; do
    [[ "$pid" == "$1" ]] || kept+=("$pid")
  done
  started=("${kept[@]}")
}
trap 'exit 130' INT TERM

say() { echo "$@" | tee -a "$log"; }

load_line() { uptime | sed 's/.*load average/load average/'; }

# The tables (and plot) of this scenario from the given logs.
summarize() {
  python3 "$repo/bench/fanout_table.py" "$scenario" --plot "$plot_dir/$scenario.png" "$@"
}

# `SCRIPT summarize LOG...` prints the tables of earlier logs instead of running.
summarize_if_asked() {
  if [[ "${1:-}" == summarize ]]; then
    shift
    summarize "$@"
    exit
  fi
}

# Ends a run: the load, then the tables, which also go to the log.
finish() {
  say "# load at end: $(load_line)"
  summarize "$log" | tee -a "$log"
}

# Builds the given targets; configures a Release tree first if there is none.
build_targets() {
  "$repo/bench/install-deps"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DBROKER_BUILD_TESTS=OFF -DBROKER_BUILD_BENCHMARKS=ON >/dev/null
  fi
  if ! ninja -C "$build" "$@" >"$results/build.log" 2>&1; then
    tail -40 "$results/build.log" >&2
    echo "# build failed; full log: $results/build.log" >&2
    exit 1
  fi
}

# 10 000 connections need 10 000 descriptors on each side: take the hard limit.
raise_fd_limit() {
  ulimit -n "$(ulimit -Hn)"
  if (( $(ulimit -n) < 10100 )); then
    echo "# warning: open-file limit $(ulimit -n) is below 10 100; N = 10 000 will fail" >&2
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something accepts connections on 127.0.0.1:$1 (at most 10 s).
wait_port() {
  local i
  for ((i = 0; i < 100; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "# nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# Peak resident set of a running process in MiB (VmHWM), or 0.
peak_rss_mb() {
  awk '/^VmHWM:/ { printf "%.1f", $2 / 1024; found = 1 } END { if (!found) printf "0" }' \
      "/proc/$1/status" 2>/dev/null || echo 0
}

# Starts a server in the background; sets server_pid. Usage: start_server LOG CMD...
start_server() {
  local out="$1"
  shift
  "$@" >"$out" 2>&1 &
  server_pid=$!
  started+=("$server_pid")
}

# True while $1 runs (not yet exited, or exited but not reaped: still our pid).
alive() {
  local st
  st="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$st" && "$st" != Z* ]]
}

# Ends the server started last: sets server_rss (its peak RSS in MiB), sends SIGTERM and
# waits. A server still running 10 s later is noted in the log and killed.
stop_server() {
  local i
  server_rss="$(peak_rss_mb "$server_pid")"
  kill "$server_pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    alive "$server_pid" || break
    sleep 0.1
  done
  if alive "$server_pid"; then
    echo "# warning: $(ps -o comm= -p "$server_pid") (pid $server_pid) still running 10 s" \
         "after SIGTERM; killed" | tee -a "$log" >&2
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  wait "$server_pid" 2>/dev/null || true
  forget "$server_pid"
}

# stop_server, then the server's peak RSS goes into the RESULT line that run_client wrote
# with node_rss_mb=pending.
stop_server_into_log() {
  stop_server
  sed -i "s/node_rss_mb=pending/node_rss_mb=$server_rss/" "$log"
}

# A broker-node accepting plain peerings on $port (for broker-fanout-native).
start_broker_native() {
  port="$(free_port)"
  start_server "$results/node.$stamp.log" "$build/broker-node/broker-node" \
    --listen-address=127.0.0.1 --broker.disable-ssl --broker.log-level=warning -p "$port"
  wait_port "$port"
}

# DRIVER=epoll runs the WebSocket, Redis and NATS clients with fanout-drive (epoll, several
# processes with PROCS, the server's CPU in the RESULT line) instead of the Asio driver
# (fanout_client.cc, one thread, which caps Redis near 2.3 M deliveries/s at N = 100).
# broker-native always uses broker-fanout-native.
driver="${DRIVER:-asio}"
procs="${PROCS:-1}"

# The client command of a system: client_cmd SYSTEM; sets client (an array).
client_cmd() {
  if [[ "$driver" == epoll ]]; then
    case "$1" in
      broker-ws) client=("$bin/fanout-drive" --system ws) ;;
      redis-*) client=("$bin/fanout-drive" --system redis --variant "${1#redis-}") ;;
      nats-*) client=("$bin/fanout-drive" --system nats --variant "${1#nats-}") ;;
    esac
    client+=(--procs "$procs" --server-pid "$server_pid")
    return
  fi
  case "$1" in
    broker-ws) client=("$bin/broker-fanout-ws") ;;
    redis-*) client=("$bin/baseline-redis" --variant "${1#redis-}") ;;
    nats-*) client=("$bin/baseline-nats" --variant "${1#nats-}") ;;
  esac
}

# Runs one system's fan-out client against a fresh server of that system and appends its
# RESULT line (with the server's peak RSS) to the log. Usage: run_system SYSTEM REP N
# [client options...]; systems: broker-ws, broker-native, redis-channel, redis-pattern,
# nats-wildcard, nats-exact.
run_system() {
  local sys="$1" rep="$2" n="$3"
  shift 3
  extra="rep=$rep node_rss_mb=pending"
  case "$sys" in
    broker-ws)
      start_broker_ws
      client_cmd "$sys"
      run_client "${client[@]}" --port "$port" --subscribers "$n" "$@"
      ;;
    broker-native)
      start_broker_native
      run_client "$bin/broker-fanout-native" --port "$port" --subscribers "$n" "$@"
      ;;
    redis-*)
      port="$(free_port)"
      # No persistence; room for 10 000 subscribers (maxclients needs descriptors + 32).
      start_server "$results/redis.$stamp.log" redis-server --port "$port" --bind 127.0.0.1 \
        --save '' --appendonly no --protected-mode no --maxclients 10100 --daemonize no
      wait_port "$port"
      client_cmd "$sys"
      run_client "${client[@]}" --port "$port" --subscribers "$n" "$@"
      ;;
    nats-*)
      port="$(free_port)"
      start_server "$results/nats.$stamp.log" nats-server -a 127.0.0.1 -p "$port"
      wait_port "$port"
      client_cmd "$sys"
      run_client "${client[@]}" --port "$port" --subscribers "$n" "$@"
      ;;
    *)
      echo "unknown system $sys" >&2
      exit 2
      ;;
  esac
  stop_server_into_log
}

# The servers and clients of run_system: builds them and checks Redis and NATS are there.
prepare_systems() {
  build_targets broker-node broker-fanout-ws broker-fanout-native baseline-redis baseline-nats \
    fanout-drive
  for tool in redis-server nats-server; do
    command -v "$tool" >/dev/null || { echo "$tool not found: run bench/install-deps" >&2; exit 1; }
  done
  raise_fd_limit
}

# A broker-node serving WebSocket clients on $port (peering on 127.0.0.1, ephemeral).
start_broker_ws() {
  port="$(free_port)"
  start_server "$results/node.$stamp.log" "$build/broker-node/broker-node" \
    --listen-address=127.0.0.1 --broker.disable-ssl --broker.log-level=warning \
    --broker.web-socket.address=127.0.0.1 --broker.web-socket.port="$port" \
    --broker.web-socket.max-clients=20000
  wait_port "$port"
}

machine_header() {
  local rev
  rev="${SOURCE_REV:-$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)}"
  say "# $(date -Is)  kernel $(uname -r)  source $rev  build $build"
  say "# nproc $(nproc); CPU $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
  say "# open files $(ulimit -n); reps $reps; throughput phase ${secs}s; latency phase ${lat_secs}s; driver $driver$([[ $driver == epoll ]] && echo " ($procs subscriber processes)")"
  say "# load at start: $(load_line)"
  say "# raw results: $log"
}

# Runs one client command; appends its RESULT (or FAILED) line with the extra fields
# "$extra" to the log. The client runs in the background so that a signal reaches the
# trap (and cleanup ends the client) at once. Usage: run_client CMD...
run_client() {
  local out="$results/client.$stamp.out" pid line
  "$@" --seconds "$secs" --latency-seconds "$lat_secs" >"$out" 2>>"$results/client.$stamp.err" &
  pid=$!
  started+=("$pid")
  wait "$pid" || true
  forget "$pid"
  if line="$(grep -m1 '^RESULT ' "$out")"; then
    echo "$line $extra" >>"$log"
  else
    echo "FAILED $extra command=${1##*/} $(grep -m1 '^FAILED ' "$out" | cut -d' ' -f2-)" \
      | tee -a "$log" >&2
  fi
}
