#!/usr/bin/env python3
"""node.chaos: five broker-nodes in a ring with chords, under SIGKILLs, paused links, paused
nodes and client churn; afterwards every delivery is accounted for.

Topology (chaos_network.py): nodes A-E in a ring A-B-C-D-E-A with the chords A-C and B-D.
Every link is a relay process (brokertest.proxy) that the later node dials, so that SIGSTOP
pauses exactly one link. Each node serves one WebSocket client (brokertest.stamped) that
publishes (origin, seq) at RATE messages/s with PAD bytes of filler on /stamped/<origin> and
records everything it receives on /stamped/. Each node gets a seeded peer-overflow policy
and a small peer buffer, so that paused links overflow and policies drop.

Chaos, for CHAOS_SECONDS (default 60): a plan drawn from one seed (printed; replay with
CHAOS_SEED=<seed>) of SIGKILL + restart of a node on its ports (at most two down at a
time), SIGSTOP/SIGCONT of a link or of a node, a client closing and reconnecting, and a
client publishing a burst. Then every fault is undone, the test waits until every client
receives from every other one again, the publishers stop, and the test waits for their last
messages. Every node's metrics are scraped every SCRAPE_EVERY s, right before it is killed
or paused, and at the end.

The accounting (chaos_accounting.py), per source S and receiving connection R (one
WebSocket connection of a client is one subscriber; a reconnect is a new one, which the API
cannot tell from a new client):

- Never: a message of S delivered twice to R. Never a gap: a message of S that R did not
  get although R got an earlier and a later one of S (or, on R's last connection, the
  last one S published), unless it is explained by one of:
  - a node SIGKILLed (messages in flight through it are lost), or
  - a counted drop: broker_handler_dropped_messages_total or broker_handler_disconnects_total of kind peer
    or web_socket grew on some node between two scrapes,
  at a time when the missing messages may still have been on their way: from the sending
  of the last message R got before the gap until the first one after it arrived, extended
  to the end of every pause that may have held them up (one in effect then, or begun
  before such a pause ended) plus DISCARD_SLACK (a backlog behind a pause is discarded
  when it overflows a queue after the pause ends).
- Not checked: what S published before R's first delivery from S (R was not subscribed
  yet, its subscription had not reached S's node, or no path existed) and, except on R's
  last connection, after R's last delivery (R went away). "First" in time: an older
  message that arrives later is a reorder (below).
- Never a reorder: a message of S delivered to R after a later one of S. A node routes
  each origin's messages in increasing sequence order (doc/peering.md, "Under faults"):
  a copy that arrives behind a newer message of its origin (it took a slower path, or a
  faster path dropped it) is dropped and counted in broker_out_of_order_messages_total,
  which therefore also explains gaps. The one exception is not the node's to prevent:
  when S's node is killed and S reconnects to its restarted incarnation, messages S sent
  through the old one may still sit in a paused link and arrive after newer ones sent
  through the new one (two origins; order holds per origin). Such a reorder, with a kill
  of S's node between the two sends, is reported as XFAIL.
- Across the connections of one client (its node may have restarted in between): no
  message delivered on two connections. A later connection getting a message older than
  one an earlier connection got is a new subscriber's view (a restarted node remembers no
  sequence numbers); it is reported as XFAIL when a peering came up or a drop was counted
  meanwhile, and fails the test otherwise.

Usage: chaos.py <path to broker-node>. CHAOS_SEED, CHAOS_SECONDS; CHAOS_TRACE=1 makes the
relays record what crosses each link and the report show which links a reordered message
and the one that overtook it took. Logs (each process's output, run.json with the plan,
faults, samples and every delivery) go to a temporary directory that is kept, and named,
when the test fails (always with CHAOS_KEEP_LOGS=1).
"""

import collections
import json
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import TestFailure, check_eq, run_tests  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.stamped import Connection, StampClient  # noqa: E402

from chaos_accounting import Accounting, report, trace_report  # noqa: E402
from chaos_network import (EDGES, NAMES, TRACE, Network, drained,  # noqa: E402
                           wait_converged, wait_until)

CHAOS_SECONDS = float(os.environ.get("CHAOS_SECONDS", "60"))
BURST = 300          # messages of a burst
MAX_DOWN = 2         # nodes down at once
DRAIN_TIMEOUT = 30.0  # for the last messages


