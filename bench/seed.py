#!/usr/bin/env python3
"""The seed benchmark, ours against Zeek Broker in one run: a receiving broker-node gets
--rate events/s (Zeek events, one per message) from a broker-throughput over one peering;
how much CPU does the receiver spend, how often do its threads wake, and why?

Pairings (sender -> receiver): ours -> ours, zeek -> zeek, and cross-fed (the peering
protocol is the same): zeek -> ours, ours -> zeek. Each repetition runs every pairing once,
in an order that rotates with the repetition; per pairing:
  1. receiver and sender start fresh; after --warmup s, a --window s measurement: CPU of
     both (utime + stime), context switches of every receiver thread (voluntary = wake-ups,
     nonvoluntary = preemptions), schedstat run counts, thread count, and the received rate;
  2. same-implementation pairings only: --idle-peers broker-nodes of the receiver's
     implementation peer with it, subscribed only to unrelated topics; after --settle s,
     the same window again.
Then ping/pong: `broker-node -m pong` and `broker-node -m ping -n --pings` across one
peering, for each implementation; p50/p99 of the round trips the pinger prints.
After the repetitions, a probe per pairing explains the numbers (the diagnosis): over
--probe-seconds, TCP segments and bytes per event on the receiver's socket (`ss -ti`), the
receiver's and the sender's system calls per event (`perf stat` on syscall tracepoints),
and the size of every read of the receiver (`perf record`; threads keep running).
Tables: medians over repetitions; ours / zeek ratios are taken per repetition, then the
median. See bench/README.md ("Seed benchmark") and doc/performance.md.

Zeek Broker is not part of this repository: point ZEEK_BROKER_BIN at a directory with its
broker-node and broker-throughput (built from zeek/broker's own sources). Without it the
script measures ours alone and says so. Zeek's broker-node has no listen-address option (it
listens on every interface), so when it is used the script runs itself in a private network
namespace (`unshare --net`, loopback only) unless --netns 0.

    bench/seed.py                                  # ~3.5 minutes with Zeek Broker, 3 reps
    ZEEK_BROKER_BIN=/opt/zeek-broker/bin bench/seed.py
    REPS=1 CROSS=0 PROBE_SECONDS=0 bench/seed.py   # a quick look
"""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
import threadstats as ts  # noqa: E402
from seed_impls import (START_TIMEOUT, Impl, find_impls, maybe_reexec_in_netns,  # noqa: E402
                        rates, wait_listening)

OPTIONS = [
    ("--reps", int, 3, "repetitions (every pairing once each)"),
    ("--rate", int, 20000, "events per second the sender publishes (batches of 1)"),
    ("--idle-peers", int, 20, "idle broker-nodes peered with the receiver in step 2"),
    ("--idle-topics", int, 10, "unrelated topics each idle node subscribes to"),
    ("--window", float, 5.0, "seconds of each measurement window"),
    ("--warmup", float, 2.0, "seconds between the sender's start and the first window"),
    ("--settle", float, 2.0, "seconds between the idle peers' peering and their window"),
    ("--pings", int, 2000, "round trips per ping/pong run"),
    ("--cross", int, 1, "1: also the cross-fed pairings (zeek -> ours, ours -> zeek)"),
    ("--probe-seconds", float, 2.0, "seconds of each diagnosis probe; 0: no probes"),
    ("--netns", str, "auto", "run in a private network namespace: auto (when Zeek Broker "
                             "is used), 1, 0"),
]

EVENTS_TOPIC = "/benchmark/events"
PING_TOPIC = "/benchmark/ping"
# A window in which the receiver got less than this share of --rate is repeated.
MIN_RATE_SHARE = 0.9


def start_receiver(run, impl, label):
    args, port = impl.listen()
    node = run.start(impl.node, args + ["-t", impl.topics([EVENTS_TOPIC]), "-r"]
                     + (["-v"] if impl.zeek else []), label)
    if port is None:
        port = node.listening_port(START_TIMEOUT)
    else:
        wait_listening(node, port)
    return node, port


def window(args, receiver, sender, extra=()):
    """One measurement window: the receiver's and sender's counters, the received rate."""
    bl.sleep_checked(0, [receiver, sender] + list(extra))
    mark = receiver.mark()
    t0 = time.monotonic()
    r0, s0 = ts.snapshot(receiver.pid), ts.snapshot(sender.pid)
    bl.sleep_checked(args.window, [receiver, sender] + list(extra))
    r1, s1 = ts.snapshot(receiver.pid), ts.snapshot(sender.pid)
    secs = time.monotonic() - t0
    rd, sd = ts.delta(r0, r1), ts.delta(s0, s1)
    got = rates(receiver.lines_since(mark))
    # The first rate line may cover time before the window; the median is robust to it.
    rate = bl.median(got) if got else None
    events = (rate or args.rate) * secs
    woken, who = ts.thread_summary(rd["per_thread"], events)
    return {"seconds": secs, "rate": rate, "events": events,
            "recv_cpu_pct": 100 * rd["cpu_s"] / secs,
            "recv_us_per_event": 1e6 * rd["cpu_s"] / events,
            "send_cpu_pct": 100 * sd["cpu_s"] / secs,
            "send_us_per_event": 1e6 * sd["cpu_s"] / events,
            "recv_cs_per_event": (rd["vol"] + rd["nonvol"]) / events,
            "recv_wakeups_per_event": rd["vol"] / events,
            "recv_preempt_per_event": rd["nonvol"] / events,
            "recv_runs_per_event": rd["runs"] / events,
            "recv_threads": rd["threads"], "recv_threads_woken": woken,
            "recv_thread_detail": who,
            "send_cs_per_event": (sd["vol"] + sd["nonvol"]) / events,
            "send_threads": sd["threads"]}


