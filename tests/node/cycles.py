#!/usr/bin/env python3
"""System tests: cyclic topologies of broker-node processes deliver each message exactly once.

Usage: cycles.py <path to broker-node>
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.peer import RawPeer, encode_count, id_text, random_id  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

MESSAGES = 100
# A message circulating in a cycle would show up as extra lines within this time.
SETTLE_SECONDS = 1.0


def start_topology(cleanup, binary, edges, count):
    """Starts `count` nodes named A, B, ...; node j dials every i with (i, j) in `edges`
    (i < j), then waits until every node reports all its peerings."""
    names = [chr(ord("A") + i) for i in range(count)]
    nodes = []
    for j in range(count):
        peers = [peer_uri(nodes[i].port) for (i, k) in edges if k == j]
        args = ["-t", "/t", "-v"] + (["--peers", ",".join(peers)] if peers else [])
        nodes.append(cleanup.add(Node(binary, args, names[j])))
    for j, node in enumerate(nodes):
        degree = sum(1 for e in edges if j in e)
        node.wait_count(is_status("peer_added"), degree, what="%d peer_added" % degree)
    return nodes


def publish_and_count(cleanup, nodes, entry):
    """A raw peer publishes MESSAGES at nodes[entry]; every node must print each once."""
    publisher = cleanup.add(RawPeer.dial("127.0.0.1", nodes[entry].port, random_id(),
                                                 []))
    nodes[entry].wait_for(is_status("peer_added", id_text(publisher.own_id)),
                          what="the publisher's peer_added")
    publisher.publish_many("/t/c", [encode_count(i) for i in range(MESSAGES)])
    for node in nodes:
        node.wait_count(is_received, MESSAGES, what="received lines")
    time.sleep(SETTLE_SECONDS)
    want = [("/t/c", str(i)) for i in range(MESSAGES)]
    for node in nodes:
        got = node.received()
        check(len(got) == MESSAGES,
              "%s printed %d received lines for %d messages (a copy looped or arrived twice)"
              % (node.name, len(got), MESSAGES))
        check(sorted(got, key=lambda x: int(x[1])) == want,
              "%s received other values than 0..%d" % (node.name, MESSAGES - 1))
        # Each path keeps order, and the first copy of each message wins: still in order.
        check(got == want, "%s received the messages out of order" % node.name)


def test_triangle(binary):
    """a triangle A-B-C: each node prints each message exactly once, and nothing loops"""
    with Cleanup() as cleanup:
        nodes = start_topology(cleanup, binary, [(0, 1), (0, 2), (1, 2)], 3)
        publish_and_count(cleanup, nodes, 0)


def test_ring_of_four(binary):
    """a ring A-B-C-D-A: each node prints each message exactly once, and nothing loops"""
    with Cleanup() as cleanup:
        nodes = start_topology(cleanup, binary, [(0, 1), (1, 2), (2, 3), (0, 3)], 4)
        publish_and_count(cleanup, nodes, 1)


if __name__ == "__main__":
    run_tests([test_triangle, test_ring_of_four], limit=90)
