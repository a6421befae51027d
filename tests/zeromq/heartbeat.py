#!/usr/bin/env python3
"""zmq.heartbeat: a Zeek node whose connections go silent (its relays paused: the TCP
connections stay up, no byte moves).

Zeek sets no ZMTP heartbeats, and libzmq's forwarder sends none: it keeps the silent node
and its subscriptions for as long as TCP does (the reference run checks that nothing
happens for 4 s). broker-node sends PINGs every broker.zeromq.heartbeat-interval (1000 ms here)
and closes a connection that stays silent; the other nodes then see the node's
subscriptions cancelled and raise node_down within 10 s. Once the relays resume, the node
reconnects by itself and is node_up again everywhere, with either forwarder.
Usage: heartbeat.py <broker-node>. Needs /usr/bin/python3 with python3-zmq (else skipped).
"""

import os
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from brokertest.checks import check, run_tests, skip_script  # noqa: E402
from brokertest import zeek_zmq  # noqa: E402

if not zeek_zmq.zmq_available():
    skip_script("no pyzmq (apt-get install python3-zmq, or scripts/install-deps)")

from brokertest.procs import Cleanup  # noqa: E402
from brokertest.proxy import Proxy  # noqa: E402
from zeek_cluster import Cluster, node_topic  # noqa: E402

HEARTBEAT = "1000"  # milliseconds, as every interval option in the options table
NODE_DOWN_WITHIN = 10.0
REFERENCE_WATCH = 4.0


def test_silent_node(node_bin):
    """a node behind paused relays: broker-node's heartbeats end its connections and the
    others see node_down; libzmq's forwarder keeps it; after the pause it is node_up again"""
    with Cluster(node_bin, args=["--broker.zeromq.heartbeat-interval=" + HEARTBEAT]) as c, \
            Cleanup() as cleanup:
        manager, worker = c.node("manager"), c.node("worker-1")
        to_xsub = cleanup.add(Proxy(c.fwd.xsub_port, "relay-xsub"))
        to_xpub = cleanup.add(Proxy(c.fwd.xpub_port, "relay-xpub"))
        silent = c.node("worker-2", via=types.SimpleNamespace(xsub_port=to_xsub.port,
                                                              xpub_port=to_xpub.port))
        c.pump(c.all_up(), what="node_up everywhere (worker-2 through the relays)")
        others = [manager, worker]
        to_xsub.pause()
        to_xpub.pause()
        gone = (silent.name, silent.id)
        if c.fwd.kind == "node":
            c.pump(lambda: all(gone in n.downs for n in others), timeout=NODE_DOWN_WITHIN,
                   what="node_down of the silent worker-2")
        else:
            until = time.monotonic() + REFERENCE_WATCH
            c.pump(lambda: time.monotonic() > until, what="a pause")
            for n in others:
                check(gone not in n.downs, "libzmq's forwarder dropped the silent node at %s"
                      % n.name)
            # The others still reach each other meanwhile.
        manager.publish(node_topic(worker.name), "Test::meanwhile", "m")
        c.pump(lambda: len(worker.events) >= 1, what="an event between the others")
        to_xsub.resume()
        to_xpub.resume()
        c.pump(c.all_up(), timeout=20, what="node_up of worker-2 again everywhere")


run_tests([test_silent_node], limit=60)
