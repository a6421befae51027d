#!/usr/bin/env python3
"""System tests: relaying through broker-node processes in a pair and in a line of three.

Usage: relay.py <path to broker-node>
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.peer import (ConnectionClosed, RawPeer, encode_count, encode_string,  # noqa: E402
                         id_text, random_id)
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import free_port  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

MESSAGES = 200
# Long enough for a stray copy or loop to show up as an extra line.
SETTLE_SECONDS = 0.5
ANNOUNCE_TIMEOUT = 10.0
ANNOUNCE_POLL = 0.1
MUTUAL_SETTLE_SECONDS = 2.5


def dial_publisher(cleanup, node, topics=()):
    """A raw peer on `node`, once the node reports it as peer_added."""
    peer = cleanup.add(RawPeer.dial("127.0.0.1", node.port, random_id(), list(topics)))
    node.wait_for(is_status("peer_added", id_text(peer.own_id)), what="the raw peer's peer_added")
    return peer


def expect_exactly(node, topic, values):
    node.wait_count(is_received, len(values), what="received lines")
    time.sleep(SETTLE_SECONDS)
    got = node.received()
    want = [(topic, v) for v in values]
    check(got == want, "%s received %d lines, want %d in order; first difference at %s"
          % (node.name, len(got), len(want),
             next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got),
                                                                             len(want)))))


def test_two_nodes(binary):
    """two nodes: data a raw peer publishes at A reaches B once and in order; stop ends both"""
    with Cleanup() as cleanup:
        # Only --exit-on-stop makes "stop" end a node (tests/node/remote_stop.py).
        a = cleanup.add(Node(binary, ["-t", "/t", "-v", "--exit-on-stop"], "A"))
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--exit-on-stop", "--peers",
                                      peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peer_added")
        publisher = dial_publisher(cleanup, a)
        publisher.publish_many("/t/x", [encode_count(i) for i in range(MESSAGES)])
        values = [str(i) for i in range(MESSAGES)]
        expect_exactly(a, "/t/x", values)
        expect_exactly(b, "/t/x", values)
        # "stop" ends A's relay loop; A forwarded it to B first, so B stops too.
        publisher.publish("/t", encode_string("stop"))
        # Answer A's BYE ping (next_message does) until A closes the connection.
        try:
            while True:
                publisher.next_message()
        except ConnectionClosed:
            pass
        check(a.wait_exit() == 0, "A's exit code after stop\n" + a.describe())
        check(b.wait_exit() == 0, "B's exit code after stop\n" + b.describe())


def test_line_of_three(binary):
    """a line A-B-C: what enters at one end arrives at the other, once and in order"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v"], "A"))
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        c = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(b.port)], "C"))
        b.wait_count(is_status("peer_added"), 2, what="B's two peer_added")
        at_a = dial_publisher(cleanup, a)
        at_c = dial_publisher(cleanup, c)
        at_a.publish_many("/t/ac", [encode_count(i) for i in range(MESSAGES)])
        values = [str(i) for i in range(MESSAGES)]
        expect_exactly(c, "/t/ac", values)
        expect_exactly(b, "/t/ac", values)
        expect_exactly(a, "/t/ac", values)
        # And back: C's entry reaches A; compare only the new lines.
        at_c.publish_many("/t/ca", [encode_count(i) for i in range(MESSAGES)])
        for node in (a, b, c):
            node.wait_count(is_received, 2 * MESSAGES, what="received lines")
        time.sleep(SETTLE_SECONDS)
        for node in (a, b, c):
            got = node.received()[MESSAGES:]
            check(got == [("/t/ca", v) for v in values],
                  "%s: the C-to-A messages arrived as %s..." % (node.name, got[:5]))


def test_relay_without_topics(binary):
    """a middle node without topics still relays what its peers subscribe to"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/a", "-v"], "A"))
        b = cleanup.add(Node(binary, ["-v", "--peers", peer_uri(a.port)], "B"))
        c = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(b.port)], "C"))
        b.wait_count(is_status("peer_added"), 2, what="B's two peer_added")
        publisher = dial_publisher(cleanup, a)
        # A knows C's /t only through B's announcement; A's filter towards a new peer shows it.
        deadline = time.monotonic() + ANNOUNCE_TIMEOUT
        while True:
            probe = RawPeer.dial("127.0.0.1", a.port, random_id(), [])
            probe.close()
            if b"/t" in probe.remote_filter:
                break
            check(time.monotonic() < deadline, "A never learned /t: %s" % probe.remote_filter)
            time.sleep(ANNOUNCE_POLL)
        publisher.publish_many("/t/m", [encode_count(i) for i in range(MESSAGES)])
        expect_exactly(c, "/t/m", [str(i) for i in range(MESSAGES)])
        check(not b.received() and not a.received(), "A and B subscribed to other topics")


def test_mutual_dial(binary):
    """two nodes that dial each other keep one peering and deliver each message once"""
    with Cleanup() as cleanup:
        port_a, port_b = free_port(), free_port()
        a = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(port_b)], "A",
                             port=port_a))
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(port_a)], "B",
                             port=port_b))
        for node in (a, b):
            node.wait_for(is_status("peer_added"), what="peer_added")
        time.sleep(MUTUAL_SETTLE_SECONDS)  # Several re-dial periods.
        publisher = dial_publisher(cleanup, a)
        publisher.publish_many("/t/m", [encode_count(i) for i in range(MESSAGES)])
        expect_exactly(b, "/t/m", [str(i) for i in range(MESSAGES)])
        for node in (a, b):
            statuses = node.matching(lambda l: l.startswith("status ") and "peer_" in l
                                     and id_text(publisher.own_id) not in l)
            check(len(statuses) == 1 and is_status("peer_added")(statuses[0]),
                  "%s has one stable peering: %s" % (node.name, statuses))


if __name__ == "__main__":
    run_tests([test_two_nodes, test_line_of_three, test_relay_without_topics,
               test_mutual_dial], limit=90)
