#!/usr/bin/env python3
"""System tests: one road into the core, observed from outside.

A peering hands its data and the events between them (routing updates, its end) to the
core through one ordered inbox (libbroker/broker/internal/core/source_inbox.hh). So:

- a routing update that arrives before a message is applied before that message is
  routed: peer A subscribes to a topic and then says "ready" in the same TCP segment;
  peer C answers "ready" at once with a message on that topic, which must reach A;
- the end of a peering is processed after the last message it delivered: every message a
  peer sent before closing is printed before the node reports the peer lost.

Usage: ordering.py <path to broker-node>
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest import peer as bp  # noqa: E402
from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402

ROUNDS = 50
STATUSES = "<$>/local/data/statuses"


def dial(cleanup, node, topics):
    peer = cleanup.add(bp.RawPeer.dial("127.0.0.1", node.port, bp.random_id(), topics))
    # The node's origin-v1 probe is its first frame; answering it (as Broker would) lets
    # the node send data to this peer.
    peer.ping(b"sync")
    return peer


def routing_update(peer, topics):
    return bp.node_message(peer.own_id, peer.remote_id, bp.ROUTING_UPDATE, bp.CONTROL_TOPIC,
                           bp.encode_filter(topics))


def test_update_then_data(binary):
    """a subscription announced before a message is in force when that message is routed"""
    with Cleanup() as cleanup:
        node = cleanup.add(Node(binary, [], "N"))
        a = dial(cleanup, node, [])
        c = dial(cleanup, node, ["/ready"])
        for i in range(ROUNDS):
            topic = "/x%d" % i
            # One segment: A's new filter, then A's "ready".
            a.send_raw(routing_update(a, [topic])
                       + a.data_frame("/ready", bp.encode_count(i)))
            got = c.receive_data(1)
            check_eq(got, [(b"/ready", i)], "C's ready message %d" % i)
            c.publish(topic + "/v", bp.encode_count(i))
            check_eq(a.receive_data(1), [((topic + "/v").encode(), i)],
                     "round %d: the answer on A's new topic reaches A" % i)


def test_data_then_end(binary):
    """everything a peer sent before it closed is routed before it is reported lost"""
    with Cleanup() as cleanup:
        # A WebSocket client subscribed to "" gets data and status events through one queue,
        # in the order the core routed them.
        node = cleanup.add(Node(binary, ["--broker.web-socket-buffer-size=100000"], "N",
                                web_socket=True))
        watcher = RawClient(node.ws_port)
        watcher.send_text('[""]')
        check(watcher.recv_text().startswith('{"type":"ack"'), "the watcher's ack")
        count = 2000
        for round_ in range(5):
            peer = dial(cleanup, node, [])
            peer.publish_many("/d%d" % round_, [bp.encode_count(n) for n in range(count)])
            peer.close()
            who = bp.id_text(peer.own_id)
            seen = []
            while True:
                frame = json.loads(watcher.recv_text())
                if frame["topic"] == "/d%d" % round_:
                    seen.append(frame["data"])
                elif frame["topic"] == STATUSES and who in json.dumps(frame) \
                        and "peer_lost" in json.dumps(frame):
                    break
            check_eq(seen, list(range(count)),
                     "round %d: every message, in order, before peer_lost" % round_)
        watcher.close()


run_tests([test_update_then_data, test_data_then_end], limit=90)
