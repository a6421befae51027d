#!/usr/bin/env python3
"""zmq.join.node: broker-node joins a cluster that keeps Zeek's own forwarder, as a node, and
bridges a Broker peer and a WebSocket client into it (node mode, doc/zeek-cluster.md §3).

The forwarder is Zeek's (libzmq's proxy, in this process); two emulated Zeek nodes and
broker-node connect to it (broker.zeromq.connect-xpub / connect-xsub / node-id). The Zeek
nodes see broker-node's node-id subscription and its ZeroMQ::hello; events cross between
them, the raw Broker peer and the raw WebSocket client both ways with the same payload
bytes; when broker-node goes away its subscriptions are cancelled at the Zeek nodes. The
forwarder restarts: broker-node reconnects, subscribes again and events flow again. Split
horizon: libzmq's forwarder sends broker-node its own events back (it subscribes to what
the peer and the client want); they are dropped and counted, and every event reaches each
Zeek node, the peer and the client exactly once. Under CURVE broker-node is a client of
Zeek's forwarder with the nodes' shared key pair (its ZAP handler admits that key only).
Usage: join.py <broker-node>. Needs
/usr/bin/python3 with python3-zmq (else skipped).
"""

import json
import os
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import TestFailure, check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import LOCALHOST, scrape_metrics  # noqa: E402
from brokertest.procs import run_once  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from brokertest.nodes import Node  # noqa: E402
from brokertest.peer import DATA, RawPeer, random_id  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402
from zeek_cluster import Cluster, json_event, nodeid_topic, zeek_event  # noqa: E402

NODE_ID = b"broker-bridge"
NODE_NAME = "bridge-node"
TO_BROKER = b"/join/to-broker/"
TO_ZEEK = b"/join/to-zeek/"
BOTH = b"/join/both/"


def join(node_bin, c, args=(), **options):
    """broker-node as a node of `c`'s forwarder (peering, WebSocket and metrics on)."""
    if not zeek_zmq.node_has_zeromq(node_bin):
        raise TestFailure("%s has no broker.zeromq.* options: the ZeroMQ transport is not in "
                          "this build" % node_bin)
    return Node(node_bin, ["--broker.zeromq.connect-xpub=tcp://%s:%d"
                           % (LOCALHOST, c.fwd.xsub_port),
                           "--broker.zeromq.connect-xsub=tcp://%s:%d"
                           % (LOCALHOST, c.fwd.xpub_port),
                           "--broker.zeromq.node-id=%s" % NODE_ID.decode(),
                           "--broker.metrics.endpoint-name=%s" % NODE_NAME] + list(args),
                "bridge", web_socket=True, metrics=True, **options)


def status(node):
    """broker-node's /v1/status (its zeromq section)."""
    url = "http://%s:%d/v1/status" % (LOCALHOST, node.metrics_port)
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read().decode())["zeromq"]


def subscribe_ws(node, topic):
    ws = RawClient(node.ws_port)
    ws.send_text(json.dumps([topic.decode()]))
    check_eq(json.loads(ws.recv_text()).get("type"), "ack", "the client's ack")
    return ws


def peer_data(peer, seconds):
    """Every data message at the raw peer within `seconds`: [(topic, payload)]."""
    out = []
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return out
        try:
            msg = peer.next_message(left)
        except socket.timeout:
            return out
        if msg["type"] == DATA:
            out.append((msg["topic"], msg["payload"]))


def ws_data(ws, seconds):
    """Every data message at the WebSocket client within `seconds`: [(topic, data)]."""
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = ws.poll_text(max(0.05, deadline - time.monotonic()))
        if text is None:
            continue
        got = json.loads(text)
        if got.get("type") == "data-message":
            out.append((got["topic"].encode(), {k: got[k] for k in ("@data-type", "data")}))
    return out


