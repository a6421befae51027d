#!/usr/bin/env python3
"""Tables and plots of the fan-out scenarios from their logs (RESULT lines).

    fanout_table.py fanout     [--plot PNG] LOG...   # bench/fanout.sh: by mode and N
    fanout_table.py baseline   [--plot PNG] LOG...   # bench/baseline.sh: systems side by side
    fanout_table.py one_to_one LOG...                # bench/one_to_one.sh: N = 1, by rate
    fanout_table.py ingest LOG...                    # bench/ingest.sh: N = 0 and 1

Each RESULT line is key=value pairs (bench/fanout_stats.hh) plus what the script appended
(rep, node_rss_mb). Tables show medians over the runs of a point; the baseline ratios are
medians of per-run ratios, each taken between runs of the same repetition and N, which ran
back to back. The plots are drawn with gnuplot (pngcairo) when it is installed.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def read(paths):
    rows, failed = [], []
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.startswith("FAILED"):
                    failed.append(line.strip())
                if not line.startswith("RESULT "):
                    continue
                kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
                kv["log"] = path
                if kv.get("complete") != "1":
                    failed.append(line.strip())
                    continue
                rows.append(kv)
    return rows, failed


def num(x, key):
    try:
        return float(x[key])
    except (KeyError, ValueError):
        return None


def med(xs, key):
    vals = [v for v in (num(x, key) for x in xs) if v is not None]
    return statistics.median(vals) if vals else None


def label(kv):
    return kv["system"] + "-" + kv["mode"]


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 1e6:
        return "%.2f M" % (x / 1e6)
    return "%.0f k" % (x / 1e3)


def fmt_us(x):
    if x is None:
        return "-"
    if x >= 10000:
        return "%.0f ms" % (x / 1000)
    if x >= 1000:
        return "%.1f ms" % (x / 1000)
    return "%.0f µs" % x


def fmt_mb(x):
    return "-" if x is None else "%.0f" % x


def fmt_ratio(x):
    return "-" if x is None else "%.2f×" % x


def group(rows):
    groups = {}
    for r in rows:
        groups.setdefault((label(r), int(r["N"])), []).append(r)
    return groups


def fanout_table(rows):
    groups = group(rows)
    order = {"broker-local": 0, "broker-peer": 1, "broker-ws": 2}
    print()
    print("| receivers | N | runs | delivered/s (median) | min–max | latency p50 | p99 | "
          "p99 at full speed | node peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    tsv = []
    for key in sorted(groups, key=lambda k: (order.get(k[0], 9), k[1])):
        xs = groups[key]
        rates = [float(x["rate"]) for x in xs]
        rss = med(xs, "node_rss_mb")
        if rss is None:  # In-process: the benchmark process is the node.
            rss = med(xs, "peak_rss_mb")
        mode = key[0].split("-", 1)[1]
        print("| %s | %d | %d | %s | %s–%s | %s | %s | %s | %s |" % (
            {"local": "local subscribers", "peer": "peered nodes",
             "ws": "WebSocket clients"}.get(mode, mode), key[1], len(xs),
            fmt_rate(med(xs, "rate")), fmt_rate(min(rates)), fmt_rate(max(rates)),
            fmt_us(med(xs, "p50_us")), fmt_us(med(xs, "p99_us")),
            fmt_us(med(xs, "load_p99_us")), fmt_mb(rss)))
        tsv.append((mode, key[1], med(xs, "rate"), med(xs, "p99_us"), rss))
    return tsv


BASELINES = ["redis-channel", "redis-pattern", "nats-wildcard", "nats-exact"]
OURS = ["broker-ws", "broker-native"]


def per_run_ratios(rows, key, n, a, b):
    """Median over repetitions of a/b at N = n, pairing runs of one log, rep and N."""
    by = {}
    for r in rows:
        by.setdefault((r["log"], r.get("rep"), int(r["N"]), label(r)), r)
    ratios = []
    for (log, rep, m, lab), r in by.items():
        if lab != a or m != n:
            continue
        other = by.get((log, rep, n, b))
        if other is None:
            continue
        x, y = num(r, key), num(other, key)
        if x and y:
            ratios.append(x / y)
    return statistics.median(ratios) if ratios else None


def baseline_table(rows):
    groups = group(rows)
    ours = [o for o in OURS if any(k[0] == o for k in groups)]
    theirs = [b for b in BASELINES if any(k[0] == b for k in groups)]
    systems = ours + theirs
    pairs = [(o, b) for o in ours for b in theirs]
    sizes = sorted({k[1] for k in groups})
    tsv = []
    for title, key, fmt, better in (("delivered messages/s (median)", "rate", fmt_rate, "higher"),
                                    ("latency p99", "p99_us", fmt_us, "lower"),
                                    ("server peak RSS MiB", "node_rss_mb", fmt_mb, "lower")):
        print()
        print("%s, %s is better; ratio = ours ÷ other%s" % (
            title, better, " (above 1: we win)" if better == "higher" else
            " (below 1: we win)"))
        head = "| N | " + " | ".join(systems) + " | " + " | ".join(
            "%s ÷ %s" % (o.replace("broker-", ""), b) for o, b in pairs) + " |"
        print(head)
        print("|---:" * (len(systems) + len(pairs) + 1) + "|")
        for n in sizes:
            cells = [fmt(med(groups.get((s, n), []), key)) for s in systems]
            ratios = [fmt_ratio(per_run_ratios(rows, key, n, o, b)) for o, b in pairs]
            print("| %d | %s | %s |" % (n, " | ".join(cells), " | ".join(ratios)))
    for s in systems:
        for n in sizes:
            xs = groups.get((s, n), [])
            if xs:
                tsv.append((s, n, med(xs, "rate"), med(xs, "p99_us"), med(xs, "node_rss_mb")))
    return tsv


def one_to_one_table(rows):
    """N = 1 at fixed rates: the maximum rate (throughput phase, all runs) and, per latency
    rate, p50/p99 of the latency phase; ratios against the baselines of the same run."""
    groups = {}
    for r in rows:
        groups.setdefault(label(r), []).append(r)
    ours = [o for o in OURS if o in groups]
    theirs = [b for b in BASELINES if b in groups]
    systems = ours + theirs
    rates = sorted({int(float(r["lat_rate"])) for r in rows})
    print()
    print("1 publisher -> server -> 1 subscriber; max = throughput phase (median of all runs), "
          "latency = p50 / p99 of the fixed-rate phase")
    print("| system | max msgs/s | " + " | ".join(
        "p50 @ %s/s | p99 @ %s/s" % (fmt_rate(x), fmt_rate(x)) for x in rates) + " |")
    print("|---|---:|" + "---:|---:|" * len(rates))
    for s in systems:
        xs = groups[s]
        cells = [fmt_rate(med(xs, "rate"))]
        for x in rates:
            at = [r for r in xs if int(float(r["lat_rate"])) == x]
            cells += [fmt_us(med(at, "p50_us")), fmt_us(med(at, "p99_us"))]
        print("| %s | %s |" % (s, " | ".join(cells)))
    print()
    print("ratios, ours ÷ other, per run (median): max msgs/s (above 1: we win), p99 (below 1: "
          "we win)")
    print("| pair | max msgs/s | " + " | ".join("p99 @ %s/s" % fmt_rate(x) for x in rates) + " |")
    print("|---|---:|" + "---:|" * len(rates))
    for o in ours:
        for b in theirs:
            cells = [fmt_ratio(ratio_by_run(rows, "rate", o, b, None))]
            cells += [fmt_ratio(ratio_by_run(rows, "p99_us", o, b, x)) for x in rates]
            print("| %s ÷ %s | %s |" % (o, b, " | ".join(cells)))


def ratio_by_run(rows, key, a, b, rate):
    """Median of a/b over runs of the same log, repetition and latency rate."""
    by = {}
    for r in rows:
        by[(r["log"], r.get("rep"), int(float(r["lat_rate"])), label(r))] = r
    ratios = []
    for (log, rep, x, lab), r in by.items():
        if lab != a or (rate is not None and x != rate):
            continue
        other = by.get((log, rep, x, b))
        if other is None:
            continue
        u, v = num(r, key), num(other, key)
        if u and v:
            ratios.append(u / v)
    return statistics.median(ratios) if ratios else None


def plot(tsv, png, title):
    if shutil.which("gnuplot") is None:
        print("# gnuplot not installed: no plot", file=sys.stderr)
        return
    series = sorted({row[0] for row in tsv}, key=lambda s: [r[0] for r in tsv].index(s))
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for s in series:
            path = os.path.join(tmp, s + ".dat")
            with open(path, "w") as f:
                for _, n, rate, p99, rss in (r for r in tsv if r[0] == s):
                    f.write("%d %s %s %s\n" % (n, rate or "NaN", p99 or "NaN", rss or "NaN"))
            files[s] = path
        def lines(col):
            return ", ".join("'%s' using 1:%d with linespoints lw 2 pt 7 title '%s'" % (
                files[s], col, s) for s in series)
        script = """
