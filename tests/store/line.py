#!/usr/bin/env python3
"""System test: a master and two clones across a line of three nodes converge.

Usage: line.py <broker-node> <broker-store>
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import addr  # noqa: E402
from brokertest.nodes import Node, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.store import STORE_FLAGS, Tool, typed  # noqa: E402

STORE = "line"
WRITES_PER_NODE = 50


def write_everywhere(tools):
    """Each node writes its own keys, and all of them count, push and erase on shared keys."""
    for t in tools:
        lines = ["put %s-%d %d" % (t.name, i, i) for i in range(WRITES_PER_NODE)]
        lines += ["increment ctr 1c"] * 10 + ["push log \"%s\"" % t.name,
                                              "insert_into tags %s" % t.name,
                                              "put %s-gone 1" % t.name, "erase %s-gone" % t.name]
        t.send(lines)
    for t in tools:
        results = t.wait_results(t.sent)
        bad = [r for r in results if "error" in r]
        check(not bad, "%s: every write succeeds: %s" % (t.name, bad[:3]))


def check_converged(tools):
    total = len(tools) * WRITES_PER_NODE + 3  # own keys, ctr, log, tags
    for t in tools:
        t.ok("wait-size %d 15s" % total)
        t.ok("wait-get ctr %dc 15s" % (10 * len(tools)))
    states = [t.state() for t in tools]
    for t, s in zip(tools[1:], states[1:]):
        check(s == states[0], "%s holds what %s holds:\n%s\n%s"
              % (t.name, tools[0].name, sorted(s.items())[:5], sorted(states[0].items())[:5]))
    log = states[0]["log"]["data"]
    check(sorted(x["data"] for x in log) == sorted(t.name for t in tools),
          "every node's push arrived once: %s" % log)


def test_tool_line(node_bin, tool_bin):
    """master A - clone B - clone C (broker-store processes): writes through each converge"""
    with Cleanup() as cleanup:
        a = cleanup.add(Tool(tool_bin, STORE, ["--master"], "A", listen=True))
        b = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "B", listen=True))
        c = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(b.port)], "C"))
        write_everywhere([a, b, c])
        check_converged([a, b, c])
        # A clone's clear reaches the master and the other clone.
        c.ok("clear")
        for t in (a, b, c):
            t.ok("wait-size 0 15s")
        for t in (a, b, c):
            check(t.close() == 0, "%s exits 0" % t.name)


def test_node_in_the_middle(node_bin, tool_bin):
    """master (broker-node) - relay with a clone (broker-node) - clone: writes converge"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(node_bin, ["--master-stores", STORE, "-v"] + STORE_FLAGS, "A"))
        a.wait_for(lambda l: l == "store master " + STORE, what="the master")
        b = cleanup.add(Node(node_bin, ["--clone-stores", STORE, "--peers",
                                        peer_uri(a.port)] + STORE_FLAGS, "B"))
        b.wait_for(lambda l: l == "store clone " + STORE, what="the clone")
        # Two clones at the ends of the line A - B - C: one at A, one behind B.
        near = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(a.port)], "near"))
        far = cleanup.add(Tool(tool_bin, STORE, ["--peer", addr(b.port)], "far"))
        write_everywhere([near, far])
        check_converged([near, far])
        check(near.value("get far-7") == typed("integer", 7), "near sees far's write")


if __name__ == "__main__":
    run_tests([test_tool_line, test_node_in_the_middle], limit=40,
              binaries=("broker-node", "broker-store"))
