"""ws.fragments: fragmented and large messages (doc/protocol/websocket.md §3, §10.5).

- a 1 MiB message sent in 4 KiB fragments arrives intact, as one frame;
- the §10.5 message (200 counts, json.dumps indent=2, sent in 4096-character fragments)
  arrives as its compact frame;
- a ping between two fragments is answered and the message still arrives (§3; Broker
  dropped the connection);
- a UTF-8 character split across two fragments is reassembled;
- a 16 MiB message is accepted; one byte more closes the connection with 1009.
"""

import json
import os
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "lib"))

from brokertest.checks import check, check_eq, run_tests  # noqa: E402
from brokertest.nodes import Node  # noqa: E402
from brokertest.rawws import CONT, PING, PONG, TEXT, RawClient  # noqa: E402
from brokertest.wsclient import data_message, expect_close, recv, subscribe  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
MAX_MESSAGE = 16 * MiB  # the server's default limit (§9)


async def fragments(text, size):
    for i in range(0, len(text), size):
        yield text[i:i + size]


def string_message(topic, total_size):
    """A compact string data message of exactly `total_size` bytes, varied content."""
    head = '{"type":"data-message","topic":"%s","@data-type":"string","data":"' % topic
    tail = '"}'
    n = total_size - len(head) - len(tail)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ-_.:;!?"
    body = (alphabet * (n // len(alphabet) + 1))[:n]
    return head + body + tail


def gh357_message():
    """The §10.5 message: a vector of the counts 0..199, indented."""
    msg = {"type": "data-message", "topic": "/test", "@data-type": "vector",
           "data": [{"@data-type": "count", "data": i} for i in range(200)]}
    return json.dumps(msg, indent=2)


def gh357_frame():
    return data_message("/test", "vector", "[" + ",".join(
        '{"@data-type":"count","data":%d}' % i for i in range(200)) + "]")


def raw_fragments(port):
    """A ping between fragments, and a UTF-8 sequence split across fragments."""
    c = RawClient(port)
    try:
        c.send_text("[]")
        check(c.recv_text().startswith('{"type":"ack"'), "no ack for the raw client")
        c.send_frame(TEXT, '{"type":"data-message","topic":"/test",', fin=False)
        c.send_frame(PING, b"between fragments")
        check_eq(c.recv_message(), (PONG, b"between fragments"),
                 "the answer to a ping between two fragments")
        c.send_frame(CONT, '"@data-type":"count",', fin=False)
        c.send_frame(CONT, '"data":42}', fin=True)
        text = '{"topic":"/test","@data-type":"string","data":"gr\u00fc\u00dfe \U0001f600"}'
        raw = text.encode()
        cut = raw.index("\U0001f600".encode()) + 2  # inside the 4-byte sequence
        cut2 = raw.index("\u00fc".encode()) + 1     # inside the 2-byte sequence
        c.send_frame(TEXT, raw[:cut2], fin=False)
        c.send_frame(CONT, raw[cut2:cut], fin=False)
        c.send_frame(CONT, raw[cut:], fin=True)
    finally:
        c.close()


async def main(binary):
    with Node(binary, web_socket=True) as node:
        port = node.ws_port
        receiver, _ = await subscribe(port, ["/test"])
        sender, _ = await subscribe(port, [])

        big = string_message("/test/big", MiB)
        check_eq(len(big), MiB, "size of the 1 MiB message")
        await sender.send(fragments(big, 4 * KiB))
        got = await recv(receiver, what="the 1 MiB message")
        check(got == big, "the 1 MiB message arrived changed (%d bytes, expected %d)"
              % (len(got), len(big)))

        text = gh357_message()
        check_eq(len(text), 11980, "length of the §12.4 indented text")
        await sender.send(fragments(text, 4096))
        check_eq(await recv(receiver, what="the §12.4 message"), gh357_frame(),
                 "the §12.4 frame")

        raw_fragments(port)
        check_eq(await recv(receiver, what="the message with a ping between its fragments"),
                 data_message("/test", "count", 42),
                 "the message with a ping between its fragments")
        check_eq(await recv(receiver, what="the message with split UTF-8"),
                 data_message("/test", "string", '"gr\u00fc\u00dfe \U0001f600"'),
                 "the message with UTF-8 split across fragments")

        huge = string_message("/test/huge", MAX_MESSAGE)
        await sender.send(huge)
        got = await recv(receiver, timeout=30, what="the 16 MiB message")
        check(got == huge, "the 16 MiB message arrived changed (%d bytes)" % len(got))

        too_big = string_message("/test/huge", MAX_MESSAGE + 1)
        try:
            await sender.send(too_big)
        except websockets.ConnectionClosed:
            pass  # The server may close before the client has sent everything.
        await expect_close(sender, 1009, what="the sender of a message over 16 MiB")

        await receiver.close()


run_tests([main], limit=90)
