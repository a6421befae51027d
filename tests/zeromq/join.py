#!/usr/bin/env python3
"""zmq.join.node: broker-node joins a cluster that keeps Zeek's own forwarder, as a node, and
bridges a Broker peer and a WebSocket client into it (node mode, doc/zeek-cluster.md §3).

The forwarder is Zeek's (libzmq's proxy, in this process); two emulated Zeek nodes and
broker-node connect to it (broker.zeromq.connect-xpub / connect-xsub / node-id). The Zeek
nodes see broker-node's node-id subscription; events cross between them, the raw Broker peer
and the raw WebSocket client both ways with the same payload bytes; when broker-node goes
away its subscriptions are cancelled at the Zeek nodes. Usage: join.py <broker-node>. Needs
/usr/bin/python3 with python3-zmq (else skipped).

NOT REGISTERED with ctest (tests/zeromq/CMakeLists.txt): node mode is not implemented yet and
broker-node refuses to start with connect-xpub / connect-xsub. Register it with node mode.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import TestFailure, check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import LOCALHOST  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from brokertest.nodes import Node  # noqa: E402
from brokertest.peer import DATA, RawPeer, random_id  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402
from zeek_cluster import Cluster, json_event, nodeid_topic, zeek_event  # noqa: E402

NODE_ID = b"broker-bridge"
TO_BROKER = b"/join/to-broker/"
TO_ZEEK = b"/join/to-zeek/"


def test_node_mode(node_bin):
    """broker-node as a node of Zeek's forwarder: discovered by its node-id subscription,
    bridges both ways byte-exact, and its subscriptions go when it goes"""
    if not zeek_zmq.node_has_zeromq(node_bin):
        raise TestFailure("%s has no broker.zeromq.* options: the ZeroMQ transport is not in "
                          "this build" % node_bin)
    with Cluster(node_bin, reference=True) as c:
        manager = c.node("manager", topics=[TO_BROKER])
        worker = c.node("worker-1", topics=[TO_ZEEK])
        c.pump(c.all_up(), what="node_up")
        node = Node(node_bin, ["--broker.zeromq.connect-xpub=tcp://%s:%d"
                               % (LOCALHOST, c.fwd.xsub_port),
                               "--broker.zeromq.connect-xsub=tcp://%s:%d"
                               % (LOCALHOST, c.fwd.xpub_port),
                               "--broker.zeromq.node-id=%s" % NODE_ID.decode()],
                    "bridge", web_socket=True, metrics=True)
        peer = ws = None
        try:
            c.pump(lambda: all((True, nodeid_topic(NODE_ID)) in n.notifications
                               for n in c.nodes),
                   what="broker-node's node-id subscription at every Zeek node")
            peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [TO_BROKER.decode()])
            ws = RawClient(node.ws_port)
            ws.send_text(json.dumps([TO_BROKER.decode()]))
            check_eq(json.loads(ws.recv_text()).get("type"), "ack", "the client's ack")
            c.pump(lambda: all((True, TO_BROKER) in n.notifications for n in c.nodes),
                   what="broker-node's subscription to %r at every Zeek node" % TO_BROKER)

            payload = manager.publish(TO_BROKER + b"ev", "Join::to_broker", "z", 1)
            while True:
                msg = peer.next_message(10)
                if msg["type"] == DATA:
                    break
            check_eq((msg["topic"], msg["payload"]), (TO_BROKER + b"ev", payload),
                     "the Zeek event at the Broker peer")
            while True:
                got = json.loads(ws.recv_text())
                if got.get("type") == "data-message":
                    break
            check_eq({k: got[k] for k in ("@data-type", "data")},
                     json_event("Join::to_broker", "z", 1), "the Zeek event at the client")

            from_peer = zeek_event("Join::from_peer", "p", 2)
            peer.publish(TO_ZEEK + b"p", from_peer)
            c.pump(lambda: len(worker.events) >= 1, what="the peer's event at worker-1")
            check_eq(worker.events[0], [TO_ZEEK + b"p", NODE_ID, b"broker-bin-v1", from_peer],
                     "the peer's event at worker-1")
            msg = {"type": "data-message", "topic": (TO_ZEEK + b"ws").decode()}
            msg.update(json_event("Join::from_ws", "w", 3))
            ws.send_text(json.dumps(msg))
            c.pump(lambda: len(worker.events) >= 2, what="the client's event at worker-1")
            check_eq(worker.events[1], [TO_ZEEK + b"ws", NODE_ID, b"broker-bin-v1",
                                        zeek_event("Join::from_ws", "w", 3)],
                     "the client's event at worker-1")
            check_eq([e for e in manager.events if e[0].startswith(TO_BROKER)], [],
                     "manager's own event back through the bridge")
        finally:
            for x in (peer, ws):
                if x is not None:
                    x.close()
            node.kill()
        c.pump(lambda: all((False, nodeid_topic(NODE_ID)) in n.notifications for n in c.nodes),
               what="the cancellation of broker-node's node-id subscription")
        check(c.all_up()(), "the Zeek nodes are still up")


run_tests([test_node_mode], limit=60)
