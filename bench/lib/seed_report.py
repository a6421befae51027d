"""The tables of bench/seed.py: medians over repetitions, ours / zeek ratios per repetition
then their median, and the diagnosis probes."""

import benchlib as bl

# (key, column title, digits) of the window tables.
WINDOW_COLUMNS = [
    ("recv_cpu_pct", "receiver CPU %", 1),
    ("recv_us_per_event", "µs/event", 2),
    ("send_cpu_pct", "sender CPU %", 1),
    ("rate", "received/s", 0),
    ("recv_cs_per_event", "ctx sw/event", 2),
    ("recv_wakeups_per_event", "wake-ups/event", 2),
    ("recv_preempt_per_event", "preempted/event", 2),
    ("recv_runs_per_event", "runs/event", 2),
    ("recv_threads", "threads", 0),
    ("recv_threads_woken", "threads woken ≥0.05/event", 0),
    ("send_cs_per_event", "sender ctx sw/event", 2),
]

POLLS = ("epoll_wait", "epoll_pwait", "poll", "ppoll")
SENDS = ("sendto", "sendmsg", "writev")

RATIO_KEYS = ["recv_cpu_pct", "recv_us_per_event", "send_cpu_pct", "recv_cs_per_event",
              "recv_wakeups_per_event", "recv_runs_per_event", "recv_threads"]


def _value(x, digits):
    if x is None:
        return "n/a"
    return bl.fmt_int(x) if digits == 0 and x >= 1000 else bl.fmt(x, digits)


def _sig(x):
    """Per-event counts, small ones with more digits (0.0041, 0.297, 2.54)."""
    if x is None:
        return "n/a"
    for limit, form in ((0.01, "%.4f"), (1, "%.3f"), (10, "%.2f")):
        if x < limit:
            return form % x
    return "%.0f" % x