def wait_ours(c, prefix, since=None, timeout=10.0):
    """Waits until every Zeek node's XPUB reported broker-node's subscription to `prefix`
    (since the positions in `since`): the forwarder passes every subscribe, so that is one
    more than the Zeek nodes that subscribed it themselves."""
    holders = sum(1 for n in c.nodes if prefix in n.topics)
    start = since or {}
    c.pump(lambda: all(n.notifications[start.get(n.name, 0):].count((True, prefix)) > holders
                       for n in c.nodes), timeout=timeout,
           what="broker-node's subscription to %r at every Zeek node" % prefix)


def settle(c, seconds):
    """Handles the Zeek nodes' sockets for `seconds` (late duplicates would show)."""
    try:
        c.pump(lambda: False, timeout=seconds)
    except TestFailure:
        pass


def test_node_mode(node_bin):
    """broker-node as a node of Zeek's forwarder: discovered by its node-id subscription,
    says hello, bridges both ways byte-exact, and its subscriptions go when it goes"""
    with Cluster(node_bin, reference=True) as c:
        manager = c.node("manager", topics=[TO_BROKER])
        worker = c.node("worker-1", topics=[TO_ZEEK])
        c.pump(c.all_up(), what="node_up")
        node = join(node_bin, c)
        peer = ws = None
        try:
            c.pump(lambda: all((True, nodeid_topic(NODE_ID)) in n.notifications
                               for n in c.nodes),
                   what="broker-node's node-id subscription at every Zeek node")
            # Zeek's hello exchange: each node greets the new nodeid, and broker-node greets
            # every node whose nodeid subscription it sees.
            c.pump(lambda: all((NODE_NAME.encode(), NODE_ID) in n.hellos for n in c.nodes),
                   what="broker-node's ZeroMQ::hello at every Zeek node")
            peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [TO_BROKER.decode()])
            ws = subscribe_ws(node, TO_BROKER)
            wait_ours(c, TO_BROKER)

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
            z = status(node)
            check_eq(z["mode"], "node", "/v1/status zeromq.mode")
            check_eq(sorted((l["side"], l["state"], l["endpoint"]) for l in z["connections"]),
                     [("xpub", "connected", "tcp://%s:%d" % (LOCALHOST, c.fwd.xsub_port)),
                      ("xsub", "connected", "tcp://%s:%d" % (LOCALHOST, c.fwd.xpub_port))],
                     "the node-mode connections in /v1/status")
            check(z["hellos_sent"] >= 2 and z["bridged_to_core"] >= 1
                  and z["bridged_from_core"] >= 2, "/v1/status counters: %r" % z)
            # (Its labels include endpoint="<endpoint-name>" as that is set.)
            check_eq([v for k, v in scrape_metrics(node.metrics_port).items()
                      if k.startswith("broker_connections{") and 'type="zeromq"' in k],
                     [2], 'broker_connections{type="zeromq"} in node mode')
            code, out, err = run_once(node_bin, ["--status", "http://%s:%d"
                                                 % (LOCALHOST, node.metrics_port)])
            check_eq(code, 0, "broker-node --status: exit code (stderr: %s)" % err)
            check("node mode" in out and "tcp://%s:%d" % (LOCALHOST, c.fwd.xsub_port) in out
                  and "connected" in out, "--status shows the node-mode connections:\n" + out)
        finally:
            for x in (peer, ws):
                if x is not None:
                    x.close()
            node.kill()
        c.pump(lambda: all((False, nodeid_topic(NODE_ID)) in n.notifications for n in c.nodes),
               what="the cancellation of broker-node's node-id subscription")
        check(c.all_up()(), "the Zeek nodes are still up")