set terminal pngcairo size 1500,450 font ',10'
set output '%s'
set multiplot layout 1,3 title '%s'
set logscale x
set logscale y
set grid
set key left top
set xlabel 'receivers (N)'
set ylabel 'delivered messages/s (sum)'
set title 'throughput'
plot %s
set ylabel 'µs'
set title 'p99 latency (fixed rate)'
plot %s
set ylabel 'MiB'
set title 'server peak RSS'
plot %s
unset multiplot
""" % (png, title, lines(2), lines(3), lines(4))
        os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
        subprocess.run(["gnuplot"], input=script.encode(), check=True)
    print("# plot: %s" % png)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=["fanout", "baseline", "one_to_one", "ingest"])
    ap.add_argument("--plot", help="PNG to draw")
    ap.add_argument("logs", nargs="+")
    args = ap.parse_args()
    rows, failed = read(args.logs)
    if args.kind == "one_to_one":
        one_to_one_table(rows)
        for f in failed:
            print(f)
        return
    if args.kind == "fanout":
        tsv = fanout_table(rows)
        title = "fan-out: one publisher -> N receivers"
    elif args.kind == "ingest":
        baseline_table(rows)  # N = 0: messages taken in per second; N = 1: delivered
        for f in failed:
            print(f)
        return
    else:
        tsv = baseline_table(rows)
        title = "fan-out over TCP clients: broker node (WebSocket, native) vs Redis vs NATS"
    for f in failed:
        print(f)
    if args.plot and tsv:
        plot(tsv, args.plot, title)


if __name__ == "__main__":
    main()
