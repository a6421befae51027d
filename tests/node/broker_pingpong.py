#!/usr/bin/env python3
"""System test: ping and pong in Zeek Broker's broker-node convention, both ways.

A raw peer (tests/lib/brokertest/peer.py) plays Broker's broker-node: as the pinger it
publishes ("ping", id, payload) on its topic and waits for ("pong", id) on the same topic;
as the ponger it answers each ping on the ping's topic. The values are compared byte by
byte with vectors written from doc/protocol/binary.md (vector 0x0e, string 0x05, count 0x02), so
our node must produce exactly what Broker's program sends and accepts.

Usage: broker_pingpong.py <path to broker-node>
"""

import json
import os
import struct
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

import brokertest.peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_status  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

H = bytes.fromhex
TOPIC = "/pp"
COUNT = 20
PAYLOAD = b"x" * 10

# ("ping", 0, "") and ("pong", 0): the rendezvous messages of Broker's broker-node.
PING_0 = H("0e03" "050470696e67" "020000000000000000" "0500")
PONG_0 = H("0e02" "0504706f6e67" "020000000000000000")


def ping_value(i, payload):
    """("ping", i, payload): vector of 3, "ping", count i (8 bytes big endian), string."""
    return (H("0e03" "050470696e67") + b"\x02" + struct.pack(">Q", i) + b"\x05"
            + bp.encode_varbyte(len(payload)) + payload)


def pong_value(i):
    """("pong", i): vector of 2, "pong", count i."""
    return H("0e02" "0504706f6e67") + b"\x02" + struct.pack(">Q", i)


def next_data(peer):
    """The next data frame from the node, skipping routing updates and keep-alives."""
    while True:
        msg = peer.next_message()
        if msg["type"] == bp.DATA:
            return msg


def check_frame(msg, node_id, value, what):
    check(msg["sender"] == node_id and msg["receiver"] == bp.NIL_ID,
          "%s: sender/receiver %s" % (what, msg))
    check(msg["topic"] == TOPIC.encode(), "%s on topic %s, got %s" % (what, TOPIC, msg["topic"]))
    check(msg["payload"] == value, "%s:\n  got  %s\n  want %s"
          % (what, msg["payload"].hex(), value.hex()))


def test_vectors():
    """the hand-written vectors are the helper's encodings (and so doc/protocol/binary.md's)"""
    check(PING_0 == bp.encode_vector([bp.encode_string("ping"), bp.encode_count(0),
                                      bp.encode_string("")]), "PING_0")
    check(PONG_0 == bp.encode_vector([bp.encode_string("pong"), bp.encode_count(0)]), "PONG_0")
    check(ping_value(7, b"xxx") == H("0e03050470696e670200000000000000070503787878"),
          "ping 7")


def test_broker_pinger(binary):
    """Broker's pinger gets ("pong", id) on its topic from our pong node, 20 of 20"""
    test_vectors()
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-m", "pong", "-t", TOPIC, "-v"], "pong"))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                                                   [TOPIC]))
        node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
        peer.publish(TOPIC, PING_0)
        check_frame(next_data(peer), peer.remote_id, PONG_0, "pong 0")
        for i in range(1, COUNT + 1):
            peer.publish(TOPIC, ping_value(i, PAYLOAD))
            check_frame(next_data(peer), peer.remote_id, pong_value(i), "pong %d" % i)
        # Broker's ponger ends on "stop" too.
        peer.publish(TOPIC, bp.encode_string("stop"))
        check(node.wait_exit() == 0, "the ponger exits 0 on stop\n" + node.describe())


def test_pongs_are_written_through(binary):
    """pongs are written through: the pong node's application thread writes them itself

    An idle peering in an exchange is written by the thread that routes the answer.
    """
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-m", "pong", "-t", TOPIC, "-v"], "pong",
                                metrics=True))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                                                   [TOPIC]))
        node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
        peer.publish(TOPIC, PING_0)
        check_frame(next_data(peer), peer.remote_id, PONG_0, "pong 0")
        for i in range(1, COUNT + 1):
            peer.publish(TOPIC, ping_value(i, PAYLOAD))
            check_frame(next_data(peer), peer.remote_id, pong_value(i), "pong %d" % i)
        url = "http://127.0.0.1:%d/v1/status" % node.metrics_port
        with urllib.request.urlopen(url, timeout=10) as res:
            status = json.load(res)
        items = status["peers"]["items"]
        check(len(items) == 1, "one peer in /v1/status: %s" % items)
        through = items[0].get("writes_through")
        # Each pong answers a ping that arrived after our last write: all of them may go
        # through; a few may meet a busy strand (e.g. a routing update) and be posted.
        check(through is not None and through >= COUNT // 2,
              "at least %d of %d pongs written through, got %s" % (COUNT // 2, COUNT + 1,
                                                                  through))


