#!/usr/bin/env python3
"""Scenario 2, peering throughput and latency: one publisher -> one subscriber across one
peering (broker-throughput client -> broker-throughput --server, 127.0.0.1, plain TCP).

For each event type (0: 64-byte string, 1: Zeek event, 2: conn.log write, 3: table of 100
sets) the script measures
  - the maximum rate: the client publishes batches of --batch-size as fast as it can for
    --duration seconds; the server's received events per second (first to last event), and
    the CPU time of both processes per event (user + system, all threads: getrusage, the
    same quantity as utime + stime in /proc/<pid>/stat);
  - latency at each of --rates events/s (one event per batch): the server's one-way
    latency (send stamp to arrival, one clock) and the client's round-trip/2, as p50, p99
    and p99.9 over every event of a --latency-duration run. A point runs only if the rate is
    at most --latency-load times the type's measured maximum (each event crosses twice:
    out and echoed back); the others are reported as "over capacity". The server may
    queue 65 536 echoes for the client (the default 2 048 would cut a client off that falls
    a few milliseconds behind at 100 000/s; then it shows as latency instead).
Every point runs --reps times, interleaved (rep 1 of every point, then rep 2, ...); the
tables show medians. See bench/README.md.

    bench/peering.py                         # builds in build-bench/, ~3.5 minutes
    REPS=1 TYPES=0,1 bench/peering.py        # a quick look
"""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402  (it puts tests/lib on the path, for brokertest)
from brokertest.net import addr  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "runs per point"),
    ("--types", str, "0,1,2,3", "event types"),
    ("--batch-size", int, 100, "events per batch in the maximum-rate runs"),
    ("--duration", int, 5, "seconds of each maximum-rate run"),
    ("--rates", str, "1000,10000,100000", "events per second of the latency runs"),
    ("--latency-duration", int, 5, "seconds of each latency run"),
    ("--latency-load", float, 0.5, "largest rate / maximum rate for which latency is measured"),
]

# What each event type is (broker-throughput/README.md).
TYPE_NAMES = {0: "64-byte string", 1: "Zeek event, 49 B", 2: "conn.log write, 246 B",
              3: "table of 100 sets, 8.9 KB"}

# Bound on a run beyond its own duration (start-up, drain, echo grace).
RUN_SLACK = 60

# The latency server's queue of echoes to the client. The echo is the yardstick, not the
# system under test: with the default 2048 messages and the disconnect policy, a client
# that falls a few milliseconds behind at 100 000 events/s loses the peering and the run.
ECHO_QUEUE = "--broker.peer-buffer-size=65536"

# A latency run whose client published less than this share of the asked rate is marked.
SATURATED = 0.95


def run_pair(run, tp, server_args, client_args, timeout):
    """Starts a server and a client, waits for the client, stops the server. Returns both
    JSON summaries and, if the client failed, its last error line (else None)."""
    server = run.start(tp, ["--server", addr(0), "--json", "--disable-ssl"] + server_args,
                       "server")
    port = server.listening_port()
    client = run.start(tp, client_args + ["--json", "--disable-ssl", addr(port)], "client")
    code = client.wait_exit(timeout)
    server.stop(signal.SIGINT)
    error = None
    if code != 0:
        errs = [l for l in client.err_lines if l.startswith("broker-throughput:")]
        error = errs[-1] if errs else "exit %d" % code
        run.progress("client failed: %s" % error)
    return client.summary(), server.summary(), error


def max_rate_run(run, tp, args, t):
    c, s, error = run_pair(run, tp, [], ["-t", str(t), "-s", str(args.batch_size),
                                         "--duration", str(args.duration)],
                           args.duration + RUN_SLACK)
    if error:
        raise bl.BenchError("type %d at full speed: %s" % (t, error))
    events = s["events"] or 1
    return {"rate": s["rate"], "sent": c["events"], "received": s["events"],
            "dropped": c.get("dropped", 0), "server_us": 1e6 * s["cpu"] / events,
            "client_us": 1e6 * c["cpu"] / events}


