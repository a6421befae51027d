#!/usr/bin/env python3
"""zmq.cluster: four emulated Zeek nodes (tests/zeromq/zeek_cluster.py) discover each other
through a forwarder and exchange events, as a Zeek 8.1+/9 cluster of the ZeroMQ backend does.

The forwarder is the one ZMQ_FORWARDER names: `reference` (Zeek's own, libzmq's
zmq_proxy_steerable) or `node` (broker-node with the broker.zeromq.* options,
doc/zeek-cluster.md). Usage: cluster.py <broker-node>. Needs /usr/bin/python3 with
python3-zmq (else skipped).
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from zeek_cluster import Cluster, decode_event, node_topic  # noqa: E402

NAMES = ["manager", "proxy", "worker-1", "worker-2"]


def test_four_nodes_discover_each_other(node_bin):
    """four nodes: nodeid subscriptions, ZeroMQ::hello and Cluster::hello, node_up everywhere"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES]
        c.pump(c.all_up(), what="node_up of every node at every node")
        for n in nodes:
            check_eq(sorted(name for name, _ in n.ups),
                     sorted(m.name for m in nodes if m is not n), "node_up at %s" % n.name)
            check_eq(n.downs, [], "node_down at %s" % n.name)
            check_eq(n.bad_messages, 0, "messages of other than 4 frames at %s" % n.name)


def test_events_between_every_pair(node_bin):
    """each node sends an event to each other's node topic and one to a topic all share:
    every one arrives once, four frames byte-exact, and the sender's own copy is dropped
    by the sender's node id"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n, topics=[b"zeek/test/all/"]) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere")
        blob = bytes(range(256)) * 3
        sent = {}
        for a in nodes:
            for b in nodes:
                if a is not b:
                    sent[(a.name, b.name)] = a.publish(node_topic(b.name), "Test::direct",
                                                       a.name.decode(), b.name.decode(), blob)
            sent[(a.name, b"all")] = a.publish(b"zeek/test/all/x", "Test::all", a.name.decode())
        want = len(nodes) - 1 + len(nodes) - 1  # direct from each other + shared from each other
        c.pump(lambda: all(len(n.events) >= want for n in nodes), what="every event")
        for n in nodes:
            got = {}
            for topic, sender, fmt, payload in n.events:
                check_eq(fmt, b"broker-bin-v1", "format at %s" % n.name)
                name, args = decode_event(payload)
                key = (args[0].encode(), n.name if name == "Test::direct" else b"all")
                check(key not in got, "%s got %r twice" % (n.name, key))
                got[key] = (topic, sender, payload)
                from_node = [m for m in nodes if m.name == key[0]][0]
                check_eq(sender, from_node.id, "sender id of %r at %s" % (key, n.name))
                check_eq(payload, sent[key], "payload of %r at %s" % (key, n.name))
            check_eq(len(got), want, "events at %s" % n.name)
            # Its own event to zeek/test/all/ came back (the forwarder sends to every
            # matching subscriber) and was dropped by node id, as Zeek does.
            c.pump(lambda: n.own_echoes >= 1, what="%s's own echo" % n.name)


def test_unsubscribe_on_exit(node_bin):
    """a node that leaves is node_down at the others; an explicit unsubscribe reaches every
    node"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere")
        w1 = nodes[2]
        w1.z.subscribe(b"zeek/extra/")
        c.pump(lambda: all((True, b"zeek/extra/") in n.notifications for n in nodes),
               what="the subscription of zeek/extra/")
        w1.z.unsubscribe(b"zeek/extra/")
        c.pump(lambda: all((False, b"zeek/extra/") in n.notifications for n in nodes),
               what="the unsubscription of zeek/extra/")
        w2 = nodes[3]
        c.remove(w2)
        rest = nodes[:3]
        c.pump(lambda: all((w2.name, w2.id) in n.downs for n in rest),
               what="node_down of worker-2")
        for n in rest:
            check(w2.name not in n.ids, "%s still has worker-2 up" % n.name)


def test_node_comes_back(node_bin):
    """a node that leaves and comes back with a new id is node_down, then node_up with its
    new id, and gets events again"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere")
        old = nodes[3]
        c.remove(old)
        c.pump(lambda: all((old.name, old.id) in n.downs for n in nodes[:3]),
               what="node_down of the old worker-2")
        new = c.node("worker-2")
        check(new.id != old.id, "a new node id")
        c.pump(c.all_up(), what="node_up of the new worker-2 everywhere")
        payload = nodes[0].publish(node_topic(b"worker-2"), "Test::again", "manager")
        c.pump(lambda: len(new.events) >= 1, what="the event at the new worker-2")
        check_eq(new.events[0][3], payload, "payload at the new worker-2")


def test_forwarder_counters(node_bin):
    """Zeek's forwarder counters: every event a node sends counts once as received by the
    frontend (its bytes: the four frames) and once as sent by the backend, however many
    nodes receive it"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n, topics=[b"zeek/count/"]) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere")
        # Let the hellos settle: the counters must move by our events only.
        settle = time.monotonic() + 0.5
        c.pump(lambda: time.monotonic() > settle, what="a pause")
        s0 = c.fwd.statistics()
        size = 0
        for i in range(10):
            p = nodes[i % 4].publish(b"zeek/count/ev", "Test::count", i)
            size += len(b"zeek/count/ev") + len(nodes[i % 4].id) + len(b"broker-bin-v1") + len(p)
        c.pump(lambda: all(len(n.events) >= 7 for n in nodes), what="the events")
        c.pump(lambda: c.fwd.statistics()["backend_messages_sent"]
               >= s0["backend_messages_sent"] + 10, what="the counters")
        s1 = c.fwd.statistics()
        delta = {k: s1[k] - s0[k] for k in s0}
        check_eq((delta["frontend_messages_received"], delta["frontend_bytes_received"],
                  delta["backend_messages_sent"], delta["backend_bytes_sent"]),
                 (10, size, 10, size), "frontend received / backend sent, messages and bytes")


run_tests([test_four_nodes_discover_each_other, test_events_between_every_pair,
           test_unsubscribe_on_exit, test_node_comes_back, test_forwarder_counters],
          limit=60)
