#!/usr/bin/env python3
"""System test: the middle node of a line dies mid-stream and comes back; clones converge.

Line: A (broker-node, master) - B (broker-node, clone, fixed port) - C (broker-node, clone).
A writer streams puts through its clone behind C while B is SIGKILLed and restarted on its
port; B's neighbours re-dial it (--peer-retry 1). The outage (about 3 s) is shorter than
the write channel's silence timeout (3 x 30 x 100 ms), so the writes in flight are
retransmitted, not lost: the master must end with every one of them.

Usage: restart.py <broker-node> <broker-store>
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr, free_port  # noqa: E402
from brokertest.nodes import Node, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import STORE_FLAGS, Tool, typed  # noqa: E402

# Heartbeats every 100 ms (STORE_FLAGS); a store peer counts as gone after 30 silent ones.
FLAGS = STORE_FLAGS + ["--broker.store.timeout-intervals=30"]

STORE = "stream"
WRITES = 1500
BATCH = 50
BATCH_PAUSE = 0.02
KILL_AFTER = 400  # Writes acknowledged by the writer before B dies.
DOWN_SECONDS = 1.5  # Longer than --peer-retry: the neighbours' first re-dials fail.
CONVERGE = "20s"


def test_kill_middle(node_bin, tool_bin):
    """middle node SIGKILLed mid-stream and restarted: clones converge, no write lost

    After the restart every clone holds the master's final state, which has every write."""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE] + FLAGS, "A"))
        a.wait_for(lambda l: l == "store master " + STORE, what="A's master")
        port_b = free_port()
        b_args = ["--clone-stores", STORE, "--peers", peer_uri(a.port),
                  "--peer-retry", "1"] + FLAGS
        b1 = cleanup.add(Node(node_bin, b_args, "B1", port=port_b))
        c = cleanup.add(Node(node_bin, ["--clone-stores", STORE, "--peers",
                                        peer_uri(port_b), "--peer-retry", "1"]
                             + FLAGS, "C"))
        # The master's view (a clone next to A), a reader and the writer behind C.
        tool_flags = FLAGS[len(STORE_FLAGS):]
        ref = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)] + tool_flags, "ref"))
        reader = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(c.port)] + tool_flags,
                                  "reader"))
        writer = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(c.port)] + tool_flags,
                                  "writer"))
        reader.ok("wait-size 0 10s")

        killed = False
        for first in range(0, WRITES, BATCH):
            writer.send(["put k%d %d" % (i, i) for i in range(first, first + BATCH)])
            time.sleep(BATCH_PAUSE)
            if not killed and first + BATCH >= KILL_AFTER:
                writer.wait_results(KILL_AFTER)
                b1.kill()  # SIGKILL: no BYE; A and C notice the lost connection.
                killed = True
                time.sleep(DOWN_SECONDS)
                cleanup.add(Node(node_bin, b_args, "B2", port=port_b))
        results = writer.wait_results(WRITES, timeout=30)
        bad = [r for r in results if "error" in r]
        check(not bad, "every write was accepted by the writer's clone: %s" % bad[:3])

        # The master ends with every write, and every clone with the master's state.
        ref.ok("wait-size %d %s" % (WRITES, CONVERGE))
        for t in (reader, writer):
            t.ok("wait-size %d %s" % (WRITES, CONVERGE))
            t.ok("wait-get k%d %d %s" % (WRITES - 1, WRITES - 1, CONVERGE))
        want = ref.state()
        check(want == {"k%d" % i: typed("integer", i) for i in range(WRITES)},
              "the master holds k0..k%d: %d keys" % (WRITES - 1, len(want)))
        for t in (reader, writer):
            check(t.state() == want, "%s's clone equals the master" % t.name)
        # A clone attached after the outage, behind the restarted B, starts equal too.
        late = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(port_b)] + tool_flags, "late"))
        late.ok("wait-size %d %s" % (WRITES, CONVERGE))


if __name__ == "__main__":
    run_tests([test_kill_middle], limit=70, binaries=("broker-node", "broker-store"))
