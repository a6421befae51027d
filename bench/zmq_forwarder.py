#!/usr/bin/env python3
"""A Zeek cluster's central ZeroMQ forwarder: broker-node against libzmq's, in one run.

Forwarders (each started fresh for every run, on ephemeral 127.0.0.1 ports):
  libzmq       bench/zmq_proxy.cc: zmq_proxy_steerable() between an XSUB and an XPUB with
               XPUB_VERBOSER and XPUB_NODROP, 2 I/O threads: what a Zeek manager runs
               (libzmq 4.3.4 from Debian);
  broker-node  broker-node with broker.zeromq.xsub-port / xpub-port (doc/zeek-cluster.md),
               default buffer-size and overflow-policy (drop_oldest).
The driver is the same for both: zmq-drive (bench/zmq_drive.cc), Zeek nodes on libzmq with
Zeek's socket options, 1 publisher -> N subscribers, 4-frame events.

Sections (each repetition runs both forwarders once per point, the order rotating with the
repetition; tables show medians, ratios are per repetition, then the median):
  fanout  N = --sizes subscribers x --payloads bytes: delivered events/s, forwarder CPU per
          delivered event (ns) and the driver's next to it, forwarder CPU %, p50/p99
          latency at --latency-rate deliveries/s, forwarder RSS (VmHWM) at the end;
  stall   N = --stall-n subscribers, one stops reading: the others' rate with it stalled
          over their rate before (share); broker-node's drops from /v1/status.
The baseline the issue quotes: libzmq ~560-630 ns of forwarder CPU per delivered event.

    bench/zmq_forwarder.py               # ~5 minutes
    bench/zmq_forwarder.py --curve 1     # the same with every connection under CURVE
    bench/zmq_forwarder.py --quick       # ~1 minute: 1 repetition, N = 8 and 64, 64 bytes
    BUILD_DIR=build NO_BUILD=1 bench/zmq_forwarder.py --quick

Without the broker.zeromq.* options in broker-node (its --help) the broker-node column is
skipped with a message and libzmq is measured alone.
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import LOCALHOST, free_port  # noqa: E402
from brokertest.zeek_zmq import node_has_zeromq  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "repetitions"),
    ("--sizes", str, "8,64,512", "subscriber counts of the fan-out section"),
    ("--payloads", str, "64,512", "payload sizes (bytes) of the fan-out section"),
    ("--forwarders", str, "libzmq,broker-node", "forwarders to measure"),
    ("--sections", str, "fanout,stall", "what to run"),
    ("--seconds", float, 2.0, "throughput phase of each run"),
    ("--latency-seconds", float, 1.0, "latency phase of each fan-out run"),
    ("--latency-rate", float, 20000, "deliveries per second of the latency phase"),
    ("--stall-n", int, 8, "subscribers of the stall section"),
    ("--fill", float, 2.0, "seconds between the stall and its measurement"),
    ("--io-threads", int, 1, "libzmq I/O threads of the driver"),
    ("--quick", int, 0, "1: reps 1, sizes 8,64, payload 64, 1 s phases"),
    ("--curve", int, 0, "1: CURVE on every connection (both forwarders CURVE servers with "
     "one key, admitting any client; the driver's sockets CURVE clients)"),
]
RUN_TIMEOUT = 120
READY_TIMEOUT = 15.0


# --curve: the forwarders' server key pair of this run (kept out of the recorded arguments).
CURVE_KEYS = {}


def listening(port):
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        return any(l.split()[1] == want and l.split()[3] == "0A" for l in f.readlines()[1:])


class Forwarder:
    """A started forwarder: .proc, .xsub_port, .xpub_port, .metrics_port (broker-node)."""

    def __init__(self, run, kind, bins, curve=None):
        """curve: None, or the (public, secret) key pair of a CURVE server."""
        self.kind = kind
        self.metrics_port = None
        if kind == "libzmq":
            extra = ["--curve-secret", curve[1]] if curve else []
            self.proc = run.start(bins["zmq-proxy"], ["--io-threads", "2"] + extra, "zmq-proxy")
            ports = {}
            self.proc.wait_for(lambda l: self._port(l, ports) and len(ports) == 2,
                               READY_TIMEOUT, "both ports")
            self.xsub_port, self.xpub_port = ports["xsub-port"], ports["xpub-port"]
            return
        self.xsub_port, self.xpub_port = free_port(), free_port()
        self.metrics_port = free_port()
        self.proc = run.start(bins["broker-node"],
                              ["--listen-address=%s" % LOCALHOST, "--broker.disable-ssl",
                               "--broker.log-level=warning",
                               "--broker.metrics.address=%s" % LOCALHOST,
                               "--broker.metrics.port=%d" % self.metrics_port,
                               "--broker.zeromq.address=%s" % LOCALHOST,
                               "--broker.zeromq.xsub-port=%d" % self.xsub_port,
                               "--broker.zeromq.xpub-port=%d" % self.xpub_port]
                              + (["--broker.zeromq.curve-server-secret-key=%s" % curve[1]]
                                 if curve else []), "broker-node")
        deadline = time.monotonic() + READY_TIMEOUT
        while not (listening(self.xsub_port) and listening(self.xpub_port)
                   and listening(self.metrics_port)):
            if not self.proc.alive() or time.monotonic() > deadline:
                raise bl.BenchError("broker-node does not listen on its ZeroMQ ports\n%s"
                                    % self.proc.describe())
            time.sleep(0.05)

    @staticmethod
    def _port(line, ports):
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("xsub-port", "xpub-port"):
            ports[parts[0]] = int(parts[1])
        return True

    def memory(self):
        try:
            return bl.memory_kib(self.proc.pid)
        except OSError:
            return {}

    def drops(self):
        """broker-node: (totals.dropped, [dropped of each entry with drops]) of /v1/status."""
        if self.metrics_port is None:
            return None
        url = "http://%s:%d/v1/status" % (LOCALHOST, self.metrics_port)
        try:
            with urllib.request.urlopen(url, timeout=10) as res:
                doc = json.load(res)
        except (OSError, ValueError) as e:
            return {"error": str(e)}
        found = []

        def walk(x):
            if isinstance(x, dict):
                if isinstance(x.get("dropped"), (int, float)) and "queue" in x and x["dropped"]:
                    found.append(x["dropped"])
                for v in x.values():
                    walk(v)
            elif isinstance(x, list):
                for v in x:
                    walk(v)
        walk(doc)
        return {"total": doc.get("totals", {}).get("dropped"), "entries": found}

    def stop(self):
        if self.kind == "libzmq":
            # Under NODROP with a stalled subscriber the proxy is blocked in a send and
            # never reads its TERMINATE; it has nothing to flush.
            self.proc.kill()
        else:
            self.proc.stop(signal.SIGTERM, timeout=15)


def parse_result(line):
    out = {}
    for kv in line.split()[1:]:
        k, _, v = kv.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def one_run(run, args, bins, kind, extra):
    """A fresh forwarder, one zmq-drive run against it; the RESULT fields (+ rss_kib,
    hwm_kib, drops), or None (the failure is printed)."""
    fwd = Forwarder(run, kind, bins, CURVE_KEYS.get("pair"))
    try:
        cmd = [bins["zmq-drive"], "--xsub-port", str(fwd.xsub_port), "--xpub-port",
               str(fwd.xpub_port), "--forwarder-pid", str(fwd.proc.pid), "--io-threads",
               str(args.io_threads), "--seconds", str(args.seconds)] + extra
        if CURVE_KEYS:
            cmd += ["--curve-server-key", CURVE_KEYS["pair"][0]]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Stall runs: read /v1/status while the connections are open (after the run they
        # are closed and only totals.dropped holds their drops); the last reading that
        # attributes drops to a connection is kept. Fan-out runs are not disturbed.
        live = None
        if kind == "broker-node" and "stall" in extra:
            deadline = time.monotonic() + RUN_TIMEOUT
            while p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.5)
                d = fwd.drops()
                if d and d.get("entries"):
                    live = d
        try:
            out, err = p.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        p = subprocess.CompletedProcess(cmd, p.returncode, out, err)
        lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
        if p.returncode != 0 or not lines:
            run.say("# FAILED %s %s: %s %s" % (kind, " ".join(extra), p.stdout.strip()[-300:],
                                                p.stderr.strip()[-300:]))
            return None
        r = parse_result(lines[0])
        mem = fwd.memory()
        r["rss_kib"], r["hwm_kib"] = mem.get("VmRSS"), mem.get("VmHWM")
        r["drops"] = fwd.drops()
        if live is not None:
            # Entries while the connections were open; the total at the end of the run.
            r["drops"] = {"total": r["drops"].get("total") if r["drops"] else None,
                          "entries": live["entries"]}
        return r
    finally:
        fwd.stop()


def report(run, args, forwarders, fanout, stall):
    med = bl.median
    if fanout:
        run.say("")
        run.say("## Fan-out: 1 publisher -> N subscribers, %s (medians of %d)"
                % ("CURVE" if args.curve else "NULL", args.reps))
        rows = []
        for (n, size) in sorted({(k[1], k[2]) for k in fanout}):
            for f in forwarders:
                rs = fanout.get((f, n, size), [])
                if not rs:
                    continue
                rows.append(["%s N=%d %d B" % (f, n, size), bl.fmt_int(med([r["rate"] for r in rs])),
                             bl.fmt(med([r["fwd_ns_per_delivery"] for r in rs]), 0),
                             bl.fmt(med([r["drv_ns_per_delivery"] for r in rs]), 0),
                             bl.fmt(med([r["fwd_cpu_pct"] for r in rs]), 0),
                             bl.fmt(med([r["p50_us"] for r in rs]), 0),
                             bl.fmt(med([r["p99_us"] for r in rs]), 0),
                             bl.fmt_int(med([r["hwm_kib"] for r in rs]))])
        run.table(["forwarder, point", "delivered/s", "fwd ns/delivery", "driver ns/delivery",
                   "fwd CPU %", "p50 µs", "p99 µs", "fwd RSS peak KiB"], rows)
        if len(forwarders) == 2:
            run.say("")
            run.say("Per repetition: libzmq's forwarder CPU per delivery / broker-node's "
                    "(target >= 3), p99 broker-node / libzmq (target <= 1); medians:")
            rows = []
            for (n, size) in sorted({(k[1], k[2]) for k in fanout}):
                a, b = fanout.get(("libzmq", n, size), []), fanout.get(("broker-node", n, size), [])
                cpu = [x["fwd_ns_per_delivery"] / y["fwd_ns_per_delivery"]
                       for x, y in zip(a, b) if y["fwd_ns_per_delivery"] > 0]
                p99 = [y["p99_us"] / x["p99_us"] for x, y in zip(a, b) if x["p99_us"] > 0]
                rows.append(["N=%d %d B" % (n, size), bl.fmt(med(cpu), 2), bl.fmt(med(p99), 2)])
            run.table(["point", "CPU/delivery libzmq / ours", "p99 ours / libzmq"], rows)
    if stall:
        run.say("")
        run.say("## Stall: N = %d, subscriber 0 stops reading (medians of %d)"
                % (args.stall_n, args.reps))
        rows = []
        for f in forwarders:
            rs = stall.get(f, [])
            if not rs:
                continue
            drops = [r["drops"] for r in rs if isinstance(r.get("drops"), dict)]
            rows.append([f, bl.fmt_int(med([r["rate_a"] for r in rs])),
                         bl.fmt_int(med([r["rate_b"] for r in rs])),
                         bl.fmt(med([r["share"] for r in rs]), 3),
                         bl.fmt(med([r["fwd_cpu_pct_b"] for r in rs]), 0),
                         "; ".join("%s on %s" % (d.get("total"), d.get("entries")) for d in drops)
                         or "-"])
        run.table(["forwarder", "others' rate before /s", "with one stalled /s",
                   "share (target >= 0.9)", "fwd CPU % stalled", "drops: total on entries"],
                  rows)


def main():
    # `--quick` alone means --quick=1 (benchlib's options all take a value).
    sys.argv = [a if a != "--quick" else "--quick=1" for a in sys.argv]
    args = bl.parse_args(__doc__, OPTIONS)
    if args.quick:
        args.reps, args.sizes, args.payloads = 1, "8,64", "64"
        args.seconds, args.latency_seconds, args.fill = 1.0, 0.5, 1.0
    forwarders = [f for f in args.forwarders.split(",") if f]
    sizes = [int(x) for x in args.sizes.split(",") if x]
    payloads = [int(x) for x in args.payloads.split(",") if x]
    sections = set(args.sections.split(","))
    with bl.Run("zmq_forwarder", args) as run:
        targets = ["zmq-proxy", "zmq-drive"] + (["broker-node"] if "broker-node" in forwarders
                                                else [])
        bins = run.build(*targets)
        if "broker-node" in forwarders and not node_has_zeromq(bins["broker-node"]):
            run.say("# broker-node: SKIPPED: %s has no broker.zeromq.* options (no ZeroMQ "
                    "transport in this build); measuring libzmq alone" % bins["broker-node"])
            forwarders.remove("broker-node")
        ver = subprocess.run(["pkg-config", "--modversion", "libzmq"], capture_output=True,
                             text=True).stdout.strip()
        if args.curve:
            out = subprocess.run([bins["zmq-proxy"], "--keypair"], capture_output=True,
                                 text=True, check=True).stdout.split()
            CURVE_KEYS["pair"] = (out[0], out[1])
        run.say("# libzmq %s; forwarders: %s; mechanism: %s"
                % (ver or "?", ", ".join(forwarders), "CURVE" if args.curve else "NULL"))
        fanout, stall = {}, {}
        for rep in range(args.reps):
            order = forwarders[rep % len(forwarders):] + forwarders[:rep % len(forwarders)]
            if "fanout" in sections:
                for n in sizes:
                    for size in payloads:
                        for f in order:
                            run.progress("rep %d/%d fanout %s N=%d %d B"
                                         % (rep + 1, args.reps, f, n, size))
                            r = one_run(run, args, bins, f,
                                        ["--mode", "fanout", "--subscribers", str(n), "--size",
                                         str(size), "--latency-seconds",
                                         str(args.latency_seconds), "--latency-rate",
                                         str(args.latency_rate)])
                            if r:
                                fanout.setdefault((f, n, size), []).append(r)
            if "stall" in sections:
                for f in order:
                    run.progress("rep %d/%d stall %s N=%d" % (rep + 1, args.reps, f, args.stall_n))
                    r = one_run(run, args, bins, f,
                                ["--mode", "stall", "--subscribers", str(args.stall_n),
                                 "--size", str(payloads[0]), "--fill", str(args.fill)])
                    if r:
                        stall.setdefault(f, []).append(r)
        run.raw["fanout"] = [[k[0], k[1], k[2], v] for k, v in fanout.items()]
        run.raw["stall"] = stall
        report(run, args, forwarders, fanout, stall)


if __name__ == "__main__":
    bl.run_main(main)
