#!/usr/bin/env python3
"""Scenario 4, slow consumers: a peer and a WebSocket client that stop reading must not make
a node's memory grow or slow down the node's other receivers.

A relay is a broker-node that forwards /benchmark/events from a broker-throughput publisher
(peered with it) to a fast receiver (broker-throughput --server, which the node dials), all
on 127.0.0.1. Each round runs two identical relays, X and Y, at the same time; one of them
also has two slow consumers subscribed to /benchmark/events that never read after their
handshake: a raw native peer and a raw WebSocket client (stalled_peer() and
stalled_web_socket() below, on the raw clients of tests/lib/brokertest). Rounds
alternate which relay gets them, so the shared machine's load hits the compared runs alike.
The node's resident memory is sampled every 0.25 s (VmRSS from /proc/<pid>/status), its
drop and disconnect counters are read from its Prometheus endpoint.

  A. Peer and WebSocket overflow policy drop_oldest (the slow consumers stay attached),
     publishers at full speed: --reps pairs of --duration-second rounds.
  B. The same for --long seconds: node memory over time, with and without.
  C. The default policy (disconnect), publishers at --paced-rate events/s: --reps pairs of
     --short-duration-second rounds; the node should cut the slow consumers off and the
     fast receiver keep the rate without loss.
(Why C is paced: with disconnect, a relay cuts off *any* receiver slower than the publisher,
the fast one included; see doc/performance.md.) See bench/README.md.

    bench/slow_consumer.py                   # builds in build-bench/, ~4 minutes
    REPS=1 LONG=20 bench/slow_consumer.py    # shorter
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest import peer, rawws  # noqa: E402
from brokertest.net import LOCALHOST, addr, scrape_metrics  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "pairs of rounds (slow consumers on X, then on Y) in parts A and C"),
    ("--duration", int, 15, "seconds of publishing per round in part A"),
    ("--long", int, 60, "seconds of publishing in part B"),
    ("--short-duration", int, 10, "seconds of publishing per round in part C"),
    ("--paced-rate", int, 20000, "events/s of each publisher in part C"),
    ("--event-type", int, 1, "broker-throughput event type"),
    ("--batch-size", int, 100, "events per batch of the publishers"),
    ("--parts", str, "A,B,C", "parts to run"),
]

EVENTS_TOPIC = "/benchmark/events"
SAMPLE_INTERVAL = 0.25
RUN_SLACK = 60
RELAYS = ("X", "Y")
DROP_POLICY = ["--broker.peer-overflow-policy=drop_oldest",
               "--broker.web-socket-overflow-policy=drop_oldest"]


# A slow consumer's receive buffer: its TCP window closes after a few dozen KiB, so the
# node's own queue for it fills at once.
STALL_RCVBUF = 64 * 1024


def stalled_peer(port):
    """A native peering subscribed to the events whose dialer never reads after the
    handshake."""
    return peer.RawPeer.dial(LOCALHOST, port, peer.random_id(), [EVENTS_TOPIC],
                             rcvbuf=STALL_RCVBUF)


def stalled_web_socket(port):
    """A WebSocket client subscribed to the events that never reads after the node's ack."""
    client = rawws.RawClient(port, rcvbuf=STALL_RCVBUF, host=LOCALHOST)
    try:
        client.send_text(json.dumps([EVENTS_TOPIC]))
        ack = client.recv_text()
        if json.loads(ack).get("type") != "ack":
            raise bl.BenchError("expected the node's ack, got %r" % ack[:200])
    except BaseException:
        client.close()
        raise
    return client


def metric(m, name, kind, policy=None):
    labels = 'kind="%s"' % kind + (',policy="%s"' % policy if policy else "")
    return int(m.get("%s{%s}" % (name, labels), 0))


