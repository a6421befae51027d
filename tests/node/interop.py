#!/usr/bin/env python3
"""System test: the handshake transcripts of doc/protocol/peering.md §12 against a live node.

The node's id is random, so frames that carry it are compared with the id substituted once
it is known (from the first frame that carries it); every other byte is compared exactly.
Our node's filter holds exactly its topics, as Broker's would: our nodes negotiate their
origin-v1 extension after the handshake with a ping a Broker node simply echoes
(libbroker/broker/internal/peering/wire.hh), and the test checks that ping too.

Usage: interop.py <path to broker-node>
"""

import os
import socket
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

H = bytes.fromhex
PROBE = H("00000005075a45454b")
HELLO_P0_1_99 = H("00000017065a45454b000000000000400080000000000000000163")
HELLO_PF_1_99 = H("00000017065a45454bffffffffffff4fffbfffffffffffffff0163")
HELLO_PF_1_1 = H("00000017065a45454bffffffffffff4fffbfffffffffffffff0101")
HELLO_PF_200_201 = H("00000017065a45454bffffffffffff4fffbfffffffffffffffc8c9")
VERSION_SELECT_P0 = H("00000016085a45454b0000000000004000800000000000000001")
ORIGINATOR_SYN_FOO_BAR = H("0000000b0a01082f666f6f2f626172")
RESPONDER_SYN_ACK_FOO_BAR = H("0000000b0b01082f666f6f2f626172")
RESPONDER_SYN_ACK_TEST = H("000000080b01052f74657374")
ORIGINATOR_ACK = H("000000010c")
FOO = b"foo"
NODE_TOPIC = "/test"
NODE_FILTER = [NODE_TOPIC.encode()]
UUID_VERSION = 4
RFC4122_VARIANT = 0b10


def check_bytes(got, want, what):
    check(got == want, "%s:\n  got  %s\n  want %s" % (what, got.hex(), want.hex()))


def check_node_id(raw_id):
    """Our nodes use random version-4 UUIDs with the RFC 4122 variant (peering.md §8)."""
    u = uuid.UUID(bytes=raw_id)
    check(u.version == UUID_VERSION and (raw_id[8] >> 6) == RFC4122_VARIANT,
          "node id %s is not a random v4 UUID" % u)
    check(raw_id not in (bp.NIL_ID, bp.P0, bp.PF), "node id %s is one of the test ids" % u)


def node_hello(node_id):
    return bp.hello(node_id)


def filter_frame(tag, topics):
    return bp.frame(bytes([tag]) + bp.encode_filter(topics))


def drop_conn_frame(node_id, code, text):
    return bp.drop_conn(node_id, code, text)


def expect_ext_probe(conn, own, node_id):
    """The node's first phase-3 frame: its origin-v1 probe, a ping with ttl 16; answered
    here with the echo a Broker node sends, after which the node treats us as Broker."""
    probe = bp.node_message(node_id, own, bp.PING, bp.CONTROL_TOPIC, bp.EXT_PROBE)
    check_bytes(conn.recv_frame(), probe, "the node's origin-v1 probe ping")
    conn.send(bp.node_message(own, node_id, bp.PONG, bp.CONTROL_TOPIC, bp.EXT_PROBE))


def ping_pong(conn, own, node_id, ttl_in=1):
    """T1/T2 tail: a ping with ttl 1 gets a pong with ttl 16 and the same payload."""
    expect_ext_probe(conn, own, node_id)
    ping = bp.node_message(own, node_id, bp.PING, bp.CONTROL_TOPIC, FOO, ttl=ttl_in)
    check_bytes(ping[:4], H("0000002b"), "ping length")
    conn.send(ping)
    want = H("0000002b") + node_id + own + H("05 0010 0003 3c243e 666f6f")
    check_bytes(conn.recv_frame(), want, "pong")


def ping_first(conn, own, node_id):
    """A Broker peer's view (Broker's handshake btests): it pings right after the handshake
    and expects the pong as the node's very next frame; the node's origin-v1 probe may only
    follow it."""
    conn.send(bp.node_message(own, node_id, bp.PING, bp.CONTROL_TOPIC, FOO))
    want = H("0000002b") + node_id + own + H("05 0010 0003 3c243e 666f6f")
    check_bytes(conn.recv_frame(), want, "the node's first phase-3 frame: the pong")
    expect_ext_probe(conn, own, node_id)