def start_idle(run, impl, port, args):
    """--idle-peers nodes of `impl` peered with port, each subscribed to unrelated topics;
    returns once each has peered."""
    peers = []
    for k in range(args.idle_peers):
        topics = ["/idle/%02d/topic-%02d/" % (k, i) for i in range(args.idle_topics)]
        peers.append(run.start(impl.node, impl.no_listen() + ["-v"] + impl.peers(port)
                               + ["-t", impl.topics(topics)], "idle-%s-%02d" % (impl.name, k)))
    for p in peers:
        if impl.zeek:
            # Zeek's verbose mode prints status events as empty values: the peering shows
            # as a line after "relay messages", and as the receiver's connection below.
            p.wait_for(lambda l: l.rstrip().endswith(":"), START_TIMEOUT,
                       "the idle node's status event")
        else:
            p.wait_for(lambda l: "peer_added" in l, START_TIMEOUT, "the idle node's peering")
    deadline = time.monotonic() + START_TIMEOUT
    while len(ts.tcp_info(local_port=port)) < 1 + len(peers):
        if time.monotonic() > deadline:
            raise bl.BenchError("the receiver has %d connections, expected %d"
                                % (len(ts.tcp_info(local_port=port)), 1 + len(peers)))
        time.sleep(0.1)
    return peers


def stop_all(procs_):
    for p in procs_:
        if p.alive():
            p.send_signal(signal.SIGTERM)
    for p in procs_:
        try:
            p.wait_exit(10)
        except bl.BenchError:
            pass  # wait_exit killed it.


def pairing(run, args, sender_impl, recv_impl, idle):
    """Both windows of one pairing: {0: window, args.idle_peers: window (if idle)}."""
    label = "%s->%s" % (sender_impl.name, recv_impl.name)
    receiver, port = start_receiver(run, recv_impl, "recv-" + label)
    sender = run.start(sender_impl.tp, sender_impl.sender_args(args.rate, port),
                       "send-" + label)
    started = [receiver, sender]
    try:
        receiver.wait_for(lambda l: bool(rates([l])) and rates([l])[0] > 0, START_TIMEOUT,
                          "a rate line with events")
        bl.sleep_checked(args.warmup, started)
        result = {0: check_rate(args, window(args, receiver, sender), label)}
        if idle and args.idle_peers:
            peers = start_idle(run, recv_impl, port, args)
            started += peers
            bl.sleep_checked(args.settle, started)
            result[args.idle_peers] = check_rate(args, window(args, receiver, sender, peers),
                                                 label + " with idle peers")
        result["skipped"] = len([l for l in sender.lines if "skip batch" in l])
        return result
    finally:
        stop_all(started)


class Stalled(Exception):
    """The receiver got far less than --rate: the window measured something else."""


def check_rate(args, w, label):
    if w["rate"] is None or w["rate"] < MIN_RATE_SHARE * args.rate:
        raise Stalled("%s: the receiver got %s events/s of %d"
                      % (label, bl.fmt_int(w["rate"]), args.rate))
    return w


def pairing_retried(run, args, s, r):
    """pairing(), once more with fresh processes if the receiver did not get the rate;
    {"failed": reason} if it failed twice (the tables leave that repetition out)."""
    for attempt in (1, 2):
        try:
            return pairing(run, args, s, r, idle=s is r)
        except Stalled as e:
            run.say("# attempt %d: %s (logs: %s)" % (attempt, e, run.log_dir))
            reason = str(e)
    return {"failed": reason}


