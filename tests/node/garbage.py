#!/usr/bin/env python3
"""System test: garbage and broken handshakes on one connection do not disturb the others.

Usage: garbage.py <path to broker-node>
"""

import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

MESSAGES = 100
CLOSE_TIMEOUT = 5.0
JUNK_SIZE = 4096
JUNK_SEED = 20261121


def drop_conn_of(raw):
    """The decoded drop_conn among the frames in `raw` (after the node's probe)."""
    frames = []
    while len(raw) >= 4:
        (size,) = struct.unpack_from(">I", raw, 0)
        frames.append(bp.decode_handshake(raw[4:4 + size]))
        raw = raw[4 + size:]
    drops = [f for f in frames if f["type"] == bp.DROP_CONN]
    check(len(drops) == 1, "expected one drop_conn, got %s" % frames)
    return drops[0]


def send_and_expect_close(port, raw):
    """Sends `raw` on a fresh connection; the node must close it. Returns what it sent."""
    conn = bp.Connection.connect("127.0.0.1", port)
    try:
        conn.send(raw)
        return conn.expect_close(CLOSE_TIMEOUT)
    finally:
        conn.close()


def test_garbage(binary):
    """junk, bad frames and truncated handshakes fail alone; the other peerings keep relaying"""
    with Cleanup() as cleanup:
        a = cleanup.add(Node(binary, ["-t", "/t", "-v"], "A"))
        b = cleanup.add(Node(binary, ["-t", "/t", "-v", "--peers", peer_uri(a.port)], "B"))
        b.wait_for(is_status("peer_added"), what="B's peer_added")

        # A handshake that stalls half-way stays open (until the handshake timeout) meanwhile.
        stalled = cleanup.add(bp.Connection.connect("127.0.0.1", a.port))
        stalled.send(bp.hello(bp.P0)[:10])

        failures = 0
        # Text where a frame length should be: far above the handshake frame limit.
        send_and_expect_close(a.port, b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n")
        failures += 1
        junk = random.Random(JUNK_SEED).randbytes(JUNK_SIZE)
        send_and_expect_close(a.port, junk)
        failures += 1
        # An empty frame during the handshake.
        send_and_expect_close(a.port, b"\x00\x00\x00\x00")
        failures += 1
        # A phase-3 tag during the handshake: drop_conn 20.
        drop = drop_conn_of(send_and_expect_close(a.port, bytes.fromhex("00000003017878"))[9:])
        check(drop["code"] == bp.EC_INVALID_MESSAGE, "drop_conn code for a bad tag: %s" % drop)
        failures += 1
        # A hello with the wrong magic number: drop_conn 38.
        drop = drop_conn_of(send_and_expect_close(a.port, bp.hello(bp.P0, magic=0x11223344))[9:])
        check(drop["code"] == bp.EC_WRONG_MAGIC_NUMBER, "drop_conn code for bad magic: %s" % drop)
        failures += 1
        # A truncated hello, then the peer hangs up.
        conn = bp.Connection.connect("127.0.0.1", a.port)
        conn.send(bp.hello(bp.P0)[:12])
        conn.close()
        failures += 1
        a.wait_count(lambda l: l.startswith("error "), failures,
                     what="an error line per broken connection")

        # A peered connection that sends a frame length over the receive limit is closed.
        broken = cleanup.add(bp.RawPeer.dial("127.0.0.1", a.port, bp.random_id(), []))
        a.wait_for(is_status("peer_added", bp.id_text(broken.own_id)), what="the peer's peer_added")
        broken.send_raw(b"\xff\xff\xff\xff" + bytes(16))
        broken.conn.expect_close(CLOSE_TIMEOUT)
        a.wait_for(is_status("peer_lost", bp.id_text(broken.own_id)), what="its peer_lost")

        # The node still serves: a good publisher reaches B through A.
        publisher = cleanup.add(bp.RawPeer.dial("127.0.0.1", a.port, bp.random_id(), []))
        publisher.publish_many("/t/g", [bp.encode_count(i) for i in range(MESSAGES)])
        b.wait_count(is_received, MESSAGES, what="the publisher's messages at B")
        want = [("/t/g", str(i)) for i in range(MESSAGES)]
        check(b.received() == want, "B received %s" % b.received()[:5])
        check(a.alive() and b.alive(), "both nodes still run")
        added = b.matching(is_status("peer_added"))
        lost = b.matching(is_status("peer_lost"))
        check(len(added) == 1 and not lost, "the A-B peering never flapped: %s %s" % (added, lost))


if __name__ == "__main__":
    run_tests([test_garbage], limit=90)
