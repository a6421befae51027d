#!/usr/bin/env python3
"""System test: a peer that never reads is cut off; the other peers keep receiving.

Usage: slow_peer.py <path to broker-node>
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

# Enough bytes to fill the kernel's socket buffers towards the stalled peer (its receive
# buffer is made small; the node's send buffer grows to a few MiB) many times over, so that
# the node's own queue for it must overflow.
MESSAGES = 400
VALUE_SIZE = 64 * 1024
STALLED_RCVBUF = 64 * 1024
PEER_BUFFER_SIZE = 16
# The publisher keeps at most this many messages ahead of what B printed. B prints every
# message (64 KiB lines), so it is slower than the wire; without this window the node would
# rightly cut B off too (same queue bound, same policy). The stalled peer has no such excuse.
WINDOW = PEER_BUFFER_SIZE // 2
RECEIVE_TIMEOUT = 60.0


def test_stalled_peer(binary):
    """a peer that stops reading is disconnected by its overflow policy; B gets everything"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v",
                                      "--broker.peer-buffer-size=%d" % PEER_BUFFER_SIZE], "A"))
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peer_added")
        # The stalled peer subscribes to /t during the handshake and never reads again.
        stalled = cleanup.add(bp.RawPeer.dial("127.0.0.1", a.port, bp.random_id(),
                                                      ["/t"], rcvbuf=STALLED_RCVBUF))
        stalled_id = bp.id_text(stalled.own_id)
        a.wait_for(is_status("peer_added", stalled_id), what="the stalled peer's peer_added")
        publisher = cleanup.add(bp.RawPeer.dial("127.0.0.1", a.port, bp.random_id(), []))
        a.wait_for(is_status("peer_added", bp.id_text(publisher.own_id)), what="the publisher")

        filler = "x" * VALUE_SIZE
        for first in range(0, MESSAGES, WINDOW):
            if first >= WINDOW:
                b.wait_count(is_received, first - WINDOW, RECEIVE_TIMEOUT, what="B's progress")
            publisher.conn.send(b"".join(
                publisher.data_frame("/t/f", bp.encode_string("%d %s" % (i, filler)))
                for i in range(first, min(first + WINDOW, MESSAGES))))
        removed = a.wait_for(is_status("peer_removed", stalled_id), RECEIVE_TIMEOUT,
                             what="peer_removed of the stalled peer")
        check("overflow" in removed, "the removal names the overflow: %s" % removed)
        a.wait_for(lambda l: l.startswith("error backpressure_overflow "),
                   what="the backpressure_overflow error")
        b.wait_count(is_received, MESSAGES, RECEIVE_TIMEOUT, what="every message")
        got = [int(value.split(" ", 1)[0]) for _, value in b.received()]
        check(got == list(range(MESSAGES)), "B received the messages once and in order")
        # The node closed the stalled connection: reading what it holds ends in EOF.
        stalled.conn.expect_close(RECEIVE_TIMEOUT)
        check(not b.matching(is_status("peer_lost")) and not b.matching(is_status("peer_removed")),
              "the A-B peering was not affected")


if __name__ == "__main__":
    run_tests([test_stalled_peer], limit=90)