def start_node(cleanup, binary):
    return cleanup.add(Node(binary, ["-t", NODE_TOPIC, "-v"], "B"))


def connect(cleanup, node):
    conn = cleanup.add(bp.Connection.connect("127.0.0.1", node.port))
    check_bytes(conn.recv_frame(), PROBE, "the acceptor's probe")
    return conn


def recv_node_frame(conn):
    """The node's next handshake frame and the node id it carries (bytes 9 to 24)."""
    frame = conn.recv_frame()
    node_id = frame[9:25]
    check_node_id(node_id)
    return frame, node_id


def send_hello(conn, own, spec_frame):
    """Sends the btests' hello(own, 1, 99) (checking our encoding against it); returns the
    node's answer and its id."""
    check_bytes(bp.hello(own, 1, 99), spec_frame, "our hello(%s, 1, 99) encoding"
                % bp.id_text(own))
    conn.send(spec_frame)
    return recv_node_frame(conn)


def originator_towards_pf(conn, where=""):
    """Sends hello(PF, 1, 99); the node, whose id is smaller, must answer as the
    originator: version_select, then originator_syn. Returns the node's id."""
    select, node_id = send_hello(conn, bp.PF, HELLO_PF_1_99)
    check_bytes(select, bp.version_select(node_id), "the node's version_select(B, 1)" + where)
    check_bytes(conn.recv_frame(), filter_frame(bp.ORIGINATOR_SYN, NODE_FILTER),
                "originator_syn([/test])" + where)
    return node_id


def test_t1(binary):
    """T1: the node accepts and is responder to P0 (smaller id): probe, hello, syn_ack, pong"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        conn = connect(cleanup, node)
        hello, node_id = send_hello(conn, bp.P0, HELLO_P0_1_99)
        check_bytes(hello, node_hello(node_id), "the node's hello(B, 1, 1)")
        check_bytes(bp.version_select(bp.P0), VERSION_SELECT_P0, "version_select encoding")
        check_bytes(bp.originator_syn(["/foo/bar"]), ORIGINATOR_SYN_FOO_BAR, "syn encoding")
        conn.send(VERSION_SELECT_P0 + ORIGINATOR_SYN_FOO_BAR)
        syn_ack = conn.recv_frame()
        check_bytes(syn_ack, filter_frame(bp.RESPONDER_SYN_ACK, NODE_FILTER),
                    "responder_syn_ack([/test]) (sorted, no duplicates)")
        conn.send(ORIGINATOR_ACK)
        node.wait_for(is_status("peer_added", bp.id_text(bp.P0)), what="peer_added of P0")
        ping_pong(conn, bp.P0, node_id)


def test_t2(binary):
    """T2: the node accepts and is originator towards PF (larger id): version_select, syn"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        conn = connect(cleanup, node)
        node_id = originator_towards_pf(conn)
        check_bytes(bp.responder_syn_ack(["/foo/bar"]), RESPONDER_SYN_ACK_FOO_BAR, "encoding")
        conn.send(RESPONDER_SYN_ACK_FOO_BAR)
        check_bytes(conn.recv_frame(), ORIGINATOR_ACK, "originator_ack")
        node.wait_for(is_status("peer_added", bp.id_text(bp.PF)), what="peer_added of PF")
        ping_pong(conn, bp.PF, node_id)


def test_t1_ping_first(binary):
    """T1 as Broker's responder btest runs it: P0 pings at once after originator_ack"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        conn = connect(cleanup, node)
        hello, node_id = send_hello(conn, bp.P0, HELLO_P0_1_99)
        conn.send(VERSION_SELECT_P0 + ORIGINATOR_SYN_FOO_BAR)
        check_bytes(conn.recv_frame(), filter_frame(bp.RESPONDER_SYN_ACK, NODE_FILTER),
                    "responder_syn_ack([/test])")
        conn.send(ORIGINATOR_ACK)  # The ping follows in the next write, as from Broker.
        ping_first(conn, bp.P0, node_id)


def test_t2_ping_first(binary):
    """T2 as Broker's originator btest runs it: PF pings as soon as originator_ack arrives"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        conn = connect(cleanup, node)
        node_id = originator_towards_pf(conn)
        conn.send(RESPONDER_SYN_ACK_FOO_BAR)
        check_bytes(conn.recv_frame(), ORIGINATOR_ACK, "originator_ack")
        ping_first(conn, bp.PF, node_id)


