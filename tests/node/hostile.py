#!/usr/bin/env python3
"""System tests: well-formed but hostile peers cannot stall, grow or leak a node.

Each test replays one attack of the hostile-input issue against a real broker-node:

- a routing update with 100 000 topics is applied at once, and WebSocket delivery and
  /metrics keep answering meanwhile; one more topic than broker.peer-max-subscriptions ends
  the peering with an error event naming the option, counted in
  broker_handler_limit_disconnects_total;
- a peer that sends 64 KiB pings and never reads the pongs is cut off once
  broker.max-pending-control-bytes of pongs wait for it (error, metric), and the node's
  memory stays bounded;
- a peer that stops reading and then resets its connection is closed at once: the node's
  descriptor count returns to where it was and the peering is reported lost.

Usage: hostile.py <path to broker-node>
"""

import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.net import scrape_metrics, wait_metric  # noqa: E402
from brokertest.nodes import Node, is_status  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import RawClient, TEXT, encode_frame  # noqa: E402


def count_message(topic, n):
    return '{"type":"data-message","topic":"%s","@data-type":"count","data":%d}' % (topic, n)


def delivered(topic, n):
    return '{"type":"data-message","topic":"%s","@data-type":"count","data":%d}' % (topic, n)

MANY = 100000
LIMIT_PEER = 'broker_handler_limit_disconnects_total{kind="peer"}'


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def dial(cleanup, node, topics, **kwargs):
    peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), topics,
                                       **kwargs))
    node.wait_for(is_status("peer_added", bp.id_text(peer.own_id)), what="peer_added")
    return peer


def routing_update(peer, topics):
    return bp.node_message(peer.own_id, peer.remote_id, bp.ROUTING_UPDATE, bp.CONTROL_TOPIC,
                           bp.encode_filter(topics))


def ws_pair(node):
    """A subscriber and a publisher on the node's WebSocket server, acked."""
    sub = RawClient(node.ws_port)
    sub.send_text('["/live"]')
    check(sub.recv_text().startswith('{"type":"ack"'), "ack")
    pub = RawClient(node.ws_port)
    pub.send_text("[]")
    check(pub.recv_text().startswith('{"type":"ack"'), "ack")
    return sub, pub


def test_huge_routing_update(binary):
    """100 000 topics in one routing update: applied, and nothing else stalls"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-v"], web_socket=True, metrics=True))
        sub, pub = ws_pair(node)
        peer = dial(cleanup, node, [])
        topics = ["/many/topic-%06d" % i for i in range(MANY)]
        started = time.monotonic()
        peer.send_raw(routing_update(peer, topics))
        # WebSocket traffic and /metrics answer while the node takes the update in.
        pub.sock.sendall(encode_frame(TEXT, count_message("/live/x", 1)))
        check_eq(sub.recv_text(), delivered("/live/x", 1), "a live delivery")
        scrape_metrics(node.metrics_port)
        # The update is in force: a message on one of the topics reaches the peer.
        pub.sock.sendall(encode_frame(TEXT, count_message("/many/topic-099999", 2)))
        got = peer.receive_data(1, timeout=30)
        check_eq(got, [(b"/many/topic-099999", 2)], "a message on the last announced topic")
        print("routing update of %d topics in force after %.2f s"
              % (MANY, time.monotonic() - started))
        sub.close()
        pub.close()


def test_too_many_subscriptions_end_the_peering(binary):
    """one prefix over broker.peer-max-subscriptions: error event, peering removed, counted"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-v", "--broker.peer-max-subscriptions=1000"],
                                metrics=True))
        peer = dial(cleanup, node, [])
        peer.send_raw(routing_update(peer, ["/t%d" % i for i in range(1001)]))
        node.wait_for(lambda l: "broker.peer-max-subscriptions=1000" in l and "error" in l,
                      what="the error event naming the option")
        node.wait_for(is_status("peer_removed", bp.id_text(peer.own_id)), what="peer_removed")
        wait_metric(node.metrics_port, LIMIT_PEER, lambda v: v == 1)
        # A handshake that already announces too many is refused the same way.
        try:
            bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(),
                            ["/h%d" % i for i in range(1001)], timeout=10)
        except Exception:
            pass
        wait_metric(node.metrics_port, LIMIT_PEER, lambda v: v == 2)


def test_ping_flood_without_reading(binary):
    """64 KiB pings never read: cut off at broker.max-pending-control-bytes, memory bounded"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-v"], metrics=True))
        peer = dial(cleanup, node, [], rcvbuf=4096)
        before = rss_kib(node.pid)
        payload = b"p" * 65536
        ping = bp.node_message(peer.own_id, peer.remote_id, bp.PING, bp.CONTROL_TOPIC, payload)
        sent = 0
        try:
            for _ in range(4000):  # 256 MiB of pongs if nothing stopped us
                peer.conn.send(ping, timeout=5)
                sent += 1
        except (OSError, socket.timeout):
            pass  # The node closed the connection (or stopped reading): both fine.
        node.wait_for(lambda l: "broker.max-pending-control-bytes" in l,
                      what="the error naming the option")
        wait_metric(node.metrics_port, LIMIT_PEER, lambda v: v == 1)
        grew = rss_kib(node.pid) - before
        print("sent %d pings; node RSS grew by %d KiB" % (sent, grew))
        check(grew < 64 * 1024, "the node's RSS grew by %d KiB" % grew)


def test_reset_after_stalling_frees_the_connection(binary):
    """a peer that stops reading and resets is closed at once, descriptors return"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, ["-v", "--broker.peer-overflow-policy=drop_oldest"]))
        publisher = dial(cleanup, node, [])
        base = fd_count(node.pid)
        for round_ in range(3):
            stalled = dial(cleanup, node, ["/flood"], rcvbuf=4096)
            chunk = [bp.encode_string("x" * 1000)] * 500
            for _ in range(20):
                publisher.publish_many("/flood", chunk)
            # Reset: SO_LINGER 0 makes close() send RST instead of FIN.
            stalled.conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                         struct.pack("ii", 1, 0))
            stalled.close()
            node.wait_for(is_status("peer_lost", bp.id_text(stalled.own_id)),
                          what="peer_lost of the reset peer (round %d)" % round_)
            deadline = time.monotonic() + 10
            while fd_count(node.pid) > base and time.monotonic() < deadline:
                time.sleep(0.05)
            check_eq(fd_count(node.pid), base,
                     "descriptors of the node after round %d" % round_)


run_tests([test_huge_routing_update, test_too_many_subscriptions_end_the_peering,
           test_ping_flood_without_reading, test_reset_after_stalling_frees_the_connection],
          limit=100)