def test_forwarder_restart(node_bin):
    """Zeek's forwarder restarts on the same ports: broker-node reconnects (counted), the
    Zeek nodes see its nodeid subscription again and events flow both ways again"""
    with Cluster(node_bin, reference=True) as c:
        manager = c.node("manager", topics=[TO_BROKER])
        worker = c.node("worker-1", topics=[TO_ZEEK])
        c.pump(c.all_up(), what="node_up")
        node = join(node_bin, c)
        peer = None
        try:
            peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [TO_BROKER.decode()])
            wait_ours(c, TO_BROKER)
            marks = {n.name: len(n.notifications) for n in c.nodes}
            c.fwd.restart()
            # (A node whose XPUB reconnects after the others subscribed gets each prefix once,
            # from the forwarder's replay: only our nodeid topic says it was us.)
            wait_ours(c, nodeid_topic(NODE_ID), since=marks, timeout=20)
            # Zeek -> peer: the manager filters at the sender until it has our subscription.
            sent = []
            deadline = time.monotonic() + 15
            got = []
            while not got:
                check(time.monotonic() < deadline, "no Zeek event at the peer after the restart")
                sent.append(manager.publish(TO_BROKER + b"again", "Join::again", "m",
                                            len(sent)))
                got = peer_data(peer, 0.3)
            check(got[0] in [(TO_BROKER + b"again", p) for p in sent],
                  "the peer got %r" % (got[0],))
            # peer -> Zeek: the worker's subscription reached our XPUB again.
            deadline = time.monotonic() + 15
            n = 0
            while not worker.events:
                check(time.monotonic() < deadline, "no peer event at worker-1 after the restart")
                n += 1
                peer.publish(TO_ZEEK + b"again", zeek_event("Join::from_peer", "p", n))
                try:
                    c.pump(lambda: len(worker.events) >= 1, timeout=0.3)
                except TestFailure:
                    pass
            check_eq(worker.events[0][1:3], [NODE_ID, b"broker-bin-v1"],
                     "the peer's event at worker-1 after the restart")
            z = status(node)
            check(z["reconnects"] >= 2 and all(l["state"] == "connected" and l["connects"] >= 2
                                               for l in z["connections"]),
                  "/v1/status after the restart: %r" % z)
            # Logged once the connection lasted 2 s (a flapping forwarder stays one outage).
            node.wait_for(lambda l: "xsub connection to" in l and "connected again" in l,
                          stderr=True, what="the reconnect's log line")
        finally:
            if peer is not None:
                peer.close()
            node.kill()


def test_split_horizon(node_bin):
    """every event reaches each Zeek node, the Broker peer and the WebSocket client exactly
    once; broker-node's own events that Zeek's forwarder sends back are dropped and counted,
    and nothing from ZeroMQ is sent back to ZeroMQ"""
    with Cluster(node_bin, reference=True) as c:
        manager = c.node("manager", topics=[BOTH])
        worker = c.node("worker-1", topics=[BOTH])
        c.pump(c.all_up(), what="node_up")
        node = join(node_bin, c)
        peer = ws = None
        try:
            peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [BOTH.decode()])
            ws = subscribe_ws(node, BOTH)
            wait_ours(c, BOTH)
            # Until the Zeek nodes' subscription is in broker-node's core: probes.
            deadline = time.monotonic() + 15
            probes = 0
            while not (manager.events and worker.events):
                check(time.monotonic() < deadline, "no probe reached the Zeek nodes")
                probes += 1
                peer.publish(BOTH + b"probe", zeek_event("Join::probe", probes))
                try:
                    c.pump(lambda: manager.events and worker.events, timeout=0.3)
                except TestFailure:
                    pass
            settle(c, 0.5)
            ws_data(ws, 0.5)
            for n in c.nodes:
                n.events.clear()
            base = status(node)["own_events"]

            from_peer = zeek_event("Join::from_peer", "p")
            peer.publish(BOTH + b"p", from_peer)
            msg = {"type": "data-message", "topic": (BOTH + b"ws").decode()}
            msg.update(json_event("Join::from_ws", "w"))
            ws.send_text(json.dumps(msg))
            from_zeek = manager.publish(BOTH + b"z", "Join::from_zeek", "z")
            want_zeek = {(BOTH + b"p", NODE_ID, from_peer),
                         (BOTH + b"ws", NODE_ID, zeek_event("Join::from_ws", "w"))}
            c.pump(lambda: len(manager.events) >= 2 and len(worker.events) >= 3,
                   what="every event at the Zeek nodes")
            at_peer = peer_data(peer, 1.5)
            at_ws = ws_data(ws, 0.5)
            settle(c, 0.5)
            check_eq(sorted((e[0], e[1], e[3]) for e in manager.events), sorted(want_zeek),
                     "events at the manager (exactly once each, none of its own back)")
            check_eq(sorted((e[0], e[1], e[3]) for e in worker.events),
                     sorted(want_zeek | {(BOTH + b"z", manager.id, from_zeek)}),
                     "events at worker-1 (exactly once each, the manager's not again from "
                     "broker-node)")
            check_eq(sorted(at_peer), sorted([(BOTH + b"ws", zeek_event("Join::from_ws", "w")),
                                              (BOTH + b"z", from_zeek)]),
                     "events at the peer (exactly once each, not its own)")
            check_eq(sorted(t for t, _ in at_ws), [BOTH + b"p", BOTH + b"z"],
                     "events at the client (exactly once each, not its own)")
            z = status(node)
            check(z["own_events"] >= base + 2,
                  "/v1/status zeromq.own_events counts our events sent back by the forwarder: "
                  "%d before, %d now" % (base, z["own_events"]))
        finally:
            for x in (peer, ws):
                if x is not None:
                    x.close()
            node.kill()