def expect_drop_then_close(conn, code, text):
    frame, node_id = recv_node_frame(conn)
    check_bytes(frame, drop_conn_frame(node_id, code, text), "drop_conn(B, %d, %s)" % (code, text))
    rest = conn.expect_close()
    check(rest == b"", "nothing after drop_conn, got %s" % rest.hex())
    return node_id


def test_t3(binary):
    """T3: hello(200, 201) gets drop_conn(2, unsupported versions offered), then close"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        check_bytes(bp.hello(bp.PF, 200, 201), HELLO_PF_200_201, "our hello(PF, 200, 201)")
        conn = connect(cleanup, node)
        conn.send(HELLO_PF_200_201)
        expect_drop_then_close(conn, bp.EC_PEER_INCOMPATIBLE, "unsupported versions offered")
        # The other refusals of T3 (peering.md §12): bad magic, and a phase-3 tag during the
        # handshake.
        conn = connect(cleanup, node)
        conn.send(bp.hello(bp.PF, magic=0x11223344))
        expect_drop_then_close(conn, bp.EC_WRONG_MAGIC_NUMBER, "wrong magic number")
        conn = connect(cleanup, node)
        conn.send(H("00000003017878"))
        expect_drop_then_close(conn, bp.EC_INVALID_MESSAGE, "invalid message type tag")
        check(not node.matching(is_status("peer_added")), "no peering came up")


def test_t4(binary):
    """T4: a second handshake from the same id gets drop_conn(39) once the first completes"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        first = connect(cleanup, node)
        node_id = originator_towards_pf(first, " on connection 1")
        second = connect(cleanup, node)
        second.send(HELLO_PF_1_99)
        first.send(RESPONDER_SYN_ACK_FOO_BAR)
        check_bytes(first.recv_frame(), ORIGINATOR_ACK, "originator_ack on connection 1")
        check_bytes(second.recv_frame(),
                    drop_conn_frame(node_id, bp.EC_REDUNDANT_CONNECTION, "redundant connection"),
                    "drop_conn(B, 39, redundant connection) on connection 2")
        check(second.expect_close() == b"", "connection 2 closes after its drop_conn")
        ping_pong(first, bp.PF, node_id)
        node.wait_for(is_status("peer_added", bp.id_text(bp.PF)), what="peer_added of PF")
        added = node.matching(is_status("peer_added", bp.id_text(bp.PF)))
        check(len(added) == 1, "exactly one peer_added for PF: %s" % added)


