#!/usr/bin/env python3
"""zmq.bridge.node: Zeek nodes of the ZeroMQ backend, a Broker peer and a WebSocket client
exchange events through one broker-node, both ways, payloads byte-identical; also four
Zeek nodes under CURVE.

broker-node is the cluster's forwarder (broker.zeromq.* options, doc/zeek-cluster.md) and
also serves native peering and WebSocket clients. The Broker peer is the raw peering of
lib/brokertest/peer.py (Broker's binary format, doc/protocol/binary.md), the WebSocket
client the raw client of lib/brokertest/rawws.py (JSON v1, doc/protocol/websocket.md).
Zeek's `broker-bin-v1` payload is Broker's binary encoding of the event
(zeek/zeek src/cluster/serializer/broker/Serializer.cc), so an event must cross between a
Zeek node and a Broker peer with the same bytes, and what a WebSocket client publishes must
reach a Zeek node as the binary encoding of the same value.

Only against broker-node (ZMQ_FORWARDER=node): Zeek's own forwarder bridges nothing.
Usage: bridge.py <broker-node>. Needs /usr/bin/python3 with python3-zmq (else skipped).
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import LOCALHOST, scrape_metrics, wait_metric  # noqa: E402
from brokertest.procs import run_once  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")
if zeek_zmq.forwarder_kind() != "node":
    skip_script("bridging needs broker-node as the forwarder (ZMQ_FORWARDER=node)")

from brokertest.peer import DATA, RawPeer, random_id  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402
from zeek_cluster import Cluster, json_event, node_topic, zeek_event  # noqa: E402

TO_BROKER = b"/bridge/to-broker/"
TO_ZEEK = b"/bridge/to-zeek/"


class Bridge:
    """broker-node with peering and WebSocket, Zeek nodes (manager and worker-1, and
    `more` others subscribed to TO_ZEEK), a raw peer and a raw WebSocket client subscribed to
    TO_BROKER; `curve`: the cluster under CURVE. Closed on exit."""

    def __init__(self, node_bin, curve=None, more=()):
        self.c = Cluster(node_bin, curve=curve, web_socket=True, metrics=True)
        self.peer = self.ws = None
        try:
            node = self.c.fwd.node
            self.manager = self.c.node("manager", topics=[TO_BROKER])
            self.worker = self.c.node("worker-1", topics=[TO_BROKER, TO_ZEEK])
            self.more = [self.c.node(n, topics=[TO_ZEEK]) for n in more]
            self.c.pump(self.c.all_up(), what="node_up")
            self.peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [TO_BROKER.decode()])
            self.ws = RawClient(node.ws_port)
            self.ws.send_text(json.dumps([TO_BROKER.decode()]))
            ack = json.loads(self.ws.recv_text())
            check_eq(ack.get("type"), "ack", "the WebSocket handshake's answer")
            # Zeek nodes filter at the sender: they send to the forwarder only what it
            # subscribed to, so the peer's and the client's topic must reach them.
            self.c.pump(lambda: all((True, TO_BROKER) in n.notifications
                                    for n in self.c.nodes),
                        what="broker-node's subscription to %r on behalf of the peer and the "
                             "client at every Zeek node" % TO_BROKER)
        except BaseException:
            self.close()
            raise

    def peer_data(self, timeout=10.0):
        """The next data message at the raw peer: (topic, payload bytes)."""
        while True:
            msg = self.peer.next_message(timeout)
            if msg["type"] == DATA:
                return msg["topic"], msg["payload"]

    def ws_data(self):
        while True:
            msg = json.loads(self.ws.recv_text())
            if msg.get("type") == "data-message":
                return msg

    def close(self):
        for x in (self.peer, self.ws):
            if x is not None:
                x.close()
        self.c.__exit__(None, None, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_zeek_to_broker_and_web_socket(node_bin):
    """a Zeek event reaches the Broker peer with the same bytes and the WebSocket client as
    the same value; the other Zeek node gets it unchanged and the sender no copy from the
    forwarder"""
    with Bridge(node_bin) as b:
        args = ("from-zeek", 42, "x" * 300)
        payload = b.manager.publish(TO_BROKER + b"ev", "Bridge::to_broker", *args)
        topic, got = b.peer_data()
        check_eq((topic, got), (TO_BROKER + b"ev", payload), "the event at the Broker peer")
        msg = b.ws_data()
        check_eq(msg["topic"], (TO_BROKER + b"ev").decode(), "topic at the WebSocket client")
        check_eq({k: msg[k] for k in ("@data-type", "data")},
                 json_event("Bridge::to_broker", *args), "the event at the WebSocket client")
        b.c.pump(lambda: len(b.worker.events) >= 1, what="the event at worker-1")
        check_eq(b.worker.events[0], [TO_BROKER + b"ev", b.manager.id, b"broker-bin-v1",
                                      payload], "the event at worker-1")
        # A marker through the cluster: everything published before it has arrived.
        b.worker.publish(node_topic(b"manager"), "Test::marker")
        b.c.pump(lambda: any(e[0] == node_topic(b"manager") for e in b.manager.events),
                 what="the marker at manager")
        check_eq([e for e in b.manager.events if e[0].startswith(TO_BROKER)], [],
                 "events of its own that manager got back from the forwarder")


def test_broker_peer_to_zeek(node_bin):
    """an event the Broker peer publishes reaches the Zeek node as 4 frames: the topic,
    broker-node's node id, broker-bin-v1 and the peer's bytes"""
    with Bridge(node_bin) as b:
        payload = zeek_event("Bridge::from_peer", "from-peer", 7)
        b.peer.publish(TO_ZEEK + b"p", payload)
        b.c.pump(lambda: len(b.worker.events) >= 1, what="the peer's event at worker-1")
        topic, sender, fmt, got = b.worker.events[0]
        check_eq((topic, fmt, got), (TO_ZEEK + b"p", b"broker-bin-v1", payload),
                 "the peer's event at worker-1")
        check(sender and sender not in (b.worker.id, b.manager.id),
              "the sender id is broker-node's, got %r" % sender)
        check_eq(b.manager.events, [], "events at manager, which did not subscribe")


def test_web_socket_to_zeek(node_bin):
    """a WebSocket client's JSON event reaches the Zeek node as Broker's binary encoding of
    the same value"""
    with Bridge(node_bin) as b:
        msg = {"type": "data-message", "topic": (TO_ZEEK + b"ws").decode()}
        msg.update(json_event("Bridge::from_ws", "from-ws", 9))
        b.ws.send_text(json.dumps(msg))
        b.c.pump(lambda: len(b.worker.events) >= 1, what="the client's event at worker-1")
        topic, sender, fmt, got = b.worker.events[0]
        check_eq((topic, fmt, got), (TO_ZEEK + b"ws", b"broker-bin-v1",
                                     zeek_event("Bridge::from_ws", "from-ws", 9)),
                 "the client's event at worker-1")
        check(sender and sender not in (b.worker.id, b.manager.id),
              "the sender id is broker-node's, got %r" % sender)


def test_undecodable_payloads_stay_in_the_cluster(node_bin):
    """a broker-bin-v1 payload that does not decode and a broker-json-v1 event still reach
    the other Zeek node byte-exact, but neither the peer nor the client"""
    with Bridge(node_bin) as b:
        bad = [(b"broker-bin-v1", b"\xff\x00not broker's binary format"),
               (b"broker-json-v1", json.dumps(json_event("Bridge::json", "j")).encode())]
        for fmt, payload in bad:
            check(b.manager.z.publish(TO_BROKER + b"bad", payload, fmt), "publish")
        good = b.manager.publish(TO_BROKER + b"good", "Bridge::good", "g")
        b.c.pump(lambda: len(b.worker.events) >= 3, what="three events at worker-1")
        check_eq([(e[2], e[3]) for e in b.worker.events], bad + [(b"broker-bin-v1", good)],
                 "what worker-1 got")
        check_eq(b.peer_data(), (TO_BROKER + b"good", good),
                 "the first data message at the peer")
        check_eq(b.ws_data()["topic"], (TO_BROKER + b"good").decode(),
                 "the first data message at the client")


def test_metrics(node_bin):
    """broker_connections{type="zeromq"} counts each node's two connections; Zeek's proxy
    counters count the events the nodes sent"""
    with Bridge(node_bin) as b:
        port = b.c.fwd.node.metrics_port
        key = 'broker_connections{type="zeromq"}'
        wait_metric(port, key, lambda v: v == 2 * len(b.c.nodes),
                    what="two connections per Zeek node")
        m0 = scrape_metrics(port)
        name = "zeek_cluster_zeromq_proxy_frontend_messages_received"
        check(any(k.startswith(name) for k in m0), "no %s in /metrics" % name)
        # A topic someone holds: a node's XPUB drops an event nobody subscribed to before it
        # leaves the node (libzmq filters at the publisher), so the forwarder never sees it.
        for i in range(5):
            b.manager.publish(TO_ZEEK + b"metrics", "Test::count", i)
        wait_metric(port, name + "_total" if name + "_total" in m0 else name,
                    lambda v: v >= m0.get(name + "_total", m0.get(name, 0)) + 5,
                    what="five more events received by the frontend")
        extra = b.c.node("worker-2")
        b.c.pump(b.c.all_up(), what="node_up of worker-2")
        wait_metric(port, key, lambda v: v == 2 * len(b.c.nodes), what="worker-2's two")
        b.c.remove(extra)
        wait_metric(port, key, lambda v: v == 2 * len(b.c.nodes), what="worker-2 gone")


def test_four_nodes_under_curve(node_bin):
    """under CURVE, four Zeek nodes, the Broker peer and the WebSocket client: every Zeek
    node's event reaches the peer and the client, the peer's and the client's reach every
    subscribed Zeek node"""
    with Bridge(node_bin, curve=zeek_zmq.curve_keys(), more=["proxy", "worker-2"]) as b:
        zeek = [b.manager, b.worker] + b.more
        sent = [n.publish(TO_BROKER + n.name, "Bridge::secret", n.name.decode()) for n in zeek]
        got_peer = sorted(b.peer_data() for _ in zeek)
        check_eq(got_peer, sorted((TO_BROKER + n.name, p) for n, p in zip(zeek, sent)),
                 "the Zeek events at the Broker peer")
        got_ws = sorted(b.ws_data()["topic"] for _ in zeek)
        check_eq(got_ws, sorted((TO_BROKER + n.name).decode() for n in zeek),
                 "the Zeek events at the WebSocket client")
        from_peer = zeek_event("Bridge::from_peer", "secret")
        b.peer.publish(TO_ZEEK + b"p", from_peer)
        msg = {"type": "data-message", "topic": (TO_ZEEK + b"ws").decode()}
        msg.update(json_event("Bridge::from_ws", "secret"))
        b.ws.send_text(json.dumps(msg))
        receivers = [b.worker] + b.more

        def arrived(n):
            return sorted((e[0], e[3]) for e in n.events if e[0].startswith(TO_ZEEK))
        want = sorted([(TO_ZEEK + b"p", from_peer),
                       (TO_ZEEK + b"ws", zeek_event("Bridge::from_ws", "secret"))])
        b.c.pump(lambda: all(len(arrived(n)) >= 2 for n in receivers),
                 what="the peer's and the client's events at every subscribed Zeek node")
        for n in receivers:
            check_eq(arrived(n), want, "what %s got from the peer and the client" % n.name)


def test_status_names_the_zeek_nodes(node_bin):
    """/v1/status and broker-node --status show each Zeek node's id and, from its
    ZeroMQ::hello, its name"""
    with Bridge(node_bin) as b:
        url = "http://%s:%d" % (LOCALHOST, b.c.fwd.node.metrics_port)
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(url + "/v1/status", timeout=10) as res:
                status = res.read().decode()
            missing = [n.name.decode() + " " + n.id.decode() for n in b.c.nodes
                       if n.id.decode() not in status or n.name.decode() not in status]
            if not missing:
                break
            check(time.monotonic() < deadline, "/v1/status lacks %s:\n%s" % (missing, status))
            time.sleep(0.2)
        code, out, err = run_once(node_bin, ["--status", url])
        check_eq(code, 0, "broker-node --status: exit code (stderr: %s)" % err)
        for n in b.c.nodes:
            check(n.id.decode() in out and n.name.decode() in out,
                  "--status does not show %s (%s):\n%s" % (n.name.decode(), n.id.decode(), out))


run_tests([test_zeek_to_broker_and_web_socket, test_broker_peer_to_zeek, test_web_socket_to_zeek,
           test_undecodable_payloads_stay_in_the_cluster, test_metrics,
           test_four_nodes_under_curve, test_status_names_the_zeek_nodes], limit=75)
