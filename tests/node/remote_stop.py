#!/usr/bin/env python3
"""System tests: the value "stop" ends no node unless the node was started to exit on it.

Zeek Broker's broker-node, a test tool, exits on "stop"; ours is a daemon and exits only
with --exit-on-stop (doc/node.md, "Remote stop"). The layout is the user's report: a hub, a
spoke dialing it (both subscribed to /zeek/) and an edge without topics that serves
WebSocket clients, everything on 127.0.0.1. "stop" from a WebSocket client at the edge and
from a raw peer at the hub must leave every node running, relaying, and each ignoring node
logs one line about it; with --exit-on-stop a node exits 0 and logs the topic.

Usage: remote_stop.py <path to broker-node>
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, run_tests  # noqa: E402
from brokertest.nodes import Node, is_status, peer_uri  # noqa: E402
from brokertest.peer import RawPeer, encode_count, encode_string, id_text, random_id  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import RawClient  # noqa: E402

# The user's flags: everything on the loopback interface.
LOCAL = ["--listen-address=127.0.0.1", "--broker.web-socket.address=127.0.0.1"]
TOPIC = "/zeek/logs/notice"
# Time for a "stop" that would end a node to do so (a node exits within milliseconds).
EXIT_GRACE_SECONDS = 1.5
FLOOD = 50


def ignored_line(topic=TOPIC):
    return lambda l: 'ignored "stop" on topic %s' % topic in l


def received(topic, value):
    return lambda l: l == "received %s %s" % (topic, value)


def hub_and_spoke(cleanup, binary, hub_args=(), spoke_args=()):
    hub = cleanup.add(Node(binary, LOCAL + ["-t", "/zeek/", "-v"] + list(hub_args), "hub"))
    spoke = cleanup.add(Node(binary, LOCAL + ["-t", "/zeek/", "-v", "--peers", peer_uri(hub.port)]
                             + list(spoke_args), "spoke"))
    spoke.wait_for(is_status("peer_added"), what="the spoke's peering")
    return hub, spoke


def ws_publish(client, topic, data_type, data):
    client.send_text(json.dumps({"type": "data-message", "topic": topic,
                                 "@data-type": data_type, "data": data}))


def check_running(*nodes):
    time.sleep(EXIT_GRACE_SECONDS)
    for node in nodes:
        check(node.alive(), "%s still runs after \"stop\"\n%s" % (node.name, node.describe()))


def test_stop_from_a_web_socket_client(binary):
    """"stop" from a WebSocket client at the edge leaves hub, spoke and edge running"""
    with Cleanup() as cleanup:
        hub, spoke = hub_and_spoke(cleanup, binary)
        edge = cleanup.add(Node(binary, LOCAL + ["-v", "--peers", peer_uri(hub.port)], "edge",
                                web_socket=True))
        edge.wait_for(is_status("peer_added"), what="the edge's peering")
        # The edge forwards /zeek/ once it knows the hub subscribes to it.
        hub.wait_count(is_status("peer_added"), 2, what="both peerings at the hub")
        client = cleanup.add(RawClient(edge.ws_port))
        client.send_text("[]")
        check('"ack"' in client.recv_text(), "the WebSocket client's ack")
        # Until the edge has the hub's subscription, a publication stops at the edge: send
        # "stop" until the hub sees one.
        deadline = time.monotonic() + 10
        while not hub.matching(received(TOPIC, "stop")) and time.monotonic() < deadline:
            ws_publish(client, TOPIC, "string", "stop")
            time.sleep(0.2)
        for node in (hub, spoke):
            node.wait_for(received(TOPIC, "stop"), what="the stop value")
            node.wait_for(ignored_line(), what="the line about the ignored stop", stderr=True)
        check_running(hub, spoke, edge)
        # And they still relay.
        ws_publish(client, "/zeek/logs/after", "count", 7)
        for node in (hub, spoke):
            node.wait_for(received("/zeek/logs/after", "7"), what="a value after the stop")
        # The hub names the edge, which published: the id of one of its two peers.
        line = hub.matching(ignored_line(), stderr=True)[0]
        peers = [l.split()[2] for l in hub.matching(is_status("peer_added"))]
        check(any("from node %s" % p in line for p in peers),
              "the hub's line names the publishing node (%s): %s" % (peers, line))


def test_stop_from_a_peer(binary):
    """"stop" from a peer leaves hub and spoke running; a flood of them logs one line"""
    with Cleanup() as cleanup:
        hub, spoke = hub_and_spoke(cleanup, binary)
        peer = cleanup.add(RawPeer.dial("127.0.0.1", hub.port, random_id(), []))
        hub.wait_for(is_status("peer_added", id_text(peer.own_id)), what="the raw peer")
        for _ in range(FLOOD):
            peer.publish(TOPIC, encode_string("stop"))
        for node in (hub, spoke):
            node.wait_count(received(TOPIC, "stop"), FLOOD, what="every stop value")
            node.wait_for(ignored_line(), what="the line about the ignored stop", stderr=True)
        check_running(hub, spoke)
        for node in (hub, spoke):
            lines = node.matching(ignored_line(), stderr=True)
            check(len(lines) == 1, "%s logs the ignored stops once: %s" % (node.name, lines))
        check("does not name the publisher" in hub.matching(ignored_line(), stderr=True)[0],
              "the hub says the Broker-style peer did not name the publisher")
        peer.publish("/zeek/x", encode_count(3))
        for node in (hub, spoke):
            node.wait_for(received("/zeek/x", "3"), what="a value after the stops")


def test_exit_on_stop(binary):
    """with --exit-on-stop a node exits 0 on "stop" and logs the topic; its spoke runs on"""
    with Cleanup() as cleanup:
        hub, spoke = hub_and_spoke(cleanup, binary, hub_args=["--exit-on-stop"])
        peer = cleanup.add(RawPeer.dial("127.0.0.1", hub.port, random_id(), []))
        hub.wait_for(is_status("peer_added", id_text(peer.own_id)), what="the raw peer")
        peer.publish(TOPIC, encode_string("stop"))
        check(hub.wait_exit() == 0, "the hub's exit code after stop\n" + hub.describe())
        line = 'received "stop" on topic %s from ' % TOPIC
        exits = [l for l in hub.err_lines if line in l]
        check(len(exits) == 1 and exits[0].endswith("exiting (--exit-on-stop)"),
              "the hub's log says why it exits: %s" % exits)
        # The hub relayed "stop" before it left; the spoke ignores it.
        spoke.wait_for(ignored_line(), what="the spoke's line about the ignored stop",
                       stderr=True)
        check_running(spoke)


if __name__ == "__main__":
    run_tests([test_stop_from_a_web_socket_client, test_stop_from_a_peer, test_exit_on_stop],
              limit=90)
