#!/usr/bin/env python3
"""System test: a node that dies and comes back on the same port is re-dialed.

Usage: restart.py <path to broker-node>
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.peer import RawPeer, encode_count, id_text, random_id  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.net import free_port  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

BATCH = 50
SETTLE_SECONDS = 0.5


def peer_id(line):
    return line.split()[2]


def start_on(binary, cleanup, port, name):
    """A node on `port` (which the killed node may hold for a moment; Node retries)."""
    return cleanup.add(Node(binary, ["-t", "/t", "-v"], name, port=port))


def publish_batch(cleanup, node, first):
    peer = cleanup.add(RawPeer.dial("127.0.0.1", node.port, random_id(), []))
    node.wait_for(is_status("peer_added", id_text(peer.own_id)), what="the publisher")
    peer.publish_many("/t/r", [encode_count(i) for i in range(first, first + BATCH)])
    return peer


def test_restart(binary):
    """B re-dials A after A is killed and restarted on its port; traffic resumes, no dups"""
    with Cleanup() as cleanup:
        port = free_port()
        # B starts first: its first dials fail and are retried until A is there.
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(port),
                                      "--peer-retry", "1"], "B"))
        a1 = start_on(binary, cleanup, port, "A1")
        first_id = peer_id(b.wait_for(is_status("peer_added"), what="B's first peer_added"))
        publish_batch(cleanup, a1, 0)
        b.wait_count(is_received, BATCH, what="the first batch")

        a1.kill()  # SIGKILL: no BYE, B notices the TCP loss.
        b.wait_for(is_status("peer_lost", first_id), what="peer_lost of the killed A")
        a2 = start_on(binary, cleanup, port, "A2")
        second = b.wait_for(lambda l: is_status("peer_added")(l) and peer_id(l) != first_id,
                            what="peer_added of the restarted A")
        check(peer_id(second) != first_id, "the restarted node has a new id")
        publish_batch(cleanup, a2, BATCH)
        b.wait_count(is_received, 2 * BATCH, what="both batches")
        time.sleep(SETTLE_SECONDS)
        got = b.received()
        want = [("/t/r", str(i)) for i in range(2 * BATCH)]
        check(got == want, "B received %d lines, want 0..%d once each in order: %s"
              % (len(got), 2 * BATCH - 1, [v for _, v in got]))
        added = b.matching(is_status("peer_added"))
        check(len(added) == 2, "B reports exactly two peer_added: %s" % added)


if __name__ == "__main__":
    run_tests([test_restart], limit=90)