# -- the plan ---------------------------------------------------------------------------

def make_plan(rng, seconds):
    """[(t, action, target, arg)] sorted by t: faults and their undoing, consistent with
    one another (no pause of a dead node, at most MAX_DOWN nodes down)."""
    plan = []
    busy_until = {("node", i): 0.0 for i in range(len(NAMES))}
    busy_until.update({("link", e): 0.0 for e in range(len(EDGES))})
    down = []  # (from, to) of kills
    t = 1.0
    while True:
        t += rng.uniform(0.3, 2.5)
        if t >= seconds:
            break
        kind = rng.choices(["kill", "pause_link", "pause_node", "churn", "burst"],
                           [3, 3, 2, 2, 1])[0]
        if kind in ("kill", "pause_node"):
            n = rng.randrange(len(NAMES))
            if busy_until[("node", n)] > t:
                continue
            if kind == "kill":
                if sum(1 for a, b in down if a <= t < b) >= MAX_DOWN:
                    continue
                back = t + rng.uniform(1.0, 5.0)
                down.append((t, back))
                plan += [(t, "kill", n, None), (back, "restart", n, None)]
                busy_until[("node", n)] = back + 0.5
            else:
                back = t + rng.uniform(0.5, 4.0)
                plan += [(t, "pause_node", n, None), (back, "resume_node", n, None)]
                busy_until[("node", n)] = back
        elif kind == "pause_link":
            e = rng.randrange(len(EDGES))
            if busy_until[("link", e)] > t:
                continue
            back = t + rng.uniform(1.0, 8.0)
            plan += [(t, "pause_link", e, None), (back, "resume_link", e, None)]
            busy_until[("link", e)] = back
        elif kind == "churn":
            plan.append((t, "churn", rng.randrange(len(NAMES)), round(rng.uniform(0, 1.5), 2)))
        else:
            plan.append((t, "burst", rng.randrange(len(NAMES)), BURST))
    plan.sort(key=lambda x: x[0])
    return plan


# -- the test ---------------------------------------------------------------------------------

def dump(net, plan, log_dir):
    with open(os.path.join(log_dir, "run.json"), "w") as f:
        json.dump({"t0": net.t0, "wall_offset": net.wall_offset, "plan": plan,
                   "events": net.events, "kills": net.kills, "pauses": net.pauses,
                   "births": [[j, life, t] for (j, life), t in net.births.items()],
                   "settings": net.settings, "samples": net.samples,
                   "clients": [{"index": c.index, "sent": c.sent, "connections": [
                       {"number": x.number, "opened": x.opened, "closed": x.closed,
                        "why": x.why, "errors": x.errors, "received": x.received}
                       for x in c.connections]} for c in net.clients]}, f)


def account(deliveries, kills=(), drop_at=None, pauses=()):
    """The verdicts on a made-up run without processes: client A published 0..9, one a
    second; client B's connections got `deliveries`, a list of (seq, second of arrival) per
    connection; `kills`, a counted drop on node C at `drop_at`, `pauses` (from, to) in
    seconds. Returns (sorted kinds of failures, sorted kinds of expected failures)."""
    with tempfile.TemporaryDirectory() as d:
        net = Network.records_only(d)
        t0 = net.t0
        a, b = StampClient(0, 0, 0), StampClient(1, 0, 0)
        a.sent = [t0 + k for k in range(10)]
        for n, xs in enumerate(deliveries):
            conn = Connection(n, t0 + xs[0][1] - 0.5, None)
            conn.received = [(0, seq, t0 + at) for seq, at in xs]
            conn.closed = t0 + xs[-1][1] + 0.1
            conn.why = "stop" if n == len(deliveries) - 1 else "churn"
            b.connections.append(conn)
        net.clients = [a, b]
        net.kills = [t0 + k for k in kills]
        net.pauses = [(t0 + x, t0 + y) for x, y in pauses]
        if drop_at is not None:
            net.samples[2] = [(t0 + drop_at - 0.5, t0 + drop_at - 0.4, 0, {"dropped": 0}),
                              (t0 + drop_at + 0.4, t0 + drop_at + 0.5, 0, {"dropped": 3})]
        acc = Accounting(net, t0 + 12).run()
        return (sorted(k for k, _ in acc.violations + acc.cross),
                sorted(k for k, _ in acc.expected))


