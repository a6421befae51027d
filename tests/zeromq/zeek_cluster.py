"""What Zeek's cluster scripts do on top of the ZeroMQ sockets, emulated for the zmq.* tests.

A `ClusterNode` is a ZeekNode (lib/brokertest/zeek_zmq.py) that behaves like a Zeek 8.1+/9
node of the ZeroMQ backend (zeek/zeek: scripts/policy/frameworks/cluster/backend/zeromq/
main.zeek, options.zeek; scripts/base/frameworks/cluster/main.zeek):
- its node id is `<name>-<pid>-<random>`; it subscribes to its nodeid topic
  `zeek.cluster.nodeid.<id>.` and its node topic `zeek.cluster.node.<name>.`, then waits
  until it may publish (its own XPUB reports an internal subscription);
- a nodeid subscription of another node seen on its XPUB makes it publish
  `Cluster::Backend::ZeroMQ::hello(name, id)` to that topic; once it has both seen a node's
  nodeid subscription and received that node's ZeroMQ::hello it publishes
  `Cluster::hello(name, id)` to the node's nodeid topic; a Cluster::hello from a node without
  a known id raises node_up (recorded in `ups`); an unsubscription of a nodeid topic raises
  node_down (`downs`); a second ZeroMQ::hello with the same id is ignored (counted in
  `duplicate_hellos`: Zeek warns "sends ZeroMQ::hello twice");
- events are 4 frames with format `broker-bin-v1`, the payload Broker's binary encoding of
  the event (doc/protocol/binary.md): vector(count 1, count 1, vector(name, vector(args)));
  messages with its own node id are dropped (counted in `own_echoes`).

`Cluster` puts a forwarder (make_forwarder: the reference or broker-node) and such nodes
together; `pump()` runs every node's socket handling until a condition holds.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest import zeek_zmq  # noqa: E402
from brokertest.checks import TestFailure  # noqa: E402
from brokertest.peer import (ProtocolError, decode_whole_value, encode_count,  # noqa: E402
                             encode_string, encode_vector)

zmq = zeek_zmq.zmq

NODEID_PREFIX = b"zeek.cluster.nodeid."
ZMQ_HELLO = "Cluster::Backend::ZeroMQ::hello"
CLUSTER_HELLO = "Cluster::hello"
FORMAT = b"broker-bin-v1"


def nodeid_topic(node_id):
    return NODEID_PREFIX + node_id + b"."


def node_topic(name):
    return b"zeek.cluster.node." + name + b"."


def encode_arg(x):
    if isinstance(x, int):
        return encode_count(x)
    return encode_string(x)


def zeek_event(name, *args):
    """The broker-bin-v1 payload of a Zeek event (no metadata): strings and counts."""
    return encode_vector([encode_count(1), encode_count(1),
                          encode_vector([encode_string(name),
                                         encode_vector([encode_arg(a) for a in args])])])


def json_event(name, *args):
    """The WebSocket JSON v1 form (doc/protocol/websocket.md) of zeek_event(name, *args)."""
    def val(x):
        if isinstance(x, int):
            return {"@data-type": "count", "data": x}
        return {"@data-type": "string", "data": x}
    return {"@data-type": "vector",
            "data": [val(1), val(1), {"@data-type": "vector",
                                      "data": [val(name), {"@data-type": "vector",
                                                           "data": [val(a) for a in args]}]}]}


def decode_event(payload):
    """(name, [args]) of a broker-bin-v1 Zeek event, or None if it is none."""
    try:
        v = decode_whole_value(payload)
    except (ProtocolError, IndexError):
        return None
    if (not isinstance(v, list) or len(v) != 3 or v[:2] != [1, 1] or not isinstance(v[2], list)
            or len(v[2]) < 2 or not isinstance(v[2][0], str)):
        return None
    return v[2][0], v[2][1]


class ClusterNode:
    """One emulated Zeek node (see the module comment)."""

    def __init__(self, ctx, fwd, name, curve=None, topics=()):
        self.name = name.encode()
        self.id = b"%s-%d-%s" % (self.name, os.getpid(), os.urandom(4).hex().encode())
        self.z = zeek_zmq.ZeekNode(ctx, self.id, fwd.xsub_port, fwd.xpub_port, curve)
        self.ids = {}  # name -> id of the nodes it considers up (Cluster::nodes[name]$id)
        self.ups, self.downs = [], []  # (name, id) in the order raised
        self.nodeid_subscriptions, self.nodeid_hellos = set(), set()
        self.notifications = []  # every (subscribe, prefix) its XPUB reported
        self.events = []  # [topic, sender id, format, payload] from others, hellos excluded
        self.own_echoes = self.bad_messages = self.duplicate_hellos = 0
        self.hellos = []  # (name, id) of every ZeroMQ::hello received
        self.topics = [nodeid_topic(self.id), node_topic(self.name)] + list(topics)

    def start(self):
        """Subscribes and waits until it may publish, as Zeek's Cluster::init() does."""
        for t in self.topics:
            self.z.subscribe(t)
        for item in self.z.wait_ready():
            self.on_subscription(item)
        return self

    def publish(self, topic, name, *args):
        """Publishes a Zeek event; returns its payload."""
        payload = zeek_event(name, *args)
        if not self.z.publish(topic, payload):
            raise TestFailure("%s: its XPUB is full (high-water mark)" % self.name.decode())
        return payload

    # -- what Zeek's scripts do -----------------------------------------------------------

    def on_subscription(self, item):
        self.notifications.append(item)
        subscribe, prefix = item
        if not prefix.startswith(NODEID_PREFIX) or not prefix.endswith(b"."):
            return
        other = prefix[len(NODEID_PREFIX):-1]
        if other == self.id:
            return
        if not subscribe:
            for name, nid in list(self.ids.items()):
                if nid == other:
                    self.node_down(name, nid)
            return
        self.publish(prefix, ZMQ_HELLO, self.name.decode(), self.id.decode())
        if other in self.nodeid_hellos:
            self.nodeid_hellos.discard(other)
            self.publish(nodeid_topic(other), CLUSTER_HELLO, self.name.decode(),
                         self.id.decode())
        else:
            self.nodeid_subscriptions.add(other)

    def on_message(self, frames):
        if len(frames) != 4:
            self.bad_messages += 1
            return
        if frames[1] == self.id:
            self.own_echoes += 1
            return
        ev = decode_event(frames[3]) if frames[2] == FORMAT else None
        two_strings = ev and len(ev[1]) == 2 and all(isinstance(x, str) for x in ev[1])
        if ev and ev[0] == ZMQ_HELLO and two_strings:
            self.on_zeromq_hello(ev[1][0].encode(), ev[1][1].encode())
        elif ev and ev[0] == CLUSTER_HELLO and two_strings:
            name, nid = ev[1][0].encode(), ev[1][1].encode()
            if name not in self.ids:
                self.ups.append((name, nid))
            self.ids[name] = nid
        else:
            self.events.append(frames)

    def on_zeromq_hello(self, name, nid):
        self.hellos.append((name, nid))
        if name in self.ids:
            if self.ids[name] == nid:
                self.duplicate_hellos += 1
                return
            self.node_down(name, self.ids[name])  # "never said goodbye"
        if nid in self.nodeid_subscriptions:
            self.nodeid_subscriptions.discard(nid)
            self.publish(nodeid_topic(nid), CLUSTER_HELLO, self.name.decode(), self.id.decode())
        else:
            self.nodeid_hellos.add(nid)

    def node_down(self, name, nid):
        self.downs.append((name, nid))
        del self.ids[name]

    def close(self):
        self.z.close()

    def describe(self):
        return ("%s (%s): up %s, downs %s, %d events, %d notifications, %d own echoes"
                % (self.name.decode(), self.id.decode(),
                   sorted(n.decode() for n in self.ids), [n.decode() for n, _ in self.downs],
                   len(self.events), len(self.notifications), self.own_echoes))