def latency_run(run, tp, args, t, rate):
    probe = bl.WakeProbe()
    c, s, error = run_pair(run, tp, ["--latency", ECHO_QUEUE],
                           ["--latency", "-t", str(t), "-r", str(rate), "-s", "1",
                            "--duration", str(args.latency_duration)],
                           args.latency_duration + RUN_SLACK)
    return {"probe": probe.stop(),"achieved": c["events"] / c["duration"] if c["duration"] else None,
            "sent": c["events"], "received": s["events"], "dropped": c.get("dropped", 0),
            "one_way": s.get("latency"), "rtt2": None if error else c.get("latency"),
            "cpu_us": 1e6 * (s["cpu"] + c["cpu"]) / max(1, s["events"]), "error": error}


def main():
    args = bl.parse_args(__doc__, OPTIONS)
    types = [int(x) for x in args.types.split(",") if x]
    rates = [int(x) for x in args.rates.split(",") if x]
    with bl.Run("peering", args) as run:
        tp = run.build("broker-throughput")["broker-throughput"]
        maxima = {t: [] for t in types}
        for rep in range(args.reps):
            for t in types:
                run.progress("max rate: rep %d/%d, type %d" % (rep + 1, args.reps, t))
                maxima[t].append(max_rate_run(run, tp, args, t))
        max_med = {t: bl.median([r["rate"] for r in maxima[t]]) for t in types}
        points = [(t, r) for t in types for r in rates if r <= args.latency_load * max_med[t]]
        latency = {p: [] for p in points}
        for rep in range(args.reps):
            for t, r in points:
                run.progress("latency: rep %d/%d, type %d at %d/s" % (rep + 1, args.reps, t, r))
                latency[(t, r)].append(latency_run(run, tp, args, t, r))
        run.raw.update(maxima=maxima, latency={"%d@%d" % k: v for k, v in latency.items()})
        report(run, args, types, rates, maxima, max_med, latency)
        plot(run, args, types, rates, max_med, latency)


def pct(runs, side, key):
    return bl.median([r[side][key] for r in runs if r.get(side)])


def report(run, args, types, rates, maxima, max_med, latency):
    run.say("")
    run.say("## maximum rate: batches of %d, %d s per run, %d runs per type"
            % (args.batch_size, args.duration, args.reps))
    run.say("")
    rows = []
    for t in types:
        rs = maxima[t]
        s_us, c_us = bl.median([r["server_us"] for r in rs]), bl.median([r["client_us"] for r in rs])
        rows.append(["%d (%s)" % (t, TYPE_NAMES.get(t, "?")),
                     ", ".join(bl.fmt_int(r["rate"]) for r in rs),
                     "**%s**" % bl.fmt_int(max_med[t]), bl.fmt(s_us, 2), bl.fmt(c_us, 2),
                     bl.fmt(s_us + c_us, 2), str(sum(r["dropped"] for r in rs))])
    run.table(["event type", "events/s (runs)", "median events/s", "server CPU µs/event",
               "client CPU µs/event", "both µs/event", "dropped"], rows)
    run.say("")
    run.say("## latency: one event per batch at a fixed rate, %d s per run, median of %d runs"
            % (args.latency_duration, args.reps))
    run.say("")
    rows = []
    for t in types:
        for r in rates:
            runs = latency.get((t, r))
            if not runs:
                rows.append(["%d" % t, bl.fmt_int(r), "over capacity (max %s/s)"
                             % bl.fmt_int(max_med[t]), "", "", "", "", "", "", "", ""])
                continue
            failed = [x for x in runs if x["error"]]
            achieved = bl.median([x["achieved"] for x in runs])
            note = ""
            if failed:
                note += " (%d of %d runs lost the peering)" % (len(failed), len(runs))
            if achieved is not None and achieved < SATURATED * r:
                note += " saturated"
            rows.append(["%d" % t, bl.fmt_int(r), bl.fmt_int(achieved) + note,
                         bl.fmt(pct(runs, "one_way", "p50_us")),
                         bl.fmt(pct(runs, "one_way", "p99_us")),
                         bl.fmt(pct(runs, "one_way", "p99_9_us")),
                         bl.fmt(pct(runs, "rtt2", "p50_us")),
                         bl.fmt(pct(runs, "rtt2", "p99_us")),
                         bl.fmt(pct(runs, "rtt2", "p99_9_us")),
                         bl.fmt(bl.median([x["cpu_us"] for x in runs]), 2),
                         bl.fmt(pct(runs, "probe", "p99_us"))])
    run.table(["type", "events/s asked", "achieved", "one-way p50 µs", "p99 µs", "p99.9 µs",
               "RTT/2 p50 µs", "p99 µs", "p99.9 µs", "CPU µs/event (both)",
               "sleep probe p99 µs"], rows)
    run.say("")
    run.say("one-way: send stamp to arrival at the server (same clock); RTT/2: the client's "
            "round trips through the server's echo, halved (not counted from runs that lost "
            "the peering). CPU µs/event counts both processes, echoes included. saturated: "
            "the client published less than %d %% of the asked rate. sleep probe: how late a "
            "thread of this script that sleeps 1 ms at a time woke up during the same runs "
            "(the scheduler's share of any tail on this machine)." % (100 * SATURATED))
    probes = [x["probe"] for runs in latency.values() for x in runs if x.get("probe")]
    if probes:
        run.say("sleep probe over all latency runs (medians of the runs): p50 %s µs, p99 %s µs, "
                "p99.9 %s µs, max %s µs" % tuple(bl.fmt(bl.median([p[k] for p in probes]))
                                                for k in ("p50_us", "p99_us", "p99_9_us",
                                                          "max_us")))