def test_t5(binary):
    """T5: the node dials: hello at once, originator towards PF; "stop" ends it after BYE"""
    with Cleanup() as cleanup:
        listener = cleanup.add(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(bp.DEFAULT_TIMEOUT)
        port = listener.getsockname()[1]
        node = cleanup.add(Node(binary, ["-t", "/test2", "-v", "--exit-on-stop", "--no-listen",
                                         "--peers", peer_uri(port), "--peer-retry", "0"],
                                "B2", listen=False))
        sock, _ = listener.accept()
        conn = cleanup.add(bp.Connection(sock))
        hello, node_id = recv_node_frame(conn)  # Sent without waiting for our probe.
        check_bytes(hello, node_hello(node_id), "the dialer's hello(B2, 1, 1)")
        conn.send(PROBE + HELLO_PF_1_1)
        check_bytes(conn.recv_frame(), bp.version_select(node_id), "version_select(B2, 1)")
        check_bytes(conn.recv_frame(),
                    filter_frame(bp.ORIGINATOR_SYN, [b"/test2"]),
                    "originator_syn([/test2])")
        conn.send(RESPONDER_SYN_ACK_TEST)
        check_bytes(conn.recv_frame(), ORIGINATOR_ACK, "originator_ack")
        expect_ext_probe(conn, bp.PF, node_id)
        stop = bp.node_message(bp.PF, bp.NIL_ID, bp.DATA, "/test2", bp.encode_string("stop"))
        check_bytes(stop, H("00000031 ffffffffffff4fffbfffffffffffffff"
                            "00000000000000000000000000000000 01 0010 0006 2f7465737432"
                            "050473746f70".replace(" ", "")), "the spec's stop frame")
        conn.send(stop)
        # The node may first withdraw its subscription (a routing update) as its
        # subscriber closes; the BYE ping follows.
        bye = bp.decode_node_message(conn.recv_frame()[4:])
        while bye["type"] == bp.ROUTING_UPDATE:
            bye = bp.decode_node_message(conn.recv_frame()[4:])
        check(bye["type"] == bp.PING and bye["sender"] == node_id and bye["receiver"] == bp.PF
              and bye["topic"] == bp.CONTROL_TOPIC and bye["ttl"] == bp.DEFAULT_TTL
              and len(bye["payload"]) == 11 and bye["payload"][:3] == b"BYE",
              "a BYE ping while unpeering: %s" % bye)
        conn.send(bp.node_message(bp.PF, node_id, bp.PONG, bp.CONTROL_TOPIC, bye["payload"]))
        check(conn.expect_close() == b"", "the node closes after the BYE pong")
        check(node.wait_exit() == 0, "exit code 0 after stop\n" + node.describe())
        node.wait_for(lambda l: l == "received /test2 stop", what="the stop line")


def test_t6(binary):
    """T6: malformed phase-3 frames are dropped; the connection stays and pings still work"""
    with Cleanup() as cleanup:
        node = start_node(cleanup, binary)
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.P0, ["/test"]))
        node_id = peer.remote_id
        bad_frames = [
            H("0000000a 00000000000000000000".replace(" ", "")),  # shorter than a header
            bp.node_message(bp.P0, node_id, 9, bp.CONTROL_TOPIC, b""),  # type 9
            bp.node_message(bp.P0, bp.NIL_ID, bp.DATA, "/test", H("0001")),  # trailing byte
            H("00000000"),  # empty frame
            bp.node_message(bp.P0, bp.NIL_ID, bp.DATA, "/test", b""),  # no value at all
            # Routing update whose count promises more entries than it holds.
            bp.node_message(bp.P0, node_id, bp.ROUTING_UPDATE, bp.CONTROL_TOPIC,
                            H("0205") + b"/test"),
            # A topic length running past the end of the frame.
            bp.frame(bp.P0 + node_id + H("01 0010 00ff".replace(" ", "")) + b"/t"),
        ]
        for i, raw in enumerate(bad_frames):
            peer.send_raw(raw)
            payload = b"after-bad-frame-%d" % i
            pong = bp.decode_node_message(peer.ping(payload)[4:])
            check(pong["payload"] == payload, "pong after bad frame %d" % i)
        # The node answers a BYE-style ping like any other (peering.md §5.5).
        bye = H("425945 0700000000000000".replace(" ", ""))
        check(bp.decode_node_message(peer.ping(bye)[4:])["payload"] == bye, "BYE pong")
        check(not node.matching(is_status("peer_lost")), "the peering stayed up")
        # Data from another peer reaches P0 rewritten as sent by the node (peering.md §5.1).
        other = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), []))
        node.wait_for(is_status("peer_added", bp.id_text(other.own_id)), what="peer_added")
        other.publish("/test/x", bp.encode_count(1))
        while True:
            msg = peer.next_message()
            if msg["type"] == bp.DATA:
                break
        # The node forwards with the hop count spent (one less than it received, peering.md
        # §6); Broker ignores the field (§5.1), so either value interoperates.
        check(msg["ttl"] in (bp.DEFAULT_TTL - 1, bp.DEFAULT_TTL), "ttl of a relayed frame: %d"
              % msg["ttl"])
        want = (H("00000035") + node_id + bp.NIL_ID + bytes([bp.DATA])
                + msg["ttl"].to_bytes(2, "big") + H("0007") + b"/test/x" + bp.encode_count(1))
        check_bytes(msg["raw"], want, "data relayed to a Broker peer")


if __name__ == "__main__":
    run_tests([test_t1, test_t2, test_t1_ping_first, test_t2_ping_first, test_t3, test_t4,
               test_t5, test_t6], limit=90)
