#!/usr/bin/env python3
"""zmq.restart: the forwarder goes away and comes back on the same ports; every Zeek node
reconnects (libzmq does that by itself) and the cluster rediscovers itself.

When the forwarder's connections drop, a node's XPUB (XPUB_VERBOSE, not VERBOSER) reports
no unsubscriptions, so Zeek raises no node_down; after the reconnect each node's XSUB
replays its subscriptions and the forwarder passes them to every node again, so every node
sees every nodeid subscription again and says ZeroMQ::hello again (which Zeek's nodes that
already know the sender log as "sends ZeroMQ::hello twice" and ignore). That is what the
reference forwarder shows and what broker-node must do too. broker-node is restarted with
SIGKILL (nothing said goodbye). The forwarder is the one ZMQ_FORWARDER names (reference or
node, see cluster.py). Usage: restart.py <broker-node>. Needs /usr/bin/python3 with
python3-zmq (else skipped).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from zeek_cluster import Cluster, node_topic  # noqa: E402

NAMES = ["manager", "proxy", "worker-1", "worker-2"]


def exchange(c, nodes, tag):
    """Every node sends one event to every other node's node topic; all arrive."""
    before = {n.name: len(n.events) for n in nodes}
    sent = {}
    for a in nodes:
        for b in nodes:
            if a is not b:
                sent[(a.id, b.name)] = a.publish(node_topic(b.name), "Test::" + tag,
                                                 a.name.decode())
    c.pump(lambda: all(len(n.events) - before[n.name] >= len(nodes) - 1 for n in nodes),
           what="the %s events" % tag)
    for n in nodes:
        got = n.events[before[n.name]:]
        check_eq(sorted((e[1], e[3]) for e in got),
                 sorted((a.id, sent[(a.id, n.name)]) for a in nodes if a is not n),
                 "%s events at %s" % (tag, n.name))


def rediscovered(c, nodes, marks, timeout=20):
    """Waits until every node has seen every node's nodeid subscription and every other
    node's ZeroMQ::hello again since `marks` (len of notifications and hellos)."""
    def done(n):
        seen = {p for s, p in n.notifications[marks[n.name][0]:] if s}
        hellos = set(n.hellos[marks[n.name][1]:])
        return (all(b"zeek.cluster.nodeid.%s." % m.id in seen for m in nodes)
                and all((m.name, m.id) in hellos for m in nodes if m is not n))
    c.pump(lambda: all(done(n) for n in nodes), timeout=timeout,
           what="every nodeid subscription and every hello again at every node")


def mark(nodes):
    return {n.name: (len(n.notifications), len(n.hellos)) for n in nodes}


def test_forwarder_restart(node_bin):
    """four nodes, the forwarder restarted: every node sees every nodeid subscription and
    hello again, nobody is node_down, and events flow between every pair again"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES]
        c.pump(c.all_up(), what="node_up everywhere")
        exchange(c, nodes, "before")
        marks = mark(nodes)
        c.fwd.restart()
        rediscovered(c, nodes, marks)
        for n in nodes:
            check_eq(n.downs, [], "node_down at %s" % n.name)
            check(c.all_up()(), "every node still up")
            check(n.duplicate_hellos >= len(nodes) - 1,
                  "%d repeated hellos at %s" % (n.duplicate_hellos, n.name))
        exchange(c, nodes, "after")


def test_restart_twice_with_a_new_node(node_bin):
    """after two restarts a node that joins late is discovered like the others"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES[:3]]
        c.pump(c.all_up(), what="node_up everywhere")
        for _ in range(2):
            marks = mark(nodes)
            c.fwd.restart()
            rediscovered(c, nodes, marks)
        nodes.append(c.node(NAMES[3]))
        c.pump(c.all_up(), what="node_up of the late node everywhere")
        exchange(c, nodes, "late")


run_tests([test_forwarder_restart, test_restart_twice_with_a_new_node], limit=60)