def pump(nodes, until, timeout=10.0, what="the cluster"):
    """Handles every node's sockets until `until()` holds; fails after `timeout` s with each
    node's state."""
    import time
    poller = zmq.Poller()
    owner = {}
    for n in nodes:
        for s in (n.z.xpub, n.z.xsub):
            poller.register(s, zmq.POLLIN)
            owner[s] = n
    deadline = time.monotonic() + timeout
    while not until():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TestFailure("timed out waiting for %s:\n  %s"
                              % (what, "\n  ".join(n.describe() for n in nodes)))
        for sock, _ in poller.poll(min(left, 0.2) * 1000):
            n = owner[sock]
            for _ in range(100):
                try:
                    if sock is n.z.xpub:
                        msg = sock.recv(zmq.NOBLOCK)
                        n.on_subscription((msg[:1] == b"\x01", msg[1:]))
                    else:
                        n.on_message(sock.recv_multipart(zmq.NOBLOCK))
                except zmq.Again:
                    break


class Cluster:
    """A forwarder (make_forwarder) and emulated Zeek nodes, all closed on exit."""

    def __init__(self, node_bin, curve=None, reference=False, **node_options):
        """`reference`: Zeek's forwarder whatever ZMQ_FORWARDER says."""
        self.ctx = zmq.Context()
        self.curve = curve
        self.nodes = []
        try:
            if reference:
                self.fwd = zeek_zmq.ReferenceForwarder(self.ctx, curve=curve)
            else:
                self.fwd = zeek_zmq.make_forwarder(self.ctx, node_bin, curve=curve,
                                                   **node_options)
        except BaseException:
            self.ctx.term()
            raise

    def node(self, name, topics=(), start=True, curve=None, via=None):
        """A started ClusterNode; `via`: an object with other xsub_port / xpub_port to
        connect to (relays in front of the forwarder)."""
        n = ClusterNode(self.ctx, via or self.fwd, name, curve or self.curve, topics)
        self.nodes.append(n)
        return n.start() if start else n

    def remove(self, node):
        node.close()
        self.nodes.remove(node)

    def pump(self, until, timeout=10.0, what="the cluster"):
        pump(self.nodes, until, timeout, what)

    def all_up(self, nodes=None):
        """A predicate: every node has every other one up (by its current id)."""
        nodes = nodes or self.nodes
        return lambda: all(a.ids.get(b.name) == b.id for a in nodes for b in nodes if a is not b)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for n in self.nodes:
            n.close()
        self.fwd.close()
        self.ctx.term()
