"""The tables of bench/fanout_cost.py (see its file comment). Medians over repetitions;
ratios ours / other are taken within one repetition, then the median."""

import os

import benchlib as bl

OURS = "broker-ws"


def _rate(x):
    if x is None:
        return "n/a"
    return "%.2f M" % (x / 1e6) if x >= 1e6 else "%.0f k" % (x / 1e3)


def _per(r, key, denom_key, scale):
    d = r.get(denom_key) or 0
    return scale * r[key] / d if d else None


def _ratio(results, section, n, other, fn):
    """Median of fn(ours) / fn(other) over repetitions with both."""
    by = {(rep, s): r for rep, sec, s, m, r in results if sec == section and m == n}
    xs = []
    for (rep, s), r in by.items():
        if s != OURS or (rep, other) not in by:
            continue
        a, b = fn(r), fn(by[(rep, other)])
        if a and b:
            xs.append(a / b)
    return "%.2f×" % bl.median(xs) if xs else "n/a"


def report(run, args, systems, results):
    say = run.say

    def rows_of(section, system, n):
        return [r for _, sec, s, m, r in results if sec == section and s == system and m == n]

    def m(rs, fn):
        return bl.median([fn(r) for r in rs])

    sizes = sorted({n for _, sec, _, n, _ in results if sec == "fanout"})
    if sizes:
        say("")
        say("## Fan-out: one publisher → N subscribers, 64-byte payloads, prefix subscriptions "
            "(median of %d; driver: fanout-drive, %d subscriber process%s)"
            % (args.reps, args.procs, "" if args.procs == 1 else "es"))
        say("")
        rows = []
        for n in sizes:
            for s in systems:
                rs = rows_of("fanout", s, n)
                if not rs:
                    continue
                server_ns = m(rs, lambda r: _per(r, "server_cpu_s", "delivered", 1e9))
                driver_ns = m(rs, lambda r: _per(r, "driver_cpu_s", "delivered", 1e9))
                rows.append([s, str(n), str(len(rs)), _rate(m(rs, lambda r: r["rate"])),
                             bl.fmt(server_ns, 0), bl.fmt(driver_ns, 0),
                             bl.fmt(driver_ns / server_ns if server_ns and driver_ns else None, 2),
                             bl.fmt(m(rs, lambda r: 100 * r["server_cpu_s"] / r["seconds"]
                                      if r["seconds"] else None), 0),
                             bl.fmt(m(rs, lambda r: 100 * r["driver_cpu_s"] / r["seconds"]
                                      if r["seconds"] else None), 0),
                             bl.fmt(m(rs, lambda r: r["server_hwm_kb"] / 1024), 1),
                             bl.fmt(m(rs, lambda r: (r["server_rss_connected_kb"]
                                                     - r["server_rss_start_kb"]) / n), 1),
                             bl.fmt(m(rs, lambda r: r["p50_us"]), 0),
                             bl.fmt(m(rs, lambda r: r["p99_us"]), 0)])
        run.table(["system", "N", "runs", "delivered/s", "server CPU ns/delivery",
                   "driver CPU ns/delivery", "driver ÷ server", "server CPU %", "driver CPU %",
                   "server peak RSS MiB", "RSS KiB/connection", "latency p50 µs", "p99 µs"],
                  rows)
        say("")
        say("CPU: user + system time of all threads (/proc/<pid>/task/*/schedstat) over the "
            "throughput phase, divided by the deliveries in it; CPU %% is of one core over the "
            "phase (the machine has %d). RSS per connection: the server's VmRSS after the N "
            "subscribers connected minus before. Latency: the fixed-rate phase (1 000 "
            "messages/s, at most 20 000 deliveries/s)." % os.cpu_count())
        others = [s for s in systems if s != OURS]
        if OURS in systems and others:
            say("")
            say("Ours ÷ other, per repetition then the median (server CPU per delivery: below "
                "1 we spend less; delivered/s: above 1 we deliver more):")
            say("")
            rows = []
            for n in sizes:
                row = [str(n)]
                for o in others:
                    row.append(_ratio(results, "fanout", n, o,
                                      lambda r: _per(r, "server_cpu_s", "delivered", 1e9)))
                    row.append(_ratio(results, "fanout", n, o, lambda r: r["rate"]))
                rows.append(row)
            head = ["N"]
            for o in others:
                head += ["CPU/delivery vs %s" % o, "delivered/s vs %s" % o]
            run.table(head, rows)

    idle = [(s, r) for _, sec, s, _, r in results if sec == "idle"]
    if idle:
        say("")
        say("## Idle connections: %d subscribed connections held %.0f s (median of %d)"
            % (args.idle_clients, args.idle_hold, args.reps))
        say("")
        rows = []
        for s in systems:
            rs = [r for x, r in idle if x == s]
            if rs:
                cold = [r for r in rs if "server_rss_cold_kb" in r]
                per = [(r["server_rss_connected_kb"] - r.get("server_rss_cold_kb",
                                                              r["server_rss_start_kb"]))
                       / args.idle_clients for r in rs]
                warm = [(r["server_rss_connected_kb"] - r["server_rss_start_kb"])
                        / args.idle_clients for r in cold]
                rows.append([s, bl.fmt(m(rs, lambda r: r.get("server_rss_cold_kb",
                                                             r["server_rss_start_kb"]) / 1024), 1),
                             bl.fmt(m(rs, lambda r: r["server_rss_connected_kb"] / 1024), 1),
                             bl.fmt(m(per, lambda x: x), 1),
                             " ".join(bl.fmt(x, 2) for x in per),
                             bl.fmt(m(warm, lambda x: x), 1) if warm else "-"])
        run.table(["system", "RSS empty MiB", "RSS with the connections MiB",
                   "KiB per connection", "each repetition",
                   "KiB per connection above a warmed server"], rows)
        if args.idle_warmup > 0:
            say("")
            say("Warmed: the same server after %d connections subscribed and left (what the "
                "first client of a fresh process brings in once: code pages, per-thread "
                "buffers, allocator state)." % args.idle_warmup)

    ingest = [(s, r) for _, sec, s, _, r in results if sec == "ingest"]
    if ingest:
        say("")
        say("## Ingest: one connection publishes 64-byte payloads as fast as the server reads, "
            "no subscriber (median of %d)" % args.reps)
        say("")
        rows = []
        for s in systems:
            rs = [r for x, r in ingest if x == s]
            if rs:
                rows.append([s, _rate(m(rs, lambda r: r["rate"])),
                             bl.fmt(m(rs, lambda r: _per(r, "server_cpu_s", "sent", 1e6)), 2),
                             bl.fmt(m(rs, lambda r: _per(r, "driver_cpu_s", "sent", 1e6)), 2)])
        run.table(["system", "messages/s", "server CPU µs/message", "driver CPU µs/message"],
                  rows)
        say("")
        say("The run publishes for %.0f s and then waits until the server's CPU stays below 5 %% "
            "for 100 ms, so the server's CPU covers every message it took in (a node buffers "
            "up to broker.max-input-bytes per connection); messages/s is over the same span."
            % args.seconds)



