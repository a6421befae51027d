#!/usr/bin/env python3
"""zmq.reference: Zeek's ZeroMQ forwarder semantics, on real libzmq nodes.

Emulated Zeek nodes (lib/brokertest/zeek_zmq.py) around a forwarder: the behaviour
doc/protocol/zeromq.md §10 says a forwarder must have, shown on Zeek's own kind of
forwarder (zmq_proxy_steerable, XPUB_VERBOSER, XPUB_NODROP; ZMQ_FORWARDER=reference, the
default: ctest zmq.reference) and required of broker-node (ZMQ_FORWARDER=node: ctest
zmq.reference.node). Usage: reference.py <broker-node>. Needs /usr/bin/python3 with
python3-zmq (else skipped).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

zmq = zeek_zmq.zmq


class Cluster:
    """A forwarder (zeek_zmq.make_forwarder) and nodes, closed on exit."""

    def __init__(self, node_bin):
        self.ctx = zmq.Context()
        try:
            self.fwd = zeek_zmq.make_forwarder(self.ctx, node_bin)
        except BaseException:
            self.ctx.term()
            raise
        self.nodes = []

    def node(self, name):
        n = zeek_zmq.ZeekNode(self.ctx, name, self.fwd.xsub_port, self.fwd.xpub_port)
        self.nodes.append(n)
        return n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for n in self.nodes:
            n.close()
        self.fwd.close()
        self.ctx.term()


def test_own_subscription_reaches_own_xpub(node_bin):
    """a node's own subscription comes back on its own XPUB (Zeek's ready-to-publish wait)"""
    with Cluster(node_bin) as c:
        w1 = c.node("w1")
        seen = w1.wait_ready()
        check(seen[-1][0], "subscribe notification: %r" % (seen,))


def test_nodeid_discovery(node_bin):
    """every node's XPUB sees every node's nodeid subscription, its own included"""
    with Cluster(node_bin) as c:
        w1, w2 = c.node("w1"), c.node("w2")
        w1.wait_ready()
        w2.wait_ready()
        w1.subscribe(b"zeek.cluster.nodeid.w1.")
        w2.subscribe(b"zeek.cluster.nodeid.w2.")
        for n in (w1, w2):
            seen = set()
            while len(seen) < 2:
                item = n.next_subscription()
                check(item is not None, "%s saw only %r" % (n.node_id, seen))
                if item[1].startswith(b"zeek.cluster.nodeid."):
                    seen.add(item[1])
            check_eq(seen, {b"zeek.cluster.nodeid.w1.", b"zeek.cluster.nodeid.w2."},
                     "nodeid subscriptions at %s" % n.node_id)


def test_duplicates_are_passed_on(node_bin):
    """with XPUB_VERBOSER a repeated subscription reaches the publishers again"""
    with Cluster(node_bin) as c:
        w1, w2 = c.node("w1"), c.node("w2")
        w1.wait_ready()
        w2.wait_ready()
        w2.subscribe(b"dup/")
        w1.subscriptions_until((True, b"dup/"))
        w2.subscribe(b"dup/")
        w1.subscriptions_until((True, b"dup/"))


def test_event_reaches_matching_subscriber_byte_exact(node_bin):
    """a 4-frame event reaches the node whose prefix matches, frames unchanged"""
    with Cluster(node_bin) as c:
        w1, w2 = c.node("w1"), c.node("w2")
        w1.wait_ready()
        w2.wait_ready()
        w2.subscribe(b"zeek/test/")
        w1.subscriptions_until((True, b"zeek/test/"))
        payload = bytes(range(256)) * 4
        check(w1.publish(b"zeek/test/ev", payload), "publish blocked")
        check_eq(w2.next_event(), [b"zeek/test/ev", b"w1", b"broker-bin-v1", payload],
                 "event at w2")
        check_eq(w1.next_event(200), None, "event at w1, which did not subscribe")


def test_new_node_receives_current_subscriptions(node_bin):
    """a node that connects later learns every subscription already held"""
    with Cluster(node_bin) as c:
        w1 = c.node("w1")
        w1.wait_ready()
        w1.subscribe(b"early/")
        w1.subscriptions_until((True, b"early/"))
        w3 = c.node("w3")
        seen = w3.wait_ready()
        check((True, b"early/") in seen, "w3 saw %r" % (seen,))


def test_disconnect_unsubscribes(node_bin):
    """when a node goes away, its subscriptions are cancelled at the other nodes"""
    with Cluster(node_bin) as c:
        w1, w2 = c.node("w1"), c.node("w2")
        w1.wait_ready()
        w2.wait_ready()
        w2.subscribe(b"zeek.cluster.nodeid.w2.")
        w1.subscriptions_until((True, b"zeek.cluster.nodeid.w2."))
        w2.close()
        c.nodes.remove(w2)
        w1.subscriptions_until((False, b"zeek.cluster.nodeid.w2."))


def test_one_copy_however_many_prefixes_match(node_bin):
    """a node subscribed to several matching prefixes (and to one twice) gets an event once"""
    with Cluster(node_bin) as c:
        w1, w2 = c.node("w1"), c.node("w2")
        w1.wait_ready()
        w2.wait_ready()
        for prefix in (b"a/", b"a/b/", b"a/b/"):
            w2.subscribe(prefix)
        w1.subscriptions_until((True, b"a/b/"))
        w1.subscriptions_until((True, b"a/b/"))
        check(w1.publish(b"a/b/c", b"once"), "publish blocked")
        w2.subscribe(b"zzz/")
        w1.subscriptions_until((True, b"zzz/"))
        check(w1.publish(b"zzz/marker", b"after"), "publish blocked")
        check_eq(w2.next_event(), [b"a/b/c", b"w1", b"broker-bin-v1", b"once"], "the event")
        check_eq(w2.next_event()[0], b"zzz/marker", "the next message after the event")


def shared_prefix_cluster(c):
    """w1 (publisher), w2 and w3 subscribed to shared/, w3 also to w3own/ (a prefix only it
    holds, whose cancellation marks when w3's part has been processed)."""
    w1, w2, w3 = c.node("w1"), c.node("w2"), c.node("w3")
    for n in (w1, w2, w3):
        n.wait_ready()
    w2.subscribe(b"shared/")
    w3.subscribe(b"shared/")
    w3.subscribe(b"w3own/")
    seen = w1.subscriptions_until((True, b"w3own/"))
    if seen.count((True, b"shared/")) < 2:
        w1.subscriptions_until((True, b"shared/"))
    return w1, w2, w3


def check_shared_still_flows(w1, w2, seen):
    # libzmq's forwarder counts holders at its XSUB and passes an unsubscription only when
    # the last one goes. It must: a node's XPUB keeps one subscription per prefix for its
    # one connection to the forwarder, so an unsubscription passed early would make every
    # node stop sending shared/ events to the forwarder, and w2 would get none.
    check((False, b"shared/") not in seen,
          "the forwarder passed the unsubscription of shared/ while w2 holds it: %r" % seen)
    check(w1.publish(b"shared/x", b"still"), "publish blocked")
    check_eq(w2.next_event(), [b"shared/x", b"w1", b"broker-bin-v1", b"still"],
             "the event at w2, which still holds shared/")


def test_shared_prefix_survives_one_leaving(node_bin):
    """two nodes share a prefix; when one leaves, the prefix is not cancelled and the other
    still gets its events"""
    with Cluster(node_bin) as c:
        w1, w2, w3 = shared_prefix_cluster(c)
        w3.close()
        c.nodes.remove(w3)
        seen = w1.subscriptions_until((False, b"w3own/"))
        check_shared_still_flows(w1, w2, seen)


def test_shared_prefix_survives_an_unsubscribe(node_bin):
    """two nodes share a prefix; one unsubscribes: not cancelled, the other still gets its
    events; when the last holder unsubscribes, the cancellation is passed on"""
    with Cluster(node_bin) as c:
        w1, w2, w3 = shared_prefix_cluster(c)
        w3.unsubscribe(b"shared/")
        w3.unsubscribe(b"w3own/")
        seen = w1.subscriptions_until((False, b"w3own/"))
        check_shared_still_flows(w1, w2, seen)
        w2.unsubscribe(b"shared/")
        w1.subscriptions_until((False, b"shared/"))


run_tests([test_own_subscription_reaches_own_xpub, test_nodeid_discovery,
           test_duplicates_are_passed_on, test_event_reaches_matching_subscriber_byte_exact,
           test_new_node_receives_current_subscriptions, test_disconnect_unsubscribes,
           test_one_copy_however_many_prefixes_match, test_shared_prefix_survives_one_leaving,
           test_shared_prefix_survives_an_unsubscribe],
          limit=60)
