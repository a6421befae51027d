#!/usr/bin/env python3
"""System tests: a node at its defaults speaks Broker's default transport.

Without broker.disable-ssl and without certificates, Zeek Broker peers over TLS 1.2 with
anonymous ECDH (AECDH-AES256-SHA, P-384), so an unmodified Zeek node and ours connect only
if ours does the same (doc/peering.md, "TLS"). A simulated Broker peer here speaks exactly
that, as dialer and as listener; two default nodes relay to each other; plain TCP against a
default node fails cleanly; and the node says loudly that nobody is authenticated.

Usage: tls_default.py <path to broker-node>
"""

import os
import socket
import ssl
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node, is_received, is_status, peer_uri  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402

WARNING = "NOBODY IS AUTHENTICATED"


def default_node(cleanup, binary, args=(), name="node", **options):
    """A node without broker.disable-ssl and without certificates."""
    return cleanup.add(Node(binary, ["-t", "/t", "-v"] + list(args), name, plain=False,
                            **options))


def test_broker_peer_dials_a_default_node(binary):
    """a Broker peer speaking anonymous TLS dials a default node, both ways data flows"""
    with Cleanup() as cleanup:
        node = default_node(cleanup, binary)
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), ["/t"],
                                           tls=bp.anonymous_tls()))
        check(isinstance(peer.conn.sock, ssl.SSLSocket)
              and peer.conn.sock.cipher()[0] == "AECDH-AES256-SHA",
              "the peering runs over anonymous ECDH: %s" % (peer.conn.sock.cipher(),))
        node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
        peer.publish("/t/x", bp.encode_count(7))
        node.wait_for(lambda l: l == "received /t/x 7", what="the published value")
        node.wait_for(lambda l: WARNING in l, what="the warning about anonymous TLS",
                      stderr=True)


def test_default_node_dials_a_broker_listener(binary):
    """a default node dials a Broker peer that listens with anonymous TLS"""
    with Cleanup() as cleanup:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)
        port = listener.getsockname()[1]
        result = {}

        def accept():
            # The acceptor's side of doc/protocol/peering.md §3.3 with the largest id, so the
            # node originates: probe and hello; version_select and originator_syn;
            # responder_syn_ack; originator_ack. Then the node's origin-v1 probe ping, echoed as Broker does.
            try:
                sock, _ = listener.accept()
                sock = bp.anonymous_tls(server=True).wrap_socket(sock, server_side=True)
                conn = bp.Connection(sock)
                conn.send(bp.probe() + bp.hello(bp.PF))
                for _ in range(3):  # hello, version_select, originator_syn
                    kind = bp.decode_handshake(conn.recv_frame()[4:])["name"]
                    if kind == "originator_syn":
                        break
                conn.send(bp.responder_syn_ack(["/t"]))
                ack = bp.decode_handshake(conn.recv_frame()[4:])["name"]
                ping = bp.decode_node_message(conn.recv_frame()[4:])
                conn.send(bp.node_message(bp.PF, ping["sender"], bp.PONG, bp.CONTROL_TOPIC,
                                          ping["payload"]))
                result["conn"], result["ack"], result["node"] = conn, ack, ping["sender"]
            except Exception as exc:  # reported below
                result["error"] = exc

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        node = default_node(cleanup, binary, ["--peers", peer_uri(port)], listen=False)
        t.join(30)
        listener.close()
        check("conn" in result, "the Broker-side handshake over TLS: %r" % result.get("error"))
        check_eq(result["ack"], "originator_ack", "the node's last handshake message")
        conn = result["conn"]
        try:
            node.wait_for(is_status("peer_added"), what="the node's peer_added")
            conn.send(bp.node_message(bp.PF, bp.NIL_ID, bp.DATA, "/t/y",
                                      bp.encode_string("over tls")))
            node.wait_for(lambda l: l == "received /t/y over tls", what="the value")
        finally:
            conn.close()


def test_two_default_nodes_relay(binary):
    """two nodes at their defaults peer over anonymous TLS and relay"""
    with Cleanup() as cleanup:
        a = default_node(cleanup, binary, name="A")
        b = default_node(cleanup, binary, ["--peers", peer_uri(a.port)], name="B")
        b.wait_for(is_status("peer_added"), what="B's peer_added")
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", a.port, bp.random_id(), [],
                                           tls=bp.anonymous_tls()))
        a.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="A's raw peer")
        peer.publish("/t/z", bp.encode_count(1))
        b.wait_for(lambda l: l == "received /t/z 1", what="the value relayed by A")


def test_plain_peer_is_refused(binary):
    """a plain-TCP peer cannot talk to a default node, which keeps serving others"""
    with Cleanup() as cleanup:
        node = default_node(cleanup, binary)
        failed = False
        try:
            bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), ["/t"], timeout=5)
        except Exception:
            failed = True
        check(failed, "a plain handshake against a TLS node must fail")
        peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), ["/t"],
                                           tls=bp.anonymous_tls()))
        node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")


def test_web_socket_server_follows_the_same_rule(binary):
    """the WebSocket server of a default node is wss:// with anonymous ECDH"""
    with Cleanup() as cleanup:
        node = default_node(cleanup, binary, web_socket=True)
        sock = socket.create_connection(("127.0.0.1", node.ws_port), timeout=10)
        sock = bp.anonymous_tls().wrap_socket(sock, server_hostname=None)
        try:
            sock.sendall(b"GET /v1/messages/json HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                         b"Sec-WebSocket-Version: 13\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
            check_eq(answer.split(b"\r\n")[0], b"HTTP/1.1 101 Switching Protocols",
                     "the upgrade answer over anonymous TLS")
            check(b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in answer,
                  "the RFC 6455 accept value")
        finally:
            sock.close()


run_tests([test_broker_peer_dials_a_default_node, test_default_node_dials_a_broker_listener,
           test_two_default_nodes_relay, test_plain_peer_is_refused,
           test_web_socket_server_follows_the_same_rule], limit=100)
