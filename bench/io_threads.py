#!/usr/bin/env python3
"""Fan-in over several I/O threads: the multi-producer path into one sink.

A receiving `broker-throughput --server` (one endpoint, one hub on /benchmark/events) with
broker.io-threads = 1, 2 and 4 gets events from 4 `broker-throughput` clients at once, each
over its own plain peering, as fast as they go (type 0, batches of 100). With more than
one I/O thread, the peerings' strands run on different threads and route into the hub's
queue at the same time: the lock-free reservation of core/mpsc_ring.hh under contention.
Reported per setting: the events/s the server received, its CPU per event, and the
clients' CPU next to it (the machine has 2 cores: all five processes share them, so
CPU per event is the number to compare).

    bench/io_threads.py                     # ~2 minutes
    REPS=1 THREADS=1,4 bench/io_threads.py
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import benchlib as bl  # noqa: E402

OPTIONS = [
    ("--reps", int, 3, "repetitions"),
    ("--threads", str, "1,2,4", "values of broker.io-threads"),
    ("--clients", int, 4, "publishing clients"),
    ("--seconds", int, 4, "how long each client publishes"),
]


def one_run(run, bins, threads, clients, seconds):
    server = run.start(bins["broker-throughput"],
                       ["--server", "--disable-ssl", "--json", "127.0.0.1:0",
                        "--broker.io-threads=%d" % threads], "server")
    port = server.listening_port()
    procs = [run.start(bins["broker-throughput"],
                       ["-t", "0", "-s", "100", "--duration", str(seconds), "--disable-ssl",
                        "--json", "127.0.0.1:%d" % port], "client-%d" % k)
             for k in range(clients)]
    for p in procs:
        p.expect_exit(0, timeout=seconds + 30)
    # The clients drained their queues before they exited; give the server a moment.
    time.sleep(0.5)
    server_cpu = bl.cpu_seconds(server.pid)
    server.stop()
    events = sum(p.summary()["events"] for p in procs)
    client_cpu = sum(p.summary()["cpu"] for p in procs)
    return {"threads": threads, "events": events, "rate": events / seconds,
            "server_cpu_us": server_cpu * 1e6 / events if events else None,
            "client_cpu_us": client_cpu * 1e6 / events if events else None}


def main(args):
    with bl.Run("io_threads", args) as run:
        bins = run.build("broker-throughput")
        results = []
        settings = [int(x) for x in args.threads.split(",")]
        for rep in range(args.reps):
            # Rotate the order so that the machine's load hits every setting alike.
            for t in settings[rep % len(settings):] + settings[:rep % len(settings)]:
                run.progress("rep %d/%d io-threads=%d" % (rep + 1, args.reps, t))
                results.append(one_run(run, bins, t, args.clients, args.seconds))
        rows = []
        for t in settings:
            xs = [r for r in results if r["threads"] == t]
            rows.append([str(t), str(len(xs)),
                         bl.fmt_int(bl.median([r["rate"] for r in xs])),
                         bl.fmt(bl.median([r["server_cpu_us"] for r in xs]), 2),
                         bl.fmt(bl.median([r["client_cpu_us"] for r in xs]), 2)])
        run.say("## Fan-in: %d clients -> one hub, events/s and CPU per event (median of %d)"
                % (args.clients, args.reps))
        run.say()
        run.table(["io-threads", "runs", "events/s received", "server CPU us/event",
                   "clients' CPU us/event"], rows)
        run.raw["results"] = results


if __name__ == "__main__":
    bl.run_main(lambda: main(bl.parse_args(__doc__, OPTIONS)))