class Relay:
    """A fast receiver, a node that dials it and, on demand, slow consumers on the node."""

    def __init__(self, run, bins, name, policy_args):
        self.run, self.bins, self.name = run, bins, name
        self.server = run.start(bins["broker-throughput"],
                                ["--server", addr(0), "--json", "--disable-ssl"],
                                "fast-receiver-" + name)
        server_port = self.server.listening_port()
        self.node = run.start(bins["broker-node"],
                              ["--listen-address", LOCALHOST, "-v",
                               "--peers", peer_uri(server_port),
                               "--broker.web-socket.address=%s" % LOCALHOST,
                               "--broker.metrics.address=%s" % LOCALHOST] + policy_args,
                              "node-" + name, kind=Node, web_socket=True, metrics=True)
        self.port, self.ws_port = self.node.port, self.node.ws_port
        self.metrics_port = self.node.metrics_port
        line = self.node.wait_for(is_status("peer_added"), what="the fast receiver's peering")
        self.receiver_id = line.split()[2]
        self.consumers = []
        self.slow_peer_id = None
        self.publisher = None

    def attach_slow_consumers(self):
        slow_peer = stalled_peer(self.port)
        self.consumers.append(slow_peer)
        self.slow_peer_id = peer.id_text(slow_peer.own_id)
        self.node.wait_for(is_status("peer_added", self.slow_peer_id),
                           what="the stalled peer's peering")
        self.consumers.append(stalled_web_socket(self.ws_port))

    def start_publisher(self, args, rate, seconds):
        pargs = ["-t", str(args.event_type), "-s", str(args.batch_size),
                 "--duration", str(seconds), "--json", "--disable-ssl"]
        if rate:
            pargs += ["-r", str(rate // args.batch_size)]
        self.publisher = self.run.start(self.bins["broker-throughput"],
                                        pargs + [addr(self.port)],
                                        "publisher-" + self.name)

    def finish(self, seconds, samples):
        """Waits for the publisher, collects everything, stops the relay's processes."""
        code = self.publisher.wait_exit(seconds + RUN_SLACK)
        metrics = scrape_metrics(self.metrics_port)
        hwm = bl.memory_kib(self.node.pid)["VmHWM"]
        self.server.stop(signal.SIGINT)
        for c in self.consumers:
            c.close()
        if code != 0:
            raise bl.BenchError("publisher %s exited with %d\n%s\n%s"
                                % (self.name, code, self.publisher.describe(),
                                   self.node.describe()))
        pub, recv = self.publisher.summary(), self.server.summary()
        # Counted before stop(): a node that stops removes every peer.
        receiver_cut = len(self.node.matching(is_status("peer_removed", self.receiver_id)))
        slow_peer_cut = len(self.node.matching(is_status("peer_removed", self.slow_peer_id))) \
            if self.slow_peer_id else 0
        self.node.stop()
        rss = [(t, row[self.name][1]) for t, row in samples if self.name in row]
        return {
            "slow": bool(self.consumers), "sent": pub["events"], "pub_rate": pub["rate"],
            "received": recv["events"], "rate": recv["rate"],
            "receiver_rates": [o["rate"] for o in self.server.json_objects("rate")],
            "lost": pub["events"] - recv["events"],
            "peak_rss_kib": max((k for _, k in rss if k), default=None), "hwm_kib": hwm,
            "rss": rss,
            "dropped": {k: metric(metrics, "broker_handler_dropped_messages_total", k, "drop_oldest")
                        for k in ("peer", "web_socket")},
            "ws_disconnects": metric(metrics, "broker_handler_disconnects_total", "web_socket"),
            "receiver_cut": receiver_cut, "slow_peer_cut": slow_peer_cut,
            "connections": {k: metric(metrics, "broker_handlers", k)
                            for k in ("peer", "web_socket")},
        }


def one_round(run, bins, args, slow_on, policy_args, rate, seconds):
    """Both relays at once; `slow_on` (X, Y or None) gets the slow consumers."""
    relays = {n: Relay(run, bins, n, policy_args) for n in RELAYS}
    if slow_on:
        relays[slow_on].attach_slow_consumers()
    before = {n: bl.memory_kib(r.node.pid)["VmRSS"] for n, r in relays.items()}
    sampler = bl.Sampler({n: r.node.pid for n, r in relays.items()}, SAMPLE_INTERVAL)
    for r in relays.values():
        r.start_publisher(args, rate, seconds)
    results = {}
    for n, r in relays.items():
        results[n] = r.finish(seconds, sampler.samples)
        results[n]["rss_before_kib"] = before[n]
    sampler.stop()
    return {"slow_on": slow_on, "with": results[slow_on] if slow_on else None,
            "without": results["Y" if slow_on == "X" else "X"], "relays": results}


def crossover(run, bins, args, label, policy_args, rate, seconds):
    rounds = []
    for rep in range(args.reps):
        for target in RELAYS:
            run.progress("%s: pair %d/%d, slow consumers on %s" % (label, rep + 1, args.reps,
                                                                  target))
            rounds.append(one_round(run, bins, args, target, policy_args, rate, seconds))
    return rounds


def mib(kib):
    return None if kib is None else kib / 1024.0


def pct(part, whole):
    return "%.1f %%" % (100.0 * part / max(1, whole))


def round_table(run, rounds):
    rows = []
    for i, r in enumerate(rounds):
        a, b = r["with"], r["without"]
        rows.append(["%d (%s)" % (i + 1, r["slow_on"]), bl.fmt_int(a["rate"]),
                     bl.fmt_int(b["rate"]), "%.2f" % (a["rate"] / b["rate"]),
                     pct(a["lost"], a["sent"]), pct(b["lost"], b["sent"]),
                     "%d / %d" % (a["receiver_cut"], b["receiver_cut"]),
                     bl.fmt(mib(a["peak_rss_kib"])), bl.fmt(mib(b["peak_rss_kib"])),
                     "%s / %s" % (bl.fmt_int(a["dropped"]["peer"]),
                                  bl.fmt_int(a["dropped"]["web_socket"])),
                     "%d / %d" % (a["slow_peer_cut"], a["ws_disconnects"])])
    ratio = bl.median([r["with"]["rate"] / r["without"]["rate"] for r in rounds])
    rows.append(["**median**", bl.fmt_int(bl.median([r["with"]["rate"] for r in rounds])),
                 bl.fmt_int(bl.median([r["without"]["rate"] for r in rounds])),
                 "**%.2f**" % ratio, "", "", "",
                 "**%s**" % bl.fmt(mib(bl.median([r["with"]["peak_rss_kib"] for r in rounds]))),
                 bl.fmt(mib(bl.median([r["without"]["peak_rss_kib"] for r in rounds]))), "", ""])
    run.table(["round (slow on)", "fast receiver events/s: relay with slow consumers",
               "relay without (same time)", "ratio", "lost with", "lost without",
               "fast receiver cut off with / without", "node peak RSS MiB with", "without",
               "dropped for slow peer / WS", "slow peer / WS cut off"], rows)
    return ratio


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    parts = set(x.strip().upper() for x in args.parts.split(",") if x.strip())
    with bl.Run("slow_consumer", args) as run:
        bins = run.build("broker-node", "broker-throughput")
        results = {}
        if "A" in parts:
            results["A"] = crossover(run, bins, args, "A (drop_oldest, full speed)",
                                     DROP_POLICY, 0, args.duration)
        if "B" in parts:
            run.progress("B: %d s, slow consumers on X (drop_oldest, full speed)" % args.long)
            results["B"] = one_round(run, bins, args, "X", DROP_POLICY, 0, args.long)
        if "C" in parts:
            results["C"] = crossover(run, bins, args, "C (disconnect, %d/s)" % args.paced_rate,
                                     [], args.paced_rate, args.short_duration)
        run.raw["results"] = results
        report(run, args, results)
        plot(run, args, results)


def report(run, args, results):
    if "A" in results:
        run.say("")
        run.say("## A. drop_oldest for peers and WebSocket clients, publishers at full speed "
                "(type %d, batches of %d), %d s rounds" % (args.event_type, args.batch_size,
                                                          args.duration))
        run.say("")
        run.raw["ratio_A"] = round_table(run, results["A"])
    if "B" in results:
        b = results["B"]
        run.say("")
        run.say("## B. node memory over %d s, drop_oldest, publishers at full speed"
                % args.long)
        run.say("")
        marks = [t for t in (1, 5, 10, 20, 30, 45, 60, 90, 120) if t <= args.long]
        def rss_at(res, t):
            xs = [kib for s, kib in res["rss"] if s <= t and kib]
            return mib(xs[-1]) if xs else None
        rows = []
        for label, res in (("with slow consumers", b["with"]), ("without", b["without"])):
            rows.append([label, bl.fmt(mib(res["rss_before_kib"]))]
                        + [bl.fmt(rss_at(res, t)) for t in marks]
                        + [bl.fmt(mib(res["peak_rss_kib"])), bl.fmt(mib(res["hwm_kib"]))])
        run.table(["node RSS MiB", "before"] + ["%d s" % t for t in marks] + ["peak", "VmHWM"],
                  rows)
        w, wo = b["with"], b["without"]
        run.say("")
        run.say("with slow consumers: published %s events (%s/s), the fast receiver got %s/s "
                "(%s lost; the relay without: %s/s, %s lost); the node dropped %s messages for "
                "the slow peer and %s for the WebSocket client; attached after the publisher left: "
                "%d peers (2 = the fast receiver and the slow peer), %d WebSocket client"
                % (bl.fmt_int(w["sent"]), bl.fmt_int(w["pub_rate"]), bl.fmt_int(w["rate"]),
                   pct(w["lost"], w["sent"]), bl.fmt_int(wo["rate"]), pct(wo["lost"], wo["sent"]),
                   bl.fmt_int(w["dropped"]["peer"]), bl.fmt_int(w["dropped"]["web_socket"]),
                   w["connections"]["peer"], w["connections"]["web_socket"]))
    if "C" in results:
        run.say("")
        run.say("## C. default policy (disconnect), publishers at %s events/s (type %d, "
                "batches of %d), %d s rounds" % (bl.fmt_int(args.paced_rate), args.event_type,
                                                 args.batch_size, args.short_duration))
        run.say("")
        run.raw["ratio_C"] = round_table(run, results["C"])
    run.say("")
    run.say("ratio = the fast receiver's events/s behind the relay with slow consumers over "
            "the one behind the relay without, in the same round. lost = published - received "
            "by the fast receiver. cut off = peer_removed/disconnects seen by the node.")


def plot(run, args, results):
    if "B" not in results:
        return
    b = results["B"]
    files, rss, rates = {}, [], []
    for key, label, color in (("with", "with slow peer + WebSocket client", "#d62728"),
                              ("without", "without", "#1f77b4")):
        files["rss-%s.dat" % key] = ["%.2f %.2f" % (t, kib / 1024.0) for t, kib in b[key]["rss"]
                                     if kib]
        files["rate-%s.dat" % key] = ["%d %.0f" % (i + 1, r)
                                      for i, r in enumerate(b[key]["receiver_rates"])]
        rss.append('"rss-%s.dat" using 1:2 with lines lw 2 lc rgb "%s" title "%s"'
                   % (key, color, label))
        rates.append('"rate-%s.dat" using 1:2 with lines lw 2 lc rgb "%s" title "%s"'
                     % (key, color, label))
    script = """
set multiplot layout 1,2 title "Slow consumers: two relays at once, publishers at full speed, overflow policy drop_oldest"
set title "node resident memory (VmRSS every %.2f s)"
set xlabel "time since the publishers started (s)"
set ylabel "MiB"
set yrange [0:*]
set key bottom right
set grid ytics
plot %s
set title "fast receiver behind each node: events per second"
set ylabel "events/s"
set format y "%%.0s%%c"
set xlabel "second of the run"
plot %s
unset multiplot
""" % (SAMPLE_INTERVAL, bl.plot_list(rss), bl.plot_list(rates))
    run.plot("slow_consumer.png", (1100, 450), script, files)


if __name__ == "__main__":
    bl.run_main(main)