def test_curve(node_bin):
    """under CURVE (Zeek's keys: the forwarder's pair, the nodes' shared client pair):
    broker-node joins as a CURVE client and bridges both ways; with the wrong server key it
    never completes a handshake, says so once and counts the failures"""
    keys = zeek_zmq.curve_keys()
    with Cluster(node_bin, curve=keys, reference=True) as c:
        manager = c.node("manager", topics=[TO_BROKER])
        worker = c.node("worker-1", topics=[TO_ZEEK])
        c.pump(c.all_up(), what="node_up under CURVE")
        node = join(node_bin, c, [
            "--broker.zeromq.curve-client-secret-key=%s" % keys["client_secret"].decode(),
            "--broker.zeromq.curve-client-public-key=%s" % keys["client_public"].decode(),
            "--broker.zeromq.curve-server-public-key=%s" % keys["server_public"].decode()])
        peer = None
        try:
            wait_ours(c, nodeid_topic(NODE_ID))
            peer = RawPeer.dial(LOCALHOST, node.port, random_id(), [TO_BROKER.decode()])
            wait_ours(c, TO_BROKER)
            payload = manager.publish(TO_BROKER + b"c", "Join::curve", "c")
            got = peer_data(peer, 5)
            check_eq(got[:1], [(TO_BROKER + b"c", payload)], "the Zeek event at the peer")
            from_peer = zeek_event("Join::from_peer", "c")
            deadline = time.monotonic() + 10
            while not worker.events:
                check(time.monotonic() < deadline, "no peer event at worker-1 under CURVE")
                peer.publish(TO_ZEEK + b"c", from_peer)
                settle(c, 0.3)
            check_eq(worker.events[0], [TO_ZEEK + b"c", NODE_ID, b"broker-bin-v1", from_peer],
                     "the peer's event at worker-1 under CURVE")
            check_eq(c.fwd.refused, 0, "CURVE clients Zeek's ZAP handler refused")
        finally:
            if peer is not None:
                peer.close()
            node.kill()
        wrong = zeek_zmq.curve_keys()
        node = join(node_bin, c, [
            "--broker.zeromq.curve-client-secret-key=%s" % keys["client_secret"].decode(),
            "--broker.zeromq.curve-server-public-key=%s" % wrong["server_public"].decode()])
        try:
            deadline = time.monotonic() + 15
            while True:
                z = status(node)
                if all(l["failed"] >= 2 for l in z["connections"]):
                    break
                check(time.monotonic() < deadline,
                      "broker-node with the wrong server key: no failed handshakes in %r" % z)
                time.sleep(0.2)
            check(all(l["connects"] == 0 and l["state"] != "connected"
                      for l in z["connections"]), "no connection with the wrong key: %r" % z)
            lines = [l for l in node.err_lines if "xsub connection to" in l and "closed" in l]
            check_eq(len(lines), 1, "log lines of the xsub connection's failures (one outage)")
        finally:
            node.kill()


run_tests([test_node_mode, test_forwarder_restart, test_split_horizon, test_curve], limit=90)
