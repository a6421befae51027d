#!/usr/bin/env python3
"""Scenario 1, idle peers (Broker's own benchmark): does a node pay for peers that receive
nothing?

Two identical receiving broker-nodes, R1 and R2, each subscribe to --topics topics plus
/benchmark/events, and each gets --rate events/s from its own broker-throughput publisher
over a peering. In every round, --peers more broker-nodes peer with ONE of the receivers
and subscribe only to unrelated topics; the script measures the CPU of both receivers over
the same --window seconds (utime + stime from /proc/<pid>/stat), then stops the idle nodes.
Rounds come in crossover pairs: idle peers on R1, then on R2. A pair's growth is

    ((R1 with - R1 without) + (R2 with - R2 without)) / 2

which cancels both what the shared machine's load does to the two windows (it hits both
receivers at once) and any lasting difference between the two receiver processes. Null
pairs (no idle peers in either round, same arithmetic) show the noise floor. Prints every
pair and the medians; target: the median growth stays below 1 percentage point.
See bench/README.md.

    bench/idle_peers.py                      # builds in build-bench/, ~3 minutes
    REPS=3 NULL_PAIRS=1 bench/idle_peers.py  # shorter
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import LOCALHOST, addr  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402

OPTIONS = [
    ("--reps", int, 7, "crossover pairs with idle peers"),
    ("--null-pairs", int, 3, "crossover pairs without idle peers (noise floor)"),
    ("--peers", int, 20, "idle peers added in a round"),
    ("--topics", int, 100, "topics each receiver subscribes to besides /benchmark/events"),
    ("--idle-topics", int, 10, "unrelated topics each idle peer subscribes to"),
    ("--rate", int, 20000, "events per second each publisher sends"),
    ("--batch-size", int, 1, "events per batch (a publisher sends rate/batch-size batches/s)"),
    ("--event-type", int, 1, "broker-throughput event type"),
    ("--window", float, 6.0, "seconds of each CPU measurement"),
    ("--settle", float, 2.0, "seconds to wait after the idle peers peered, before measuring"),
    ("--warmup", float, 3.0, "seconds of publishing before the first round"),
    ("--frozen", int, 0, "1: SIGSTOP the idle nodes once they peered (they hold their "
                         "peerings but take no CPU)"),
]

EVENTS_TOPIC = "/benchmark/events"
RECEIVERS = ("R1", "R2")


def receiver_topics(n):
    return ["/receiver/topic-%04d/" % i for i in range(n)] + [EVENTS_TOPIC]


def idle_topics(peer, n):
    return ["/idle/%02d/topic-%02d/" % (peer, i) for i in range(n)]


def rate_lines(lines):
    """Messages per second from broker-node's `rate: N messages/s` lines."""
    return [int(l.split()[1]) for l in lines if l.startswith("rate: ")]


class Window:
    """CPU of some processes over one measurement window."""

    def __init__(self, receivers, idle):
        self.receivers, self.idle = receivers, idle
        self.marks = {n: p.mark() for n, p in receivers.items()}
        self.t0 = time.monotonic()
        self.cpu0 = {n: bl.cpu_seconds(p.pid) for n, p in receivers.items()}
        self.idle0 = sum(bl.cpu_seconds(p.pid) for p in idle)

    def close(self):
        elapsed = time.monotonic() - self.t0
        result = {"seconds": elapsed,
                  "idle_cpu_pct": 100.0 * (sum(bl.cpu_seconds(p.pid) for p in self.idle)
                                           - self.idle0) / elapsed}
        for n, p in self.receivers.items():
            cpu = bl.cpu_seconds(p.pid) - self.cpu0[n]
            rates = rate_lines(p.lines_since(self.marks[n]))
            msgs = sum(rates) / len(rates) if rates else None
            result[n] = {"cpu_pct": 100.0 * cpu / elapsed, "msgs_per_s": msgs,
                         "cpu_us_per_msg": 1e6 * cpu / (msgs * elapsed) if msgs else None}
        return result


def start_idle_peers(run, node_bin, port, args):
    """Starts the idle nodes and waits until each has peered (then freezes them with
    --frozen)."""
    peers = []
    for k in range(args.peers):
        peers.append(run.start(node_bin, ["--no-listen", "-v", "--peers", peer_uri(port),
                                          "-t", ",".join(idle_topics(k, args.idle_topics))],
                               "idle-%02d" % k, kind=Node, listen=False))
    for p in peers:
        p.wait_for(is_status("peer_added"), what="peer_added")
    if args.frozen:
        for p in peers:
            p.send_signal(signal.SIGSTOP)
    return peers