def test_accounting(binary):
    """the accounting flags duplicates, unexplained gaps and reorders, and only those"""
    def seqs(*xs):
        return [(q, q + 0.1) for q in xs]
    cases = [
        ("in order", [seqs(*range(10))], {}, ([], [])),
        ("a duplicate", [seqs(*range(10)) + [(5, 9.5)]], {}, (["duplicate"], [])),
        ("a gap", [seqs(0, 1, 2, 3, 4, 6, 7, 8, 9)], {}, (["gap"], [])),
        ("a gap with a kill", [seqs(0, 1, 2, 3, 4, 6, 7, 8, 9)], {"kills": [5.3]},
         ([], [])),
        ("a gap with a drop counted after the pause that held it",
         [seqs(0, 1, 2, 3, 4, 6, 7, 8, 9)], {"pauses": [(4.5, 8.0)], "drop_at": 8.5},
         ([], [])),
        ("a gap with a drop long before", [seqs(0, 1, 2, 3, 4, 6, 7, 8, 9)],
         {"drop_at": 2.0}, (["gap"], [])),
        ("a reorder", [seqs(0, 1, 2, 3, 4) + [(6, 6.1), (5, 6.2)] + seqs(7, 8, 9)], {},
         (["reorder"], [])),
        ("a reorder with a counted drop", [seqs(0, 1, 2, 3, 4) + [(6, 6.1), (5, 6.2)] +
                                           seqs(7, 8, 9)], {"drop_at": 5.5},
         (["reorder"], [])),
        ("a message on two connections", [seqs(0, 1, 2, 3, 4, 5), seqs(5, 6, 7, 8, 9)], {},
         (["duplicate across connections"], [])),
        ("a missing last message", [seqs(*range(9))], {}, (["gap"], [])),
    ]
    for what, deliveries, faults, want in cases:
        check_eq(account(deliveries, **faults), want, "the verdicts on %s" % what)


def test_chaos(binary):
    """five nodes under faults: no duplicate, no reorder, no unexplained gap"""
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2 ** 32))
    print("chaos seed %d (replay with CHAOS_SEED=%d), %.0f s of chaos" % (seed, seed,
                                                                         CHAOS_SECONDS),
          flush=True)
    rng = random.Random(seed)
    log_dir = tempfile.mkdtemp(prefix="broker-chaos-")
    passed = False
    try:
        with Cleanup() as cleanup:
            net = Network(cleanup, binary, rng, log_dir)
            plan = make_plan(rng, CHAOS_SECONDS)
            for c in net.clients:
                c.start()
            wait_converged(net, net.now(), "before the chaos")
            net.log("chaos", "begins")
            net._scraper.start()
            try:
                net.run_plan(plan)
                net.log("chaos", "ends; healing")
                net.heal()
                healed = net.now()
                wait_converged(net, healed, "after the chaos")
                net.log("healed", "every client receives from every other")
                for c in net.clients:
                    c.stop_publishing()
                if not wait_until(lambda: drained(net.clients), DRAIN_TIMEOUT):
                    print("the last messages did not all arrive within %.0f s"
                          % DRAIN_TIMEOUT, flush=True)
            finally:
                net._stop_scraping.set()
                net._scraper.join()
                for j in range(len(NAMES)):
                    with net.locks[j]:
                        net.scrape(j)
                for c in net.clients:
                    c.stop()
            t_end = net.now()
        # The processes are gone: their logs are complete.
        dump(net, plan, log_dir)
        net.names = net.node_names()
        acc = Accounting(net, t_end).run()
        report(net, acc, plan)
        if TRACE and acc.reorders:
            trace_report(net, acc)
        failures = acc.violations + acc.cross
        if failures:
            kinds = collections.Counter(k for k, _ in failures)
            raise TestFailure("seed %d: %s\n%s" % (
                seed, ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())),
                "\n".join(text for _, text in failures[:20])))
        passed = True
    finally:
        if passed and os.environ.get("CHAOS_KEEP_LOGS") != "1":
            shutil.rmtree(log_dir, ignore_errors=True)
        else:
            print("logs: %s" % log_dir, flush=True)


if __name__ == "__main__":
    run_tests([test_accounting, test_chaos], limit=CHAOS_SECONDS + 90)
