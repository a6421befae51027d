#!/usr/bin/env python3
"""zmq.access.node: broker-node as the forwarder with access rules
(broker.security.rules-file, doc/security.md "ZeroMQ"): each Zeek node has its own CURVE
client key, listed under an identity; its rules decide what it may publish and subscribe.

A worker may only use Zeek's cluster topics (zeek.cluster., and the readiness topic
zeek.zeromq.internal. it subscribes to): its subscription to another
prefix never reaches the manager, and its event on another topic is dropped at broker-node
and counted (broker_access_refusals_total), while the manager may do anything. A key no
identity lists is refused with ZMTP ERROR 400. Only against broker-node (ZMQ_FORWARDER=node).
Usage: access.py <broker-node>. Needs /usr/bin/python3 with python3-zmq with CURVE.
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import wait_metric  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")
if zeek_zmq.forwarder_kind() != "node":
    skip_script("access rules need broker-node as the forwarder (ZMQ_FORWARDER=node)")
zmq = zeek_zmq.zmq
if not zmq.has("curve"):
    skip_script("this libzmq has no CURVE")

from zeek_cluster import Cluster, node_topic  # noqa: E402

APP = b"app/"
REFUSED = ('broker_access_refusals_total{identity="worker",rule="default publish",'
           'what="publish"}')


def own_keys(curve):
    """`curve` with a fresh client key pair."""
    keys = dict(curve)
    keys["client_public"], keys["client_secret"] = zmq.curve_keypair()
    return keys


def test_per_node_keys_and_rules(node_bin):
    """a worker limited to zeek.cluster. cannot subscribe to or publish on app/; the manager
    can; an unlisted key is refused"""
    curve = zeek_zmq.curve_keys()  # Its client pair is the shared key: listed nowhere.
    manager_keys, worker_keys = own_keys(curve), own_keys(curve)
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write('identity.manager {\n  curve-keys = ["%s"]\n  publish = [""]\n'
                '  subscribe = [""]\n}\n' % manager_keys["client_public"].decode())
        f.write('identity.worker {\n  curve-keys = ["%s"]\n  publish = ["zeek.cluster."]\n'
                '  subscribe = ["zeek.cluster.", "zeek.zeromq.internal."]\n}\n'
                % worker_keys["client_public"].decode())
        rules = f.name
    try:
        with Cluster(node_bin, curve=curve,
                     args=["--broker.security.rules-file=" + rules]) as c:
            manager = c.node("manager", topics=[APP], curve=manager_keys)
            worker = c.node("worker-1", topics=[APP], curve=worker_keys)
            c.pump(c.all_up(), what="node_up with per-node keys")
            # The worker's app/ subscription was refused: the manager's XPUB only heard its
            # own (passed back by the forwarder), once; the worker's never arrives.
            manager.z.subscribe(b"marker/")
            c.pump(lambda: (True, b"marker/") in worker.notifications,
                   what="the manager's marker subscription at the worker")
            check_eq(manager.notifications.count((True, APP)), 1,
                     "app/ subscriptions the manager saw (its own only)")
            check((True, APP) in worker.notifications,
                  "the manager's app/ subscription reached the worker")
            # The worker publishes on app/ (refused) and then to the manager's node topic
            # (allowed): the manager gets only the second.
            worker.publish(APP + b"x", "App::refused", "w")
            payload = worker.publish(node_topic(b"manager"), "App::allowed", "w")
            c.pump(lambda: len(manager.events) >= 1, what="the worker's allowed event")
            check_eq([e[0] for e in manager.events], [node_topic(b"manager")],
                     "the topics of the events the manager received")
            check_eq(manager.events[0][3], payload, "the allowed event's payload")
            wait_metric(c.fwd.node.metrics_port, REFUSED, lambda v: v >= 1,
                        what="the worker's refused publication in the audit")
            # The manager may publish on app/, but the worker's app/ subscription was refused:
            # it gets the manager's next event to its node topic and nothing on app/.
            manager.publish(APP + b"y", "App::from_manager", "m")
            manager.publish(node_topic(b"worker-1"), "App::to_worker", "m")
            c.pump(lambda: any(e[0] == node_topic(b"worker-1") for e in worker.events),
                   what="the manager's event to the worker")
            check(not any(e[0].startswith(APP) for e in worker.events),
                  "the worker received an app/ event: %r" % worker.events)
            # A key that no identity lists is refused (ERROR 400).
            z = zeek_zmq.ZeekNode(c.ctx, b"intruder", c.fwd.xsub_port, c.fwd.xpub_port,
                                  own_keys(curve), monitor=True)
            try:
                seen = []
                for _ in range(100):
                    seen += z.poll_monitor(100)
                    if any(e["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH for e in seen):
                        break
                failed = [e for e in seen if e["event"] == zmq.EVENT_HANDSHAKE_FAILED_AUTH]
                check(failed, "no AUTH_FAILED for an unlisted key: %r" % seen)
                check_eq(failed[0]["value"], 400, "the status of the refusal")
            finally:
                z.close()
    finally:
        os.remove(rules)


run_tests([test_per_node_keys_and_rules], limit=60)
