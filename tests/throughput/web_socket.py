"""--web-socket against a broker-node with BROKER_WEB_SOCKET_PORT set: sending and
receiving through the node's JSON API, and mixed with peering on the other side."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup, Proc  # noqa: E402

EVENTS = 2000


# A WebSocket client's queue on the node holds 512 messages by default and disconnects the
# client when it overflows. A burst from a peer, or a receiver that a busy machine does not
# schedule for a few milliseconds, can exceed that; these tests check the CLI, not that
# policy, so the node gets room for every event of a test.
NODE_WS_BUFFER = "--broker.web-socket-buffer-size=100000"

# Workaround for a library bug (broker-throughput/README.md, "Known library issue"): a
# WebSocket publisher whose input the node has to pause (its inbox of
# broker.publisher-buffer-size messages is full) is dropped with a TCP reset. An inbox
# larger than any test's burst keeps the node from pausing.
NODE_INBOX = "--broker.publisher-buffer-size=100000"

# The node runs with plain TCP (the helpers' default), so a peering broker-throughput must
# too: with Broker's defaults it would speak TLS with anonymous ECDH.
PLAIN = "--broker.disable-ssl"


def start_node(c, node, extra=()):
    """A relay node subscribed to the benchmark topic, with its WebSocket server on."""
    proc = c.add(Node(node, ["-t", "/benchmark/events", NODE_WS_BUFFER, NODE_INBOX]
                      + list(extra), "broker-node", web_socket=True))
    return proc, proc.port, proc.ws_port


def web_socket_receiver(c, tp, ws_port, events):
    recv = c.add(Proc(tp, ["--server", "--web-socket", "127.0.0.1:%d" % ws_port, "--json",
                           "-n", str(events)], name="ws receiver"))
    recv.wait_for(lambda l: '"type":"connected"' in l, what="the connected line")
    return recv


def send_and_receive_over_web_socket(tp, node):
    with Cleanup() as c:
        _, _, ws_port = start_node(c, node)
        recv = web_socket_receiver(c, tp, ws_port, EVENTS)
        for event_type in (1, 2, 3):
            sender = c.add(Proc(tp, ["--web-socket", "-t", str(event_type), "-s", "50",
                                     "-n", str(EVENTS // 4), "--json",
                                     "127.0.0.1:%d" % ws_port],
                                name="ws sender -t %d" % event_type))
            sender.expect_exit(0)
            check_eq(sender.summary()["transport"], "web-socket", "sender transport")
            check_eq(sender.summary()["events"], EVENTS // 4, "events sent (type %d)"
                     % event_type)
        sender = c.add(Proc(tp, ["--web-socket", "-n", str(EVENTS // 4), "--json",
                                 "127.0.0.1:%d" % ws_port], name="ws sender"))
        sender.expect_exit(0)
        recv.expect_exit(0)
        check_eq(recv.summary()["transport"], "web-socket", "receiver transport")
        check_eq(recv.summary()["events"], EVENTS, "events received over the WebSocket")


def peering_sender_to_web_socket_receiver(tp, node):
    with Cleanup() as c:
        _, peering_port, ws_port = start_node(c, node)
        recv = web_socket_receiver(c, tp, ws_port, EVENTS)
        sender = c.add(Proc(tp, ["-s", "100", "-n", str(EVENTS), "--json", PLAIN,
                                 "127.0.0.1:%d" % peering_port], name="peering sender"))
        sender.expect_exit(0)
        recv.expect_exit(0)
        check_eq(recv.summary()["events"], EVENTS, "events from a peer received over WebSocket")


def web_socket_sender_to_peering_receiver(tp, node):
    with Cleanup() as c:
        server = c.add(Proc(tp, ["--server", "127.0.0.1:0", "--json", "--verbose", PLAIN,
                                 "-n", str(EVENTS)], name="peering receiver"))
        port = server.listening_port()
        _, _, ws_port = start_node(c, node, ["--peers", "tcp://127.0.0.1:%d" % port])
        server.wait_for(lambda l: "peer_added" in l, what="the node's peering", stderr=True)
        sender = c.add(Proc(tp, ["--web-socket", "-s", "100", "-n", str(EVENTS), "--json",
                                 "127.0.0.1:%d" % ws_port], name="ws sender"))
        sender.expect_exit(0)
        server.expect_exit(0)
        check_eq(server.summary()["events"], EVENTS, "events from a WebSocket client received "
                 "over a peering")


def receiver_the_node_gives_up_on_says_why(tp, node):
    with Cleanup() as c:
        # A queue of one message cannot take a burst of batches from a peer.
        _, peering_port, ws_port = start_node(c, node, ["--broker.web-socket-buffer-size=1"])
        recv = web_socket_receiver(c, tp, ws_port, EVENTS)
        sender = c.add(Proc(tp, ["-s", "100", "-n", str(EVENTS), PLAIN,
                                 "127.0.0.1:%d" % peering_port], name="peering sender"))
        sender.expect_exit(0)
        recv.expect_exit(2)
        check(any("backpressure_overflow" in l for l in recv.err_lines),
              "the receiver does not say why it stopped\n" + recv.describe())
        check(recv.summary()["events"] < EVENTS, "a receiver with a full queue got everything")


def receiver_ends_on_sigterm(tp, node):
    with Cleanup() as c:
        _, _, ws_port = start_node(c, node)
        recv = web_socket_receiver(c, tp, ws_port, 0)
        recv.send_signal(signal.SIGTERM)
        recv.expect_exit(0)
        check_eq(recv.summary()["events"], 0, "events received without a sender")


run_tests([send_and_receive_over_web_socket, peering_sender_to_web_socket_receiver,
           web_socket_sender_to_peering_receiver, receiver_the_node_gives_up_on_says_why,
           receiver_ends_on_sigterm], limit=150, binaries=("broker-throughput", "broker-node"))
