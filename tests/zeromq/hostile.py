#!/usr/bin/env python3
"""zmq.hostile: garbage on the forwarder's ports disturbs nobody.

Raw TCP connections to the ZeroMQ ports send what is not a Zeek node: an HTTP request,
random bytes, a ZMTP 2.0 greeting, a greeting with the PLAIN mechanism, a PUB socket's READY
at the XPUB port and a SUB's at the XSUB port (an XPUB talks to SUB/XSUB only, an XSUB to
PUB/XPUB only), a frame with reserved flag bits, a greeting cut short. Meanwhile four Zeek nodes keep exchanging events, and a node that
joins afterwards is discovered.

broker-node (ZMQ_FORWARDER=node) must also close every such connection (doc/protocol/
zeromq.md §2, §6, §11) and stay up. libzmq's forwarder (reference) downgrades non-ZMTP-3
peers to older ZMTP versions rather than closing them, so for it only "nobody is disturbed"
is checked (it keeps an HTTP request and a cut greeting open; it closes the others).
Usage: hostile.py <broker-node>. Needs /usr/bin/python3 with python3-zmq (else
skipped).
"""

import json
import os
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, check_eq, run_tests, skip_script  # noqa: E402
from brokertest.net import LOCALHOST  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from zeek_cluster import Cluster, node_topic, nodeid_topic, zeek_event  # noqa: E402

NAMES = ["manager", "proxy", "worker-1", "worker-2"]
CLOSE_TIMEOUT = 5.0


def greeting(mechanism=b"NULL", major=3, minor=1):
    return (b"\xff" + b"\x00" * 7 + b"\x01\x7f" + bytes([major, minor])
            + mechanism.ljust(20, b"\x00") + b"\x00" + b"\x00" * 31)


def ready(socket_type):
    name, prop = b"READY", b"Socket-Type"
    body = (bytes([len(name)]) + name + bytes([len(prop)]) + prop
            + len(socket_type).to_bytes(4, "big") + socket_type)
    return b"\x04" + bytes([len(body)]) + body


# (what, port side, bytes, whether broker-node must close at once). The side is "xsub" (where
# node XPUBs connect), "xpub" (where node XSUBs connect) or "both"; a peer that is fine
# for a side (the socket type it talks to) sends that type's READY first.
PEER_OF = {"xsub": b"XPUB", "xpub": b"XSUB"}
HOSTILE = [
    ("an HTTP request", "both", lambda side: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", True),
    ("random bytes", "both", lambda side: bytes(range(256)) * 4, True),
    ("a ZMTP 2.0 greeting", "both", lambda side: greeting(major=1, minor=0), True),
    ("the PLAIN mechanism", "both", lambda side: greeting(b"PLAIN"), True),
    ("a PUB socket", "xpub", lambda side: greeting() + ready(b"PUB"), True),
    ("a SUB socket", "xsub", lambda side: greeting() + ready(b"SUB"), True),
    ("reserved flag bits", "both",
     lambda side: greeting() + ready(PEER_OF[side]) + b"\xf0\x01x", True),
    # Waits for the handshake deadline (libzmq: 30 s), longer than this test looks.
    ("a cut greeting", "both", lambda side: greeting()[:20], False),
]


def closed_by_peer(sock, timeout=CLOSE_TIMEOUT):
    """Whether the other side closes within `timeout` (reading and discarding its bytes)."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            continue
        except OSError:  # reset
            return True
    return False


def exchange(c, nodes, tag):
    before = [len(n.events) for n in nodes]
    for a in nodes:
        for b in nodes:
            if a is not b:
                a.publish(node_topic(b.name), "Test::" + tag, a.name.decode())
    c.pump(lambda: all(len(n.events) - k >= len(nodes) - 1 for n, k in zip(nodes, before)),
           what="the %s events" % tag)


def test_garbage_disturbs_nobody(node_bin):
    """hostile connections on both ports; the cluster keeps working, and broker-node closes
    each of them"""
    with Cluster(node_bin) as c:
        nodes = [c.node(n) for n in NAMES[:3]]
        c.pump(c.all_up(), what="node_up everywhere")
        socks = []
        try:
            ports = {"xsub": c.fwd.xsub_port, "xpub": c.fwd.xpub_port}
            for what, sides, data, must_close in HOSTILE:
                for side in (["xsub", "xpub"] if sides == "both" else [sides]):
                    s = socket.create_connection((LOCALHOST, ports[side]), timeout=5)
                    s.sendall(data(side))
                    socks.append((what, side, s, must_close))
            exchange(c, nodes, "during")
            if c.fwd.kind == "node":
                for what, side, s, must_close in socks:
                    if must_close:
                        check(closed_by_peer(s), "broker-node kept the connection of %s on its "
                              "%s port open for %.0f s" % (what, side.upper(), CLOSE_TIMEOUT))
                check(c.fwd.node.alive(), "broker-node exited\n%s" % c.fwd.node.describe())
        finally:
            for _, _, s, _ in socks:
                s.close()
        nodes.append(c.node(NAMES[3]))
        c.pump(c.all_up(), what="node_up of a node that joined afterwards")
        exchange(c, nodes, "after")
        for n in nodes:
            check_eq(n.downs, [], "node_down at %s" % n.name)


def test_bad_hellos_pass_through(node_bin):
    """malformed ZeroMQ::hello payloads on a nodeid topic (broker-node reads the hello for
    the node's name, doc/zeek-cluster.md): forwarded byte-exact, broker-node unharmed, the
    real names still shown"""
    hello = "Cluster::Backend::ZeroMQ::hello"
    good = zeek_event(hello, "manager", "x")
    bad = [good[:-3], good[:5], b"", b"\xff" * 40, zeek_event(hello, "a", "b", "c"),
           zeek_event(hello, 7, 8), zeek_event(hello), zeek_event("Other::event", "a", "b")]
    with Cluster(node_bin) as c:
        a, b = c.node(NAMES[0]), c.node(NAMES[1])
        c.pump(c.all_up(), what="node_up everywhere")
        for payload in bad:
            check(a.z.publish(nodeid_topic(b.id), payload), "publish")
        # A well-formed hello that names another node's id (Zeek's node takes it as a hello).
        check(a.z.publish(nodeid_topic(b.id), zeek_event(hello, "impostor", "not-its-id")),
              "publish")
        c.pump(lambda: sum(1 for e in b.events if e[0] == nodeid_topic(b.id)) >= len(bad)
               and (b"impostor", b"not-its-id") in b.hellos,
               what="the bad hellos at %s" % b.name.decode())
        got = [e[3] for e in b.events if e[0] == nodeid_topic(b.id)]
        check_eq(got, bad, "what %s got" % b.name.decode())
        exchange(c, [a, b], "after")
        if c.fwd.kind == "node":
            check(c.fwd.node.alive(), "broker-node exited\n%s" % c.fwd.node.describe())
            url = "http://%s:%d/v1/status" % (LOCALHOST, c.fwd.node.metrics_port)
            with urllib.request.urlopen(url, timeout=10) as res:
                conns = json.load(res)["zeromq"]["connections"]
            names = {x["zeek_node_id"]: x["zeek_node_name"] for x in conns}
            check_eq(names.get(a.id.decode()), a.name.decode(), "the name shown for %s"
                     % a.id.decode())
            check("impostor" not in names.values(), "a hello naming another id was taken: %r"
                  % names)


run_tests([test_garbage_disturbs_nobody, test_bad_hellos_pass_through], limit=60)