def test_silent_link_is_no_broker_node(binary):
    """a peer that is silent past the probe window and then answers as our node speaks origin-v1

    A link that carries nothing (a paused peer) says nothing about the peer: the node must
    keep waiting for the probe's answer instead of concluding "Broker" after 2 s, or a
    peering of two of our nodes would lose loop-free relaying for good (node.chaos found
    duplicates from exactly that).
    """
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-m", "pong", "-t", TOPIC, "-v"], "pong"))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                                                   [TOPIC]))
        node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
        time.sleep(5.0)  # Two and a half probe windows without a byte from us.
        while True:  # The node's probe, read without the helper's automatic echo.
            msg = bp.decode_node_message(peer.conn.recv_frame()[4:])
            if msg["type"] == bp.PING and msg["payload"] == b"BRKEXT?origin-v1":
                break
        peer.conn.send(bp.node_message(peer.own_id, peer.remote_id, bp.PONG, bp.CONTROL_TOPIC,
                                       b"BRKEXT!origin-v1"))
        peer.publish(TOPIC, PING_0)
        while True:
            msg = peer.next_message()
            if msg["type"] in (bp.DATA, bp.DATA_EXT):
                break
        check(msg["type"] == bp.DATA_EXT,
              "the pong comes as an origin-v1 frame (type 0x81), got type %s" % msg["type"])


def test_broker_ponger(binary):
    """our pinger rendezvouses with Broker's ponger, then times 20 of 20 round trips"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-m", "ping", "-t", TOPIC, "-n", str(COUNT), "-s",
                                         str(len(PAYLOAD)), "--rendezvous-retry", "100ms"],
                                "ping"))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                                                   [TOPIC]))
        # Leave the first rendezvous ping unanswered: the pinger must send ping 0 again.
        check_frame(next_data(peer), peer.remote_id, PING_0, "ping 0")
        check_frame(next_data(peer), peer.remote_id, PING_0, "ping 0, repeated")
        peer.publish(TOPIC, PONG_0)
        i = 1
        while i <= COUNT:
            msg = next_data(peer)
            if msg["payload"] == PING_0:
                continue  # A repeat sent before our pong 0 arrived.
            check_frame(msg, peer.remote_id, ping_value(i, PAYLOAD), "ping %d" % i)
            peer.publish(TOPIC, pong_value(i))
            i += 1
        check(node.wait_exit() == 0, "the pinger exits 0\n" + node.describe())
        rtts = node.matching(lambda l: l.startswith("rtt "))
        check([int(l.split()[1]) for l in rtts] == list(range(1, COUNT + 1)), "rtt lines %s"
              % rtts)
        summary = node.matching(lambda l: l.startswith("summary "))
        check(summary and "sent=%d received=%d lost=0" % (COUNT, COUNT) in summary[0],
              "summary %s" % summary)


def test_pongs_of_others_are_ignored(binary):
    """the pinger takes only ("pong", id) for its ping: other ids and 3-element pongs are lost"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-m", "ping", "-t", TOPIC, "-n", "1",
                                         "--rendezvous-retry", "50ms", "--ping-timeout", "2"],
                                "ping"))
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                                                   [TOPIC]))
        check_frame(next_data(peer), peer.remote_id, PING_0, "ping 0")
        peer.publish(TOPIC, PONG_0)
        while True:
            msg = next_data(peer)
            if msg["payload"] != PING_0:
                break
        check_frame(msg, peer.remote_id, ping_value(1, b""), "ping 1")
        peer.publish(TOPIC, pong_value(2))
        peer.publish(TOPIC, bp.encode_vector([bp.encode_string("pong"), bp.encode_count(1),
                                              bp.encode_string("")]))
        peer.publish(TOPIC, bp.encode_vector([bp.encode_string("pong"), bp.encode_integer(1)]))
        check(node.wait_exit() == 2, "exit 2 with the pong lost\n" + node.describe())
        check(node.matching(lambda l: l == "timeout 1"), "a timeout line\n" + node.describe())
        check(node.matching(lambda l: l.startswith("summary sent=1 received=0 lost=1")),
              "the summary counts the loss\n" + node.describe())


if __name__ == "__main__":
    run_tests([test_broker_pinger, test_pongs_are_written_through, test_silent_link_is_no_broker_node, test_broker_ponger, test_pongs_of_others_are_ignored],
              limit=90)
