#!/usr/bin/env python3
"""System test: concurrent put_unique from two clones on the same key, exactly one wins.

Usage: put_unique.py <broker-node> <broker-store>
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import STORE_FLAGS, Tool, typed  # noqa: E402

STORE = "locks"
ROUNDS = 100


def test_one_winner_per_key(node_bin, tool_bin):
    """two clones race put_unique on the same keys, round after round: one wins each"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE] + STORE_FLAGS, "A"))
        a.wait_for(lambda l: l == "store master " + STORE, what="the master")
        x = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "x"))
        y = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "y"))
        # Lockstep: each round's two requests are in flight together, so the master sees
        # them race; the order in which they arrive varies from round to round.
        for i in range(ROUNDS):
            x.send("put_unique r%d \"x\"" % i)
            y.send("put_unique r%d \"y\"" % i)
            rx = x.wait_results(i + 1)
            ry = y.wait_results(i + 1)
        winners = {}
        for i, (p, q) in enumerate(zip(rx, ry)):
            check("value" in p and "value" in q, "round %d: both answer: %s %s" % (i, p, q))
            got = (p["value"]["data"], q["value"]["data"])
            check(got in ((True, False), (False, True)),
                  "round %d: exactly one inserts, got x=%s y=%s" % (i, got[0], got[1]))
            winners["r%d" % i] = typed("string", "x" if got[0] else "y")
        # The master keeps each winner's value, and both clones agree with it.
        for t in (x, y):
            t.ok("wait-size %d 15s" % ROUNDS)
            t.ok("wait-get r%d %s 15s" % (ROUNDS - 1, winners["r%d" % (ROUNDS - 1)]["data"]))
            check(t.state() == winners, "%s holds the winners' values" % t.name)
        # A late contender loses every key.
        z = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "z"))
        check(z.value("put_unique r0 \"z\"") == typed("boolean", False), "a taken key stays")
        wins = sum(1 for v in winners.values() if v["data"] == "x")
        print("x won %d of %d rounds" % (wins, ROUNDS), flush=True)


if __name__ == "__main__":
    run_tests([test_one_winner_per_key], limit=40, binaries=("broker-node", "broker-store"))