def stop_idle_peers(peers):
    for p in peers:
        p.send_signal(signal.SIGCONT)
        p.send_signal(signal.SIGTERM)
    for p in peers:
        p.wait_exit()


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    if args.rate % args.batch_size:
        raise SystemExit("--rate must be a multiple of --batch-size")
    with bl.Run("idle_peers", args) as run:
        bins = run.build("broker-node", "broker-throughput")
        node_bin, tp_bin = bins["broker-node"], bins["broker-throughput"]
        receivers, ports, senders = {}, {}, {}
        for name in RECEIVERS:
            receivers[name] = run.start(node_bin, ["--listen-address", LOCALHOST, "-r", "-t",
                                                   ",".join(receiver_topics(args.topics))],
                                        "receiver-" + name, kind=Node)
            ports[name] = receivers[name].port
        for name in RECEIVERS:
            senders[name] = run.start(tp_bin, ["-t", str(args.event_type),
                                               "-s", str(args.batch_size),
                                               "-r", str(args.rate // args.batch_size),
                                               "--json", "--disable-ssl",
                                               addr(ports[name])],
                                      "sender-" + name)
        for s in senders.values():
            s.wait_for(lambda l: '"type":"rate"' in l, what="first rate line")
        essential = list(receivers.values()) + list(senders.values())
        sampler = bl.Sampler({n: p.pid for n, p in receivers.items()}, interval=1.0)
        run.progress("warming up %.0f s" % args.warmup)
        bl.sleep_checked(args.warmup, essential)

        # Null pairs first and last, the pairs with idle peers in between.
        kinds = ["null"] * (args.null_pairs // 2) + ["idle"] * args.reps \
            + ["null"] * (args.null_pairs - args.null_pairs // 2)
        pairs, steps = [], []
        for i, kind in enumerate(kinds):
            pair = {"kind": kind}
            for target in RECEIVERS:
                run.progress("pair %d/%d (%s): round with target %s"
                             % (i + 1, len(kinds), kind, target))
                peers = start_idle_peers(run, node_bin, ports[target], args) \
                    if kind == "idle" else []
                t0 = time.monotonic() - sampler.start
                bl.sleep_checked(args.settle, essential + peers)
                w = Window(receivers, peers)
                bl.sleep_checked(args.window, essential + peers)
                pair[target] = w.close()
                if peers:
                    stop_idle_peers(peers)
                    steps.append((target, t0, time.monotonic() - sampler.start))
            pairs.append(pair)

        samples = sampler.stop()
        summaries = {}
        for name, s in senders.items():
            s.stop(signal.SIGINT)
            summaries[name] = s.summary()
        for r in receivers.values():
            r.stop()
        run.raw.update(pairs=pairs, senders=summaries, samples=samples, steps=steps)
        report(run, args, pairs, summaries)
        plot(run, args, samples, steps)


def with_without(pair):
    """[(with, without)] CPU % per receiver: round "R1" has the idle peers on R1, etc."""
    other = {"R1": "R2", "R2": "R1"}
    return {n: (pair[n][n]["cpu_pct"], pair[other[n]][n]["cpu_pct"]) for n in RECEIVERS}


def growth(pair):
    ww = with_without(pair)
    return sum(w - wo for w, wo in ww.values()) / len(ww)


def report(run, args, pairs, summaries):
    n = args.peers
    run.say("")
    run.say("## receiver CPU (%% of one core) with and without %d%s idle peers, %.0f s "
            "windows, %d events/s each (type %d, batches of %d)"
            % (n, " frozen" if args.frozen else "", args.window, args.rate, args.event_type,
               args.batch_size))
    run.say("")
    rows = []
    for i, p in enumerate(pairs):
        ww = with_without(p)
        rows.append([str(i + 1), p["kind"],
                     "%.2f / %.2f" % ww["R1"], "%.2f / %.2f" % ww["R2"], "%+.2f" % growth(p),
                     bl.fmt(p["R1"]["idle_cpu_pct"] if p["kind"] == "idle" else None, 2)])
    idle = [p for p in pairs if p["kind"] == "idle"]
    null = [p for p in pairs if p["kind"] == "null"]
    g_idle = bl.median([growth(p) for p in idle])
    g_null = bl.median([growth(p) for p in null])
    with_cpu = bl.median([w for p in idle for w, _ in with_without(p).values()])
    without_cpu = bl.median([wo for p in idle for _, wo in with_without(p).values()])
    us_with = bl.median([p[r][r]["cpu_us_per_msg"] for p in idle for r in RECEIVERS])
    us_without = bl.median([p[o][r]["cpu_us_per_msg"] for p in idle
                            for r, o in (("R1", "R2"), ("R2", "R1"))])
    rows.append(["**median**", "idle", "", "", "**%+.2f**" % g_idle, ""])
    if null:
        rows.append(["**median**", "null", "", "", "%+.2f" % g_null, ""])
    run.table(["pair", "kind", "R1 CPU % with / without", "R2 CPU % with / without",
               "growth (pp)", "CPU %% of the %d idle nodes" % n], rows)
    run.say("")
    run.say("with = the receiver's CPU in the round in which the idle peers were its own; "
            "without = in the round in which they were the other receiver's. A null pair has "
            "no idle peers in either round.")
    run.say("medians over every receiver-round of the idle pairs: %.2f %% CPU (%.2f µs/msg) "
            "without, %.2f %% (%.2f µs/msg) with %d idle peers"
            % (without_cpu, us_without or 0, with_cpu, us_with or 0, n))
    rates = [p[r][x]["msgs_per_s"] for p in pairs for r in RECEIVERS for x in RECEIVERS]
    rates = [x for x in rates if x]
    run.say("messages received per receiver: %s-%s/s; publishers: %s"
            % (bl.fmt_int(min(rates)) if rates else "n/a", bl.fmt_int(max(rates)) if rates else "",
               ", ".join("%s sent %s, dropped %s" % (k, bl.fmt_int(s.get("events")),
                                                     s.get("dropped"))
                         for k, s in sorted(summaries.items()))))
    run.say("target (< 1 percentage point growth with %d idle peers): %s (median growth %+.2f pp;"
            " noise floor from %d null pairs: %+.2f pp, spread %s)"
            % (n, "met" if g_idle < 1.0 else "MISSED", g_idle, len(null),
               g_null if g_null is not None else 0.0,
               ("%+.2f..%+.2f" % (min(growth(p) for p in null), max(growth(p) for p in null)))
               if null else "n/a"))
    run.raw["medians"] = {"growth_pp": g_idle, "null_growth_pp": g_null,
                          "cpu_pct_with": with_cpu, "cpu_pct_without": without_cpu,
                          "us_per_msg_with": us_with, "us_per_msg_without": us_without}


def plot(run, args, samples, steps):
    files, series = {}, []
    colors = {"R1": "#1f77b4", "R2": "#ff7f0e"}
    for name in RECEIVERS:
        cpu, prev = [], None
        for t, row in samples:
            if name not in row:
                continue
            if prev is not None and t > prev[0]:
                cpu.append("%.2f %.3f" % (t, 100.0 * (row[name][0] - prev[1]) / (t - prev[0])))
            prev = (t, row[name][0])
        files["cpu-%s.dat" % name] = cpu
        boxes = []
        for target, t0, t1 in steps:
            if target == name:
                boxes += ["%.2f 0" % t0, "%.2f %d" % (t0, args.peers), "%.2f %d" % (t1, args.peers),
                          "%.2f 0" % t1, ""]
        files["peers-%s.dat" % name] = boxes or ["0 0"]
        series.append('"cpu-%s.dat" using 1:2 with lines lw 1.5 lc rgb "%s" title "%s CPU %%"'
                      % (name, colors[name], name))
        series.append('"peers-%s.dat" using 1:2 axes x1y2 with lines lw 1 dt 2 lc rgb "%s" '
                      'title "idle peers on %s"' % (name, colors[name], name))
    m = run.raw["medians"]
    script = f"""
set title "Idle peers: two receivers at {args.rate} events/s each, {args.peers} idle peers on one of them at a time; median growth {m['growth_pp']:+.2f} pp (null pairs {(m['null_growth_pp'] or 0):+.2f} pp)"
set xlabel "time (s)"
set ylabel "receiver CPU (% of one core, 1 s samples)"
set y2label "idle peers"
set yrange [0:*]
set y2range [0:{args.peers * 3}]
set y2tics {args.peers}
set ytics nomirror
set key top left horizontal
set grid ytics
plot {bl.plot_list(series)}
"""
    run.plot("idle_peers.png", (1100, 420), script, files)


if __name__ == "__main__":
    bl.run_main(main)