def ping_pong(run, args, impl):
    """p50 and p99 round trip (µs) of --pings pings across one peering."""
    largs, port = impl.listen()
    pong = run.start(impl.node, largs + ["-m", "pong", "-t", impl.topics([PING_TOPIC])],
                     "pong-" + impl.name)
    try:
        if port is None:
            port = pong.listening_port(START_TIMEOUT)
        else:
            wait_listening(pong, port)
        ping = run.start(impl.node, impl.no_listen() + ["-m", "ping", "-t",
                                                        impl.topics([PING_TOPIC]),
                                                        "-n", str(args.pings)]
                         + impl.peers(port), "ping-" + impl.name)
        ping.wait_exit(START_TIMEOUT + args.pings * 0.05)
        us = []
        for line in ping.lines:
            parts = line.split()
            if impl.zeek and len(parts) == 1 and parts[0].isdigit():
                us.append(int(parts[0]) / 1000.0)  # Zeek prints nanoseconds.
            elif not impl.zeek and len(parts) == 3 and parts[0] == "rtt":
                us.append(float(parts[2]))
        if len(us) < args.pings:
            raise bl.BenchError("ping-%s: %d of %d round trips\n%s"
                                % (impl.name, len(us), args.pings, ping.describe()))
        us.sort()
        return {"p50_us": us[len(us) // 2], "p99_us": us[min(len(us) - 1, int(len(us) * 0.99))],
                "n": len(us)}
    finally:
        stop_all([pong])


def probe(run, args, sender_impl, recv_impl, workdir):
    """The diagnosis of one pairing (see the file comment)."""
    label = "%s->%s" % (sender_impl.name, recv_impl.name)
    receiver, port = start_receiver(run, recv_impl, "probe-recv-" + label)
    sender = run.start(sender_impl.tp, sender_impl.sender_args(args.rate, port),
                       "probe-send-" + label)
    try:
        receiver.wait_for(lambda l: bool(rates([l])) and rates([l])[0] > 0, START_TIMEOUT,
                          "a rate line with events")
        bl.sleep_checked(args.warmup, [receiver, sender])
        secs = args.probe_seconds
        events = args.rate * secs
        mark = receiver.mark()
        tcp0, r0 = ts.tcp_info(local_port=port), ts.snapshot(receiver.pid)
        time.sleep(secs)
        tcp1, r1 = ts.tcp_info(local_port=port), ts.snapshot(receiver.pid)
        tcp = ts.tcp_delta(tcp0, tcp1)
        rd = ts.delta(r0, r1)
        result = {"segs_in_per_event": tcp and tcp["data_segs_in"] / events,
                  "bytes_per_segment": tcp and tcp["data_segs_in"]
                  and tcp["bytes_received"] / tcp["data_segs_in"],
                  "bytes_per_event": tcp and tcp["bytes_received"] / events,
                  "threads": ts.thread_summary(rd["per_thread"], events)[1],
                  "rate": bl.median(rates(receiver.lines_since(mark)))}
        if ts.perf_available():
            rc = ts.syscall_counts(receiver.pid, secs)
            sc = ts.syscall_counts(sender.pid, secs)
            result["recv_syscalls"] = {k: v / events for k, v in rc.items() if v}
            result["send_syscalls"] = {k: v / events for k, v in sc.items() if v}
            result["reads"] = ts.read_profile(ts.read_sizes(receiver.pid, secs, workdir),
                                              events)
        return result
    finally:
        stop_all([receiver, sender])


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    _, zeek = find_impls(lambda s: print(s, file=sys.stderr))
    if os.environ.get("SEED_IN_NETNS") != "1" and os.environ.get("NO_INSTALL") != "1":
        subprocess.run([os.path.join(bl.REPO, "bench", "install-deps")])
        os.environ["NO_INSTALL"] = "1"
    maybe_reexec_in_netns(args, zeek)
    with bl.Run("seed", args) as run:
        bins = run.build("broker-node", "broker-throughput")
        ours = Impl("ours", bins["broker-node"], bins["broker-throughput"])
        if zeek is None:
            run.say("# Zeek Broker: not measured (set ZEEK_BROKER_BIN to a directory with its "
                    "broker-node and broker-throughput)")
        else:
            run.say("# Zeek Broker: %s, %s" % (zeek.node, zeek.tp))
        run.say("# network namespace: %s" % ("private (loopback only)"
                                             if os.environ.get("SEED_IN_NETNS") == "1"
                                             else "the host's"))
        impls = [ours] + ([zeek] if zeek else [])
        pairings = [(i, i) for i in impls]
        if zeek and args.cross:
            pairings += [(zeek, ours), (ours, zeek)]
        reps = []
        for rep in range(args.reps):
            results = {}
            k = rep % len(pairings)
            for s, r in pairings[k:] + pairings[:k]:
                run.progress("rep %d/%d: %s -> %s" % (rep + 1, args.reps, s.name, r.name))
                results[(s.name, r.name)] = pairing_retried(run, args, s, r)
            for impl in impls[rep % len(impls):] + impls[:rep % len(impls)]:
                run.progress("rep %d/%d: ping/pong %s" % (rep + 1, args.reps, impl.name))
                results[("ping", impl.name)] = ping_pong(run, args, impl)
            reps.append(results)
        probes = {}
        if args.probe_seconds > 0:
            with tempfile.TemporaryDirectory() as workdir:
                for s, r in pairings:
                    run.progress("probe %s -> %s" % (s.name, r.name))
                    probes[(s.name, r.name)] = probe(run, args, s, r, workdir)
        run.raw.update(reps=[{"%s|%s" % k: v for k, v in r.items()} for r in reps],
                       probes={"%s|%s" % k: v for k, v in probes.items()})
        import seed_report
        seed_report.report(run, args, pairings, reps, probes, zeek is not None)


if __name__ == "__main__":
    bl.run_main(main)
