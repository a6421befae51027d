#!/usr/bin/env python3
"""Soak: a node relaying at half its maximum rate for 10 minutes while WebSocket clients and
peers connect and disconnect all the time; its resident memory and open descriptors must
stay flat.

The node under test is a broker-node (WebSocket and metrics ports on) that relays
/benchmark/events from a broker-throughput publisher (which dials it) to a
broker-throughput --server receiver (which it dials), all on 127.0.0.1, plain TCP.

1. Maximum rate (skipped with --rate): a separate relay of the same shape, with peer policy
   drop_oldest so that a slow receiver cannot cut the path, gets type-1 events in batches
   of --batch-size as fast as the publisher can send for --max-seconds, --max-reps times;
   the median of the receiver's per-second rates (first and last second left out) is the
   node's maximum. The soak publishes at half of it.
2. Soak, --minutes long, node at its default settings, with churn:
   - WebSocket: --ws-threads threads open clients back to back (--ws-life s at most each,
     --ws-pause s apart): "stalled" ones subscribe to /benchmark/events and never read (the
     node cuts them off when their queue fills, or they close first), "chatty" ones
     publish and read on /soak/ws/, "abrupt" ones subscribe and reset the TCP connection,
     "mute" ones upgrade and send nothing.
   - peers: a broker-node dials the node every --peer-every s, subscribed to
     /benchmark/events or to /soak/peer/ (alternately), lives up to --peer-life s and ends
     with SIGTERM (a BYE) or SIGKILL (alternately); and a raw peer (tests/lib/brokertest/
     peer.py) handshakes, publishes a few messages and drops the connection every
     --raw-every s.
   - every second the node's VmRSS (/proc/<pid>/status) and open descriptors (entries of
     /proc/<pid>/fd); every 5 s its metrics (connections by kind, disconnects) and the
     receiver's rate.
3. Report: a table per minute (RSS and descriptors: min, max, at the end; clients and peers
   opened; the receiver's events/s), the growth between the second and the last minute,
   and the least-squares slope of the per-minute medians from the second minute on; a plot
   of RSS and descriptors over time.

    bench/soak.py                          # builds in build-bench/, ~12 minutes
    MINUTES=2 RATE=20000 bench/soak.py     # a short run at a fixed rate
"""

import json
import os
import random
import signal
import socket
import statistics
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest import peer, rawws  # noqa: E402
from brokertest.net import LOCALHOST, addr, scrape_metrics  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402

OPTIONS = [
    ("--minutes", float, 10.0, "length of the soak"),
    ("--rate", int, 0, "events/s of the soak; 0: half the measured maximum"),
    ("--batch-size", int, 10, "events per batch of the publisher"),
    ("--max-seconds", int, 6, "seconds of each maximum-rate run"),
    ("--max-reps", int, 3, "maximum-rate runs"),
    ("--ws-threads", int, 6, "threads opening WebSocket clients back to back"),
    ("--ws-life", float, 2.0, "longest life of a WebSocket client (s)"),
    ("--ws-pause", float, 0.2, "pause between two clients of one thread (s)"),
    ("--peer-every", float, 3.0, "seconds between two broker-node peers"),
    ("--peer-life", float, 8.0, "longest life of a broker-node peer (s)"),
    ("--raw-every", float, 1.0, "seconds between two raw peers"),
    ("--seed", int, 1, "seed of the churn's random choices"),
]

EVENTS_TOPIC = "/benchmark/events"
WS_TOPIC = "/soak/ws/"
PEER_TOPIC = "/soak/peer/"
SAMPLE_EVERY = 1.0
METRICS_EVERY = 5.0
WS_KINDS = ("stalled", "chatty", "abrupt", "mute")
STALL_RCVBUF = 64 * 1024


# -- the relay --------------------------------------------------------------------------------

