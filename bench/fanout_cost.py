#!/usr/bin/env python3
"""Fan-out cost: what one delivery costs the server, with a driver that costs much less.

Our node's WebSocket API, Debian's redis-server (PSUBSCRIBE /fanout/*: a prefix, like
ours) and nats-server (SUB fanout.>: a prefix), each started fresh on a free 127.0.0.1 port
for every run, driven by fanout-drive (bench/fanout_drive.hh: epoll, frames parsed in
place, no allocation per message, subscribers in --procs processes). Per run the driver
reads the server's CPU time (all threads, /proc schedstat) over the throughput phase next
to its own, and the server's RSS before and after connecting and at its peak.

Sections (each repetition runs every system once per point, in an order that rotates with
the repetition; tables show medians, ratios are per repetition, then the median):
  fanout  one publisher -> N subscribers (--sizes), 64-byte payloads: delivered/s, server
          and driver CPU per delivery, server peak RSS and RSS per connection, latency
  idle    --idle-clients connections that subscribe and then do nothing for --idle-hold s:
          the server's RSS above the empty server, per connection; once above the server
          as it started (cold), once above the server after --idle-warmup connections
          subscribed and left (warm: the code, buffers and allocator state that the first
          client of a fresh process brings in are paid once per process, not per
          connection; at 1000 connections they were 0.4 KiB of our node's 2.7)
  ingest  one connection publishes as fast as the server reads, no subscriber: the server's
          CPU per message (for our node: WebSocket JSON v1 data-messages)

    bench/fanout_cost.py                        # ~2.5 minutes
    REPS=1 SIZES=100 SYSTEMS=broker-ws,redis-pattern bench/fanout_cost.py
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import LOCALHOST, free_port  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "repetitions"),
    ("--sizes", str, "10,100,1000", "subscriber counts of the fan-out section"),
    ("--systems", str, "broker-ws,redis-pattern,nats-wildcard",
     "systems (also redis-channel, nats-exact)"),
    ("--sections", str, "fanout,idle,ingest", "what to run"),
    ("--seconds", float, 2.0, "throughput phase of each run"),
    ("--latency-seconds", float, 1.0, "latency phase of each fan-out run"),
    ("--procs", int, 1, "subscriber processes of the driver"),
    ("--idle-clients", int, 1000, "connections of the idle section"),
    ("--idle-hold", float, 2.0, "seconds the idle connections are held before reading RSS"),
    ("--idle-warmup", int, 10, "idle section: connections that subscribe and leave first"),
]

# How a system's server starts, and what the driver calls it.
DRIVER_SYSTEM = {"broker-ws": ("ws", "ws"), "redis-pattern": ("redis", "pattern"),
                 "redis-channel": ("redis", "channel"), "nats-wildcard": ("nats", "wildcard"),
                 "nats-exact": ("nats", "exact")}
RUN_TIMEOUT = 120


def server_command(system, node_bin, port):
    if system == "broker-ws":
        return [node_bin, "--listen-address", LOCALHOST, "--broker.disable-ssl",
                "--broker.log-level=warning",
                "--broker.web-socket.address=%s" % LOCALHOST,
                "--broker.web-socket.port=%d" % port, "--broker.web-socket.max-clients=20000"]
    if system.startswith("redis"):
        return ["redis-server", "--port", str(port), "--bind", LOCALHOST, "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--maxclients", "10100",
                "--daemonize", "no"]
    return ["nats-server", "-a", LOCALHOST, "-p", str(port)]


def parse_result(line):
    kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
    out = {}
    for k, v in kv.items():
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def one_run(run, args, bins, system, n, extra):
    """Starts a fresh server, runs the driver against it, stops the server; the RESULT
    fields, or None (the failure is printed)."""
    proto, variant = DRIVER_SYSTEM[system]
    port = free_port()
    server = run.start(server_command(system, bins["broker-node"], port)[0],
                       server_command(system, bins["broker-node"], port)[1:], system)
    try:
        bl.wait_listening(server, port)
        # The readiness probe's connection is gone before the driver reads the RSS.
        time.sleep(0.2)
        cold_kb = None
        if "--idle" in extra and args.idle_warmup > 0:
            cold_kb = bl.memory_kib(server.pid).get("VmRSS")
            warm = [bins["fanout-drive"], "--system", proto, "--variant", variant, "--port",
                    str(port), "--subscribers", str(args.idle_warmup), "--idle", "0.2"]
            w = subprocess.run(warm, capture_output=True, text=True, timeout=RUN_TIMEOUT)
            if w.returncode != 0:
                run.say("# FAILED warm-up %s: %s" % (system, w.stderr.strip()[-300:]))
                return None
            time.sleep(0.5)  # The warm-up's connections are gone before the driver reads.
        cmd = [bins["fanout-drive"], "--system", proto, "--variant", variant, "--port",
               str(port), "--subscribers", str(n), "--server-pid", str(server.pid),
               "--procs", str(args.procs), "--seconds", str(args.seconds),
               "--latency-seconds", str(args.latency_seconds)] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
        lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode != 0 or not lines:
            run.say("# FAILED %s N=%d: %s %s" % (system, n, p.stdout.strip()[-300:],
                                                  p.stderr.strip()[-300:]))
            return None
        result = parse_result(lines[0])
        if cold_kb is not None:
            result["server_rss_cold_kb"] = float(cold_kb)
        return result
    finally:
        server.stop(signal.SIGTERM, timeout=15)


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in DRIVER_SYSTEM:
            raise SystemExit("unknown system %s (one of %s)" % (s, ", ".join(DRIVER_SYSTEM)))
    sizes = [int(x) for x in args.sizes.split(",") if x]
    sections = set(args.sections.split(","))
    with bl.Run("fanout_cost", args) as run:
        bins = run.build("broker-node", "fanout-drive")
        for tool in ("redis-server", "nats-server"):
            if any(s.startswith(tool.split("-")[0]) for s in systems):
                if subprocess.run(["which", tool], capture_output=True).returncode != 0:
                    raise bl.BenchError("%s not found: run bench/install-deps" % tool)
        versions = subprocess.run("redis-server --version; nats-server --version",
                                  shell=True, capture_output=True, text=True).stdout
        run.say("# " + "; ".join(l.strip() for l in versions.splitlines()))
        points = []
        if "fanout" in sections:
            points += [("fanout", n) for n in sizes]
        if "idle" in sections:
            points.append(("idle", args.idle_clients))
        if "ingest" in sections:
            points.append(("ingest", 0))
        results = []  # (rep, section, system, n, fields)
        for rep in range(args.reps):
            for section, n in points:
                k = rep % len(systems)
                for system in systems[k:] + systems[:k]:
                    run.progress("rep %d/%d %s %s N=%d" % (rep + 1, args.reps, section, system, n))
                    extra = ["--idle", str(args.idle_hold)] if section == "idle" else []
                    r = one_run(run, args, bins, system, n, extra)
                    if r is not None:
                        results.append((rep, section, system, n, r))
        run.raw["results"] = [list(x) for x in results]
        import fanout_cost_report
        fanout_cost_report.report(run, args, systems, results)


if __name__ == "__main__":
    bl.run_main(main)