def plot(run, args, types, rates, max_med, latency):
    bars = ["%d \"%d\\n%s\" %.0f" % (i, t, TYPE_NAMES.get(t, "?").split(",")[0], max_med[t])
            for i, t in enumerate(types)]
    files = {"max.dat": bars}
    series = []
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    for i, t in enumerate(types):
        lines = []
        for r in rates:
            runs = latency.get((t, r))
            if runs:
                lines.append("%d %.4f %.4f %.4f" % (r, pct(runs, "one_way", "p50_us") / 1e3,
                                                    pct(runs, "one_way", "p99_us") / 1e3,
                                                    pct(runs, "one_way", "p99_9_us") / 1e3))
        if not lines:
            continue
        files["lat-%d.dat" % t] = lines
        c = colors[i % len(colors)]
        series.append('"lat-%d.dat" using 1:3 with linespoints lw 2 pt 7 lc rgb "%s" '
                      'title "type %d p99"' % (t, c, t))
        series.append('"lat-%d.dat" using 1:2 with linespoints lw 1 dt 2 pt 6 lc rgb "%s" '
                      'title "type %d p50"' % (t, c, t))
    probe = []
    for r in rates:
        runs = [x for t in types for x in latency.get((t, r), []) if x.get("probe")]
        if runs:
            probe.append("%d %.4f" % (r, pct(runs, "probe", "p99_us") / 1e3))
    if probe:
        files["probe.dat"] = probe
        series.append('"probe.dat" using 1:2 with linespoints lw 1.5 dt 3 pt 2 lc rgb "#7f7f7f" '
                      'title "sleep probe p99 (machine)"')
    script = """
set multiplot layout 1,2 title "Peering: one publisher -> one subscriber over 127.0.0.1 (median of %d runs)"
set title "maximum rate (batches of %d)"
set style fill solid 0.7
set boxwidth 0.6
set logscale y
set yrange [100:3000000]
set format y "%%.0s%%c"
set bmargin 4
set ylabel "events/s received"
set xtics scale 0
set grid ytics
unset key
plot "max.dat" using 1:3:xtic(2) with boxes lc rgb "#1f77b4", \\
     "" using 1:3:(sprintf("%%.0f", $3)) with labels offset 0,0.7 font "sans,9"
unset xtics
set xtics
set title "one-way latency at a fixed rate"
set logscale xy
set yrange [*:*]
set format y "%%g"
set format x "%%.0s%%c"
set xrange [500:200000]
set xlabel "events/s"
set ylabel "latency (ms)"
set key outside right top Left reverse samplen 2 font ",9"
plot %s
unset multiplot
""" % (args.reps, args.batch_size, bl.plot_list(series) if series else "NaN notitle")
    run.plot("peering.png", (1250, 450), script, files)


if __name__ == "__main__":
    bl.run_main(main)