class Relay:
    """receiver <- node <- publisher, the node dialing the receiver."""

    def __init__(self, run, bins, name, node_args=()):
        self.run, self.bins = run, bins
        self.receiver = run.start(bins["broker-throughput"],
                                  ["--server", addr(0), "--json", "--disable-ssl"],
                                  "receiver-" + name)
        port = self.receiver.listening_port()
        self.node = run.start(bins["broker-node"],
                              ["--listen-address", LOCALHOST, "-v", "--peers", peer_uri(port),
                               "--broker.web-socket.address=" + LOCALHOST,
                               "--broker.metrics.address=" + LOCALHOST] + list(node_args),
                              "node-" + name, kind=Node, web_socket=True, metrics=True)
        line = self.node.wait_for(is_status("peer_added"), what="the receiver's peering")
        self.receiver_id = line.split()[2]
        self.publisher = None

    def publish(self, batch_size, rate, seconds, name):
        args = ["-t", "1", "-s", str(batch_size), "--json", "--disable-ssl"]
        if rate:
            args += ["-r", str(max(1, rate // batch_size))]
        if seconds:
            args += ["--duration", str(seconds)]
        self.publisher = self.run.start(self.bins["broker-throughput"], args +
                                        [addr(self.node.port)], name)

    def receiver_rates(self, since=0):
        """(time, events/s) of the receiver's rate lines from position `since` on."""
        return [(o["time"], o["rate"]) for o in
                (bl.procs.parse_json(l) for l in self.receiver.lines_since(since))
                if isinstance(o, dict) and o.get("type") == "rate"]

    def stop(self):
        for p in (self.publisher, self.node, self.receiver):
            if p is not None and p.alive():
                p.stop(signal.SIGINT if p is not self.node else signal.SIGTERM)

    def receiver_cut_offs(self):
        """How often the node removed the receiver's peering (its queue overflowed), from
        the node's log (the output kept in memory is only the last lines); after stop()."""
        path = os.path.join(self.run.log_dir, "%s.%d.log" % (self.node.name, self.node.pid))
        prefix = "out status peer_removed %s " % self.receiver_id
        with open(path, errors="replace") as f:
            return sum(1 for line in f if line.startswith(prefix))


def max_rate(run, bins, args):
    """The median receiver rate over --max-reps full-speed runs (see the module comment)."""
    rates = []
    for rep in range(args.max_reps):
        run.progress("maximum rate: run %d/%d" % (rep + 1, args.max_reps))
        relay = Relay(run, bins, "max%d" % rep, ["--broker.peer-overflow-policy=drop_oldest"])
        mark = relay.receiver.mark()
        relay.publish(args.batch_size, 0, args.max_seconds, "publisher-max%d" % rep)
        relay.publisher.wait_exit(args.max_seconds + 60)
        per_second = [r for _, r in relay.receiver_rates(mark)]
        relay.stop()
        if len(per_second) > 2:
            per_second = per_second[1:-1]
        if per_second:
            rates.append(statistics.median(per_second))
    if not rates:
        raise bl.BenchError("the maximum-rate runs produced no rate lines")
    return statistics.median(rates), rates


# -- churn ----------------------------------------------------------------------------------

class Churn:
    """The threads that open and drop WebSocket clients and peers (see the module comment),
    with counters per minute."""

    def __init__(self, run, bins, args, node, t0):
        self.run, self.bins, self.args, self.node, self.t0 = run, bins, args, node, t0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.counts = {}  # (minute, what) -> n
        self.threads = [threading.Thread(target=self._ws_loop, args=(i,), daemon=True)
                        for i in range(args.ws_threads)]
        self.threads.append(threading.Thread(target=self._peer_loop, daemon=True))
        self.threads.append(threading.Thread(target=self._raw_loop, daemon=True))

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)

    def count(self, what, n=1):
        minute = int((time.monotonic() - self.t0) // 60)
        with self.lock:
            self.counts[(minute, what)] = self.counts.get((minute, what), 0) + n

    # WebSocket clients.

    def _ws_loop(self, i):
        rng = random.Random(self.args.seed * 1000 + i)
        n = 0
        while not self.stop.is_set():
            kind = WS_KINDS[n % len(WS_KINDS)]
            n += 1
            try:
                self._ws_client(rng, kind, i, n)
                self.count("ws " + kind)
            except (OSError, EOFError, rawws.ProtocolError, ValueError):
                self.count("ws failed")
            self.stop.wait(rng.uniform(0, self.args.ws_pause))

    def _ws_client(self, rng, kind, i, n):
        life = rng.uniform(0.1, self.args.ws_life)
        client = rawws.RawClient(self.node.ws_port, host=LOCALHOST,
                                 rcvbuf=STALL_RCVBUF if kind == "stalled" else None)
        try:
            if kind == "mute":
                self.stop.wait(life)
                return
            topics = [EVENTS_TOPIC] if kind == "stalled" else [WS_TOPIC]
            client.send_text(json.dumps(topics))
            if json.loads(client.recv_text()).get("type") != "ack":
                raise rawws.ProtocolError("no ack")
            if kind == "stalled":
                self.stop.wait(life)
            elif kind == "abrupt":
                self.stop.wait(life)
                client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
                return
            else:
                deadline = time.monotonic() + life
                k = 0
                while time.monotonic() < deadline and not self.stop.is_set():
                    client.send_text(json.dumps({"topic": "%s%d" % (WS_TOPIC, i),
                                                 "@data-type": "count", "data": k}))
                    k += 1
                    client.poll_frames(0.05)
                client.send_close()
        finally:
            client.close()

    # Peers.

    def _peer_loop(self):
        rng = random.Random(self.args.seed)
        live = []  # (proc, end time, ending signal)
        n = 0
        next_start = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_start:
                topic = EVENTS_TOPIC if n % 2 == 0 else PEER_TOPIC
                sig = signal.SIGTERM if (n // 2) % 2 == 0 else signal.SIGKILL
                p = self.run.start(self.bins["broker-node"],
                                   ["--no-listen", "--broker.disable-ssl", "-t", topic,
                                    "--peers", peer_uri(self.node.port)], "peer-%03d" % n)
                live.append((p, now + rng.uniform(1.0, self.args.peer_life), sig))
                self.count("peers")
                n += 1
                next_start = now + self.args.peer_every
            for entry in list(live):
                p, end, sig = entry
                if now >= end or not p.alive():
                    if sig == signal.SIGKILL:
                        p.kill()
                    else:
                        p.stop(sig)
                    live.remove(entry)
            self.stop.wait(0.1)
        for p, _, _ in live:
            p.kill()

    def _raw_loop(self):
        n = 0
        while not self.stop.wait(self.args.raw_every):
            try:
                raw = peer.RawPeer.dial(LOCALHOST, self.node.port, peer.random_id(),
                                        [PEER_TOPIC])
                raw.publish_many(PEER_TOPIC + "raw", [peer.encode_count(k) for k in range(10)])
                raw.close()
                self.count("raw peers")
            except (OSError, peer.ProtocolError, peer.ConnectionClosed):
                self.count("raw failed")
            n += 1


# -- sampling -----------------------------------------------------------------------------

def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def sample_loop(node, t0, stop, samples, metrics):
    next_metrics = 0.0
    while not stop.is_set():
        t = time.monotonic() - t0
        try:
            samples.append((t, bl.memory_kib(node.pid)["VmRSS"], open_fds(node.pid),
                            bl.cpu_seconds(node.pid)))
        except (OSError, KeyError):
            pass
        if t >= next_metrics:
            try:
                metrics.append((t, scrape_metrics(node.metrics_port)))
            except Exception as e:  # A failed scrape is a gap in the series, not the end.
                metrics.append((t, {"error": str(e)}))
            next_metrics = t + METRICS_EVERY
        stop.wait(SAMPLE_EVERY)


def slope(points):
    """Least-squares slope of [(x, y)]."""
    if len(points) < 2:
        return None
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else None


# -- the run ------------------------------------------------------------------------------

def main():
    args = bl.parse_args(__doc__, OPTIONS)
    with bl.Run("soak", args) as run:
        bins = run.build("broker-node", "broker-throughput")
        if args.rate:
            maximum, max_runs = None, []
            rate = args.rate
        else:
            maximum, max_runs = max_rate(run, bins, args)
            rate = int(maximum / 2)
        run.say("")
        run.say("maximum relay rate: %s events/s (runs: %s); soak rate: %s events/s"
                % (bl.fmt_int(maximum), ", ".join(bl.fmt_int(r) for r in max_runs) or "n/a",
                   bl.fmt_int(rate)))
        relay = Relay(run, bins, "soak")
        mark = relay.receiver.mark()
        relay.publish(args.batch_size, rate, 0, "publisher-soak")
        relay.receiver.wait_for(lambda l: '"type":"rate"' in l, what="the first rate line")
        t0 = time.monotonic()
        samples, metrics, stop = [], [], threading.Event()
        sampler = threading.Thread(target=sample_loop,
                                   args=(relay.node, t0, stop, samples, metrics), daemon=True)
        sampler.start()
        churn = Churn(run, bins, args, relay.node, t0)
        churn.start()
        seconds = args.minutes * 60
        try:
            while time.monotonic() - t0 < seconds:
                for p in (relay.node, relay.receiver, relay.publisher):
                    if not p.alive():
                        raise bl.BenchError("%s exited during the soak\n%s"
                                            % (p.name, p.describe()))
                left = int(seconds - (time.monotonic() - t0))
                if left % 60 == 0:
                    run.progress("%d s left; node RSS %s KiB, %d descriptors"
                                 % (left, samples[-1][1] if samples else "?",
                                    samples[-1][2] if samples else -1))
                time.sleep(1)
        finally:
            churn.finish()
            stop.set()
            sampler.join()
        final_metrics = scrape_metrics(relay.node.metrics_port)
        rates = relay.receiver_rates(mark)
        relay.stop()
        cut_offs = relay.receiver_cut_offs()
        run.raw.update(maximum=maximum, max_runs=max_runs, rate=rate, samples=samples,
                       receiver_cut_offs=cut_offs,
                       metrics=metrics, final_metrics=final_metrics, receiver_rates=rates,
                       churn={"%d %s" % k: v for k, v in churn.counts.items()})
        report(run, args, rate, samples, rates, churn.counts, final_metrics, cut_offs)
        plot(run, args, rate, samples, metrics)


def report(run, args, rate, samples, rates, counts, final_metrics, cut_offs):
    minutes = int(round(args.minutes))
    rows, medians_rss, medians_fds = [], [], []
    for m in range(minutes):
        xs = [s for s in samples if m * 60 <= s[0] < (m + 1) * 60]
        if not xs:
            continue
        rss = [s[1] / 1024.0 for s in xs]
        fds = [s[2] for s in xs]
        cpu = (xs[-1][3] - xs[0][3]) / max(1e-9, xs[-1][0] - xs[0][0]) * 100
        rr = [r for t, r in rates if m * 60 <= t < (m + 1) * 60]
        ws = sum(v for (mm, what), v in counts.items() if mm == m and what.startswith("ws ")
                 and what != "ws failed")
        rows.append([str(m + 1), "%.1f / %.1f / %.1f" % (min(rss), max(rss), rss[-1]),
                     "%d / %d / %d" % (min(fds), max(fds), fds[-1]), str(ws),
                     str(counts.get((m, "peers"), 0)), str(counts.get((m, "raw peers"), 0)),
                     "%s / %s" % (bl.fmt_int(statistics.median(rr)), bl.fmt_int(min(rr)))
                     if rr else "n/a", "%.0f" % cpu])
        medians_rss.append((m + 1, statistics.median(rss)))
        medians_fds.append((m + 1, statistics.median(fds)))
    run.say("")
    run.say("## node under soak: %s events/s relayed, WebSocket clients and peers churning"
            % bl.fmt_int(rate))
    run.say("")
    run.table(["minute", "RSS MiB min / max / end", "descriptors min / max / end",
               "WebSocket clients", "broker-node peers", "raw peers",
               "receiver events/s median / min", "node CPU %"], rows)
    run.say("")
    failed = {what: sum(v for (_, w), v in counts.items() if w == what)
              for what in ("ws failed", "raw failed")}
    kinds = {k: sum(v for (_, w), v in counts.items() if w == "ws " + k) for k in WS_KINDS}
    run.say("WebSocket clients by kind: %s; failed attempts: %d WebSocket, %d raw peer"
            % (", ".join("%s %d" % kv for kv in kinds.items()), failed["ws failed"],
               failed["raw failed"]))
    slow = sum(1 for _, r in rates if r < 0.9 * rate)
    run.say("the node cut the receiver off %d times (its queue overflowed; it is re-dialed "
            "within a second); %d of %d seconds the receiver got less than 90 %% of the rate"
            % (cut_offs, slow, len(rates)))
    run.say("node counters at the end: %s" % ", ".join(
        "%s %d" % (k, v) for k, v in sorted(final_metrics.items())
        if k.startswith(("broker_handler_disconnects_total", "broker_connections"))
        and v and "store" not in k))
    if len(medians_rss) >= 3:
        later = medians_rss[1:]
        s_rss = slope(later)
        s_fds = slope(medians_fds[1:])
        run.say("RSS median: minute 2 %.1f MiB, minute %d %.1f MiB (%+.1f MiB); slope from "
                "minute 2 on %+.2f MiB/minute" % (later[0][1], later[-1][0], later[-1][1],
                                                  later[-1][1] - later[0][1], s_rss))
        run.say("descriptors median: minute 2 %d, minute %d %d (%+d); slope from minute 2 on "
                "%+.2f/minute" % (medians_fds[1][1], medians_fds[-1][0], medians_fds[-1][1],
                                  medians_fds[-1][1] - medians_fds[1][1], s_fds))
        run.raw["slopes"] = {"rss_mib_per_minute": s_rss, "fds_per_minute": s_fds}


def plot(run, args, rate, samples, metrics):
    data = {"node.dat": ["%.1f %.2f %d" % (t, rss / 1024.0, fds) for t, rss, fds, _ in samples],
            "clients.dat": ["%.1f %d %d" % (t, m.get('broker_connections{type="web-socket"}', 0),
                                            m.get('broker_connections{type="native"}', 0))
                            for t, m in metrics if "error" not in m]}
    script = f"""
set multiplot layout 2,1 title "Soak: node relaying {rate} events/s for {args.minutes:g} min, WebSocket clients and peers churning"
set xlabel "time (s)"
set grid ytics
set key top left horizontal
set ylabel "RSS (MiB)"
set yrange [0:*]
plot "node.dat" using 1:2 with lines lw 1.5 lc rgb "#1f77b4" title "node RSS"
set ylabel "count"
plot "node.dat" using 1:3 with lines lw 1.5 lc rgb "#d62728" title "open descriptors", \\
     "clients.dat" using 1:2 with points pt 7 ps 0.4 lc rgb "#2ca02c" title "WebSocket clients (5 s)", \\
     "clients.dat" using 1:3 with points pt 7 ps 0.4 lc rgb "#ff7f0e" title "peers (5 s)"
unset multiplot
"""
    run.plot("soak.png", (1100, 640), script, data)


if __name__ == "__main__":
    bl.run_main(main)
