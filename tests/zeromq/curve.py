#!/usr/bin/env python3
"""zmq.curve: a Zeek cluster with CURVE on (Zeek 8.2+: curve_server_* and curve_client_*
keys), and the nodes that must not get in.

As Zeek configures it, the forwarder's two sockets are CURVE servers with the server key
pair, every node uses the one client key pair, and the forwarder admits exactly that client
public key. Keys come from zmq.curve_keypair(). The forwarder is the one ZMQ_FORWARDER names
(reference or node, see cluster.py). Usage: curve.py <broker-node>. Needs /usr/bin/python3
with python3-zmq built with CURVE (else skipped).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")
zmq = zeek_zmq.zmq
if not zmq.has("curve"):
    skip_script("this libzmq has no CURVE")

from zeek_cluster import Cluster, node_topic  # noqa: E402

NAMES = ["manager", "proxy", "worker-1", "worker-2"]
# What a node's XPUB monitor reports when the handshake fails (libzmq 4.3).
AUTH_FAILED = zmq.EVENT_HANDSHAKE_FAILED_AUTH
PROTOCOL_FAILED = zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
SUCCEEDED = zmq.EVENT_HANDSHAKE_SUCCEEDED


def intruder(c, curve):
    """A bare node with `curve` (None: no CURVE) and a monitor; subscribes to intruder/."""
    z = zeek_zmq.ZeekNode(c.ctx, b"intruder", c.fwd.xsub_port, c.fwd.xpub_port, curve,
                          monitor=True)
    z.subscribe(b"intruder/")
    return z


def wait_monitor(z, event, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for e in z.poll_monitor(100):
            if e["event"] == event:
                return e
    raise AssertionError("no monitor event %d; saw %r" % (event, z.monitor_events))


def check_kept_out(c, nodes, z, what):
    """Nothing of the intruder reached the nodes: a marker subscription made after its
    refusal arrives everywhere, its own never."""
    check(not any(e["event"] == SUCCEEDED for e in z.poll_monitor()),
          "%s: the handshake succeeded: %r" % (what, z.monitor_events))
    nodes[0].z.subscribe(b"marker/")
    c.pump(lambda: all((True, b"marker/") in n.notifications for n in nodes),
           what="the marker subscription")
    for n in nodes:
        check((True, b"intruder/") not in n.notifications,
              "%s: the intruder's subscription reached %s" % (what, n.name))
    check_eq(z.next_event(200), None, "%s: an event at the intruder" % what)


def test_cluster_under_curve(node_bin):
    """four nodes with the shared client key discover each other and exchange events"""
    curve = zeek_zmq.curve_keys()
    with Cluster(node_bin, curve=curve) as c:
        nodes = [c.node(n) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere under CURVE")
        payload = nodes[0].publish(node_topic(nodes[3].name), "Test::secret", "manager",
                                   bytes(range(256)))
        c.pump(lambda: len(nodes[3].events) >= 1, what="the event under CURVE")
        check_eq(nodes[3].events[0][1:], [nodes[0].id, b"broker-bin-v1", payload],
                 "the event at worker-2")


def test_wrong_client_key_refused(node_bin):
    """a node with another client key pair is refused (ERROR 400: Zeek's nodes treat it as
    fatal) and nothing of it reaches the cluster"""
    curve = zeek_zmq.curve_keys()
    with Cluster(node_bin, curve=curve) as c:
        nodes = [c.node(n) for n in NAMES[:2]]
        c.pump(c.all_up(), what="node_up")
        wrong = dict(curve)
        wrong["client_public"], wrong["client_secret"] = zmq.curve_keypair()
        z = intruder(c, wrong)
        try:
            e = wait_monitor(z, AUTH_FAILED)
            check_eq(e["value"], 400, "the status of the refusal")
            check_kept_out(c, nodes, z, "wrong client key")
        finally:
            z.close()


def test_wrong_server_key_gets_nowhere(node_bin):
    """a node that expects another server key never completes a handshake"""
    curve = zeek_zmq.curve_keys()
    with Cluster(node_bin, curve=curve) as c:
        nodes = [c.node(n) for n in NAMES[:2]]
        c.pump(c.all_up(), what="node_up")
        wrong = dict(curve)
        wrong["server_public"], _ = zmq.curve_keypair()
        z = intruder(c, wrong)
        try:
            wait_monitor(z, zmq.EVENT_CONNECTED)
            time.sleep(1.0)
            check_kept_out(c, nodes, z, "wrong server key")
        finally:
            z.close()


def test_plain_node_refused(node_bin):
    """a node without CURVE cannot talk to a CURVE forwarder (mechanism mismatch)"""
    curve = zeek_zmq.curve_keys()
    with Cluster(node_bin, curve=curve) as c:
        nodes = [c.node(n) for n in NAMES[:2]]
        c.pump(c.all_up(), what="node_up")
        z = intruder(c, None)
        try:
            wait_monitor(z, PROTOCOL_FAILED)
            check_kept_out(c, nodes, z, "no CURVE")
        finally:
            z.close()


run_tests([test_cluster_under_curve, test_wrong_client_key_refused,
           test_wrong_server_key_gets_nowhere, test_plain_node_refused], limit=60)