def _ratio_cell(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    return "%.2f× (%.2f–%.2f)" % (bl.median(xs), min(xs), max(xs))


def _ok(rep, key):
    """The windows of one pairing in one repetition, or None if it failed."""
    x = rep.get(key)
    return None if x is None or "failed" in x else x


def report(run, args, pairings, reps, probes, have_zeek):
    say = run.say
    failed = [(i + 1, k, rep[k]["failed"]) for i, rep in enumerate(reps) for k in rep
              if isinstance(rep[k], dict) and "failed" in rep[k]]
    idles = [0] + ([args.idle_peers] if args.idle_peers else [])
    say("")
    say("## Receiver at %d events/s (type 1, one event per message), %.0f s windows, "
        "median of %d" % (args.rate, args.window, len(reps)))
    say("")
    rows = []
    for s, r in pairings:
        for idle in idles:
            if idle and s is not r:
                continue
            ws = [(_ok(rep, (s.name, r.name)) or {}).get(idle) for rep in reps]
            ws = [w for w in ws if w]
            if not ws:
                continue
            row = ["%s → %s" % (s.name, r.name), str(idle)]
            for key, _, digits in WINDOW_COLUMNS:
                row.append(_value(bl.median([w[key] for w in ws]), digits))
            rows.append(row)
    run.table(["sender → receiver", "idle peers"] + [c[1] for c in WINDOW_COLUMNS], rows)
    say("")
    say("ctx sw = voluntary + nonvoluntary context switches of all receiver threads "
        "(/proc/<pid>/task/*/status); wake-ups = the voluntary ones (a thread blocked, then "
        "was woken); runs = times a receiver thread was put on a CPU (schedstat).")
    skipped = sum(rep[p].get("skipped", 0) for rep in reps for p in rep if p[0] != "ping")
    if skipped:
        say("Zeek's sender skipped %d batches (its publisher queue was full)." % skipped)
    for i, key, reason in failed:
        say("Left out: repetition %d of %s → %s, twice below 90 %% of the rate (%s)."
            % (i, key[0], key[1], reason))
    say("")
    say("Receiver threads that woke at least 0.05 times per event (wake-ups per event, CPU "
        "µs per event), last repetition, no idle peers:")
    say("")
    for s, r in pairings:
        ws = [_ok(rep, (s.name, r.name)) for rep in reps]
        ws = [w for w in ws if w]
        if ws:
            say("- %s → %s: %s" % (s.name, r.name, ws[-1][0]["recv_thread_detail"] or "none"))

    if have_zeek:
        say("")
        say("## Ours / Zeek Broker (same repetition, then the median; min–max)")
        say("")
        rows = []
        for idle in idles:
            for key in RATIO_KEYS:
                xs = []
                for rep in reps:
                    a = (_ok(rep, ("ours", "ours")) or {}).get(idle)
                    b = (_ok(rep, ("zeek", "zeek")) or {}).get(idle)
                    if a and b and a[key] and b[key]:
                        xs.append(a[key] / b[key])
                title = [c[1] for c in WINDOW_COLUMNS if c[0] == key][0]
                rows.append(["%s, %d idle peers" % (title, idle), _ratio_cell(xs)])
        # The receivers compared on the same input: each sender feeding both receivers.
        for sender in ("zeek", "ours"):
            for key in ("recv_cpu_pct", "recv_cs_per_event"):
                xs = []
                for rep in reps:
                    a, b = _ok(rep, (sender, "ours")), _ok(rep, (sender, "zeek"))
                    if a and b and a[0][key] and b[0][key]:
                        xs.append(a[0][key] / b[0][key])
                if xs:
                    title = [c[1] for c in WINDOW_COLUMNS if c[0] == key][0]
                    rows.append(["%s, both fed by %s's sender" % (title, sender), _ratio_cell(xs)])
        rows.append(["ping/pong p50", _ratio_cell(
            [rep[("ping", "ours")]["p50_us"] / rep[("ping", "zeek")]["p50_us"] for rep in reps])])
        rows.append(["ping/pong p99", _ratio_cell(
            [rep[("ping", "ours")]["p99_us"] / rep[("ping", "zeek")]["p99_us"] for rep in reps])])
        run.table(["metric", "ours / zeek"], rows)

    if args.idle_peers:
        say("")
        say("## Growth with %d idle peers (same processes, with − without; median)"
            % args.idle_peers)
        say("")
        rows = []
        for s, r in pairings:
            if s is not r:
                continue
            g = [_ok(rep, (s.name, r.name))[args.idle_peers]["recv_cpu_pct"]
                 - _ok(rep, (s.name, r.name))[0]["recv_cpu_pct"] for rep in reps
                 if _ok(rep, (s.name, r.name))]
            if not g:
                continue
            rows.append([r.name, "%+.2f" % bl.median(g), "%+.2f..%+.2f" % (min(g), max(g))])
        run.table(["receiver", "CPU growth (pp)", "min..max"], rows)

    say("")
    say("## Ping/pong across one peering, %d round trips (median of %d runs)"
        % (args.pings, len(reps)))
    say("")
    rows = []
    for impl in sorted({p[1] for rep in reps for p in rep if p[0] == "ping"}):
        rs = [rep[("ping", impl)] for rep in reps]
        rows.append([impl, bl.fmt(bl.median([x["p50_us"] for x in rs]), 1),
                     bl.fmt(bl.median([x["p99_us"] for x in rs]), 1)])
    run.table(["implementation", "p50 µs", "p99 µs"], rows)

    if probes:
        probe_report(run, args, probes)


def probe_report(run, args, probes):
    say = run.say
    say("")
    say("## Diagnosis: where each event goes (%.0f s probes at %d events/s)"
        % (args.probe_seconds, args.rate))
    say("")
    rows = []
    for (s, r), p in probes.items():
        reads = p.get("reads") or {}
        rs, ss = p.get("recv_syscalls", {}), p.get("send_syscalls", {})
        rows.append(["%s → %s" % (s, r), _value(p.get("rate"), 0),
                     _sig(p.get("segs_in_per_event")), bl.fmt(p.get("bytes_per_segment"), 0),
                     bl.fmt(p.get("bytes_per_event"), 0),
                     _sig(reads.get("reads_per_event")),
                     bl.fmt(reads.get("bytes_per_read_median"), 0),
                     _sig(reads.get("empty_reads_per_event")),
                     _sig(reads.get("other_reads_per_event")),
                     _sig(sum(rs.get(k, 0) for k in POLLS)), _sig(rs.get("futex")),
                     _sig(sum(ss.get(k, 0) for k in SENDS)), _sig(ss.get("write")),
                     _sig(ss.get("futex"))])
    run.table(["sender → receiver", "received/s", "TCP segments in/event", "bytes/segment",
               "bytes/event", "socket reads with data/event", "bytes/read (median)",
               "empty reads/event", "other reads/event", "receiver polls/event",
               "receiver futex/event", "sender socket sends/event", "sender write()/event",
               "sender futex/event"], rows)
    say("")
    say("Segments and bytes: the receiver's TCP connection (`ss -ti`, data_segs_in, "
        "bytes_received). Reads: every read/recvfrom/recvmsg/readv of the receiver's threads "
        "(`perf record` on syscall tracepoints); \"socket\" is the descriptor that delivered "
        "the most bytes, \"other\" reads are eventfds and pipes. System calls per event: "
        "`perf stat` on syscall tracepoints, all threads; socket sends = sendto + sendmsg + "
        "writev, write() is mostly eventfds.")
    say("")
    for (s, r), p in probes.items():
        reads = p.get("reads") or {}
        say("- %s → %s: socket read by %s; other reads by %s; threads woken: %s"
            % (s, r, reads.get("socket_readers") or "n/a", reads.get("other_readers") or "none",
               p.get("threads") or "none"))
