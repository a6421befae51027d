#!/usr/bin/env python3
"""System tests: the batched data path of the WebSocket server, byte by byte.

The server reads what the socket has and decodes every complete frame of a read in one go,
and writes everything queued for a client (control frames and data) in one gathered system
call (libbroker/broker/internal/web/ws_session.hh). These tests look at the bytes:

- many frames in one TCP segment all arrive, in order;
- a frame split across many small writes (header and payload cut anywhere) arrives whole;
- under load, every server frame is well-formed (lengths, no mask, FIN), data stays in
  publication order, and pongs come back between the data frames with the right payload;
- an error frame for a bad message lands exactly between the deliveries around it.

Usage: batching.py <path to broker-node>
"""

import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.procs import Cleanup  # noqa: E402
from brokertest.rawws import PING, PONG, TEXT, RawClient, encode_frame  # noqa: E402
from brokertest.wsclient import count_message, data_message  # noqa: E402

ACK_PREFIX = '{"type":"ack"'


def subscribed(port, topics, **kwargs):
    c = RawClient(port, **kwargs)
    c.send_text('[%s]' % ",".join('"%s"' % t for t in topics))
    check(c.recv_text().startswith(ACK_PREFIX), "the ack")
    return c


def expect_counts(receiver, topic, count, what):
    for n in range(count):
        got = receiver.recv_text()
        check_eq(got, data_message(topic, "count", n), "%s: message %d" % (what, n))


def test_many_frames_in_one_segment(binary):
    """a thousand frames in one write all arrive, in order"""
    with Cleanup() as c:
        # The burst reaches the core as one batch: the receiver's queue must hold it (with
        # the default 512 and `disconnect`, a burst of 1000 cuts a receiver off by design).
        node = c.add(Node(binary, ["--broker.web-socket-buffer-size=2000"], web_socket=True))
        receiver = subscribed(node.ws_port, ["/b"])
        sender = subscribed(node.ws_port, [])
        frames = b"".join(encode_frame(TEXT, count_message("/b/one", n)) for n in range(1000))
        sender.sock.sendall(frames)
        expect_counts(receiver, "/b/one", 1000, "one segment")
        receiver.close()
        sender.close()


def test_frames_split_across_writes(binary):
    """frames cut into pieces of 1 to 7 bytes, sent separately, arrive whole"""
    with Cleanup() as c:
        node = c.add(Node(binary, [], web_socket=True))
        receiver = subscribed(node.ws_port, ["/b"])
        sender = subscribed(node.ws_port, [])
        sender.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = b"".join(encode_frame(TEXT, count_message("/b/split", n)) for n in range(40))
        # Also a 16-bit length frame (a long topic), cut through its extended length.
        stream += encode_frame(TEXT, count_message("/b/" + "x" * 300, 0))
        pos, step = 0, 1
        while pos < len(stream):
            sender.sock.sendall(stream[pos:pos + step])
            pos += step
            step = step % 7 + 1
            time.sleep(0.0005)
        expect_counts(receiver, "/b/split", 40, "split frames")
        check_eq(receiver.recv_text(), data_message("/b/" + "x" * 300, "count", 0),
                 "the frame cut through its 16-bit length")
        receiver.close()
        sender.close()


def test_control_frames_between_data_under_load(binary):
    """pongs come back between data frames, every frame well-formed, data in order"""
    with Cleanup() as c:
        node = c.add(Node(binary, ["--broker.web-socket-buffer-size=100000"], web_socket=True))
        receiver = subscribed(node.ws_port, ["/load"])
        sender = subscribed(node.ws_port, [])
        total = 20000
        burst = b"".join(encode_frame(TEXT, count_message("/load/x", n)) for n in range(total))
        # The receiver pings while the node is writing the burst to it.
        sender.sock.sendall(burst)
        pings = [b"p%d" % i for i in range(20)]
        next_ping = 0
        seen = 0
        pongs = []
        while seen < total or len(pongs) < len(pings):
            if next_ping < len(pings) and seen >= next_ping * (total // len(pings)):
                receiver.send_frame(PING, pings[next_ping])
                next_ping += 1
            fin, opcode, payload = receiver.recv_frame()  # checks: no mask, no RSV bits
            check(fin, "every server frame has FIN set")
            if opcode == PONG:
                pongs.append(payload)
                continue
            check_eq(opcode, TEXT, "opcode of a data frame")
            check_eq(payload.decode(), data_message("/load/x", "count", seen),
                     "data frame %d in publication order" % seen)
            seen += 1
        check_eq(pongs, pings, "every ping answered once, in order, with its payload")
        receiver.close()
        sender.close()


def test_error_frame_between_deliveries(binary):
    """an error frame for a bad message is written between the frames around it"""
    with Cleanup() as c:
        node = c.add(Node(binary, [], web_socket=True))
        client = subscribed(node.ws_port, ["/e"])
        other = subscribed(node.ws_port, [])
        # The client publishes nothing it receives itself; `other` publishes around a bad
        # message of the client, all in flight at once.
        other.sock.sendall(encode_frame(TEXT, count_message("/e/x", 0)))
        client.sock.sendall(encode_frame(TEXT, "not json"))
        # The error belongs to the client's own input; deliveries from `other` may come
        # before or after it, but each frame must be intact and the error must name input #1.
        got = [client.recv_text(), client.recv_text()]
        errors = [g for g in got if g.startswith('{"type":"error"')]
        check_eq(len(errors), 1, "one error frame")
        check('"input #1 ' in errors[0], "the error names input #1: %s" % errors[0])
        check(data_message("/e/x", "count", 0) in got, "the delivery: %s" % got)
        client.close()
        other.close()


run_tests([test_many_frames_in_one_segment, test_frames_split_across_writes,
           test_control_frames_between_data_under_load, test_error_frame_between_deliveries],
          limit=80)
